"""RTL in the loop: the exported top against the envelope model.

The cocotb bench :mod:`neuron_fabric.sim.cocotb_envelope` runs the Verilog top
``neuron_fabric`` under Verilator behind a gated AXI memory and drives the
model's closed-loop read streams, once in BYPASS and once in G-Binary.  The
model is then run with the same parameters in controller cycles:

* ``fixed_latency`` = the AXI memory's latency, bandwidth = one line per
  ``gate`` cycles, ``llc_latency`` = the streams' re-issue delay (a miss's
  LLC lookup), every read a miss, ``datapath_cycles`` = STAGES read from
  CAPS0, ``max_outstanding`` from CAPS1, one request accepted per cycle;
* ``front_end_cycles``: the top's own bypass latency, measured once per
  configuration from a single read (round trip minus lookup, gate and
  memory latency).  This is the one calibration; the batch results are
  predictions.

Command line: ``python -m neuron_fabric.sim.envelope.rtl [--out DIR] [--quick]``.
"""

import json
import pathlib
import subprocess
import sys

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import TOP_MODULE
from neuron_fabric.contract.paths import BUILD, VERILOG_CACHE
from neuron_fabric.models.envelope.model import simulate
from neuron_fabric.models.envelope.params import GiB, MiB, ServiceParams
from neuron_fabric.sim.toolchain import run_cocotb

__all__ = ["RtlConfig", "CONFIGS", "QUICK_CONFIGS", "TOLERANCE", "export_top",
           "model_for", "measure", "compare", "main"]

#: Largest accepted relative difference between RTL and model overheads.
TOLERANCE = 0.05

TOP = TOP_MODULE


def RtlConfig(name, workers, window, lines, latency, gate, lookup):
    """One traffic shape: ``lines`` reads per stream; times in cycles."""
    return {"name": name, "workers": workers, "window": window, "lines": lines,
            "latency": latency, "gate": gate, "lookup": lookup}


#: The full-LLC-miss anchor at 2 GHz: 200 ns = 400 cycles, 20 ns LLC
#: lookup = 40 cycles, 128 GiB/s = 0.93 cycles per line, which the one-line-
#: per-cycle response port rounds to 1.
CONFIGS = (
    RtlConfig("anchor (full LLC miss, 8 x 1)", 8, 1, 12, 400, 1, 40),
    RtlConfig("single stream, short latency", 1, 1, 24, 100, 1, 0),
    RtlConfig("queued, latency-bound (4 x 2)", 4, 2, 24, 150, 8, 0),
    RtlConfig("partly overlapped (8 x 2)", 8, 2, 24, 104, 8, 0),
    RtlConfig("gate-bound, hidden (8 x 4)", 8, 4, 24, 60, 12, 0),
)
QUICK_CONFIGS = (
    RtlConfig("anchor (full LLC miss, 8 x 1)", 8, 1, 3, 400, 1, 40),
    RtlConfig("single stream, short latency", 1, 1, 8, 100, 1, 0),
    RtlConfig("gate-bound, hidden (8 x 4)", 8, 4, 8, 60, 12, 0),
)


def export_top(out_dir, *args):
    """Write ``neuron_fabric.v`` into ``out_dir`` with the project's exporter
    (``args`` are passed on, e.g. ``"--line-bits", "64"``); return its path,
    or None (with the exporter's message) if it cannot."""
    out_dir = pathlib.Path(out_dir)
    proc = subprocess.run([sys.executable, "-m", "neuron_fabric.hdl.export.verilog", "--out-dir",
                           str(out_dir), "--cache", str(VERILOG_CACHE), *args],
                          capture_output=True, text=True)
    path = out_dir / f"{TOP}.v"
    if proc.returncode != 0 or not path.exists():
        return None, (proc.stdout + proc.stderr).strip() or f"no {path.name} written"
    return path, ""


def model_for(cfg, *, stages, max_outstanding, front_end):
    """The envelope model with the bench's parameters (1 cycle = 1 ns)."""
    return ServiceParams(
        workers=cfg["workers"], window=cfg["window"], line_bytes=64,
        bandwidth_gib_s=64e9 / (cfg["gate"] * GiB), fixed_latency_ns=float(cfg["latency"]),
        llc_latency_ns=float(cfg["lookup"]), llc_policy="miss",
        footprint_per_worker_bytes=16 * MiB, controller_ghz=1.0, datapath_cycles=stages,
        port_cycles_per_line=1.0, stacks=1, front_end_cycles=float(front_end),
        max_outstanding=max_outstanding, request_cycles=1.0)


