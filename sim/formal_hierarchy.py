"""Formal lane equivalence of the count-sum unit (``hdl/hierarchy/unit.py``
:class:`~neuron_fabric.hdl.hierarchy.count_sum.CountSum`), checked with SymbiYosys.

:class:`CountLaneSpec` -- every count lane of the unit's output equals
:func:`reference_count_lane`, a small Amaranth function written from
contract section 5.3 with wide arithmetic (the partial counts read from
their positions in the element-major or the worker-major layout, summed,
``a = 2c - total``, the gate, the gated values and the three formats), for
every input line, every mask and every configuration in range; and the
unit's per-lane ``select`` is high exactly for a transformed count line.
The line and its fields are ``AnyConst`` and offered in every cycle, so a
bounded check a few cycles past STAGES covers all inputs.

Run as ``python -m neuron_fabric.sim.formal_hierarchy LINE_BITS WORKERS
STAGES OPERAND LAYOUT`` (OPERAND 1 or 2, LAYOUT 0 or 1) to write and run one
job under ``build/formal/``.
"""

import sys

from amaranth import Elaboratable, Module, Mux, ResetSignal, Signal, signed
from amaranth.asserts import AnyConst, Initial
from amaranth.hdl import Assert, Assume

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import (
    COUNT_LANE_BITS,
    DatapathParams,
    Layout,
    Operand,
    count_geometry,
)
from neuron_fabric.contract.regmap import count_total_max
from neuron_fabric.hdl.hierarchy.count_sum import CountSum, HierarchyInputLayout
from neuron_fabric.sim.formal import run_sby
from neuron_fabric.sim.formal_datapath import reference_value, write_sby

__all__ = ["reference_count_lane", "CountLaneSpec", "write_job"]


def _nibbles(line, j, operand, layout):
    """The eight 4-bit fields that hold element ``j``'s partial counts, in
    the order of the element-major count lane (contributor ``k``'s count is
    fields ``[k*b/4, (k+1)*b/4)``): from lane ``j`` (element-major) or from
    each contributor's segment (worker-major)."""
    bits, contributors = count_geometry(operand)
    segment = len(line) // contributors
    per = bits // 4
    out = []
    for k in range(contributors):
        for h in range(per):
            wm = k * segment + j * bits + 4 * h
            em = j * COUNT_LANE_BITS + k * bits + 4 * h
            out.append(Mux(layout == Layout.WORKER_MAJOR, line[wm:wm + 4], line[em:em + 4]))
    return out


def _sum(values):
    """An exact sum, added in pairs."""
    values = [v.as_unsigned() for v in values]
    while len(values) > 1:
        values = [values[k] + values[k + 1] for k in range(0, len(values), 2)]
    return values[0]


def reference_count_lane(line, j, operand, layout, total, mode, fmt, gate_kind, mask_bit,
                         threshold):
    """Contract section 5.3 for element ``j`` of a count line: the output
    value (signed; its low 32 bits are the lane).  Defined for configurations
    in range only (:func:`config_in_range`) and a transforming mode.

    ``c`` is the exact sum of the N partial counts.  A COUNTS8 count is the
    byte ``lo + 16 * hi`` of its two 4-bit fields, so the sum is written as
    ``sum(lo) + 16 * sum(hi)``, each added in pairs: the same order of
    additions as the unit's (an exact sum has one value whatever the
    order; the solver checks the fields, the widths and all that follows,
    not the laws of addition)."""
    sums = {}
    for op in (Operand.COUNTS4, Operand.COUNTS8):
        nib = _nibbles(line, j, op, layout)
        even, odd = _sum(nib[0::2]), _sum(nib[1::2])
        sums[op] = even + (odd if op == Operand.COUNTS4 else odd * 16)
    c = Mux(operand == Operand.COUNTS4, sums[Operand.COUNTS4], sums[Operand.COUNTS8])
    return reference_value(c, total, mode, fmt, gate_kind, mask_bit, threshold)


def config_in_range(operand, total, fmt, threshold):
    """Contract section 5.1's ranges for a count operand."""
    limit = Mux(operand == Operand.COUNTS4, count_total_max(Operand.COUNTS4),
                count_total_max(Operand.COUNTS8))
    return (((operand == Operand.COUNTS4) | (operand == Operand.COUNTS8)) & (fmt != 3) &
            (total >= 1) & (total <= limit) & (threshold <= total))


