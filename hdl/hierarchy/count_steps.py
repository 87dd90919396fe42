"""The count-sum unit's steps (contract section 5.3): what
:class:`~.count_sum.CountSum` computes between its pipeline registers, and
the worker-major permutation (:func:`element_major`) its views and
:class:`~.hierarchy.Hierarchy` share."""

import dataclasses
from dataclasses import dataclass
from typing import Optional

from amaranth import Cat, Const, Mux

from neuron_fabric.contract.facts import (COUNT_LANE_BITS, Format, GateKind, Mode, Operand,
                                          count_geometry)

from neuron_fabric.hdl.datapath.pipeline import Copies, Groups
from neuron_fabric.hdl.prims.pipe import delay, register

__all__ = ["element_major", "COUNT_PLACEMENT", "CountLine", "CountSteps"]


#: Bits of a partial count the count unit adds at a time (COUNTS8 counts are
#: two of them).
_NIBBLE = 4


def element_major(line, contributors, unit_bits):
    """The element-major form of a worker-major line (contract section 5):
    the line is ``contributors`` segments of equal length, each holding one
    ``unit_bits``-bit unit per element; unit ``j`` of segment ``k`` becomes
    unit ``j * contributors + k``.  SIGNS: ``contributors`` = W, 1-bit
    units; a count operand: N contributors, b-bit units.  Wiring only."""
    elements = len(line) // (contributors * unit_bits)

    def unit(k, j):
        start = (k * elements + j) * unit_bits
        return line[start:start + unit_bits]

    return Cat(*(unit(k, j) for j in range(elements) for k in range(contributors)))


#: For each STAGES value, how many registers sit on the count unit's
#: boundaries 0..5 (before step A, between steps, after step E).  Step A
#: is adders on the line's bits only, so it needs no register before it;
#: past five stages the extra registers go on boundary 0, where they cost
#: only latency.
COUNT_PLACEMENT = {
    1: (0, 0, 0, 0, 0, 1),
    2: (0, 0, 0, 1, 0, 1),
    3: (0, 1, 0, 1, 0, 1),
    4: (0, 1, 1, 1, 0, 1),
    **{s: (s - 5, 1, 1, 1, 1, 1) for s in range(5, 9)},
}


@dataclass(frozen=True)
class CountLine:
    """A count line between two steps; a field is None where the line has
    it not (yet or any more).  Field types as in
    :mod:`~neuron_fabric.hdl.datapath.pipeline`: per-line values, per-lane
    :class:`Copies` of per-line controls, per-lane :class:`Groups`."""
    # per line, at the input
    mode: object = None
    format: object = None
    gate_kind: object = None
    threshold: object = None
    total: object = None
    operand: object = None
    limits: object = None               # margin_limits(), when formed before the unit
    # per-line controls, one copy per count lane
    route: Optional[Copies] = None      # layout and operand: which view of the line
    select: Optional[Copies] = None     # a transformed count line
    keep_all: Optional[Copies] = None   # G-Binary
    pattern_on: Optional[Copies] = None
    wide: Optional[Copies] = None       # COUNTS8: the odd nibbles weigh 16
    is_count: Optional[Copies] = None   # output format, one-hot (COUNT for those
    is_margin: Optional[Copies] = None  # the build lacks)
    is_sign: Optional[Copies] = None
    total_c: Optional[Copies] = None    # total
    high: Optional[Copies] = None       # MARGIN gate: ceil((total + T) / 2), else 1023
    low: Optional[Copies] = None        # MARGIN gate: floor((total - T) / 2) + 1, else 0
    half: Optional[Copies] = None       # floor(total / 2)
    # per count lane
    data: Optional[Groups] = None       # the stored line, 32 bits a lane
    mask: Optional[Groups] = None       # the PATTERN mask bit
    pairs: Optional[Groups] = None      # four sums of two nibbles, for each view
    sums: Optional[Groups] = None       # the even and the odd nibbles' sums
    count: Optional[Groups] = None      # c
    keep: Optional[Groups] = None       # kept by G-Binary or the PATTERN mask
    margin: Optional[Groups] = None     # a = 2c - total, 12 bits
    nonzero: Optional[Groups] = None    # a != 0, as two bits whose OR it is
    kept: Optional[Groups] = None       # the gate keeps the lane
    out: Optional[Groups] = None        # the output lane


#: The nibbles of a lane a pair adds: (0, 2), (4, 6) of the even sum, (1, 3),
#: (5, 7) of the odd one.
_PAIRS = ((0, 2), (4, 6), (1, 3), (5, 7))
_PAIR_BITS = _NIBBLE + 1
_SUM_BITS = _NIBBLE + 2
_COUNT_BITS = 10                        # c <= 1020
_MARGIN_BITS = 12                       # -1023 <= a <= 2046


