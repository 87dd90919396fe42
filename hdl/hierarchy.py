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
section 5.3).  Its four steps sit between pipeline registers placed as the
core's (:data:`~neuron_fabric.hdl.datapath.pipeline.PLACEMENT`), with the
core's :class:`~neuron_fabric.hdl.datapath.pipeline.Pipeline` (per-stage,
per-copy clock enables; one copy of each per-line control per count
lane)::

    boundary 0 | A: the lane from the element-major line or either
               |    worker-major one (a 3:1 multiplexer of wiring);
               |    pairs of partial counts added; per line: the format
               |    code, the gate flags, total + T, total - T, total / 2
    boundary 1 | B: the sums of the even and of the odd 4-bit fields
    boundary 2 | C: the count c (COUNTS4: the two sums added; COUNTS8: the
               |    odd sum shifted by four); whether the lane is kept
               |    whatever the margin (G-Binary, or the PATTERN mask bit)
    boundary 3 | D: a = 2c - total, |a| >= T by two compares of 2c with
               |    total + T and total - T, the sign of a, the output lane
    boundary 4 | (output register)

A COUNTS8 count is a byte, ``lo + 16 * hi`` of its two nibbles, so one
lane's sum is ``even + 16 * odd`` for COUNTS8 and ``even + odd`` for
COUNTS4, over the same eight nibbles: the two operands share the adders.

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


# -- the count unit's bundles (see hdl/datapath/pipeline.py for the field types)

@dataclass(frozen=True)
class CountIn:
    mode: object
    format: object
    gate_kind: object
    threshold: object
    total: object
    operand: object
    route: Copies                       # layout and operand: which view of the line
    data: Groups                        # the stored line, 32 bits per group
    mask: Groups                        # the PATTERN mask bit of each count lane


@dataclass(frozen=True)
class AfterA:
    code: Copies                        # output format (COUNT for those the build lacks)
    select: Copies                      # a transformed count line
    keep_all: Copies                    # G-Binary
    pattern_on: Copies
    margin_on: Optional[Copies]
    wide: Copies                        # COUNTS8 (odd nibbles weigh 16)
    total: Copies
    high: Copies                        # total + T
    low: Copies                         # total - T, two's complement
    half: Copies                        # floor(total / 2)
    mask: Groups
    pairs: Groups                       # four sums of two nibbles


@dataclass(frozen=True)
class AfterB:
    code: Copies
    select: Copies
    keep_all: Copies
    pattern_on: Copies
    margin_on: Optional[Copies]
    wide: Copies
    total: Copies
    high: Copies
    low: Copies
    half: Copies
    mask: Groups
    sums: Groups                        # even and odd nibbles' sums


@dataclass(frozen=True)
class AfterC:
    code: Copies
    select: Copies
    margin_on: Optional[Copies]
    total: Copies
    high: Copies
    low: Copies
    half: Copies
    kept: Groups                        # kept whatever the margin
    count: Groups                       # c


@dataclass(frozen=True)
class CountOut:
    select: Copies
    data: Groups