def measure(verilog, configs, build_dir):
    """Run the bench on ``verilog`` (its run folder under ``build_dir``);
    return its results dict."""
    build_dir = pathlib.Path(build_dir).resolve()
    results = build_dir / "envelope_results.json"
    build_dir.mkdir(parents=True, exist_ok=True)
    results.unlink(missing_ok=True)
    run_cocotb(sources=[verilog], toplevel=TOP, test_module="neuron_fabric.sim.cocotb_envelope",
               simulator="verilator", build_dir=build_dir / "run",
               params={"configs": list(configs), "out": str(results)})
    return json.loads(results.read_text())


def compare(measured):
    """Model beside RTL for every configuration."""
    rows = []
    for cfg in measured["configs"]:
        front_end = cfg["single_bypass"] - cfg["lookup"] - cfg["gate"] - cfg["latency"]
        p = model_for(cfg, stages=measured["stages"],
                      max_outstanding=measured["max_outstanding"], front_end=front_end)
        model_off = simulate(p, cfg["lines"], datapath=False).completion_cycles
        model_on = simulate(p, cfg["lines"], datapath=True).completion_cycles
        rtl_pct = 100 * (cfg["gbinary"] - cfg["bypass"]) / cfg["bypass"]
        model_pct = 100 * (model_on - model_off) / model_off
        rows.append({
            "name": cfg["name"], "front_end_cycles": front_end,
            "single_extra_cycles": cfg["single_gbinary"] - cfg["single_bypass"],
            "rtl_bypass": cfg["bypass"], "rtl_gbinary": cfg["gbinary"],
            "model_bypass": model_off, "model_gbinary": model_on,
            "rtl_pct": rtl_pct, "model_pct": model_pct,
            "rel_diff": abs(rtl_pct - model_pct) / model_pct if model_pct else float("inf"),
        })
    return rows


def _markdown(rows, stages):
    lines = ["# RTL in the loop: exported top vs envelope model\n",
             f"Verilator, top `neuron_fabric` (STAGES = {stages} from CAPS0). Times in "
             "controller cycles; overhead = G-Binary batch vs BYPASS batch, as in the model. "
             f"Pass: relative difference <= {TOLERANCE:.0%}.\n",
             "| configuration | front end | +cycles (1 read) | RTL bypass | RTL G-Binary | "
             "model bypass | model G-Binary | RTL (%) | model (%) | rel. diff |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['front_end_cycles']} | {r['single_extra_cycles']} | "
                     f"{r['rtl_bypass']} | {r['rtl_gbinary']} | {r['model_bypass']:.0f} | "
                     f"{r['model_gbinary']:.0f} | {r['rtl_pct']:.3f} | {r['model_pct']:.3f} | "
                     f"{r['rel_diff']:.2%} |")
    return "\n".join(lines) + "\n"


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.sim.envelope.rtl",
                        description="Exported top vs the envelope model (Verilator).")
    ap.add_argument("--out", default="build/reports", help="report folder (default %(default)s)")
    ap.add_argument("--verilog", default=str(BUILD / "verilog" / f"{TOP}.v"),
                    help="exported top (default %(default)s, written by `make verilog`)")
    ap.add_argument("--quick", action="store_true", help="short batches")
    args = ap.parse_args(argv)
    verilog = pathlib.Path(args.verilog)
    if not verilog.exists():
        print(f"{verilog} not found; run `make verilog` first", file=sys.stderr)
        return 2
    measured = measure(verilog, QUICK_CONFIGS if args.quick else CONFIGS,
                       BUILD / "envelope_rtl" / "sim")
    rows = compare(measured)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    md = _markdown(rows, measured["stages"])
    (out / "envelope_rtl.md").write_text(md)
    (out / "envelope_rtl.json").write_text(json.dumps(
        {"stages": measured["stages"], "tolerance": TOLERANCE, "rows": rows}, indent=2) + "\n")
    print(md)
    bad = [r["name"] for r in rows if r["rel_diff"] > TOLERANCE]
    if bad:
        print(f"outside {TOLERANCE:.0%}: {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