#: Width of :func:`margin_limits`: the high and the low limit on c.
LIMITS_BITS = 2 * _COUNT_BITS
#: Width of :func:`margin_terms`' sums: total + T <= 2046.
_TERM_BITS = _COUNT_BITS + 1


def margin_terms(mode, gate_kind, total, threshold):
    """The first of the MARGIN limits' three steps (:func:`margin_sums`,
    :func:`margin_limits`): ``Cat(total + T, total - T, on)`` (11 bits
    each; ``on``, whether the gate applies).  Functions of the CFG alone:
    the top forms them in the request pipeline, a step each."""
    on = (mode == Mode.GTERNARY) & (gate_kind == GateKind.MARGIN)
    return Cat((total + threshold)[:_TERM_BITS], (total - threshold)[:_TERM_BITS], on)


def margin_sums(terms):
    """The limits on a lane's count c as if the MARGIN gate applied, and
    whether it does: ``Cat(high, low, on)``, ``ceil((total + T) / 2)`` and
    ``floor((total - T) / 2) + 1`` (a lane is kept when ``c >= high`` or
    ``c < low``), from :func:`margin_terms`."""
    plus, minus, on = (terms[:_TERM_BITS], terms[_TERM_BITS:2 * _TERM_BITS],
                       terms[2 * _TERM_BITS])
    return Cat((plus + 1)[1:_COUNT_BITS + 1], (minus + 2)[1:_COUNT_BITS + 1], on)


def margin_limits(sums):
    """The MARGIN gate's limits ``Cat(high, low)`` from :func:`margin_sums`:
    its limits when the gate applies, else limits no count reaches.  (T <=
    total in range, so the low limit is at least 1 there; c <= 1020 never
    reaches the high limit 1023.)"""
    on = sums[LIMITS_BITS]
    return Mux(on, sums[:LIMITS_BITS], Cat(Const((1 << _COUNT_BITS) - 1, _COUNT_BITS),
                                           Const(0, _COUNT_BITS)))


def staged_limits(m, name, mode, gate_kind, total, threshold, cycles):
    """:func:`margin_limits` of a CFG ``cycles`` (at least 2) registers
    later, as the request pipeline forms them beside its line: the sums
    registered, then rounded and delayed, then chosen (after the last)."""
    terms = register(m, f"{name}_terms", margin_terms(mode, gate_kind, total, threshold))
    return margin_limits(delay(m, name, margin_sums(terms), cycles - 1))


