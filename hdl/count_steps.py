"""The count-sum unit's steps (contract section 5.3): what
:class:`~.count_sum.CountSum` computes between its pipeline registers, and
the worker-major permutation (:func:`element_major`) its views and
:class:`~.hierarchy.Hierarchy` share.

Each step is one level: LUTs of a few register outputs, or carry chains
whose operands come straight from registers (no logic before or after a
chain in its step).  A count lane is read four ways (*trees*: element-major
COUNTS4 and COUNTS8, worker-major COUNTS4 and COUNTS8); the line's
configuration, which arrives with the line, picks one, and only from the
first register on::

    A  (from the input) each tree's partial counts summed in pairs (carry
       chains: four sums of two nibbles for COUNTS4, two sums of two bytes
       for COUNTS8); per line: the tree, the format, the class of the
       gate (``count_math``), and the sums of total and threshold the
       limits are chosen from (carry chains)
    B  each COUNTS4 tree's pair sums summed in pairs again (carry chains),
       so that every tree holds two operands whose sum is c; every tree
       but the line's zeroed (a synchronous reset)
    C  the two operands: the OR of the trees' (only one is not zero); the
       lane's two limit constants (``count_math.lane_limits``)
    D  three carry-save additions of a constant: Z (c for COUNT, 2c - T
       otherwise), 2c - T - Th' and 2c - T + Th' - 1
    E  three carry chains: Z, and the signs g1 (a >= Th') and g2
       (a <= -Th')

and after the last register the output lane (:func:`output_lane`, one LUT
a bit): c or floor(total / 2), a or 0, +1, -1 or 0.  The hierarchy wrapper
ORs it with the core's line, which it makes 0 for a count line, so that
LUT is the wrapper's output gate too.
"""

import dataclasses
from dataclasses import dataclass
from typing import Optional

from amaranth import Cat, Const, Mux

from neuron_fabric.host.facts import (COUNT_LANE_BITS, Format, GateKind, Mode, Operand,
                                      count_geometry)

from .count_math import (ARITH_BITS, COUNT_BITS, MARGIN_BITS, add_carry, carry_save,
                         lane_limits, limit_class, limit_constants, line_limits)
from .datapath.bundles import Copies, Groups

__all__ = ["element_major", "output_lane", "COUNT_PLACEMENT", "CountLine", "CountSteps"]


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

#: The readings of a count lane whose sums step A forms: element-major, and
#: worker-major COUNTS4 and COUNTS8.  Each sums its eight nibbles in two
#: halves, the even ones (a COUNTS8 byte's low nibble) and the odd ones,
#: each in two pairs.
VIEWS = ("em", "wm4", "wm8")
#: The flags that zero each of step B's registers but the line's: the
#: element-major even half, its odd half as COUNTS4 and as COUNTS8
#: (weighing 16), the worker-major COUNTS4 halves and COUNTS8 halves.
TREES = ("em", "em4", "em8", "wm4", "wm8")
_PAIR_BITS, _HALF_BITS = 5, 6               # a sum of two nibbles, of four
_U_BITS, _V_BITS = _HALF_BITS, _HALF_BITS + 4


@dataclass(frozen=True)
class CountLine:
    """A count line between two steps; a field is None where the line has
    it not (yet or any more).  Field types as in
    :mod:`~neuron_fabric.hdl.datapath.bundles`: per-line values, per-lane
    :class:`Copies` of per-line controls, per-lane :class:`Groups`."""
    # per line, at the input
    mode: object = None
    format: object = None
    gate_kind: object = None
    threshold: object = None
    total: object = None
    operand: object = None
    layout: object = None
    # per line, on the way to the step that spreads them
    is_count: object = None             # the COUNT format (or one the build lacks)
    is_sign: object = None
    rest: object = None                 # a COUNT lane's gated value (0 but for a count line)
    select: object = None               # a transformed count line
    # per-line controls, one copy per lane (or per few lanes)
    trees: Optional[Copies] = None      # which of step B's registers hold the line's (TREES)
    cls: object = None                  # the line's limit class
    limits: object = None               # count_math.limit_constants, then line_limits
    kz: Optional[Copies] = None         # Z's constant
    lane_count: Optional[Copies] = None
    lane_sign: Optional[Copies] = None
    lane_rest: Optional[Copies] = None
    lane_select: Optional[Copies] = None
    # per count lane
    data: Optional[Groups] = None       # the stored line, 32 bits a lane
    mask: Optional[Groups] = None       # the PATTERN mask bit
    keep: Optional[Groups] = None       # a count line's lane kept by G-Binary or the mask
    pairs: Optional[Groups] = None      # every view's four pair sums
    halves: Optional[Groups] = None     # every view's two halves, zero but the line's
    uv: Optional[Groups] = None         # the line's two operands
    kh: Optional[Groups] = None         # the positive side's constant
    kl: Optional[Groups] = None         # the negative side's constant
    saved: Optional[Groups] = None      # carry-save (sum, carry) of Z and of g1's, g2's sums
    z: Optional[Groups] = None          # Z
    sides: Optional[Groups] = None      # g1, g2


