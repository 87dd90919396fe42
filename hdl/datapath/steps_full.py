"""The steps of every profile but the paper's: built for depth.

For W = 8 each bit a step computes is a function of at most six register
outputs (most of at most five: one LUT4, or two joined by the slice's
PFUMX), and no step reads a per-line control through a spread tree's
register::

    A  popcounts of each lane's worker bits in chunks of five and three;
       per line: the output code (format, or identity), whether the
       PATTERN and the MARGIN gates apply, the margin limit as a
       thermometer (limit >= k for k = 1 .. W/2 + 1)
    B  from the chunk counts of a lane (five bits): its sign count c, c < W/2,
       and the distance flags |c - W/2| == k for k = 0 .. W/2 - 1
    C  each output bit before gating, by a table on the code, the raw bit
       and the fewest count features that decide it; the drop partials:
       the pattern drop (the lane's mask bit is 0 and the gate applies) or
       a margin limit above W/2, and |c - W/2| < limit taken two distances
       at a time
    D  the output bit: t, or the gated value (W/2 in COUNT format, else 0)

A forced value is written as AND/OR logic, not as a multiplexer to a
constant, so that synthesis does not turn it into a flip-flop reset gated
by the enable.
"""

import itertools
from dataclasses import dataclass
from typing import Optional

from amaranth import Cat, Const, Mux

from neuron_fabric.contract.facts import Format, GateKind, Mode

from neuron_fabric.hdl.datapath.pipeline import Copies, Groups, StepSet
from neuron_fabric.hdl.datapath.ports import LineIn, LineOut

__all__ = ["FullSteps", "IDENTITY", "chunk_sizes", "lane_value"]

#: Output code of a line that passes unchanged (codes 0..2 are the formats).
IDENTITY = 3


