"""The exact count-sum unit of the hierarchy extension (contract section
5.3), and what it shares with :class:`~.hierarchy.Hierarchy`: the
extension's input layout and the base class with the core's parameters.

The count unit (:class:`CountSum`) works on 32-bit count lanes (contract
section 5.3) in five steps (:class:`~.count_steps.CountSteps`) with the core's
:class:`~neuron_fabric.hdl.datapath.pipeline.Pipeline` (per-stage, per-copy
clock enables from local valid chains; one copy of each per-line control
per count lane).  Its registers sit on the steps' boundaries by
:data:`~.count_steps.COUNT_PLACEMENT`: at STAGES 5 one between each two steps and one at
the output, none at the input, since step A is adders on the line's bits
alone (in the top the line comes from a register).  A COUNTS8 count is a
byte, ``lo + 16 * hi`` of its two nibbles, so one lane's sum is ``even +
16 * odd`` for COUNTS8 and ``even + odd`` for COUNTS4, over the same eight
nibbles: the two operands share the adders.
"""

from amaranth import Cat, Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import COUNT_LANE_BITS
from neuron_fabric.contract.regmap import CFG_FIELDS, HIERARCHY_CFG_FIELDS

from neuron_fabric.hdl.hierarchy.count_steps import COUNT_PLACEMENT, LIMITS_BITS, CountLine, CountSteps
from neuron_fabric.hdl.datapath import DatapathDesign, InputLayout
from neuron_fabric.hdl.datapath.pipeline import Copies, Groups, Pipeline

__all__ = ["HierarchyInputLayout", "CountOutLayout", "CountSum", "BesideCore"]

#: Widths of the extension's per-line fields: those of the CFG word.
EXTENSION_FIELDS = {f.name: f.width for f in CFG_FIELDS if f.name in HIERARCHY_CFG_FIELDS}


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


class BesideCore(wiring.Component):
    """A component with the core's parameters, taking the core's input
    payload and the extension's fields, giving ``output(line_bits=)``;
    ``members`` are more members of its signature."""

    def __init__(self, output, *, line_bits, workers, stages, profile, members=None):
        self._kwargs = dict(line_bits=line_bits, workers=workers, stages=stages,
                            profile=profile)
        self._design = DatapathDesign.of(**self._kwargs)
        p = self._design.params
        super().__init__({
            "i_stream": In(stream.Signature(HierarchyInputLayout(line_bits=p.line_bits,
                                                                 lanes=p.lanes))),
            "o_stream": Out(stream.Signature(output(line_bits=p.line_bits))),
            **(members or {}),
        })

    @property
    def params(self):
        return self._design.params


class CountSum(BesideCore):
    """The exact count-sum unit (contract section 5.3).

    Parameters
    ----------
    line_bits, workers, stages, profile :
        As :class:`~neuron_fabric.hdl.datapath.Datapath`'s; ``workers``
        only sets the width of ``gate_mask`` (the core's input payload).
    limits_in : bool
        Take the MARGIN gate's limits as the member ``limits`` rather than
        forming them from the payload in the first step.

    Members
    -------
    i_stream : ``In(stream.Signature(HierarchyInputLayout(line_bits=, lanes=)))``
        ``gate_mask`` bit ``j`` (j < LINE_BITS / 32) is count lane ``j``'s
        PATTERN gate; ``tag`` is not used.
    o_stream : ``Out(stream.Signature(CountOutLayout(line_bits=)))``
        A line accepted at edge ``t`` leaves at edge ``t + stages`` with
        ``o_stream.ready`` held high; the handshake is the core's.
    limits : ``In(LIMITS_BITS)``, with ``limits_in``
        The MARGIN gate's limits on the counts of the line in ``i_stream``
        (:func:`~.count_steps.margin_limits` of its CFG), formed by the
        caller instead of by the unit's first step.
    """

    def __init__(self, *, line_bits=512, workers=8, stages=5, profile="full",
                 limits_in=False):
        self._limits_in = limits_in
        super().__init__(CountOutLayout, line_bits=line_bits, workers=workers, stages=stages,
                         profile=profile,
                         members={"limits": In(LIMITS_BITS)} if limits_in else None)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        lanes = p.line_bits // COUNT_LANE_BITS
        # (the core's stall rule, so that the two move in lockstep)
        pipe = Pipeline(m, stages=p.stages, in_valid=self.i_stream.valid,
                        out_ready=self.o_stream.ready, skid=not self._design.paper_like)
        steps = CountSteps(p.line_bits, self._design.profile, pipe.wire)
        i = self.i_stream.payload
        line = CountLine(
            mode=i.mode, format=i.format, gate_kind=i.gate_kind, threshold=i.gate_threshold,
            total=i.total, operand=i.operand,
            limits=self.limits if self._limits_in else None,
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
