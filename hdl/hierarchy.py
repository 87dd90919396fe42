"""The hierarchy extension of the read transform (contract section 5): the
worker-major permutation and the exact count-sum unit, beside the datapath
core.

:class:`Hierarchy` has the core's two streams (contract section 3) with
three more per-line fields on the input, ``layout``, ``operand`` and
``total`` (the CFG fields of contract section 5), and holds

* the permutation of a SIGNS line from the worker-major layout to the
  element-major one (:func:`element_major`: wiring only) and one 2:1
  multiplexer in front of the core, selected when the line is worker-major,
  SIGNS and transformed (G-Binary or G-Ternary);
* the core (:class:`~neuron_fabric.hdl.datapath.Datapath`), unchanged;
* the count-sum unit (:class:`CountSum`) beside the core, fed the same
  lines in the same cycles, with the same latency (STAGES) and the same
  stall rule, so the two pipelines move in lockstep;
* one 2:1 multiplexer per 32-bit output lane that takes the count unit's
  lane for a transformed count line and the core's otherwise.

Lines leave in order, one per cycle with the output ready held high, each
STAGES cycles after it was accepted: the wrapper's handshake is the core's.

The count unit (:class:`CountSum`) works on 32-bit count lanes (contract
section 5.3) in five steps (:class:`CountSteps`) with the core's
:class:`~neuron_fabric.hdl.datapath.pipeline.Pipeline` (per-stage, per-copy
clock enables from local valid chains; one copy of each per-line control
per count lane).  Its registers sit on the steps' boundaries by
:data:`COUNT_PLACEMENT`: at STAGES 5 one between each two steps and one at
the output, none at the input, since step A is adders on the line's bits
alone (in the top the line comes from a register).  A COUNTS8 count is a
byte, ``lo + 16 * hi`` of its two nibbles, so one lane's sum is ``even +
16 * odd`` for COUNTS8 and ``even + odd`` for COUNTS4, over the same eight
nibbles: the two operands share the adders.

Integration into the top (``hdl/read_path.py`` instantiates
:class:`Hierarchy` in place of the core; ``hdl/request.py`` carries the
fields):

* ports: the core's, plus ``layout`` (1 bit), ``operand`` (2) and
  ``total`` (10) on the input payload, from the read's CFG as captured when
  the request is accepted (contract section 4.3);
* ``gate_mask``: for a SIGNS line the core's mask (E lanes, ``phase =
  (line_index * E) mod P``); for a count line, bit ``j`` (j < E_c =
  LINE_BITS / 32) keeps count lane ``j``, with ``phase_c = (line_index *
  E_c) mod P``: the same table lookup ``mask[i] = T[i + phase]`` with the
  phase formed from E_c instead of E; the bits from E_c up are not used;
* latency: STAGES, as the core; the stall rule and ``in_ready`` are the
  core's, so a read path that runs the core with ``out_ready`` high runs
  this with ``out_ready`` high;
* the CFG check (``hdl/csr.py`` :func:`~neuron_fabric.hdl.csr.cfg_invalid`,
  ``host/regmap.py`` ``cfg_check``) gets the build's features, and the
  ``full`` profile the ``hierarchy`` feature, in the same change.
"""

import dataclasses
from dataclasses import dataclass
from typing import Optional

from amaranth import Cat, Const, Module, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import (COUNT_LANE_BITS, Format, GateKind, Mode, Operand,
                                      count_geometry)
from neuron_fabric.host.regmap import CFG_FIELDS

from .datapath import Datapath, DatapathDesign, InputLayout, OutputLayout
from .datapath.pipeline import Copies, Groups, Pipeline

__all__ = ["element_major", "HierarchyInputLayout", "CountOutLayout", "CountSum", "Hierarchy",
           "HIERARCHY_MODULE"]

#: Verilog module name of the exported wrapper.
HIERARCHY_MODULE = "neuron_fabric_hierarchy"

#: Widths of the extension's per-line fields: those of the CFG word.
EXTENSION_FIELDS = {f.name: f.width for f in CFG_FIELDS if f.name in ("layout", "operand", "total")}

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


class HierarchyInputLayout(data.StructLayout):
    """The core's input payload (:class:`~.datapath.InputLayout`) and the
    extension's per-line fields ``layout``, ``operand`` and ``total``."""

    def __init__(self, *, line_bits, lanes):
        core = InputLayout(line_bits=line_bits, lanes=lanes)
        super().__init__({**{name: field.shape for name, field in core}, **EXTENSION_FIELDS})