class CountLaneSpec(Elaboratable):
    """Every count lane of :class:`CountSum` against :func:`reference_count_lane`."""

    def __init__(self, line_bits, workers, stages, operand, layout):
        self.dut = CountSum(line_bits=line_bits, workers=workers, stages=stages)
        self.stages = stages
        self.operand, self.layout = operand, layout

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        line_bits = len(dut.i_stream.payload.line)
        fields = {name: AnyConst(field.shape) for name, field in
                  HierarchyInputLayout(line_bits=line_bits,
                                       lanes=len(dut.i_stream.payload.gate_mask))}
        m.d.comb += [dut.i_stream.valid.eq(1), dut.o_stream.ready.eq(1),
                     *(dut.i_stream.payload[name].eq(value) for name, value in fields.items())]
        m.d.comb += Assume(ResetSignal() == Initial())
        # One operand and layout a job (the solver's problem stays small); a
        # SIGNS line (operand 0) checks the select only.  So a count line has
        # the job's operand and layout: the range and the reference take them
        # as constants (three times faster for COUNTS8 than the fields).
        m.d.comb += Assume((fields["operand"] == self.operand) | (fields["operand"] == 0))
        m.d.comb += Assume(fields["layout"] == self.layout)
        transform = fields["mode"][1]
        counts = fields["operand"] == self.operand
        m.d.comb += Assume(~(transform & counts) |
                           config_in_range(self.operand, fields["total"], fields["format"],
                                           fields["gate_threshold"]))
        # The line offered in every cycle is accepted at the end of the
        # first cycle after reset and leaves STAGES cycles later.
        last = self.stages + 1
        cycle = Signal(range(last + 1))
        with m.If(cycle != last):
            m.d.sync += cycle.eq(cycle + 1)
        with m.If(cycle == last):
            m.d.comb += Assert(dut.o_stream.valid)
            out = dut.o_stream.payload
            for j in range(line_bits // COUNT_LANE_BITS):
                m.d.comb += Assert(out.select[j] == (transform & (fields["operand"] != 0)))
                want = Signal(signed(COUNT_LANE_BITS + 1), name=f"want{j}")
                m.d.comb += want.eq(reference_count_lane(
                    fields["line"], j, self.operand, self.layout, fields["total"],
                    fields["mode"], fields["format"], fields["gate_kind"],
                    fields["gate_mask"][j], fields["gate_threshold"]))
                lane = out.line[j * COUNT_LANE_BITS:(j + 1) * COUNT_LANE_BITS]
                with m.If(transform & counts):
                    m.d.comb += Assert(lane == want[:COUNT_LANE_BITS])
        return m

    depth = property(lambda self: self.stages + 3)


def write_job(line_bits, workers, stages, operand, layout):
    """Write ``build/formal/hierarchy_count_lane_<operand>_<layout>_L.._W.._S../``
    with the spec as RTLIL and its .sby file; return the .sby path."""
    operand, layout = Operand(operand), Layout(layout)
    return write_sby(CountLaneSpec(line_bits, workers, stages, operand, layout),
                     f"hierarchy_count_lane_{operand.name}_{layout.name}"
                     f"_L{line_bits}_W{workers}_S{stages}")


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.sim.formal_hierarchy", parameters=True,
                        description="Write and run one formal job of the count-sum unit "
                                    "under build/formal/.")
    for name in ("line_bits", "workers", "stages"):
        ap.add_argument(name, type=int, metavar=name.upper())
    ap.add_argument("operand", type=int, choices=(int(Operand.COUNTS4), int(Operand.COUNTS8)),
                    metavar="OPERAND", help="1 (COUNTS4) or 2 (COUNTS8)")
    ap.add_argument("layout", type=int, choices=[int(layout) for layout in Layout], metavar="LAYOUT",
                    help="0 (element-major) or 1 (worker-major)")
    args = ap.parse_args(argv)
    DatapathParams(line_bits=args.line_bits, workers=args.workers, stages=args.stages)
    passed, log = run_sby(write_job(args.line_bits, args.workers, args.stages, args.operand,
                                    args.layout))
    print(log)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
