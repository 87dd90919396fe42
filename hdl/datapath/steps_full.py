"""The steps of every profile but the paper's: built for depth.

For W <= 8 each bit a step computes is a function of at most seven
register outputs (one LUT4 with the slice's wide-function multiplexers on
ECP5)::

    A  population count of each group of four worker bits; per line: the
       output code (format, or identity), the margin limit
    B  the sign count c (pairs of 4-bit counts added)
    C  each output bit before gating, t = raw bit or lane value by format
       (c, code and the raw bit); the margin drop |c - W/2| < ceil(T/2)
       (c and the limit); the pattern drop (the lane's mask bit is 0 and
       the pattern gate applies)
    D  the output bit: t, or the gated value (W/2 in COUNT format, else 0)

A forced value is written as AND/OR logic, not as a multiplexer to a
constant, so that synthesis does not turn it into a flip-flop reset gated
by the enable.
"""

from dataclasses import dataclass
from typing import Optional

from amaranth import Cat, Const, Mux

from neuron_fabric.host.facts import Format, GateKind, Mode

from .pipeline import Copies, Groups, StepSet
from .ports import LineIn, LineOut

__all__ = ["FullSteps", "IDENTITY"]

#: Output code of a line that passes unchanged (codes 0..2 are the formats).
IDENTITY = 3


@dataclass(frozen=True)
class AfterA:
    tag: object
    code: Copies                        # the format, or IDENTITY
    margin_limit: Optional[Copies]      # the MARGIN gate's limit on |c - W/2|
    gate_margin: Optional[Copies]       # the MARGIN gate applies
    pattern_on: Copies                  # the PATTERN gate applies
    data: Groups
    mask: Groups
    chunk: Groups                       # popcounts of four worker bits


@dataclass(frozen=True)
class AfterB:
    tag: object
    code: Copies
    margin_limit: Optional[Copies]      # 0 unless the MARGIN gate applies
    pattern_on: Copies
    data: Groups
    mask: Groups
    sum: Groups                         # pairs of chunk counts added


@dataclass(frozen=True)
class AfterC:
    tag: object
    gated_half: Copies                  # a gated lane reads W/2 (COUNT format)
    data: Groups                        # output lanes before gating
    margin_drop: Optional[Groups]       # per lane
    pattern_drop: Groups                # per lane


