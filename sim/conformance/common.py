"""Shared pieces of the conformance benches (written from the contract only).

* ``lane_ref`` / ``line_ref``: reference of contract section 2 (lane semantics),
  written from the contract text, independent of the project's golden model.
* ``export`` / ``run_module_once``: export one parameter set under
  ``build/conformance/<config>/`` and run a cocotb module on it once per
  pytest session (shared between xdist workers through a file lock), with
  the project's one runner (:mod:`.toolchain`: shared simulator builds,
  parameters through ``bench_params``), then report per-cocotb-test results
  so that each one can be its own pytest item.
* ``spec_test``: ``cocotb.test`` that first hands the run's parameters to
  the bench (read when a test starts, not at import).
"""

import functools
import os
import pathlib
import shutil
import subprocess
import sys
import uuid
from xml.etree import ElementTree

from neuron_fabric.contract.paths import BUILD, REPO, VERILOG_CACHE
from neuron_fabric.sim.toolchain import bench_params, build_bench, file_lock, run_bench

CONF_BUILD = BUILD / "conformance"

# ---------------------------------------------------------------- contract 2 ----
# Deliberate clean-room copy of contract section 2, independent of host/golden/
# (the conformance benches check the design against the contract alone).

MODE_BYPASS, MODE_IDENTITY, MODE_GBINARY, MODE_GTERNARY = 0, 1, 2, 3
FMT_COUNT, FMT_MARGIN, FMT_SIGN = 0, 1, 2
GATE_PATTERN, GATE_MARGIN = 0, 1


def lane_ref(lane, i, w, mode, fmt, kind, period, keep, thresh, phase):
    """Output lane ``i`` (value ``lane``, W bits) per contract section 2."""
    mask = (1 << w) - 1
    lane &= mask
    if mode in (MODE_BYPASS, MODE_IDENTITY):
        return lane
    c = bin(lane).count("1")
    a = 2 * c - w
    if mode == MODE_GBINARY:
        m = 1
    elif kind == GATE_PATTERN:
        n = (phase + i) % period
        m = 0 if n >= keep else 1
    else:
        m = 1 if abs(a) >= thresh else 0
    cg = c if m else w // 2
    ag = a if m else 0
    if fmt == FMT_COUNT:
        out = cg
    elif fmt == FMT_MARGIN:
        out = ag
    elif fmt == FMT_SIGN:
        out = (ag > 0) - (ag < 0)
    else:
        raise ValueError("format 3 is invalid")
    return out & mask


def line_ref(data, line_bits, w, mode, fmt, kind, period, keep, thresh, phase):
    """Whole output line per contract section 2 (lane i = bits [i*W, (i+1)*W))."""
    if mode in (MODE_BYPASS, MODE_IDENTITY):
        return data
    mask = (1 << w) - 1
    out = 0
    for i in range(line_bits // w):
        lane = (data >> (i * w)) & mask
        out |= lane_ref(lane, i, w, mode, fmt, kind, period, keep, thresh, phase) << (i * w)
    return out


# ------------------------------------------------------------- runners ----

def port_mismatches(dut, ports):
    """Ports of ``ports`` (name -> width) that ``dut`` lacks or has at another width."""
    bad = []
    for name, width in ports.items():
        h = getattr(dut, name, None)
        if h is None:
            bad.append(f"{name}: missing")
        elif len(h) != width:
            bad.append(f"{name}: width {len(h)}, expected {width}")
    return bad


def conformance_params(configs, tests, cfg_id, xfail, sim_index, slow_index):
    """pytest parameters (config x cocotb test), with slow, Icarus-skip and
    strict expected-failure marks.  The tests of one config share one
    simulation (:func:`run_module_once`), so they form one xdist group
    (``--dist loadgroup``): one worker runs it while the other goes on."""
    import pytest  # deferred: the runner side only
    out = []
    for c in configs:
        for t in tests:
            marks = [pytest.mark.xdist_group(cfg_id(c))]
            if c[slow_index]:
                marks.append(pytest.mark.slow)
            if c[sim_index] == "icarus" and not shutil.which("iverilog"):
                marks.append(pytest.mark.skip(reason="iverilog not installed"))
            reason = xfail.get((cfg_id(c), t)) or xfail.get(("*", t))
            if reason:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            out.append(pytest.param(c, t, id=f"{cfg_id(c)}-{t}", marks=marks))
    return out


def _session_id():
    # shared by all xdist workers of one pytest run
    return os.environ.get("PYTEST_XDIST_TESTRUNUID") or os.environ.setdefault(
        "CONFORMANCE_RUN_ID", uuid.uuid4().hex)


def _verilog_dir(name):
    return CONF_BUILD / name / "verilog"


def export(name, *, line_bits, workers, stages, regions=None, max_outstanding=None,
           top=False):
    """Export one parameter set into build/conformance/<name>/verilog."""
    out = _verilog_dir(name)
    exe = pathlib.Path(sys.executable).parent / "neuron-fabric-export"
    cmd = [str(exe), "--line-bits", str(line_bits), "--workers", str(workers),
           "--stages", str(stages), "--out-dir", str(out),
           # the project's Verilog cache: one export of a parameter set per
           # session whichever test asks for it first
           "--cache", str(VERILOG_CACHE)]
    if top:
        cmd += ["--regions", str(regions), "--max-outstanding", str(max_outstanding)]
    else:
        cmd += ["--no-top"]
    subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=REPO)
    return out