class CountSteps:
    """The count unit's five steps over a line's 32-bit count lanes, with
    the features ``profile`` lacks hard-wired away as in the core::

        A  for the element-major line and both worker-major views of it
           (wiring), four sums of two nibbles per lane; per line: the
           format (one-hot), the gate flags, the MARGIN gate's limits on c
           (ceil((total + T) / 2) and floor((total - T) / 2) + 1 when the
           gate applies, limits no count reaches when not: formed here, or
           taken as the line's ``limits`` when the caller formed them),
           and total / 2
        B  the pairs of the line's view (a 3:1 multiplexer on the route
           copy), and the sums of the even and of the odd nibbles
        C  c: even + odd (COUNTS4), or even + 16 * odd (COUNTS8: each odd
           nibble is the high half of a byte); whether G-Binary or the
           PATTERN mask keeps the lane
        D  a = 2c - total, its sign, whether a != 0; the MARGIN gate
           |a| >= T as c >= ceil((total + T) / 2) or c <= floor((total - T) / 2)
           (10-bit compares of c with the limits); whether the lane is kept
           (one LUT after the compares)
        E  the output lane by format (the gated value when not kept)
    """

    def __init__(self, line_bits, profile, wire):
        self._lanes = line_bits // COUNT_LANE_BITS
        self._profile = profile
        self._wire = wire

    @property
    def steps(self):
        return (self.pair_sums, self.view_sums, self.counts, self.gates, self.output)

    def pair_sums(self, line: CountLine) -> CountLine:
        has = self._profile.has
        raw = self._wire(Cat(*line.data))
        # (each view through a signal of its own: slicing the permutation
        # itself would rebuild it for every slice at elaboration)
        views = [raw] + [self._wire(element_major(raw, contributors, bits))
                         for bits, contributors in
                         map(count_geometry, (Operand.COUNTS4, Operand.COUNTS8))]
        pairs = []
        for g in range(self._lanes):
            sums = []
            for view in views:
                lane = view[g * COUNT_LANE_BITS:(g + 1) * COUNT_LANE_BITS]
                nib = [lane[k * _NIBBLE:(k + 1) * _NIBBLE] for k in range(8)]
                sums += [self._wire(nib[x] + nib[y]) for x, y in _PAIRS]
            pairs.append(Cat(*sums))
        ternary = line.mode == Mode.GTERNARY
        total = line.total
        pattern_on, high, low = ternary, None, None
        if has("gate_margin"):
            pattern_on = ternary & (line.gate_kind == GateKind.PATTERN)
            limits = line.limits if line.limits is not None else self._wire(
                margin_limits(margin_sums(margin_terms(line.mode, line.gate_kind, total,
                                                      line.threshold))))
            high, low = limits[:_COUNT_BITS], limits[_COUNT_BITS:]
        code = Const(Format.COUNT, 2)
        if has("format_margin"):
            code = Mux(line.format == Format.MARGIN, Format.MARGIN, code)
        if has("format_sign"):
            code = Mux(line.format == Format.SIGN, Format.SIGN, code)
        code = self._wire(code)

        def spread(value):
            return None if value is None else Copies.spread(value, self._lanes)

        return CountLine(
            route=line.route, mask=line.mask, pairs=Groups(pairs),
            select=spread(line.mode[1] & (line.operand != Operand.SIGNS)),
            keep_all=spread(line.mode == Mode.GBINARY), pattern_on=spread(pattern_on),
            wide=spread(line.operand[1]),
            is_count=spread(code == Format.COUNT), is_margin=spread(code == Format.MARGIN),
            is_sign=spread(code == Format.SIGN), total_c=spread(total),
            high=spread(high), low=spread(low), half=spread(total[1:]))

    def view_sums(self, line: CountLine) -> CountLine:
        width = len(_PAIRS) * _PAIR_BITS
        sums = []
        for route, pairs in zip(line.route, line.pairs):
            worker_major, wide = route[0], route[2]
            em, w4, w8 = (pairs[v * width:(v + 1) * width] for v in range(3))
            chosen = self._wire(Mux(worker_major, Mux(wide, w8, w4), em))
            p = [chosen[k * _PAIR_BITS:(k + 1) * _PAIR_BITS] for k in range(len(_PAIRS))]
            sums.append(Cat(self._wire(p[0] + p[1]), self._wire(p[2] + p[3])))
        return dataclasses.replace(line, route=None, pairs=None, sums=Groups(sums))

    def counts(self, line: CountLine) -> CountLine:
        counts, keep = [], []
        for g, sums in enumerate(line.sums):
            even, odd = sums[:_SUM_BITS], sums[_SUM_BITS:]
            # one adder, its second operand chosen: odd or 16 * odd
            addend = Mux(line.wide[g], Cat(Const(0, _NIBBLE), odd), odd)
            counts.append(self._wire((even + addend)[:_COUNT_BITS]))
            keep.append(self._wire(line.keep_all[g] | (line.pattern_on[g] & line.mask[g])))
        return dataclasses.replace(line, sums=None, wide=None, keep_all=None, pattern_on=None,
                                   mask=None, count=Groups(counts), keep=Groups(keep))

    def gates(self, line: CountLine) -> CountLine:
        margins, nonzero, kept = [], [], []
        for g, c in enumerate(line.count):
            twice = Cat(Const(0, 1), c)
            margins.append(self._wire((twice - line.total_c[g])[:_MARGIN_BITS]))
            # a = 2c - total is 0 iff total is even and c = total / 2: an
            # equality (LUTs), not a third carry chain beside the limits'
            # compares; in two halves of c, ORed in step E
            half, split = line.half[g], _COUNT_BITS // 2
            nonzero.append(self._wire(Cat(c[:split] != half[:split],
                                          (c[split:] != half[split:]) | line.total_c[g][0])))
            keep = line.keep[g]
            if line.high is not None:
                # |2c - total| >= T  <=>  2c >= total + T  or  2c <= total - T
                keep = keep | (c >= line.high[g]) | (c < line.low[g])
            kept.append(self._wire(keep))
        return dataclasses.replace(line, total_c=None, high=None, low=None, keep=None,
                                   margin=Groups(margins), nonzero=Groups(nonzero),
                                   kept=Groups(kept))

    def output(self, line: CountLine) -> CountLine:
        lanes = []
        for g, (c, a, nonzero, kept) in enumerate(zip(line.count, line.margin, line.nonzero,
                                                  line.kept)):
            is_count, is_margin, is_sign = (line.is_count[g], line.is_margin[g],
                                            line.is_sign[g])
            neg = a[-1]
            # A forced value as AND/OR logic (see hdl/datapath/steps_full.py).
            upper = self._wire(kept & ((is_margin & neg) | (is_sign & neg)))
            bits = []
            for j in range(COUNT_LANE_BITS):
                if j >= _MARGIN_BITS:
                    bits.append(upper)
                    continue
                sign_j = nonzero.any() if j == 0 else neg   # sgn(a): 1, 0 or all ones
                value = (is_margin & a[j]) | (is_sign & sign_j)
                if j < _COUNT_BITS:
                    value = value | (is_count & c[j])
                    gated = is_count & line.half[g][j] if j < len(line.half[g]) else Const(0)
                    bits.append((kept & value) | (~kept & gated))
                else:
                    bits.append(kept & value)
            lanes.append(Cat(*bits))
        return CountLine(select=line.select, out=Groups(lanes))
