"""The Verilog export: command line, errors, and the port list of contract v2
section 3 for every parameter set."""

import itertools
import re
import os
import subprocess
import sys
import pathlib

import pytest

from neuron_fabric.contract.facts import LINE_BITS_CHOICES, PROFILES, WORKERS_CHOICES
from neuron_fabric.contract.facts import DATAPATH_MODULE

EXPORT = pathlib.Path(sys.executable).parent / "neuron-fabric-export"


def spec_ports(line_bits, workers):
    """contract section 3 (v2), typed from the contract text: name -> (direction, width)."""
    return {
        "clk": ("input", 1), "rst": ("input", 1),
        "in_valid": ("input", 1), "in_ready": ("output", 1),
        "in_data": ("input", line_bits), "in_tag": ("input", 16),
        "in_mode": ("input", 2), "in_format": ("input", 2), "in_gate_kind": ("input", 1),
        "in_gate_mask": ("input", line_bits // workers), "in_gate_threshold": ("input", 5),
        "out_valid": ("output", 1), "out_ready": ("input", 1),
        "out_data": ("output", line_bits), "out_tag": ("output", 16),
    }


_MODULE = re.compile(r"^module\s+\\?([\w.$]+)\s*\(([^;]*)\);", re.M)
_DECL = re.compile(r"^\s*(input|output)\s+(?:wire\s+|reg\s+)?(?:\[(\d+):(\d+)\]\s*)?\\?(\w+)\s*;",
                   re.M)


def module_ports(text, module):
    """Ports of ``module`` in Verilog ``text``: name -> (direction, width)."""
    headers = {m.group(1): m for m in _MODULE.finditer(text)}
    assert module in headers, f"no module {module}; found {sorted(headers)}"
    header = headers[module]
    body = text[header.end():text.index("endmodule", header.end())]
    names = [n.strip().lstrip("\\") for n in header.group(2).split(",")]
    ports = {}
    for direction, msb, lsb, name in _DECL.findall(body):
        assert lsb in ("", "0"), f"{name}: range [{msb}:{lsb}]"
        ports[name] = (direction, int(msb) + 1 if msb else 1)
    assert sorted(names) == sorted(ports), (names, sorted(ports))
    return ports


def test_help():
    proc = subprocess.run([str(EXPORT), "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    for option in ("--line-bits", "--workers", "--stages", "--profile", "--out-dir"):
        assert option in proc.stdout


@pytest.mark.parametrize("args,quoted", [
    (["--line-bits", "100"], "100"),
    (["--workers", "5"], "5"),
    (["--stages", "0"], "0"),
    (["--stages", "9"], "9"),
    (["--profile", "tiny"], "tiny"),
    (["--line-bits", "wide"], "wide"),
])
def test_bad_parameters_exit_2(tmp_path, args, quoted):
    proc = subprocess.run([str(EXPORT), *args, "--out-dir", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "error" in proc.stderr and quoted in proc.stderr
    assert not list(tmp_path.iterdir()), "nothing may be written on error"


def test_cli_writes_the_datapath(tmp_path):
    proc = subprocess.run([str(EXPORT), "--no-top", "--line-bits", "64", "--workers", "4",
                           "--stages", "1", "--out-dir", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "neuron_fabric_datapath.v").read_text()
    assert module_ports(text, DATAPATH_MODULE) == spec_ports(64, 4)
    # the mode any new file gets under the umask (0644 under 022), not 0600
    mask = os.umask(0o022)
    os.umask(mask)
    assert (tmp_path / "neuron_fabric_datapath.v").stat().st_mode & 0o777 == 0o666 & ~mask


def test_cli_version_and_unwritable_folder(tmp_path):
    from importlib.metadata import version
    proc = subprocess.run([str(EXPORT), "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == \
        f"neuron-fabric-export {version('neuron-fabric')}"
    (tmp_path / "plain").write_text("")
    proc = subprocess.run([str(EXPORT), "--no-top", "--line-bits", "64", "--workers", "4",
                           "--stages", "1", "--out-dir", str(tmp_path / "plain" / "v")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "is a file, not a folder" in proc.stderr


QUICK = [(64, 4, 1, "full"), (512, 8, 5, "full"), (512, 8, 5, "paper"), (1024, 16, 8, "full")]
SWEEP = sorted(
    {(lb, w, 5, "full") for lb, w in itertools.product(LINE_BITS_CHOICES, WORKERS_CHOICES)}
    | {(512, 8, s, "full") for s in range(1, 9)}
    | {(lb, w, 5, "paper") for lb, w in itertools.product(LINE_BITS_CHOICES, WORKERS_CHOICES)}
    - set(QUICK))
assert set(PROFILES) == {"full", "paper"}


@pytest.mark.parametrize("line_bits,workers,stages,profile", QUICK + [
    pytest.param(*params, marks=pytest.mark.slow) for params in SWEEP])
def test_ports_match_spec(export_datapath, line_bits, workers, stages, profile):
    text = export_datapath(line_bits, workers, stages, profile).read_text()
    assert module_ports(text, DATAPATH_MODULE) == spec_ports(line_bits, workers)


def test_cli_cache_gives_the_direct_export(tmp_path):
    """--cache: the first run keeps the export, the second reads it back; both
    write what an export without the cache writes."""
    args = [str(EXPORT), "--no-top", "--line-bits", "64", "--workers", "4", "--stages", "1"]
    for out in ("direct", "first", "second"):
        cache = [] if out == "direct" else ["--cache", str(tmp_path / "cache")]
        proc = subprocess.run([*args, "--out-dir", str(tmp_path / out), *cache],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    kept = list((tmp_path / "cache").glob("datapath_verilog-*.v"))
    assert len(kept) == 1
    direct = (tmp_path / "direct" / "neuron_fabric_datapath.v").read_text()
    for out in ("first", "second"):
        assert (tmp_path / out / "neuron_fabric_datapath.v").read_text() == direct


def test_cache_reuses_by_parameters_and_sources(tmp_path, monkeypatch):
    """An export runs once per parameter set; a change in the sources' digest
    runs it again."""
    from neuron_fabric.hdl.export import verilog as export_module
    calls = []

    def fake_verilog(**params):
        calls.append(params)
        return f"// {sorted(params.items())}\n"

    cache = tmp_path / "cache"
    first = export_module.cached_verilog(fake_verilog, cache, line_bits=64,
                                         profile=PROFILES["full"])
    again = export_module.cached_verilog(fake_verilog, cache, line_bits=64,
                                         profile=PROFILES["full"])
    other = export_module.cached_verilog(fake_verilog, cache, line_bits=128,
                                         profile=PROFILES["full"])
    assert first == again and other != first and len(calls) == 2
    by_name = export_module.cached_verilog(fake_verilog, cache, line_bits=64, profile="full")
    assert by_name == first and len(calls) == 2, "a profile's name and its Profile: one entry"
    def with_default(*, line_bits=64, profile="full"):
        calls.append(line_bits)
        return f"// {line_bits}\n"
    named = export_module.cached_verilog(with_default, cache, line_bits=64, profile="full")
    bare = export_module.cached_verilog(with_default, cache)
    assert bare == named and calls[-1] == 64 and len(calls) == 3, \
        "a parameter at its default and the same parameter left out: one entry"
    del calls[-1]
    monkeypatch.setattr(export_module, "_sources_digest", lambda: "edited sources")
    export_module.cached_verilog(fake_verilog, cache, line_bits=64, profile=PROFILES["full"])
    assert len(calls) == 3
