"""Functional tester of the paper's section 6 on the exported top.

Writes packed sign packets of 8 workers into memory with MemWr, reads them
back in identity, G-Binary and G-Ternary (the paper's 2-of-3 gate) and
checks each mode against its own oracle: identity against the written
bytes, G-Binary and G-Ternary against the golden model's transform.
Prints one row per mode (lines checked, mismatches, PASS/FAIL) and exits
non-zero on any failure.

Command line: ``python -m neuron_fabric.sim.functional --help``
(``make functional`` runs it); the cocotb test it runs is
:mod:`neuron_fabric.sim.cocotb_functional`.
"""

import json
import os
import sys

import numpy as np

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import TOP_MODULE, Format, GateKind, Mode, TopParams
from neuron_fabric.contract.paths import BUILD
from neuron_fabric.host.golden import line_phase, transform
from neuron_fabric.sim.toolchain import export_top, run_cocotb

__all__ = ["MODES", "oracle", "results_table", "main"]

#: The three modes of the paper's check, with the configuration each uses.
MODES = {
    "identity": dict(mode=Mode.IDENTITY),
    "G-Binary": dict(mode=Mode.GBINARY, format=Format.COUNT),
    "G-Ternary": dict(mode=Mode.GTERNARY, format=Format.COUNT, gate_kind=GateKind.PATTERN,
                      period=3, keep=2),
}

WORKERS = 8
BASE = 0x4_0000


def oracle(lines, line_bits, base, cfg):
    """Expected read-back of ``lines`` stored from byte address ``base`` under
    ``cfg`` (a DEFAULT_CFG read: line index = address / LINE_BYTES)."""
    if cfg["mode"] == Mode.IDENTITY:
        return lines.copy()
    lanes = line_bits // WORKERS
    period = cfg.get("period", 3)
    index = base // (line_bits // 8) + np.arange(lines.shape[0])
    return transform(lines, WORKERS, cfg["mode"], cfg.get("format", Format.COUNT),
                     cfg.get("gate_kind", GateKind.PATTERN), period, cfg.get("keep", 2), 0,
                     line_phase(index, lanes, period))


def results_table(results):
    """The check's table: one row a mode, PASS or FAIL."""
    rows = ["mode        lines checked  mismatches  result",
            "----------  -------------  ----------  ------"]
    for name, r in results.items():
        verdict = "PASS" if r["mismatches"] == 0 and r["lines"] > 0 else "FAIL"
        rows.append(f"{name:<10}  {r['lines']:>13}  {r['mismatches']:>10}  {verdict}")
    return "\n".join(rows)


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.sim.functional", parameters=True,
                        description="Paper section 6 functional check on the top "
                                    f"({WORKERS} workers; the other parameters at their "
                                    "defaults).")
    ap.add_argument("--line-bits", type=int, default=512)
    ap.add_argument("--stages", type=int, default=5)
    ap.add_argument("--elements", type=int, default=4000,
                    help="gradient elements per worker (default %(default)s)")
    ap.add_argument("--simulator", default=os.environ.get("SIM", "verilator"),
                    choices=("verilator", "icarus"))
    args = ap.parse_args(argv)
    params = TopParams(line_bits=args.line_bits, workers=WORKERS, stages=args.stages)
    folder = BUILD / "functional" / f"{args.simulator}_{params.tag()}"
    src = export_top(params, folder / "src" / "neuron_fabric.v")
    out = folder / "results.json"
    out.unlink(missing_ok=True)
    bench = dict(params.__dict__, elements=args.elements, out=str(out))
    try:
        run_cocotb(sources=[src], toplevel=TOP_MODULE,
                   test_module="neuron_fabric.sim.cocotb_functional", simulator=args.simulator,
                   build_dir=folder / "sim", params=bench)
        ok = True
    except AssertionError as exc:
        print(f"functional check failed: {exc}", file=sys.stderr)
        ok = False
    results = json.loads(out.read_text()) if out.exists() else {
        name: {"lines": 0, "mismatches": 0} for name in MODES}
    print(f"\nNEURON-Fabric functional check (paper section 6): {WORKERS} workers, "
          f"LINE_BITS {params.line_bits}, {args.elements} elements, {args.simulator}")
    print(results_table(results))
    ok = ok and all(r["mismatches"] == 0 and r["lines"] > 0 for r in results.values())
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
