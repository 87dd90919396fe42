"""The hierarchy extension of the read transform (contract section 5): the
worker-major permutation and the exact count-sum unit, beside the datapath
core.

:class:`HierarchyUnit` has the core's two streams (contract section 3) with
three more per-line fields on the input, ``layout``, ``operand`` and
``total`` (the CFG fields of contract section 5), and holds

* the permutation of a SIGNS line from the worker-major layout to the
  element-major one (:func:`element_major`: wiring only) and one 2:1
  multiplexer in front of the core, selected when the line is worker-major,
  SIGNS and transformed (G-Binary or G-Ternary: :func:`permutes`), per
  32-bit group of the line from a copy of its own when built with
  ``permute_copies`` (the top's, whose read path registers one per group);
* the core (:class:`~neuron_fabric.hdl.datapath.Datapath`), unchanged;
* the count-sum unit (:class:`~.count_sum.CountSum`, ``hdl/hierarchy/count_sum.py``) beside the core, fed the same
  lines in the same cycles, with the same latency (STAGES) and the same
  stall rule, so the two pipelines move in lockstep;
* one 2:1 multiplexer per 32-bit output lane that takes the count unit's
  lane for a transformed count line and the core's otherwise.

Lines leave in order, one per cycle with the output ready held high, each
STAGES cycles after it was accepted: the wrapper's handshake is the core's.

In the top (``hdl/top/top.py``, a build whose profile has the ``hierarchy``
feature) this wrapper takes the core's place between the read path's two
streams; ``hdl/top/request.py`` carries ``layout``, ``operand`` and ``total``
from the read's CFG as captured when the request is accepted (contract
section 4.3), and forms ``gate_mask``: for a SIGNS line the core's mask (E
lanes, ``phase = (line_index * E) mod P``); for a count line, bit ``j``
(j < E_c = LINE_BITS / 32) keeps count lane ``j``, with ``phase_c =
(line_index * E_c) mod P``; the bits from E_c up are not used.
"""

from amaranth import Cat, Module, Mux
from amaranth.lib.wiring import In

from neuron_fabric.contract.facts import COUNT_LANE_BITS, Operand

from neuron_fabric.hdl.hierarchy.count_steps import LIMITS_BITS, element_major
from neuron_fabric.hdl.hierarchy.count_sum import BesideCore, CountOutLayout, CountSum, HierarchyInputLayout
from neuron_fabric.hdl.datapath import Datapath, OutputLayout

__all__ = ["element_major", "HierarchyInputLayout", "CountOutLayout", "CountSum", "HierarchyUnit",
           "HIERARCHY_MODULE", "permutes"]

#: Verilog module name of the exported wrapper.
HIERARCHY_MODULE = "neuron_fabric_hierarchy"


def permutes(cfg):
    """Whether a line of CFG ``cfg`` (with ``layout``, ``operand`` and
    ``mode``) reaches the core element-major: worker-major SIGNS, transformed."""
    return cfg.layout & (cfg.operand == Operand.SIGNS) & cfg.mode[1]


class HierarchyUnit(BesideCore):
    """The datapath core with the hierarchy extension (contract section 5).

    Parameters
    ----------
    line_bits, workers, stages, profile :
        As :class:`~neuron_fabric.hdl.datapath.Datapath`'s.
    permute_copies : bool
        Take the permutation's select as ``permute``, one copy per 32-bit
        group of the line (each driving that group's multiplexers only),
        rather than from the payload.
    limits_in : bool
        Hand the count unit its MARGIN-gate limits as ``limits``
        (:class:`~.count_sum.CountSum`'s ``limits_in``).

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
    permute : ``In(line_bits // 32)``, with ``permute_copies``
        Bit ``g``: :func:`permutes` of the line in ``i_stream``, for group
        ``g``.
    limits : ``In(LIMITS_BITS)``, with ``limits_in``
        :func:`~.count_steps.margin_limits` of the line in ``i_stream``.
    """

    def __init__(self, *, line_bits=512, workers=8, stages=5, profile="full",
                 permute_copies=False, limits_in=False):
        self._permute_copies, self._limits_in = permute_copies, limits_in
        members = {"permute": In(line_bits // COUNT_LANE_BITS)} if permute_copies else {}
        if limits_in:
            members["limits"] = In(LIMITS_BITS)
        super().__init__(OutputLayout, line_bits=line_bits, workers=workers, stages=stages,
                         profile=profile, members=members)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        core = m.submodules.core = Datapath(**self._kwargs)
        counts = m.submodules.counts = CountSum(**self._kwargs, limits_in=self._limits_in)
        if self._limits_in:
            m.d.comb += counts.limits.eq(self.limits)
        i, o = self.i_stream, self.o_stream
        # The core sees SIGNS lines element-major.
        groups = p.line_bits // COUNT_LANE_BITS
        select = self.permute if self._permute_copies else permutes(i.payload).replicate(groups)
        permuted = element_major(i.payload.line, p.workers, 1)
        group = [slice(g * COUNT_LANE_BITS, (g + 1) * COUNT_LANE_BITS) for g in range(groups)]
        signs = Cat(Mux(select[g], permuted[group[g]], i.payload.line[group[g]])
                    for g in range(groups))
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
            m.d.comb += o.payload.line[group[g]].eq(Mux(select[g],
                                                        counts.o_stream.payload.line[group[g]],
                                                        core.o_stream.payload.line[group[g]]))
        return m
