"""No traceback from any command-line tool.

Every entry point (``neuron-fabric-export`` and each ``python -m
neuron_fabric.{host,sim,synth}.*`` module with a ``__main__``) is fed a
run forced to fail inside (an internal function monkeypatched to raise):
exactly one line comes out on stderr, naming the command and its
parameter set and saying it is a bug to report, exit status 70 (the one
wrapper, ``contract/cli.py`` ``guarded``).  A parameter outside contract
section 1 is the user's error: one line ``<prog>: error: ...``, status 2.
The help of the commands that take parameters states the legal space and
the refused combinations from ``contract/facts.py``.
"""

import ast
import importlib
import subprocess
import sys

import pytest

from neuron_fabric.contract import cli, facts
from neuron_fabric.hdl.export import verilog as export
from neuron_fabric.contract.paths import REPO

FAILURE = "forced failure for the test"

#: ``(module, argv, function made to fail, text the line must name)``;
#: ``{tmp}`` in argv is a scratch folder.
CASES = [
    ("neuron_fabric.hdl.export.verilog",
     ["--line-bits", "64", "--workers", "16", "--no-top", "--out-dir", "{tmp}"],
     "neuron_fabric.hdl.export.verilog.datapath_verilog", "LINE_BITS=64 WORKERS=16"),
    ("neuron_fabric.experiments.pilots", ["--quick", "--out", "{tmp}"],
     "neuron_fabric.experiments.pilots.cli.run_pilots", "quick=True"),
    ("neuron_fabric.contract.regmap", ["{tmp}/registers.md"],
     "neuron_fabric.contract.regmap.markdown", "registers.md"),
    ("neuron_fabric.experiments.train.__main__",
     ["--task", "digits", "--policy", "fp32", "--steps", "1", "--no-progress"],
     "neuron_fabric.experiments.train.__main__.train", "task='digits'"),
    ("neuron_fabric.experiments.train.experiments", ["--quick", "--out", "{tmp}"],
     "neuron_fabric.experiments.train.experiments.run_all", "quick=True"),
    ("neuron_fabric.experiments.train.batch64", ["--quick", "--jobs", "1", "--out", "{tmp}"],
     "neuron_fabric.experiments.train.batch64.run", "quick=True"),
    ("neuron_fabric.experiments.train.evidence", ["--quick", "--jobs", "1", "--out", "{tmp}"],
     "neuron_fabric.experiments.train.evidence.run", "quick=True"),
    ("neuron_fabric.experiments.ddp.race", ["--quick", "--out", "{tmp}"],
     "neuron_fabric.experiments.ddp.race.run", "quick=True"),
    ("neuron_fabric.experiments.hierarchy.report", ["--quick", "--out", "{tmp}"],
     "neuron_fabric.experiments.hierarchy.report.run_all", "quick=True"),
    ("neuron_fabric.sim.bench_golden", ["--mib", "1", "--repeat", "1", "--out", "{tmp}/b.json"],
     "neuron_fabric.sim.bench_golden.bench", "mib=1"),
    ("neuron_fabric.sim.bench_runtime", ["--mib", "1", "--repeat", "1", "--out", "{tmp}/b.json"],
     "neuron_fabric.sim.bench_runtime.bench", "mib=1"),
    ("neuron_fabric.sim.cocotb_train", ["--quick", "--line-bits", "64", "--out", "{tmp}"],
     "neuron_fabric.sim.cocotb_train.run_train_rtl", "line_bits=64"),
    ("neuron_fabric.sim.configs", ["--only", "L64_W16_S1_R0_O4_full", "--out", "{tmp}"],
     "neuron_fabric.sim.configs.run_config", "only=['L64_W16_S1_R0_O4_full']"),
    ("neuron_fabric.sim.envelope.report", ["--quick", "--out", "{tmp}"],
     "neuron_fabric.sim.envelope.report.build", "quick=True"),
    ("neuron_fabric.sim.envelope.rtl", ["--verilog", "{tmp}/top.v", "--quick", "--out", "{tmp}"],
     "neuron_fabric.sim.envelope.rtl.measure", "top.v"),
    ("neuron_fabric.sim.formal_datapath", ["lane", "64", "4", "2"],
     "neuron_fabric.sim.formal_datapath.write_job", "line_bits=64"),
    ("neuron_fabric.sim.formal_hierarchy", ["64", "4", "2", "1", "0"],
     "neuron_fabric.sim.formal_hierarchy.write_job", "line_bits=64"),
    ("neuron_fabric.sim.functional", ["--line-bits", "64", "--stages", "2", "--elements", "16"],
     "neuron_fabric.sim.functional.export_top", "stages=2"),
    ("neuron_fabric.sim.latency", ["--line-bits", "64", "--profile", "paper"],
     "neuron_fabric.sim.latency.measure", "profile='paper'"),
    ("neuron_fabric.sim.lint", ["{tmp}"], "neuron_fabric.sim.lint._files", "paths="),
    ("neuron_fabric.synth.endpoints",
     ["--line-bits", "64", "--profiles", "paper", "--smoke", "--jobs", "1"],
     "neuron_fabric.synth.flowlib.settings", "line_bits=[64]"),
    ("neuron_fabric.synth.ge", [], "neuron_fabric.synth.ge.estimate", "python -m"),
    ("neuron_fabric.synth.generic", ["--line-bits", "64", "--profiles", "paper", "--jobs", "1"],
     "neuron_fabric.synth.flowlib.settings", "profiles=['paper']"),
    ("neuron_fabric.synth.report", [], "neuron_fabric.synth.report.load", "python -m"),
    ("neuron_fabric.synth.route",
     ["--line-bits", "64", "--profiles", "paper", "--smoke", "--jobs", "1"],
     "neuron_fabric.synth.flowlib.settings", "smoke=True"),
    ("neuron_fabric.synth.sky130",
     ["--line-bits", "64", "--profiles", "paper", "--no-top", "--jobs", "1"],
     "neuron_fabric.synth.sky130.measure", "no_top=True"),
    ("neuron_fabric.sim.figures", ["--reports", "{tmp}", "--readme", "{tmp}/top.v"],
     "neuron_fabric.sim.figures.update", "top.v"),
    ("neuron_fabric.contract.regmap_files", ["--json", "{tmp}/regs.json"],
     "neuron_fabric.contract.regmap_files.json_text", "regs.json"),
    ("neuron_fabric.hdl.export.fusesoc_gen", ["{tmp}/top.v"],
     "neuron_fabric.hdl.export.fusesoc_gen.generate", "top.v"),
    ("neuron_fabric.hdl.export.release", ["--line-bits", "64", "--workers", "4", "--out", "{tmp}"],
     "neuron_fabric.hdl.export.release.build_release", "L64_W4_S5_R8_O32"),
    ("neuron_fabric.hdl.export.ports", ["{tmp}/x.md"],
     "neuron_fabric.hdl.export.ports.port_table", "x.md"),
    ("neuron_fabric.experiments.ddp.bench", ["--elements", "64", "--out", "{tmp}"],
     "neuron_fabric.experiments.ddp.bench.bench", "elements=64"),
    ("neuron_fabric.experiments.ddp.report", ["--quick", "--out", "{tmp}"],
     "neuron_fabric.experiments.ddp.report.run_torchrun", "quick=True"),
    ("neuron_fabric.experiments.ddp.train", ["--hook", "fp32"],
     "neuron_fabric.experiments.ddp.train.init_from_env", "hook='fp32'"),
    ("neuron_fabric.synth.summary",
     ["--line-bits", "64", "--profiles", "paper", "--no-top", "--smoke", "--jobs", "1"],
     "neuron_fabric.synth.flowlib.settings", "line_bits=64"),
]