def _cut(vector, widths):
    """``vector`` cut into consecutive fields of ``widths``."""
    out, pos = [], 0
    for w in widths:
        out.append(vector[pos:pos + w])
        pos += w
    return out


def output_lane(z, sides, is_sign, rest):
    """A count lane's 32 output bits after the last register, each one LUT
    of Z's bit, g1, g2, the SIGN flag and ``rest``'s bit (the gated COUNT
    value): kept (g1 | g2), Z (c, or a sign-extended) or +1 / -1 by g1, g2
    for SIGN; gated, ``rest`` (0 but for COUNT).  All zero for a line that
    is no count line (its lanes are never kept and its ``rest`` is 0)."""
    g1, g2 = sides[0], sides[1]
    kept = g1 | g2
    bits = []
    for j in range(COUNT_LANE_BITS):
        value = z[min(j, MARGIN_BITS - 1)]
        sign = Const(1) if j == 0 else g2
        gated = rest[j] if j < len(rest) else Const(0)
        bits.append(Mux(kept, Mux(is_sign, sign, value), gated))
    return Cat(*bits)


class CountSteps:
    """The count unit's five steps over a line's 32-bit count lanes, with
    the features ``profile`` lacks hard-wired away as in the core."""

    def __init__(self, line_bits, profile, wire):
        self._lanes = line_bits // COUNT_LANE_BITS
        self._profile = profile
        self._wire = wire

    @property
    def steps(self):
        return (self.pair_sums, self.operands, self.merge, self.carry_save, self.sums)

    def _views(self, line):
        """Each lane of the line as the element-major, the worker-major
        COUNTS4 and the worker-major COUNTS8 readings see it."""
        raw = self._wire(Cat(*line.data))
        # (each view through a signal of its own: slicing the permutation
        # itself would rebuild it for every slice at elaboration)
        w4, w8 = (self._wire(element_major(raw, contributors, bits)) for bits, contributors in
                  map(count_geometry, (Operand.COUNTS4, Operand.COUNTS8)))
        lane = COUNT_LANE_BITS
        return [(raw[g * lane:(g + 1) * lane], w4[g * lane:(g + 1) * lane],
                 w8[g * lane:(g + 1) * lane]) for g in range(self._lanes)]

    def _pairs(self, vector, unit):
        """Sums of consecutive pairs of ``unit``-bit fields of ``vector``."""
        n = len(vector) // unit
        return [self._wire(vector[2 * k * unit:(2 * k + 1) * unit] +
                           vector[(2 * k + 1) * unit:(2 * k + 2) * unit]) for k in range(n // 2)]

    def _flags(self, line):
        """Per line: (select, keep-all, pattern gate, margin gate, SIGN, COUNT)."""
        has = self._profile.has
        ternary = line.mode == Mode.GTERNARY
        margin_on, pattern_on = Const(0), ternary
        if has("gate_margin"):
            margin_on = ternary & (line.gate_kind == GateKind.MARGIN)
            pattern_on = ternary & (line.gate_kind == GateKind.PATTERN)
        is_margin = line.format == Format.MARGIN if has("format_margin") else Const(0)
        is_sign = line.format == Format.SIGN if has("format_sign") else Const(0)
        select = line.mode[1] & (line.operand != Operand.SIGNS)
        return (select, line.mode == Mode.GBINARY, pattern_on, margin_on, is_sign,
                ~(is_margin | is_sign))

    def pair_sums(self, line: CountLine) -> CountLine:
        def pairs(lane):
            nib = [lane[4 * k:4 * k + 4] for k in range(8)]
            return Cat(*self._pairs(Cat(*nib[0::2], *nib[1::2]), 4))

        sums = Groups(Cat(*map(pairs, views)) for views in self._views(line))
        select, keep_all, pattern_on, margin_on, is_sign, is_count = self._flags(line)
        c4, c8, wm = (line.operand == Operand.COUNTS4, line.operand == Operand.COUNTS8,
                      line.layout)
        # Z = c for COUNT, 2c - T (-T as ~T and a carry in) otherwise
        total = Cat(line.total, Const(0, ARITH_BITS - len(line.total)))
        return CountLine(
            is_count=self._wire(is_count), is_sign=self._wire(is_sign),
            rest=self._wire(Mux(select & is_count, line.total[1:], 0)), select=select,
            trees=Copies.each(self._wire(Cat(~wm & (c4 | c8), ~wm & c4, ~wm & c8, wm & c4,
                                             wm & c8)), self._lanes),
            # (a line that is no count line is never kept: no MARGIN gate, keep 0)
            cls=self._wire(limit_class(select & margin_on, is_sign, line.threshold == 0)),
            limits=self._wire(limit_constants(line.total, line.threshold)),
            kz=self._wire(Mux(is_count, 0, ~total)),
            keep=Groups(self._wire(select & (keep_all | (pattern_on & m))) for m in line.mask),
            pairs=sums)

    def operands(self, line: CountLine) -> CountLine:
        regs = []
        for g, pairs in enumerate(line.pairs):
            on = line.trees[g]
            (em_lo, em_hi), (w4_lo, w4_hi), (w8_lo, w8_hi) = (
                self._pairs(part, _PAIR_BITS) for part in _cut(pairs, (4 * _PAIR_BITS,) * 3))
            # every register but the line's reads 0 (a reset)
            parts = (em_lo, em_hi, em_hi, w4_lo, w4_hi, w8_lo, w8_hi)
            flags = (on[0], on[1], on[2], on[3], on[3], on[4], on[4])
            regs.append(Cat(*(Mux(f, part, 0) for f, part in zip(flags, parts))))

        def spread(value):
            return Copies.spread(value, self._lanes)

        return dataclasses.replace(
            line, trees=None, pairs=None, halves=Groups(regs), cls=None,
            limits=spread(self._wire(line_limits(line.limits, line.cls))), kz=spread(line.kz),
            lane_count=spread(line.is_count), is_count=None)

    def merge(self, line: CountLine) -> CountLine:
        uvs, kh, kl = [], [], []
        for g, regs in enumerate(line.halves):
            em, em4, em8, w4_lo, w4_hi, w8_lo, w8_hi = _cut(regs, (_HALF_BITS,) * 7)
            # only the line's registers are not zero: their OR is its two operands
            # u (even halves) and v (odd halves; a COUNTS8 odd half weighs 16)
            u = self._or(em, w4_lo, w8_lo)
            v = self._or(em4, Cat(Const(0, 4), em8), w4_hi, Cat(Const(0, 4), w8_hi))
            uvs.append(Cat(u, v))
            h, low = lane_limits(line.limits[g], line.keep[g])
            kh.append(h)
            kl.append(low)
        return dataclasses.replace(line, halves=None, limits=None, keep=None,
                                   uv=Groups(uvs), kh=Groups(kh), kl=Groups(kl))

    def carry_save(self, line: CountLine) -> CountLine:
        saved = []
        for g, uv in enumerate(line.uv):
            u, v = _cut(uv, (_U_BITS, _V_BITS))
            twice_u, twice_v = Cat(Const(0, 1), u), Cat(Const(0, 1), v)
            count = line.lane_count[g]
            # Z: c for COUNT (no constant), 2c - T otherwise
            zu, zv = Mux(count, u, twice_u), Mux(count, v, twice_v)
            saved.append(Cat(*(part for x, y, k in ((zu, zv, line.kz[g]),
                                                    (twice_u, twice_v, line.kh[g]),
                                                    (twice_u, twice_v, line.kl[g]))
                               for part in carry_save(x, y, k))))

        def spread(value):
            return Copies.spread(value, self._lanes)

        return dataclasses.replace(
            line, uv=None, kz=None, kh=None, kl=None, saved=Groups(saved),
            lane_sign=spread(line.is_sign), lane_rest=spread(line.rest),
            lane_select=spread(line.select), is_sign=None, rest=None, select=None)

    def sums(self, line: CountLine) -> CountLine:
        zs, sides = [], []
        n = ARITH_BITS
        for g, saved in enumerate(line.saved):
            sz, cz, sh, ch, sl, cl = _cut(saved, (n,) * 6)
            zs.append(add_carry(sz, Cat(Const(0, 1), cz), ~line.lane_count[g], n)[:MARGIN_BITS])
            # 2c - T - Th' >= 0, and 2c - T + Th' - 1 < 0 (the sign bits)
            pos = add_carry(sh, Cat(Const(0, 1), ch), Const(1), n)[-1]
            neg = add_carry(sl, Cat(Const(0, 1), cl), Const(0), n)[-1]
            sides.append(Cat(~pos, neg))
        return dataclasses.replace(line, saved=None, lane_count=None, z=Groups(zs),
                                   sides=Groups(sides))

    def _or(self, *values):
        out = Const(0, max(len(v) for v in values))
        for v in values:
            out = out | v
        return self._wire(out)