class CountOutLayout(data.StructLayout):
    """The count unit's output: a line of 32-bit output lanes, and per lane
    whether it is the read's answer (the line is a transformed count line)."""

    def __init__(self, *, line_bits):
        super().__init__({"line": line_bits, "select": line_bits // COUNT_LANE_BITS})


# -- the count unit's steps -------------------------------------------------------

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
    positive: Optional[Groups] = None   # a > 0
    kept: Optional[Groups] = None       # the gate keeps the lane
    out: Optional[Groups] = None        # the output lane


#: The nibbles of a lane a pair adds: (0, 2), (4, 6) of the even sum, (1, 3),
#: (5, 7) of the odd one.
_PAIRS = ((0, 2), (4, 6), (1, 3), (5, 7))
_PAIR_BITS = _NIBBLE + 1
_SUM_BITS = _NIBBLE + 2
_COUNT_BITS = 10                        # c <= 1020
_MARGIN_BITS = 12                       # -1023 <= a <= 2046


class CountSteps:
    """The count unit's five steps over a line's 32-bit count lanes, with
    the features ``profile`` lacks hard-wired away as in the core::

        A  for the element-major line and both worker-major views of it
           (wiring), four sums of two nibbles per lane; per line: the
           format (one-hot), the gate flags, the MARGIN gate's limits on c
           (ceil((total + T) / 2) and floor((total - T) / 2) + 1 when the
           gate applies, limits no count reaches when not), and total / 2
        B  the pairs of the line's view (a 3:1 multiplexer on the route
           copy), and the sums of the even and of the odd nibbles
        C  c: even + odd (COUNTS4), or even + 16 * odd (COUNTS8: each odd
           nibble is the high half of a byte); whether G-Binary or the
           PATTERN mask keeps the lane
        D  a = 2c - total, its sign, c > total / 2; the MARGIN gate
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
        raw = Cat(*line.data)
        views = [raw] + [element_major(raw, contributors, bits) for bits, contributors in
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
        total, threshold = line.total, line.threshold
        pattern_on, high, low = ternary, None, None
        if has("gate_margin"):
            pattern_on = ternary & (line.gate_kind == GateKind.PATTERN)
            margin_on = self._wire(ternary & (line.gate_kind == GateKind.MARGIN))
            # T <= total in range, so the low limit is at least 1 there;
            # c <= 1020 never reaches the high limit 1023.
            high = Mux(margin_on, (total + threshold + 1)[1:], (1 << _COUNT_BITS) - 1)
            low = Mux(margin_on, (total - threshold + 2)[1:_COUNT_BITS + 1], 0)
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
            narrow = even + odd
            wide = Cat(even[:_NIBBLE], odd + even[_NIBBLE:])
            counts.append(self._wire(Mux(line.wide[g], wide, narrow)[:_COUNT_BITS]))
            keep.append(self._wire(line.keep_all[g] | (line.pattern_on[g] & line.mask[g])))
        return dataclasses.replace(line, sums=None, wide=None, keep_all=None, pattern_on=None,
                                   mask=None, count=Groups(counts), keep=Groups(keep))

    def gates(self, line: CountLine) -> CountLine:
        margins, positive, kept = [], [], []
        for g, c in enumerate(line.count):
            twice = Cat(Const(0, 1), c)
            margins.append(self._wire((twice - line.total_c[g])[:_MARGIN_BITS]))
            positive.append(self._wire(c > line.half[g]))          # 2c > total
            keep = line.keep[g]
            if line.high is not None:
                # |2c - total| >= T  <=>  2c >= total + T  or  2c <= total - T
                keep = keep | (c >= line.high[g]) | (c < line.low[g])
            kept.append(self._wire(keep))
        return dataclasses.replace(line, total_c=None, high=None, low=None, keep=None, margin=Groups(margins),
                                   positive=Groups(positive), kept=Groups(kept))

    def output(self, line: CountLine) -> CountLine:
        lanes = []
        for g, (c, a, pos, kept) in enumerate(zip(line.count, line.margin, line.positive,
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
                sign_j = (pos | neg) if j == 0 else neg
                value = (is_margin & a[j]) | (is_sign & sign_j)
                if j < _COUNT_BITS:
                    value = value | (is_count & c[j])
                    gated = is_count & line.half[g][j] if j < len(line.half[g]) else Const(0)
                    bits.append((kept & value) | (~kept & gated))
                else:
                    bits.append(kept & value)
            lanes.append(Cat(*bits))
        return CountLine(select=line.select, out=Groups(lanes))


class _BesideCore(wiring.Component):
    """A component with the core's parameters, taking the core's input
    payload and the extension's fields, giving ``output(line_bits=)``."""

    def __init__(self, output, *, line_bits, workers, stages, profile):
        self._kwargs = dict(line_bits=line_bits, workers=workers, stages=stages,
                            profile=profile)
        self._design = DatapathDesign.of(**self._kwargs)
        p = self._design.params
        super().__init__({
            "i_stream": In(stream.Signature(HierarchyInputLayout(line_bits=p.line_bits,
                                                                 lanes=p.lanes))),
            "o_stream": Out(stream.Signature(output(line_bits=p.line_bits))),
        })

    @property
    def params(self):
        return self._design.params


class CountSum(_BesideCore):
    """The exact count-sum unit (contract section 5.3).

    Parameters
    ----------
    line_bits, workers, stages, profile :
        As :class:`~neuron_fabric.hdl.datapath.Datapath`'s; ``workers``
        only sets the width of ``gate_mask`` (the core's input payload).

    Members
    -------
    i_stream : ``In(stream.Signature(HierarchyInputLayout(line_bits=, lanes=)))``
        ``gate_mask`` bit ``j`` (j < LINE_BITS / 32) is count lane ``j``'s
        PATTERN gate; ``tag`` is not used.
    o_stream : ``Out(stream.Signature(CountOutLayout(line_bits=)))``
        A line accepted at edge ``t`` leaves at edge ``t + stages`` with
        ``o_stream.ready`` held high; the handshake is the core's.
    """

    def __init__(self, *, line_bits=512, workers=8, stages=5, profile="full"):
        super().__init__(CountOutLayout, line_bits=line_bits, workers=workers, stages=stages,
                         profile=profile)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        lanes = p.line_bits // COUNT_LANE_BITS
        pipe = Pipeline(m, stages=p.stages, in_valid=self.i_stream.valid,
                        out_ready=self.o_stream.ready)
        steps = CountSteps(p.line_bits, self._design.profile, pipe.wire)
        i = self.i_stream.payload
        line = CountLine(
            mode=i.mode, format=i.format, gate_kind=i.gate_kind, threshold=i.gate_threshold,
            total=i.total, operand=i.operand,
            # one register per lane for the view's multiplexer
            route=Copies(Cat(i.layout, i.operand) for _ in range(lanes)),
            data=Groups(i.line[g * COUNT_LANE_BITS:(g + 1) * COUNT_LANE_BITS]
                        for g in range(lanes)),
            mask=Groups(i.gate_mask[g] for g in range(lanes)))
        out = pipe.run(line, steps.steps, p.stages, placement=COUNT_PLACEMENT[p.stages])
        m.d.comb += [
            self.i_stream.ready.eq(pipe.in_ready),
            self.o_stream.valid.eq(pipe.out_valid),
            self.o_stream.payload.line.eq(Cat(*out.out)),
            self.o_stream.payload.select.eq(Cat(*out.select)),
        ]
        return m


class Hierarchy(_BesideCore):
    """The datapath core with the hierarchy extension (contract section 5).

    Parameters
    ----------
    line_bits, workers, stages, profile :
        As :class:`~neuron_fabric.hdl.datapath.Datapath`'s.

    Members
    -------
    i_stream : ``In(stream.Signature(HierarchyInputLayout(line_bits=, lanes=)))``
        The core's input (contract section 3) and the CFG fields ``layout``,
        ``operand``, ``total`` of the read.  ``gate_mask`` is the PATTERN
        gate: one bit per lane for a SIGNS line, one bit per count lane
        (the low LINE_BITS / 32 bits) for a count line.
    o_stream : ``Out(stream.Signature(OutputLayout(line_bits=)))``
        As the core's: lines in order, a line accepted at edge ``t``
        leaving at edge ``t + stages`` with ``o_stream.ready`` held high.
    """

    def __init__(self, *, line_bits=512, workers=8, stages=5, profile="full"):
        super().__init__(OutputLayout, line_bits=line_bits, workers=workers, stages=stages,
                         profile=profile)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        core = m.submodules.core = Datapath(**self._kwargs)
        counts = m.submodules.counts = CountSum(**self._kwargs)
        i, o = self.i_stream, self.o_stream
        # The core sees SIGNS lines element-major.
        permute = i.payload.layout & (i.payload.operand == Operand.SIGNS) & i.payload.mode[1]
        signs = Mux(permute, element_major(i.payload.line, p.workers, 1), i.payload.line)
        m.d.comb += [
            core.i_stream.valid.eq(i.valid), counts.i_stream.valid.eq(i.valid),
            i.ready.eq(core.i_stream.ready),
            core.i_stream.payload.line.eq(signs),
            *(core.i_stream.payload[name].eq(i.payload[name])
              for name, _ in core.i_stream.payload.shape() if name != "line"),
            counts.i_stream.payload.eq(i.payload),
            core.o_stream.ready.eq(o.ready), counts.o_stream.ready.eq(o.ready),
            o.valid.eq(core.o_stream.valid),
            o.payload.tag.eq(core.o_stream.payload.tag),
        ]
        select = counts.o_stream.payload.select
        for g in range(len(select)):
            lane = slice(g * COUNT_LANE_BITS, (g + 1) * COUNT_LANE_BITS)
            m.d.comb += o.payload.line[lane].eq(Mux(select[g], counts.o_stream.payload.line[lane],
                                                    core.o_stream.payload.line[lane]))
        return m