#: Packages whose ``__main__`` runs another module's ``main`` on import.
_RUNS_ON_IMPORT = {"neuron_fabric.sim.envelope.__main__": "neuron_fabric.sim.envelope.report",
                   "neuron_fabric.hdl.export.__main__": "neuron_fabric.hdl.export.verilog",
                   "neuron_fabric.experiments.pilots.__main__": "neuron_fabric.experiments.pilots"}


#: Modules that run as a process but are no command of their own: the DDP
#: launcher's child reports every exception to its parent, which raises it.
_NOT_COMMANDS = {"neuron_fabric.host.ddp.launch"}


def _entry_points():
    """Every module of the project that runs as a command (``__main__``)."""
    folders = {f: f"neuron_fabric.{f}" for f in
               ("contract", "models", "hdl", "host", "experiments", "sim", "synth")}
    found = set()
    for folder, package in folders.items():
        for path in (REPO / folder).rglob("*.py"):
            text = path.read_text()
            if path.name != "__main__.py" and "__main__" not in text:
                continue
            tree = ast.parse(text)
            if path.name != "__main__.py" and not any(
                    isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
                    for node in tree.body):
                continue
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            name = ".".join((package, *parts))
            found.add(_RUNS_ON_IMPORT.get(name, name))
    return found - _NOT_COMMANDS


def _prog(module):
    if module == "neuron_fabric.hdl.export.verilog":
        return "neuron-fabric-export"
    if module == "neuron_fabric.hdl.export.fusesoc_gen":
        return "neuron_fabric_gen"
    if module == "neuron_fabric.contract.regmap_files":
        return "neuron-fabric-regmap"
    if module == "neuron_fabric.sim.envelope.report":
        return "python -m neuron_fabric.sim.envelope"
    return "python -m " + module.removesuffix(".__main__")