class FullSteps(StepSet):
    """The four steps of a profile with any optional core feature; the
    features ``profile`` lacks are hard-wired away."""

    def __init__(self, geometry, profile, wire):
        super().__init__(geometry, wire)
        self._profile = profile

    @property
    def steps(self):
        return (self.chunk_counts, self.sign_counts, self.format_and_gates, self.output)

    def chunk_counts(self, line: LineIn) -> AfterA:
        has = self._profile.has
        groups = self._geo.groups
        ternary = self._wire(line.mode == Mode.GTERNARY)
        margin_limit = gate_margin = None
        if has("gate_margin"):
            pattern_on = self._wire(ternary & (line.gate_kind == GateKind.PATTERN))
            # The limit and whether the gate applies travel apart (each a
            # function of at most five inputs); step B combines the copies.
            margin_limit = Copies.spread(self._margin_limit(line.threshold), groups)
            gate_margin = Copies.spread(ternary & (line.gate_kind == GateKind.MARGIN), groups)
        else:
            pattern_on = ternary
        # The output code: the format for a transformed line (the formats the
        # profile lacks, and the invalid code 3, read as COUNT), and
        # IDENTITY for a line that passes unchanged.
        known = Const(0, 2)
        if has("format_margin"):
            known = Mux(line.format == Format.MARGIN, Format.MARGIN, known)
        if has("format_sign"):
            known = Mux(line.format == Format.SIGN, Format.SIGN, known)
        code = Mux(line.mode[1], known, IDENTITY)
        chunks = Groups(
            Cat(*(self._wire((x[k] + x[k + 1] + x[k + 2] + x[k + 3])[:3])
                  for x in self._lanes(data, self._geo.workers)
                  for k in range(0, self._geo.workers, 4)))
            for data in line.data)
        return AfterA(tag=line.tag, code=Copies.spread(code, groups),
                      margin_limit=margin_limit, gate_margin=gate_margin,
                      pattern_on=Copies.spread(pattern_on, groups),
                      data=line.data, mask=line.mask, chunk=chunks)

    def _margin_limit(self, threshold):
        """The margin gate keeps a lane iff d = |c - W/2| >= this limit.

        |2c - W| >= T  <=>  d >= ceil(T/2).  The limit saturates to all ones
        (above every d, so nothing is kept) for T > W.  Each bit is a table
        lookup on T, which maps to one LUT rather than a carry chain.
        """
        w = self._geo.workers
        width = (w // 2 + 1).bit_length()
        values = range(1 << len(threshold))
        limit = [min((t + 1) // 2, (1 << width) - 1) if (t + 1) // 2 <= w // 2
                 else (1 << width) - 1 for t in values]
        bits = [Const(sum((limit[t] >> b & 1) << t for t in values), len(values))
                .bit_select(threshold, 1) for b in range(width)]
        return Cat(*bits)

    def sign_counts(self, line: AfterA) -> AfterB:
        chunks = self._geo.workers // 4
        margin_limit = None
        if line.margin_limit is not None:
            margin_limit = Copies(limit & gate.replicate(len(limit))
                                  for limit, gate in zip(line.margin_limit, line.gate_margin))
        sums = []
        for chunk in line.chunk:
            ss = []
            for i in range(self._geo.group_lanes):
                counts = [self._geo.field(chunk, i * chunks + k, 3) for k in range(chunks)]
                if chunks == 1:
                    ss.append(counts[0])
                # Pairs of 3-bit counts (0..4) to 4-bit sums: each sum bit a
                # function of at most six inputs.  For W = 8 the pair is the
                # count c; for W = 16 step C adds the two pairs.
                ss.extend(self._wire(counts[k] + counts[k + 1]) for k in range(0, chunks - 1, 2))
            sums.append(Cat(*ss))
        return AfterB(tag=line.tag, code=line.code, margin_limit=margin_limit,
                      pattern_on=line.pattern_on, data=line.data, mask=line.mask,
                      sum=Groups(sums))

    def format_and_gates(self, line: AfterB) -> AfterC:
        w, cw = self._geo.workers, self._geo.count_bits
        values, margin_drop = [], []
        for g, (sums, data) in enumerate(zip(line.sum, line.data)):
            ts, mz = [], []
            for i, raw in enumerate(self._lanes(data, w)):
                if w == 16:
                    pair = self._geo.field(sums, i, 8)
                    c = self._wire((pair[:4] + pair[4:])[:cw])
                else:
                    c = self._geo.field(sums, i, cw)
                ts.append(self._output_bits(c, line.code[g], raw))
                if line.margin_limit is not None:
                    # The limit is 0 (nothing dropped) unless the margin
                    # gate applies.  c and the limit: seven inputs for W = 8.
                    mz.append(self._distance(c) < line.margin_limit[g])
            values.append(Cat(*ts))
            if mz:
                margin_drop.append(Cat(*mz))
        # The pattern drop: a lane whose mask bit is 0, when the gate applies.
        pattern_drop = Groups(on.replicate(len(mask)) & ~mask
                              for on, mask in zip(line.pattern_on, line.mask))
        return AfterC(tag=line.tag, gated_half=Copies(code == Format.COUNT for code in line.code),
                      data=Groups(values), margin_drop=Groups(margin_drop) if margin_drop else None,
                      pattern_drop=pattern_drop)

    def _output_bits(self, c, code, raw):
        """Output lane before gating: the raw lane for IDENTITY, else the
        lane value by format.  Bit j is a function of c, the code and raw
        bit j (seven inputs for W = 8)."""
        w = self._geo.workers
        h = w // 2
        has = self._profile.has
        identity = code == IDENTITY
        count_ok = code == Format.COUNT
        margin = self._wire(c * 2 - w)          # sign-extended to W bits below
        margin = Cat(margin, margin[-1].replicate(max(0, w - len(margin))))[:w]
        lt = self._wire(c < h)
        bits = []
        for j in range(w):
            value = Const(0)
            if has("format_margin"):
                value = value | (margin[j] & (code == Format.MARGIN))
            if has("format_sign"):
                sign_j = (c != h) if j == 0 else lt
                value = value | (sign_j & (code == Format.SIGN))
            if j < len(c):
                value = value | (c[j] & count_ok)
            bits.append(Mux(identity, raw[j], value))
        return Cat(*bits)

    def _distance(self, c):
        """|c - W/2| for a count c in 0..W."""
        w = self._geo.workers
        width = (w // 2).bit_length()
        neg = self._wire(c < w // 2)
        below = (w // 2 - c).as_unsigned()[:width]
        above = (c - w // 2).as_unsigned()[:width]
        return (below & neg.replicate(width)) | (above & (~neg).replicate(width))

    def output(self, line: AfterC) -> LineOut:
        return LineOut(tag=line.tag, data=Groups(
            self._output_group(*args) for args in zip(
                line.data, line.pattern_drop, line.gated_half,
                line.margin_drop or [None] * len(line.data))))

    def _output_group(self, data, pattern_drop, gated_half, margin_drop):
        w, h = self._geo.workers, self._geo.half_bit
        lanes = []
        for i, t in enumerate(self._lanes(data, w)):
            zero = pattern_drop[i]
            if margin_drop is not None:
                zero = zero | margin_drop[i]
            bits = []
            for j in range(w):
                # AND/OR rather than a multiplexer on ``zero``: a multiplexer
                # to a constant becomes a flip-flop synchronous reset, which
                # under the clock enable costs one more LUT on the enable path.
                bit = t[j] & ~zero
                bits.append(bit | (zero & gated_half) if j == h else bit)
            lanes.append(Cat(*bits))
        return Cat(*lanes)