def _parse_results(xml_path):
    results = {}
    if not xml_path.is_file():
        return results
    for case in ElementTree.parse(xml_path).getroot().iter("testcase"):
        name = case.get("name")
        bad = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None
        msg = ""
        for tag in ("failure", "error"):
            el = case.find(tag)
            if el is not None:
                msg = (el.get("message") or "") + "\n" + (el.text or "")
        results[name] = ("skipped" if skipped else ("failed" if bad else "passed"), msg)
    return results


def run_module_once(*, name, export_kwargs, toplevel, sources, test_module,
                    simulator, params):
    """Export, build and run ``test_module`` once per pytest session.

    ``params`` reach the bench through ``bench_params``.  Returns
    ``{cocotb_test_name: (status, message)}``.  All cocotb tests of the
    module run in one simulation; concurrent callers (xdist workers) wait
    on a lock and reuse the results.
    """
    base = CONF_BUILD / name
    run_dir = base / simulator
    marker = base / f"{simulator}.done"
    exported = base / "export.done"
    sid = _session_id()
    # the export is shared by the simulators of a parameter set; each
    # simulator's build and run has a lock of its own, so that the two
    # simulators of one set run side by side on two workers
    with file_lock(base / "export.lock"):
        if not (exported.is_file() and exported.read_text() == sid):
            export(name, **export_kwargs)
            exported.write_text(sid)
    vdir = _verilog_dir(name)
    with file_lock(base / f"{simulator}.lock"):
        if marker.is_file() and marker.read_text() == sid:
            return _parse_results(run_dir / "results.xml")
        build = build_bench([vdir / s for s in sources], toplevel, simulator)
        results = run_bench(build=build, toplevel=toplevel, test_module=test_module,
                            simulator=simulator, run_dir=run_dir, params=params)
        marker.write_text(sid)
        return _parse_results(results)


def spec_test(configure):
    """Decorator factory: ``cocotb.test`` whose body runs after
    ``configure(bench_params())`` has set the bench's parameters."""
    import cocotb  # deferred: inside the simulator only

    def decorate(body):
        @functools.wraps(body)
        async def test(dut):
            configure(bench_params())
            await body(dut)
        return cocotb.test()(test)
    return decorate


def check_result(results, testname, where):
    """pytest-side assertion for one cocotb test of a shared run."""
    assert testname in results, (
        f"cocotb test {testname} did not run (simulation crashed?); see {where}")
    status, msg = results[testname]
    assert status == "passed", f"{testname}: {status}\n{msg[:4000]}"