def test_every_entry_point_has_a_case():
    assert _entry_points() == {module for module, *_ in CASES}


@pytest.mark.parametrize("module, argv, target, named", CASES, ids=[c[0] for c in CASES])
def test_internal_failure_is_one_line(module, argv, target, named, tmp_path, monkeypatch,
                                      capsys):
    from neuron_fabric.synth import flowlib
    (tmp_path / "top.v").write_text("module neuron_fabric; endmodule\n")
    (tmp_path / "synth.json").write_text("[{}]\n")
    monkeypatch.setattr(flowlib, "REPORTS", tmp_path)       # (ge reads synth.json there)
    main = importlib.import_module(module).main
    owner, name = target.rsplit(".", 1)

    def fail(*args, **kwargs):
        raise RuntimeError(FAILURE)

    monkeypatch.setattr(importlib.import_module(owner), name, fail)
    status = main([arg.format(tmp=tmp_path) for arg in argv])
    out, err = capsys.readouterr()
    assert status == cli.INTERNAL_ERROR, (status, out, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith(f"{_prog(module)}: internal error with "), line
    assert named in line and f"RuntimeError: {FAILURE}" in line, line
    assert "this is a bug; please report it" in line, line
    assert "Traceback" not in out + err


def test_export_console_script_prints_no_traceback(tmp_path):
    """The installed command, failing inside a real process."""
    code = ("import sys, neuron_fabric.hdl.export.verilog as export\n"
            "def fail(**kwargs):\n"
            f"    raise IndexError({FAILURE!r})\n"
            "export.top_verilog = fail\n"
            "sys.exit(export.main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", code, "--line-bits", "128", "--workers", "4",
                           "--out-dir", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == cli.INTERNAL_ERROR
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert ("neuron-fabric-export: internal error with LINE_BITS=128 WORKERS=4 STAGES=5 "
            "REGIONS=8 MAX_OUTSTANDING=32 profile=full: IndexError") in proc.stderr
    assert not (tmp_path / "neuron_fabric.v").exists()


@pytest.mark.parametrize("module, argv", [
    ("neuron_fabric.synth.route", ["--line-bits", "65", "--smoke", "--jobs", "1"]),
    ("neuron_fabric.synth.generic", ["--line-bits", "64", "--profiles", "tiny", "--jobs", "1"]),
    ("neuron_fabric.sim.formal_datapath", ["lane", "64", "3", "2"]),
    ("neuron_fabric.sim.latency", ["--line-bits", "96"]),
])
def test_parameter_outside_the_space_is_a_usage_error(module, argv, capsys):
    with pytest.raises(SystemExit) as stop:
        status = importlib.import_module(module).main(argv)
        raise SystemExit(status)
    out, err = capsys.readouterr()
    assert stop.value.code == 2
    assert err.count("\n") == 1 and err.startswith(f"{_prog(module)}: error: "), err
    assert "internal error" not in err and "Traceback" not in out + err
    assert any(bad in err for bad in ("65", "tiny", "3", "96"))


def test_help_states_the_legal_space_and_refusals(monkeypatch):
    """The help text follows contract/facts.py: the ranges, and a refused
    combination once facts names one."""
    text = " ".join(export._parser().format_help().split())
    for value in (*facts.LINE_BITS_CHOICES, *facts.WORKERS_CHOICES):
        assert str(value) in text
    for rng in (facts.STAGES_RANGE, facts.REGIONS_RANGE, facts.MAX_OUTSTANDING_RANGE):
        assert f"{rng.start}..{rng.stop - 1}" in text
    assert "Refused combinations: none" in text
    monkeypatch.setattr(facts, "REFUSED_COMBINATIONS",
                        (("LINE_BITS 64 with WORKERS 16", "a reason for the test"),))
    monkeypatch.setattr(facts, "STAGES_RANGE", range(2, 7))
    text = " ".join(export._parser().format_help().split())
    assert "Refused combinations: LINE_BITS 64 with WORKERS 16: a reason for the test." in text
    assert "STAGES 2..6" in text


@pytest.mark.parametrize("module", ["neuron_fabric.synth.route", "neuron_fabric.sim.functional",
                                    "neuron_fabric.sim.configs", "neuron_fabric.sim.latency"])
def test_flows_that_take_parameters_state_the_legal_space(module, capsys):
    with pytest.raises(SystemExit):
        importlib.import_module(module).main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Legal parameter space (contract section 1)" in text
    assert "Refused combinations:" in text