def chunk_sizes(workers):
    """Worker bits per step-A popcount of a lane: a split whose counts step B
    reads in at most five bits for W = 8 (counts 0..5 and 0..3)."""
    if workers == 8:
        return (5, 3)
    return (4,) * (workers // 4)


def lane_value(fmt, c, workers):
    """Output lane (W-bit two's complement) of a kept lane of count ``c`` in
    format ``fmt`` (contract section 2)."""
    h = workers // 2
    if fmt == Format.MARGIN:
        value = 2 * c - workers
    elif fmt == Format.SIGN:
        value = (c > h) - (c < h)
    else:
        value = c
    return value % (1 << workers)


@dataclass(frozen=True)
class FullAfterA:
    tag: object
    code: Copies                        # the format, or IDENTITY
    code_inv: Copies                    # ~code, for half of each group's lanes
    pattern_on: Copies                  # the PATTERN gate applies
    margin_on: Optional[Copies]         # the MARGIN gate applies
    limit_at_least: Optional[Copies]    # bit k-1: the margin limit >= k
    data: Groups
    mask: Groups
    chunk: Groups                       # per lane, the popcounts of its chunks


@dataclass(frozen=True)
class FullAfterB:
    tag: object
    code: Copies
    code_inv: Copies
    pattern_on: Copies
    margin_on: Optional[Copies]
    limit_at_least: Optional[Copies]
    data: Groups
    mask: Groups
    feature: Groups                     # per lane: c, c < W/2, |c - W/2| == k


@dataclass(frozen=True)
class FullAfterC:
    tag: object
    gated_half: Copies                  # a gated lane reads W/2 (COUNT format)
    data: Groups                        # output lanes before gating
    drop: Groups                        # per lane, the drop partials


class FullSteps(StepSet):
    """The four steps of a profile with any optional core feature; the
    features ``profile`` lacks are hard-wired away."""

    def __init__(self, geometry, profile, wire):
        super().__init__(geometry, wire)
        self._profile = profile
        w = geometry.workers
        self._chunks = chunk_sizes(w)
        self._chunk_bits = [n.bit_length() for n in self._chunks]
        # Distance flags |c - W/2| == k: every k below W/2 for the margin
        # gate, k = 0 alone (c == W/2, the SIGN format's zero) otherwise.
        self._distances = w // 2 if profile.has("gate_margin") else 1
        # Codes a line can carry: the profile's formats and IDENTITY.
        self._codes = [Format.COUNT] + [
            f for f, name in ((Format.MARGIN, "format_margin"), (Format.SIGN, "format_sign"))
            if profile.has(name)]

    @property
    def steps(self):
        return (self.chunk_counts, self.features, self.format_and_drops, self.output)

    @property
    def _feature_bits(self):
        return self._geo.count_bits + 1 + self._distances

    def chunk_counts(self, line: LineIn) -> FullAfterA:
        has = self._profile.has
        groups = self._geo.groups
        ternary = self._wire(line.mode == Mode.GTERNARY)
        margin_on = limit_at_least = None
        if has("gate_margin"):
            pattern_on = ternary & (line.gate_kind == GateKind.PATTERN)
            # Whether the gate applies and the limit travel apart (functions
            # of three and five inputs); step C combines the copies.
            margin_on = Copies.spread(ternary & (line.gate_kind == GateKind.MARGIN), groups)
            limit_at_least = Copies.spread(self._limit_at_least(line.threshold), groups)
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
            Cat(*(self._wire(sum(x[k] for k in range(start, start + n))[:bits])
                  for x in self._lanes(data, self._geo.workers)
                  for start, n, bits in zip(itertools.accumulate((0,) + self._chunks),
                                            self._chunks, self._chunk_bits)))
            for data in line.data)
        code = self._wire(code)
        return FullAfterA(tag=line.tag, code=Copies.spread(code, groups),
                      code_inv=Copies.spread(self._wire(~code), groups),
                      pattern_on=Copies.spread(pattern_on, groups), margin_on=margin_on,
                      limit_at_least=limit_at_least, data=line.data, mask=line.mask,
                      chunk=chunks)

    def _limit_at_least(self, threshold):
        """Bit k-1: the margin gate's limit on d = |c - W/2| is at least k,
        for k = 1 .. W/2 + 1; the gate keeps a lane iff d >= the limit.

        |2c - W| >= T  <=>  d >= ceil(T/2), so the limit is at least k iff
        T >= 2k - 1; bit W/2 (k = W/2 + 1, T > W) drops every lane.
        """
        values = range(1 << len(threshold))
        # Each bit a table lookup on T: one LUT rather than a carry chain.
        return Cat(*(Const(sum(int(t >= 2 * k - 1) << t for t in values), len(values))
                     .bit_select(threshold, 1)
                     for k in range(1, self._geo.workers // 2 + 2)))

    def features(self, line: FullAfterA) -> FullAfterB:
        h = self._geo.workers // 2
        per_lane = sum(self._chunk_bits)
        feats = []
        for chunk in line.chunk:
            fs = []
            for counts in self._lanes(chunk, per_lane):
                parts, pos = [], 0
                for bits in self._chunk_bits:
                    parts.append(counts[pos:pos + bits])
                    pos += bits
                c = self._wire(sum(parts)[:self._geo.count_bits])
                fs.append(c)
                fs.append(c < h)
                fs.extend((c == h + k) | (c == h - k) for k in range(self._distances))
            feats.append(Cat(*fs))
        return FullAfterB(tag=line.tag, code=line.code, code_inv=line.code_inv,
                      pattern_on=line.pattern_on,
                      margin_on=line.margin_on, limit_at_least=line.limit_at_least,
                      data=line.data, mask=line.mask, feature=Groups(feats))

    def format_and_drops(self, line: FullAfterB) -> FullAfterC:
        w, cw = self._geo.workers, self._geo.count_bits
        values, drops = [], []
        for g, (feats, data, mask) in enumerate(zip(line.feature, line.data, line.mask)):
            ts, zs = [], []
            for i, (raw, f) in enumerate(zip(self._lanes(data, w),
                                             self._lanes(feats, self._feature_bits))):
                count_features = [f[b] for b in range(cw + 2)]   # c, c < W/2, c == W/2
                # Half the lanes read the complemented copy: each copy's
                # register feeds fewer tables.
                code = line.code[g] if 2 * i < self._geo.group_lanes else ~line.code_inv[g]
                ts.append(Cat(*(self._output_bit(j, code, raw[j], count_features)
                                for j in range(w))))
                zs.append(Cat(*self._drops(line, g, mask[i], f[cw + 1:])))
            values.append(Cat(*ts))
            drops.append(Cat(*zs))
        return FullAfterC(tag=line.tag, gated_half=Copies(code == Format.COUNT for code in line.code),
                      data=Groups(values), drop=Groups(drops))

    @property
    def _drop_bits(self):
        return 1 + (self._distances + 1) // 2 if self._profile.has("gate_margin") else 1

    def _drops(self, line, g, mask_bit, equal):
        """The lane's drop partials: the pattern drop or a limit above W/2,
        then |c - W/2| < limit for two distances each (``equal[k]``:
        |c - W/2| == k)."""
        pattern = line.pattern_on[g] & ~mask_bit
        if line.margin_on is None:
            return [pattern]
        on, at_least = line.margin_on[g], line.limit_at_least[g]
        h = self._geo.workers // 2
        parts = [pattern | (on & at_least[h])]
        for k in range(0, h, 2):
            near = equal[k] & at_least[k]
            if k + 1 < h:
                near = near | (equal[k + 1] & at_least[k + 1])
            parts.append(on & near)
        return parts

    def _output_bit(self, j, code, raw_bit, features):
        """Output bit ``j`` before gating: ``raw_bit`` for IDENTITY, else bit
        ``j`` of the lane value for the format, looked up in a table on the
        code and the fewest of ``features`` (count bits, c < W/2, c == W/2)
        that decide it."""
        w, h = self._geo.workers, self._geo.workers // 2
        cw = self._geo.count_bits

        def feature(c):
            return tuple(c >> b & 1 for b in range(cw)) + (int(c < h), int(c == h))

        def bit(fmt, c):
            return lane_value(fmt, c, w) >> j & 1

        for size in range(len(features) + 1):
            for chosen in itertools.combinations(range(len(features)), size):
                table = {}
                if all(table.setdefault((fmt, tuple(feature(c)[k] for k in chosen)),
                                        bit(fmt, c)) == bit(fmt, c)
                       for fmt in self._codes for c in range(w + 1)):
                    break
            else:
                continue
            break
        index = [features[k] for k in chosen] + [raw_bit, code]
        entries = 0
        for key in range(1 << (len(chosen) + 1 + 2)):
            sel = tuple(key >> n & 1 for n in range(len(chosen)))
            raw = key >> len(chosen) & 1
            code_value = key >> (len(chosen) + 1)
            value = raw if code_value == IDENTITY else table.get((code_value, sel), 0)
            entries |= value << key
        return Const(entries, 1 << (len(chosen) + 3)).bit_select(Cat(*index), 1)

    def output(self, line: FullAfterC) -> LineOut:
        return LineOut(tag=line.tag, data=Groups(
            self._output_group(*args) for args in zip(line.data, line.drop, line.gated_half)))

    def _output_group(self, data, drop, gated_half):
        w, h = self._geo.workers, self._geo.half_bit
        lanes = []
        for i, t in enumerate(self._lanes(data, w)):
            zero = self._geo.field(drop, i, self._drop_bits).any()
            bits = []
            for j in range(w):
                # AND/OR rather than a multiplexer on ``zero``: a multiplexer
                # to a constant becomes a flip-flop synchronous reset, which
                # under the clock enable costs one more LUT on the enable path.
                bit = t[j] & ~zero
                bits.append(bit | (zero & gated_half) if j == h else bit)
            lanes.append(Cat(*bits))
        return Cat(*lanes)