class CountSteps:
    """The count unit's four steps over ``geometry``'s count lanes, with the
    features ``profile`` lacks hard-wired away as in the core."""

    def __init__(self, line_bits, profile, wire):
        self._line_bits = line_bits
        self._lanes = line_bits // COUNT_LANE_BITS
        self._profile = profile
        self._wire = wire

    @property
    def steps(self):
        return (self.pairs, self.sums, self.count, self.output)

    def pairs(self, line: CountIn) -> AfterA:
        has = self._profile.has
        n = self._lanes
        raw = Cat(*line.data)
        views = {}
        for operand in (Operand.COUNTS4, Operand.COUNTS8):
            bits, contributors = count_geometry(operand)
            views[operand] = element_major(raw, contributors, bits)
        pairs = []
        for g, route in enumerate(line.route):
            lane = slice(g * COUNT_LANE_BITS, (g + 1) * COUNT_LANE_BITS)
            worker_major, wide = route[0], route[2]
            value = Mux(worker_major, Mux(wide, views[Operand.COUNTS8][lane],
                                          views[Operand.COUNTS4][lane]), raw[lane])
            value = self._wire(value)
            nib = [value[k * _NIBBLE:(k + 1) * _NIBBLE] for k in range(8)]
            pairs.append(Cat(*(self._wire(nib[k] + nib[k + 2]) for k in (0, 4, 1, 5))))
        ternary = line.mode == Mode.GTERNARY
        margin_on = None
        if has("gate_margin"):
            pattern_on = ternary & (line.gate_kind == GateKind.PATTERN)
            margin_on = Copies.spread(ternary & (line.gate_kind == GateKind.MARGIN), n)
        else:
            pattern_on = ternary
        code = Const(Format.COUNT, 2)
        if has("format_margin"):
            code = Mux(line.format == Format.MARGIN, Format.MARGIN, code)
        if has("format_sign"):
            code = Mux(line.format == Format.SIGN, Format.SIGN, code)

        def spread(value):
            return Copies.spread(value, n)

        total = line.total
        return AfterA(
            code=spread(code), select=spread(line.mode[1] & (line.operand != Operand.SIGNS)),
            keep_all=spread(line.mode == Mode.GBINARY), pattern_on=spread(pattern_on),
            margin_on=margin_on, wide=spread(line.operand[1]), total=spread(total),
            high=spread(total + line.threshold),
            low=spread((total - line.threshold)[:len(total) + 1]),
            half=spread(total[1:]), mask=line.mask, pairs=Groups(pairs))

    def sums(self, line: AfterA) -> AfterB:
        sums = []
        for pairs in line.pairs:
            p = [pairs[k * 5:(k + 1) * 5] for k in range(4)]
            sums.append(Cat(self._wire(p[0] + p[1]), self._wire(p[2] + p[3])))
        return AfterB(code=line.code, select=line.select, keep_all=line.keep_all,
                      pattern_on=line.pattern_on, margin_on=line.margin_on, wide=line.wide,
                      total=line.total, high=line.high, low=line.low, half=line.half,
                      mask=line.mask, sums=Groups(sums))

    def count(self, line: AfterB) -> AfterC:
        counts, kept = [], []
        for g, sums in enumerate(line.sums):
            even, odd = sums[:6], sums[6:]
            # COUNTS8: each odd nibble is the high half of a byte.
            addend = Mux(line.wide[g], Cat(Const(0, _NIBBLE), odd), odd)
            counts.append(self._wire((even + addend)[:10]))
            kept.append(self._wire(line.keep_all[g] | (line.pattern_on[g] & line.mask[g])))
        return AfterC(code=line.code, select=line.select, margin_on=line.margin_on,
                      total=line.total, high=line.high, low=line.low, half=line.half,
                      kept=Groups(kept), count=Groups(counts))

    def output(self, line: AfterC) -> CountOut:
        lanes = []
        for g, c in enumerate(line.count):
            code = line.code[g]
            total = line.total[g]
            twice = Cat(Const(0, 1), c)                     # 2c
            a = self._wire(twice - total)                   # 12 bits, two's complement
            kept = line.kept[g]
            if line.margin_on is not None:
                # |a| >= T  <=>  2c >= total + T  or  2c <= total - T
                far = (twice >= line.high[g]) | (twice <= line.low[g].as_signed())
                kept = kept | (line.margin_on[g] & far)
            kept = self._wire(kept)
            pos, neg = self._wire(twice > total), self._wire(twice < total)
            is_count = code == Format.COUNT
            is_margin = self._wire(kept & (code == Format.MARGIN))
            is_sign = self._wire(kept & (code == Format.SIGN))
            count = Mux(kept, c, line.half[g])
            upper = self._wire((is_margin & a[-1]) | (is_sign & neg))
            bits = []
            for j in range(COUNT_LANE_BITS):
                if j >= len(a):
                    bits.append(upper)
                    continue
                sign_j = (pos | neg) if j == 0 else neg
                bit = (is_margin & a[j]) | (is_sign & sign_j)
                if j < len(c):
                    bit = bit | (is_count & count[j])
                bits.append(bit)
            lanes.append(Cat(*bits))
        return CountOut(select=line.select, data=Groups(lanes))


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
        line = CountIn(
            mode=i.mode, format=i.format, gate_kind=i.gate_kind, threshold=i.gate_threshold,
            total=i.total, operand=i.operand,
            # one register per lane for the multiplexer's select
            route=Copies(Cat(i.layout, i.operand) for _ in range(lanes)),
            data=Groups(i.line[g * COUNT_LANE_BITS:(g + 1) * COUNT_LANE_BITS]
                        for g in range(lanes)),
            mask=Groups(i.gate_mask[g] for g in range(lanes)))
        out: CountOut = pipe.run(line, steps.steps, p.stages)
        m.d.comb += [
            self.i_stream.ready.eq(pipe.in_ready),
            self.o_stream.valid.eq(pipe.out_valid),
            self.o_stream.payload.line.eq(Cat(*out.data)),
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
