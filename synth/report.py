"""`make report`: the hardware plausibility report, ours beside the paper's.

Reads ``build/reports/{synth,route,ge,feature_cost,endpoints,sky130}.json``
(written by ``make synth``, ``make route``, ``make ge``, ``make
endpoints``, ``make sky130``) and writes
``build/reports/hardware.md`` with PNG plots next to it.

    python -m neuron_fabric.synth.report
"""

import json
import statistics
import sys

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import TOP_MODULE
from neuron_fabric.synth import flowlib
from neuron_fabric.synth import ge as ge_model
from neuron_fabric.synth import sky130 as sky130_flow

#: The paper's figures (section 10, Table 7, Fig. 8), 512 bits, five cycles.
PAPER = {
    "cells": {64: 606, 1024: 8646, 512: 4358},
    "registers_512": 1803,
    "logic_cells_512": 4358 - 1803,
    "fmax_mhz": {512: 184.88, 1024: 155.74},
    "route_target_mhz": 100,
    "ge": 24716, "area_mm2": 0.004943, "energy_pj_per_line": 6.179,
    "slack_ps_2ghz": 155,
}

#: Targets of this design (median of three seeds, WORKERS 8, STAGES 5).
TARGETS = {"fmax_512": 300.0, "fmax_every_width": 280.0,
           "paper_logic_cells_512": PAPER["logic_cells_512"], "slack_stages_max": 3}


#: Driver classes of `make endpoints` in the report's table.
_ENDPOINT_COLUMNS = ("LUT4 -> FF (DI)", "wide LUT -> FF (M)", "clock enable")


def load(stem):
    path = flowlib.REPORTS / f"{stem}.json"
    return json.loads(path.read_text()) if path.exists() else []


def median_fmax(route_rows):
    groups = {}
    for r in route_rows:
        groups.setdefault((r["profile"], r["line_bits"], r["stages"]), []).append(r["fmax_mhz"])
    return {k: (statistics.median(v), min(v), max(v), len(v)) for k, v in groups.items()}


def _pyplot():
    """matplotlib's pyplot on the Agg backend (files only, no display)."""
    import matplotlib  # deferred: plots only
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: plots only
    return plt


def plots(synth, route, ge, width_stages, stages_width, endpoints=()):
    """Draw the report's figures; return ``{figure: PNG file name}``."""
    plt = _pyplot()
    profiles = sorted({r["profile"] for r in synth})
    fmax = median_fmax(route)
    out = {"cells": _plot_cells(plt, synth, profiles, width_stages),
           "fmax": _plot_fmax(plt, fmax, profiles, width_stages),
           "stages": _plot_stages(plt, fmax, ge, profiles, stages_width)}
    if endpoints:
        out["endpoints"] = _plot_endpoints(plt, endpoints)
    return out


def _plot_cells(plt, synth, profiles, width_stages):
    fig, ax = plt.subplots(figsize=(6, 4))
    for p in profiles:
        rows = sorted((r for r in synth if r["profile"] == p and r["stages"] == width_stages),
                      key=lambda r: r["line_bits"])
        ax.plot([r["line_bits"] for r in rows], [r["cells"] for r in rows], "o-",
                label=f"{p}: cells")
        ax.plot([r["line_bits"] for r in rows], [r["logic_cells"] for r in rows], "s--",
                label=f"{p}: logic cells")
    ax.plot(list(PAPER["cells"]), list(PAPER["cells"].values()), "k^", label="paper: cells")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("LINE_BITS")
    ax.set_ylabel("Yosys/ABC generic cells")
    ax.set_title(f"Generic cells vs width (STAGES={width_stages})")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    return save(fig, "cells_vs_width.png")


