"""The FuseSoC core of the IP (``neuron_fabric.core``) and its generator
(``hdl/export/fusesoc_gen.py``).

FuseSoC itself reads the core (``core-info``, ``gen list``) and runs the
lint target and an integrator's core through the generator; the files it
lints are checked against the project's own export, and the waivers are
the generated ``.vlt`` scoped to the exported files, no global option.
"""

import os
import pathlib
import subprocess
import sys
import tomllib

import pytest
import yaml

from neuron_fabric.contract import regmap_files
from neuron_fabric.contract.facts import TopParams
from neuron_fabric.contract.paths import VERILOG_CACHE
from neuron_fabric.hdl.export import fusesoc_gen, integration
from neuron_fabric.hdl.export.verilog import cached_verilog, top_verilog
from neuron_fabric.sim.tb_top import SMALL_TOP
from neuron_fabric.sim.toolchain import verilator_env

ROOT = pathlib.Path(__file__).resolve().parents[3]
CORE = ROOT / "neuron_fabric.core"
VLNV = "neuron-fabric:ip:neuron_fabric"
FUSESOC = pathlib.Path(sys.executable).parent / "fusesoc"
needs_fusesoc = pytest.mark.skipif(not FUSESOC.is_file(), reason="fusesoc is not installed")


def _fusesoc(tmp_path, *args, cores=()):
    """Run FuseSoC with a configuration of its own (cache under ``tmp_path``,
    the checkout's build, venv and git folders not searched for cores)."""
    conf = tmp_path / "fusesoc.conf"
    ignored = " ".join(str(ROOT / d) for d in (".venv", "build", ".git"))
    conf.write_text(f"[main]\ncache_root = {tmp_path / 'cache'}\nignored_dirs = {ignored}\n")
    roots = [arg for root in (ROOT, *cores) for arg in ("--cores-root", str(root))]
    env = dict(os.environ, **verilator_env())
    # the generator's python3: this one (neuron-fabric and PyYAML installed)
    env["PATH"] = f"{pathlib.Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return subprocess.run([str(FUSESOC), "--config", str(conf), *roots, *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True)


def _core():
    return yaml.safe_load(CORE.read_text())


def test_core_version_is_the_package_version():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert CORE.read_text().startswith("CAPI=2:\n")
    assert _core()["name"] == f"{VLNV}:{version}"


def test_lint_targets_waive_nothing_globally():
    """The waivers come with the generated files (a .vlt scoped to them),
    not as global options that would hide a wrapper's mistakes."""
    targets = _core()["targets"]
    linted = [name for name, target in targets.items() if target.get("flow") == "lint"]
    assert linted == ["lint", "lint_small"]
    for name in linted:
        options = targets[name]["flow_options"]
        assert options["tool"] == "verilator"
        assert options["verilator_options"] == ["-Wall"], name


def test_generator_refuses_a_package_of_another_release(tmp_path):
    core = tmp_path / "neuron_fabric.core"
    core.write_text(CORE.read_text().replace(f"name: {VLNV}:", f"name: {VLNV}:0.0.1+"))
    with pytest.raises(fusesoc_gen.GeneratorError, match="the core .* is version 0.0.1\\+"):
        fusesoc_gen.check_package(core)
    fusesoc_gen.check_package(CORE)              # (this checkout's: the same release)


def test_generator_without_the_package_says_what_to_install(tmp_path):
    """Run under a Python that has no neuron-fabric (isolated: no site
    packages, the checkout not on its path): one line, no traceback."""
    proc = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "hdl/export/fusesoc_gen.py"),
                           "input.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("neuron_fabric_gen: error: the python3 on PATH")
    assert "cannot import" in lines[0] and "Traceback" not in proc.stderr


def test_generator_instance_parameters_are_the_defaults():
    params, no_top = fusesoc_gen.read_parameters(
        _core()["generate"]["neuron_fabric_verilog"]["parameters"])
    assert params == TopParams() and not no_top


@needs_fusesoc
def test_fusesoc_reads_the_core(tmp_path):
    info = _fusesoc(tmp_path, "core-info", VLNV)
    assert info.returncode == 0, info.stderr
    assert "lint_small" in info.stdout and "Core root:   " + str(ROOT) in info.stdout
    gens = _fusesoc(tmp_path, "gen", "list")
    assert gens.returncode == 0, gens.stderr
    assert "neuron_fabric_gen" in gens.stdout


