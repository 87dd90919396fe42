"""Command-line errors: one line on stderr that names the bad value, exit
status 2, no traceback and no Amaranth warning."""

import pathlib
import subprocess
import sys

import pytest

EXPORT = pathlib.Path(sys.executable).parent / "neuron-fabric-export"


def _export(*args, cwd=None):
    return subprocess.run([str(EXPORT), *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize("args,named", [
    (["--regions", "17"], "17"),
    (["--line-bits", "65"], "65"),
    (["--workers", "3"], "3"),
    (["--stages", "0"], "0"),
    (["--max-outstanding", "300"], "300"),
    (["--line-bits", "x"], "'x'"),
    (["--profile", "tiny"], "'tiny'"),
])
def test_bad_parameter_is_one_line(args, named, tmp_path):
    proc = _export(*args, "--out-dir", str(tmp_path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("neuron-fabric-export: error:") and named in lines[0]
    assert proc.stdout == "" and not list(tmp_path.iterdir())


def test_unwritable_out_dir_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    proc = _export("--line-bits", "64", "--no-top", "--out-dir", str(blocker / "sub"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert str(blocker / "sub") in lines[0]


def test_unusable_cache_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    out = tmp_path / "out"
    proc = _export("--line-bits", "64", "--no-top", "--out-dir", str(out),
                   "--cache", str(blocker / "cache"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert str(blocker / "cache") in lines[0]
    assert not out.exists(), "nothing may be written on error"


@pytest.mark.parametrize("value, message", [("0", "must be at least 1, not 0"),
                                            ("-3", "must be at least 1, not -3"),
                                            ("two", "must be an integer, not 'two'")])
def test_jobs_below_one_or_not_an_integer_is_one_line(value, message, capsys):
    from neuron_fabric.contract.cli import ArgumentParser
    ap = ArgumentParser(prog="prog")
    ap.add_jobs()
    with pytest.raises(SystemExit) as exit_:
        ap.parse_args(["--jobs", value])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"prog: error: argument --jobs: {message}\n"


def test_jobs_default_and_value():
    from neuron_fabric.contract.cli import ArgumentParser
    ap = ArgumentParser(prog="prog")
    ap.add_jobs(default=3)
    assert ap.parse_args([]).jobs == 3 and ap.parse_args(["--jobs", "1"]).jobs == 1