def _plot_fmax(plt, fmax, profiles, width_stages):
    fig, ax = plt.subplots(figsize=(6, 4))
    for p in profiles:
        pts = sorted((lb, v) for (pr, lb, st), v in fmax.items()
                     if pr == p and st == width_stages)
        if pts:
            ax.errorbar([lb for lb, _ in pts], [v[0] for _, v in pts],
                        yerr=[[v[0] - v[1] for _, v in pts], [v[2] - v[0] for _, v in pts]],
                        fmt="o-", capsize=3, label=f"{p} (median, min-max)")
    ax.plot(list(PAPER["fmax_mhz"]), list(PAPER["fmax_mhz"].values()), "k^", label="paper")
    ax.axhline(TARGETS["fmax_512"], color="g", ls=":", label="target 300 MHz")
    ax.axhline(TARGETS["fmax_every_width"], color="g", ls="--", lw=0.8,
               label="target 280 MHz")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("LINE_BITS")
    ax.set_ylabel("ECP5 Fmax (MHz)")
    ax.set_title(f"ECP5 out-of-context Fmax vs width (STAGES={width_stages})")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    return save(fig, "fmax_vs_width.png")


def _plot_stages(plt, fmax, ge, profiles, stages_width):
    fig, ax1 = plt.subplots(figsize=(6, 4))
    ax2 = ax1.twinx()
    for p in profiles:
        pts = sorted((st, v) for (pr, lb, st), v in fmax.items()
                     if pr == p and lb == stages_width)
        if pts:
            ax1.plot([s for s, _ in pts], [v[0] for _, v in pts], "o-", label=f"{p}: Fmax")
        gp = sorted((r["stages"], r["slack_ps_2ghz"]) for r in ge
                    if r["profile"] == p and r["line_bits"] == stages_width)
        ax2.plot([s for s, _ in gp], [v for _, v in gp], "s--", label=f"{p}: GE slack")
    ax2.axhline(0, color="r", lw=0.8)
    ax1.set_xlabel("STAGES (cycles of latency)")
    ax1.set_ylabel("ECP5 Fmax, median of seeds (MHz)")
    ax2.set_ylabel("GE-model slack at 2 GHz (ps)")
    ax1.set_title(f"Fmax and 2 GHz slack vs STAGES ({stages_width} bits)")
    h1, l1 = ax1.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax1.legend(h1 + h2, l1 + l2, fontsize=7, loc="lower right")
    ax1.grid(True, alpha=0.3)
    return save(fig, "fmax_slack_vs_stages.png")