@pytest.mark.parametrize("parameters,message", [
    ({"LINE_BITS": 48}, "LINE_BITS must be one of (64, 128, 256, 512, 1024), not 48"),
    ({"LINE_BIT": 64}, "unknown parameter LINE_BIT (known: LINE_BITS, WORKERS, STAGES, "
                       "REGIONS, MAX_OUTSTANDING, PROFILE, NO_TOP)"),
    ({"REGIONS": "4"}, "REGIONS must be an integer, not '4'"),
    ({"PROFILE": "tiny"}, "PROFILE must be one of full, paper, not 'tiny'"),
    ({"NO_TOP": "yes"}, "NO_TOP must be true or false, not 'yes'"),
    ({"MAX_OUTSTANDING": 300}, "MAX_OUTSTANDING must be in 4..256, not 300"),
])
def test_bad_parameter_fails_the_generator_naming_it(tmp_path, capsys, parameters, message):
    gapi = tmp_path / "input.yml"
    gapi.write_text(yaml.safe_dump({"gapi": "1.0", "vlnv": "a:b:c-d:1", "files_root": "/",
                                    "parameters": parameters}))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert fusesoc_gen.main([str(gapi)]) == 1
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert err == f"neuron_fabric_gen: error: {message}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.yml"]   # nothing exported


def _generated(work):
    """The generated core's folder in a FuseSoC work root and its core."""
    cores = list((work / "generator_cache").rglob("*.core"))
    assert len(cores) == 1, cores
    return cores[0].parent, yaml.safe_load(cores[0].read_text())


@needs_fusesoc
@pytest.mark.slow
def test_lint_small_target_lints_the_exported_top(tmp_path):
    work = tmp_path / "work"
    run = _fusesoc(tmp_path, "run", "--target", "lint_small", "--work-root", str(work), VLNV)
    assert run.returncode == 0, run.stdout + run.stderr
    folder, core = _generated(work)
    assert core["targets"]["default"] == {"filesets": ["rtl", "regmap"], "toplevel": "neuron_fabric"}
    listed = [name for fs in core["filesets"].values() for entry in fs["files"] for name in entry]
    assert sorted(listed) == sorted(p.name for p in folder.iterdir() if p.suffix not in (".core", ".yml"))
    # what FuseSoC handed Verilator: the project's own export of the benches' top
    expected = cached_verilog(top_verilog, VERILOG_CACHE, line_bits=SMALL_TOP.line_bits,
                              workers=SMALL_TOP.workers, stages=SMALL_TOP.stages,
                              regions=SMALL_TOP.regions,
                              max_outstanding=SMALL_TOP.max_outstanding)
    linted = list((work / "src").rglob("neuron_fabric.v"))
    assert len(linted) == 1 and linted[0].read_text() == expected
    vc = next(work.glob("*.vc")).read_text().split()
    assert "--lint-only" in vc and "-Wall" in vc and vc[vc.index("--top-module") + 1] == \
        "neuron_fabric"
    assert not [option for option in vc if option.startswith("-Wno-")]
    assert (folder / integration.WAIVER_NAME).read_text() == integration.waiver_config()
    assert any(option.endswith(integration.WAIVER_NAME) for option in vc)
    assert (folder / integration.PARAMS_HEADER_NAME).read_text() == \
        integration.params_header(SMALL_TOP)
    assert (folder / regmap_files.HEADER_NAME).read_text() == regmap_files.c_header(SMALL_TOP)


INTEGRATOR = """CAPI=2:
name: ::nf_user:0
filesets:
  ip:
    depend: ["neuron-fabric:ip:neuron_fabric"]
generate:
  nf:
    generator: neuron_fabric_gen
    parameters: {PARAMS}
targets:
  default:
    filesets: [ip]
    generate: [nf]
    toplevel: neuron_fabric
    flow: lint
    flow_options:
      tool: verilator
      verilator_options: {OPTIONS}
"""


@needs_fusesoc
@pytest.mark.long
def test_integrator_core_chooses_the_parameters(tmp_path):
    """A core of the integrator's that depends on the IP and instantiates
    the generator with parameters of its own gets, and lints, that build."""
    params = TopParams(line_bits=64, workers=4, stages=1, regions=2, max_outstanding=4,
                       profile="paper")
    chosen = {"LINE_BITS": 64, "WORKERS": 4, "STAGES": 1, "REGIONS": 2, "MAX_OUTSTANDING": 4,
              "PROFILE": "paper"}
    options = ["-Wall"]
    user = tmp_path / "user"
    user.mkdir()
    (user / "nf_user.core").write_text(INTEGRATOR.replace("{PARAMS}", yaml.safe_dump(
        chosen, default_flow_style=True).strip()).replace("{OPTIONS}", str(options)))
    work = tmp_path / "work"
    run = _fusesoc(tmp_path, "run", "--work-root", str(work), "::nf_user:0", cores=[user])
    assert run.returncode == 0, run.stdout + run.stderr
    folder, core = _generated(work)
    text = (folder / "neuron_fabric.v").read_text()
    assert text.startswith("// neuron_fabric: LINE_BITS=64 WORKERS=4 STAGES=1 REGIONS=2 "
                           "MAX_OUTSTANDING=4 profile=paper ")
    assert text == cached_verilog(top_verilog, VERILOG_CACHE, line_bits=64, workers=4, stages=1,
                                  regions=2, max_outstanding=4, profile="paper")
    assert regmap_files.from_json((folder / regmap_files.JSON_NAME).read_text())[0] == params