def _plot_endpoints(plt, endpoints):
    fig, axes = plt.subplots(1, len(endpoints), figsize=(5 * len(endpoints), 3.6),
                             sharey=True, squeeze=False)
    colors = {"LUT4 -> FF (DI)": "tab:blue", "LUT4 -> FF (M)": "tab:cyan",
              "wide LUT -> FF (M)": "tab:orange", "clock enable": "tab:green",
              "set/reset": "tab:purple"}
    for ax, r in zip(axes[0], endpoints):
        step = r["hist_bin_ns"]
        for c in r["classes"]:
            if c["class"] in ("FF -> FF", "other"):
                continue
            h = c["histogram"]
            ax.step([k * step for k in range(len(h))], h, where="post",
                    color=colors.get(c["class"]), label=f"{c['class']} ({c['late']} late)")
        ax.axvline(r["period_ns"], color="r", lw=0.8,
                   label=f"{r['target_mhz']} MHz period")
        ax.set_yscale("symlog", linthresh=10)
        ax.set_xlabel("arrival after the clock edge (ns)")
        ax.set_xlim(0, 6)
        what = "top, " if r.get("module") == TOP_MODULE else ""
        ax.set_title(f"{what}{r['profile']}, {r['line_bits']} bits: {r['fmax_mhz']:.0f} MHz",
                     fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    axes[0][0].set_ylabel("flip-flop inputs")
    return save(fig, "endpoint_arrivals.png")


def save(fig, name):
    fig.tight_layout()
    fig.savefig(flowlib.REPORTS / name, dpi=110)
    _pyplot().close(fig)
    return name


def check(ok):
    return "**met**" if ok else "**not met**"


def core_rows(rows):
    """The rows of the datapath core (``route.json`` and ``sky130.json`` also
    hold the top's)."""
    return [r for r in rows if r.get("module", flowlib.TOP) == flowlib.TOP]


def top_rows(rows):
    return [r for r in rows if r.get("module", flowlib.TOP) != flowlib.TOP]


def sky130_section(sky):
    """Markdown of the sky130 areas beside the GE proxy."""
    if not sky:
        return []
    L = ["## Cell area on SkyWater sky130_fd_sc_hd (`make sky130`)", ""]
    L += [f"{n}" for n in sky130_flow.notes()[:3]] + [""]
    L += ["| module | profile | LINE_BITS | area (um^2) | flip-flops (um^2) | logic (um^2) | "
          "flip-flops | area / nand2_1 | GE proxy | GE-proxy area (um^2, paper's ratio) |",
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(sky, key=lambda r: (r["module"], r["profile"], r["line_bits"])):
        proxy_area = r["ge_proxy"] * ge_model.AREA_PER_GE_UM2
        L.append(f"| {r['module']} | {r['profile']} | {r['line_bits']} | {r['area_um2']:,.0f} | "
                 f"{r['flop_area_um2']:,.0f} | {r['logic_area_um2']:,.0f} | {r['flops']:,} | "
                 f"{r['nand2_equivalents']:,} | {r['ge_proxy']:,} | {proxy_area:,.0f} |")
    L += ["", "The last column is the GE proxy's area (0.2 um^2 per GE, a 16/14 nm-class "
          "NAND2 from the paper's Table 7); the sky130 area is at 130 nm and does not depend "
          "on the paper. `area / nand2_1` counts the mapped area in sky130 NAND2 cells, a gate "
          "count independent of the proxy's weights.", ""]
    return L


class _Lookups:
    """The report's rows by (profile, LINE_BITS, STAGES), and their table cells."""

    def __init__(self, synth, route, ge, sky):
        sw = flowlib.settings()["sweep"]
        self.ws, self.sbits = sw["width_stages"], sw["stages_width"]
        self.fmax = median_fmax(route)
        self.srow = {(r["profile"], r["line_bits"], r["stages"]): r for r in synth}
        self.grow = {(r["profile"], r["line_bits"], r["stages"]): r for r in ge}
        self.sky_core = {(r["profile"], r["line_bits"], r["stages"]): r for r in core_rows(sky)}

    def med(self, p, lb, st=None):
        v = self.fmax.get((p, lb, self.ws if st is None else st))
        return f"{v[0]:.2f} ({v[1]:.0f}-{v[2]:.0f})" if v else "n/a"

    def cell(self, p, lb, key):
        r = self.srow.get((p, lb, self.ws))
        return f"{r[key]:,}" if r else "n/a"

    def g(self, p, key, fmt):
        r = self.grow.get((p, self.sbits, self.ws))
        return fmt.format(r[key]) if r else "n/a"

    def area(self, p):
        r = self.sky_core.get((p, self.sbits, self.ws))
        return f"{r['area_um2']:,.0f}" if r else "n/a"


def _headline(t):
    """Ours beside the paper, 512 bits and five cycles."""
    L = ["## Ours beside the paper (512 bits, five cycles unless stated)", "",
         "| metric | paper | ours, paper profile | ours, full profile | command |",
         "|---|---:|---:|---:|---|"]
    rows = [(f"Yosys generic cells, {lb} bits", f"{PAPER['cells'][lb]:,}",
             t.cell("paper", lb, "cells"), t.cell("full", lb, "cells"), "make synth")
            for lb in (64, 512, 1024)]
    rows += [
        ("Yosys registers, 512 bits", f"{PAPER['registers_512']:,}",
         t.cell("paper", 512, "registers"), t.cell("full", 512, "registers"), "make synth"),
        ("Yosys logic cells (cells - registers), 512 bits", f"{PAPER['logic_cells_512']:,}",
         t.cell("paper", 512, "logic_cells"), t.cell("full", 512, "logic_cells"), "make synth"),
        ("ECP5 Fmax, 512 bits (MHz, median (min-max) of seeds)",
         f"{PAPER['fmax_mhz'][512]}", t.med("paper", 512), t.med("full", 512), "make route"),
        ("ECP5 Fmax, 1024 bits (MHz)", f"{PAPER['fmax_mhz'][1024]}",
         t.med("paper", 1024), t.med("full", 1024), "make route"),
    ]
    rows += [(what, f"{PAPER[key]:,}" if key == "ge" else f"{PAPER[key]}",
              t.g("paper", key, fmt), t.g("full", key, fmt), "make ge")
             for what, key, fmt in (("Gate equivalents", "ge", "{:,}"),
                                    ("Estimated area (mm^2)", "area_mm2", "{:.6f}"),
                                    ("Estimated energy (pJ/line)", "energy_pj_per_line", "{:.3f}"),
                                    ("Estimated slack at 2 GHz (ps)", "slack_ps_2ghz", "{:+.0f}"))]
    rows.append(("sky130 cell area (um^2, no timing)", "—", t.area("paper"), t.area("full"),
                 "make sky130"))
    L += [f"| {a} | {b} | {c} | {d} | `{e}` |" for a, b, c, d, e in rows]
    L += ["", "The paper profile keeps only what the paper's datapath has (identity, "
          "G-Binary, G-Ternary with the fixed 2-of-3 gate, COUNT output) for a like-for-like "
          "area comparison; the full profile implements all of contract section 2.", ""]
    return L


def _targets(t, ge):
    """The design's targets, met or not."""
    ws, fmax = t.ws, t.fmax
    L = ["## Targets", "", "| target | value | status |", "|---|---:|---|"]
    for p in ("full", "paper"):
        v = fmax.get((p, 512, ws))
        L.append(f"| {p}: ECP5 Fmax >= {TARGETS['fmax_512']:.0f} MHz at 512 bits (median) | "
                 f"{v[0]:.2f} |" if v else f"| {p}: Fmax at 512 bits | n/a |")
        if v:
            L[-1] += f" {check(v[0] >= TARGETS['fmax_512'])} |"
        else:
            L[-1] += " not measured |"
        widths = sorted(lb for (pr, lb, st) in fmax if pr == p and st == ws)
        if widths:
            worst = min(fmax[(p, lb, ws)][0] for lb in widths)
            L.append(f"| {p}: ECP5 Fmax >= {TARGETS['fmax_every_width']:.0f} MHz at every "
                     f"width {widths[0]}..{widths[-1]} (median) | {worst:.2f} (lowest) | "
                     f"{check(worst >= TARGETS['fmax_every_width'])} |")
    r = t.srow.get(("paper", 512, ws))
    if r:
        L.append(f"| paper: logic cells <= {TARGETS['paper_logic_cells_512']:,} at 512 bits | "
                 f"{r['logic_cells']:,} | "
                 f"{check(r['logic_cells'] <= TARGETS['paper_logic_cells_512'])} |")
    for p in ("full", "paper"):
        sl = [x for x in ge if x["profile"] == p and x["line_bits"] == t.sbits
              and x["stages"] <= TARGETS["slack_stages_max"]]
        if sl:
            worst = min(x["slack_ps_2ghz"] for x in sl)
            L.append(f"| {p}: GE-model slack at 2 GHz > 0 for STAGES <= "
                     f"{TARGETS['slack_stages_max']} | {worst:+.0f} ps (lowest) | "
                     f"{check(worst > 0)} |")
    L.append("")
    return L


def _plots_section(pics):
    return ["## Plots", "",
            f"![cells vs width]({pics['cells']}) ![Fmax vs width]({pics['fmax']})", "",
            f"![Fmax and slack vs STAGES]({pics['stages']})", "",
            "Commands: `make synth` (cells), `make route` (Fmax), `make ge` (slack).", "",
            "At STAGES <= 4 the first logic step sits between the input ports and the "
            "first register; an out-of-context route does not time port paths, so the "
            "ECP5 Fmax of those rows leaves that logic out and reads high. The GE-model "
            "slack counts it.", ""]


def _sweeps(t, synth, route):
    """The width sweep at STAGES = width_stages, the STAGES sweep at stages_width bits."""
    ws, sbits = t.ws, t.sbits
    L = ["## Width sweep (STAGES = %d)" % ws, "",
         "| profile | LINE_BITS | cells | registers | logic cells | levels | paper cells | "
         "LUT4 | FF | Fmax median (min-max) MHz | GE | slack ps |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    lut = {(r["profile"], r["line_bits"], r["stages"]): r for r in route}
    for r in sorted((x for x in synth if x["stages"] == ws),
                    key=lambda x: (x["profile"], x["line_bits"])):
        k = (r["profile"], r["line_bits"], r["stages"])
        rr, gg = lut.get(k), t.grow.get(k)
        L.append(f"| {r['profile']} | {r['line_bits']} | {r['cells']:,} | {r['registers']:,} | "
                 f"{r['logic_cells']:,} | {r['levels']} | "
                 f"{PAPER['cells'].get(r['line_bits'], '')} | "
                 f"{rr['lut4'] if rr else ''} | {rr['ff'] if rr else ''} | "
                 f"{t.med(r['profile'], r['line_bits'])} | {gg['ge'] if gg else ''} | "
                 f"{gg['slack_ps_2ghz'] if gg else ''} |")
    L += ["", f"## STAGES sweep ({sbits} bits)", "",
          "| profile | STAGES | cells | registers | logic cells | levels per stage | "
          "Fmax median (min-max) MHz | slack ps at 2 GHz |",
          "|---|---:|---:|---:|---:|---|---|---:|"]
    for r in sorted((x for x in synth if x["line_bits"] == sbits),
                    key=lambda x: (x["profile"], x["stages"])):
        gg = t.grow.get((r["profile"], r["line_bits"], r["stages"]))
        L.append(f"| {r['profile']} | {r['stages']} | {r['cells']:,} | {r['registers']:,} | "
                 f"{r['logic_cells']:,} | {' '.join(map(str, r['levels_per_stage']))} | "
                 f"{t.med(r['profile'], sbits, r['stages'])} | "
                 f"{gg['slack_ps_2ghz'] if gg else ''} |")
    L.append("")
    return L


def _top_section(top_route):
    """The CXL.mem top's routes."""
    if not top_route:
        return []
    L = ["## The CXL.mem top (`make route`)", "",
         "| module | profile | LINE_BITS | Fmax median (min-max) MHz | seeds | LUT4 | FF |",
         "|---|---|---:|---|---:|---:|---:|"]
    for (p, lb, st), v in sorted(median_fmax(top_route).items()):
        r = next(x for x in top_route if (x["profile"], x["line_bits"], x["stages"])
                 == (p, lb, st))
        L.append(f"| {r['module']} | {p} | {lb} | {v[0]:.2f} ({v[1]:.0f}-{v[2]:.0f}) | "
                 f"{v[3]} | {r['lut4']:,} | {r['ff']:,} |")
    L.append("")
    return L


def _features_section(features):
    """The cost of each full-profile feature."""
    if not features:
        return []
    L = ["## Cost of each full-profile feature (512 bits, STAGES = 5)", "",
         "Cells of the full profile minus cells of the full profile without the "
         "feature (`make synth`).", "",
         "| feature | what | cells | logic cells | registers |",
         "|---|---|---:|---:|---:|"]
    L += [f"| {f['feature']} | {f['description']} | {f['cells']:,} | "
          f"{f['logic_cells']:,} | {f['registers']:,} |" for f in features]
    L.append("")
    return L


def _endpoints_section(endpoints, pics):
    """Where the clock period goes, by what drives each flip-flop input."""
    if not endpoints:
        return []
    L = ["## Where the clock period goes (`make endpoints`)", "",
         "Flip-flop inputs after place and route (one seed), by what drives them, and "
         "how many arrive later than the target period (setup not included). A wide "
         "LUT (LUT5..LUT7: LUT4s joined by the slice's PFUMX/L6MUX) reaches a "
         "flip-flop only through routing; a LUT4 can sit in its flip-flop's slice. "
         "Register groups: `endpoints.md`; what this means for each profile, and "
         "what would move the full profile's limit: `docs/hardware.md`.", "",
         "| profile | LINE_BITS | Fmax MHz | late / inputs | " +
         " | ".join(f"{c} (late)" for c in _ENDPOINT_COLUMNS) + " |",
         "|---|---:|---:|---:|---:|---:|---:|"]
    for r in endpoints:
        cls = {c["class"]: c for c in r["classes"]}
        cells = [f"{cls[c]['endpoints']:,} ({cls[c]['late']})" if c in cls else "0"
                 for c in _ENDPOINT_COLUMNS]
        what = " (top)" if r.get("module") == TOP_MODULE else ""
        L.append(f"| {r['profile']}{what} | {r['line_bits']} | {r['fmax_mhz']:.1f} | "
                 f"{r['late']:,} / {r['endpoints']:,} | " + " | ".join(cells) + " |")
    L += ["", f"![flip-flop input arrivals]({pics['endpoints']})", ""]
    return L


def _method():
    """How each figure is made."""
    ecfg = flowlib.settings()["ecp5"]
    L = ["## Method", "",
         f"- Generic cells: Yosys `{flowlib.settings()['generic']['script']}` "
         "(the paper's `synth -flatten; abc`); registers are the flip-flop cells, logic "
         "cells the rest; `levels` is the deepest path in generic gates from a register "
         "or input to a register or output. Details: `synth.md`.",
         f"- ECP5: Yosys `{ecfg['synth']}`, then `nextpnr-ecp5 {ecfg['device']} --package "
         f"{ecfg['package']} --speed {ecfg['speed']} --out-of-context --freq "
         f"{ecfg['freq_mhz']} {' '.join(ecfg.get('nextpnr_args', []))}`, seeds {ecfg['seeds']}; "
         "out of context the clock runs on "
         "fabric and port paths are not timed (as for the paper's figures). Details: "
         "`route.md`.",
         "- Gate-equivalent model (`ge.md`), a proxy and nothing more:"]
    L += [f"  - {t}" for t in ge_model.constants_text()]
    L.append("")
    return L


def build(synth, route, ge, features, endpoints=(), sky=()):
    """The report's markdown, section by section (and its plots, beside it)."""
    top_route = top_rows(route)
    route = core_rows(route)
    t = _Lookups(synth, route, ge, sky)
    pics = plots(synth, route, ge, t.ws, t.sbits, endpoints)
    L = ["# NEURON-Fabric datapath: hardware plausibility", ""]
    L += ["Regenerate everything with `make report` (it runs `make synth`, `make route`, "
          "`make ge` and `make endpoints` first; unchanged configurations come from the cache under "
          "`build/cache`). All figures are for the datapath core "
          "`neuron_fabric_datapath`, WORKERS = 8.", ""]
    L += _headline(t) + _targets(t, ge) + _plots_section(pics) + _sweeps(t, synth, route)
    L += _top_section(top_route) + sky130_section(sky) + _features_section(features)
    L += _endpoints_section(endpoints, pics) + _method()
    return "\n".join(L) + "\n"


@guarded
def main(argv=None):
    ArgumentParser(prog="python -m neuron_fabric.synth.report",
                   description="build/reports/hardware.md with plots, from the flows' "
                               "reports.").parse_args(argv)
    synth, route, ge, features, endpoints, sky = (
        load(s) for s in ("synth", "route", "ge", "feature_cost", "endpoints", "sky130"))
    if not synth:
        print("no build/reports/synth.json: run `make synth` first", file=sys.stderr)
        return 1
    path = flowlib.REPORTS / "hardware.md"
    path.write_text(build(synth, route, ge, features, endpoints, sky))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
