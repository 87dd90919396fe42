"""The hierarchy extension of the read transform (contract section 5): the
worker-major permutation and the exact count-sum unit, beside the datapath
core.

:class:`Hierarchy` has the core's two streams (contract section 3) with
three more per-line fields on the input, ``layout``, ``operand`` and
``total`` (the CFG fields of contract section 5), and holds

* the core (:class:`~neuron_fabric.hdl.datapath.Datapath`) built with a
  *view*: beside the line it takes the line's element-major permutation
  (:func:`element_major`: wiring only) and whether to count that
  (worker-major, SIGNS and transformed).  The core registers both
  arrangements at its input, the permutation's long wires ending on
  flip-flops, and chooses after its first counts (``hdl/datapath``), so
  that the choice, known only with the line, drives a register first;
* the count-sum unit (:class:`~.count_sum.CountSum`, ``hdl/count_sum.py``)
  beside the core, fed the same lines in the same cycles, with the same
  latency (STAGES) and the same stall rule, so the two pipelines move in
  lockstep;
* the output: for a transformed count line the core is given a
  configuration that zeroes every lane (G-Ternary, MARGIN format, the
  MARGIN gate with a threshold above W: each lane gated, reading 0) and the
  count unit's lanes are 0 for any other line, so the output is the OR of
  the two lines, one LUT a bit with the count unit's last gate
  (``hdl/count_steps.py`` :func:`~.count_steps.output_lane`).  A profile
  without the MARGIN format or gate takes the count unit's lane by a 2:1
  multiplexer per 32-bit lane instead.

Lines leave in order, one per cycle with the output ready held high, each
STAGES cycles after it was accepted: the wrapper's handshake is the core's.

In the top (``hdl/top.py``, a build whose profile has the ``hierarchy``
feature) this wrapper takes the core's place between the read path's two
streams; ``hdl/request.py`` carries ``layout``, ``operand`` and ``total``
from the read's CFG as captured when the request is accepted (contract
section 4.3), and forms ``gate_mask``: for a SIGNS line the core's mask (E
lanes, ``phase = (line_index * E) mod P``); for a count line, bit ``j``
(j < E_c = LINE_BITS / 32) keeps count lane ``j``, with ``phase_c =
(line_index * E_c) mod P``; the bits from E_c up are not used.
"""

from amaranth import Module, Mux

from neuron_fabric.host.facts import COUNT_LANE_BITS, Format, GateKind, Mode, Operand

from .count_steps import element_major
from .count_sum import BesideCore, CountOutLayout, CountSum, HierarchyInputLayout
from .datapath import Datapath, OutputLayout

__all__ = ["element_major", "HierarchyInputLayout", "CountOutLayout", "CountSum", "Hierarchy",
           "HIERARCHY_MODULE"]

#: Verilog module name of the exported wrapper.
HIERARCHY_MODULE = "neuron_fabric_hierarchy"

#: A MARGIN-gate threshold above every W (contract section 1): the core
#: gates every lane of a line given it.
ZERO_THRESHOLD = 31


class Hierarchy(BesideCore):
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
        core = m.submodules.core = Datapath(**self._kwargs, view=True)
        counts = m.submodules.counts = CountSum(**self._kwargs)
        i, o = self.i_stream, self.o_stream
        # The core counts a worker-major SIGNS line's lanes element-major.
        permute = i.payload.layout & (i.payload.operand == Operand.SIGNS) & i.payload.mode[1]
        count_line = i.payload.mode[1] & (i.payload.operand != Operand.SIGNS)
        ours = {name for name, _ in i.payload.shape()}
        m.d.comb += [
            core.i_stream.valid.eq(i.valid), counts.i_stream.valid.eq(i.valid),
            i.ready.eq(core.i_stream.ready),
            core.i_stream.payload.view.eq(element_major(i.payload.line, p.workers, 1)),
            core.i_stream.payload.use_view.eq(permute),
            *(core.i_stream.payload[name].eq(i.payload[name])
              for name, _ in core.i_stream.payload.shape() if name in ours),
            counts.i_stream.payload.eq(i.payload),
            core.o_stream.ready.eq(o.ready), counts.o_stream.ready.eq(o.ready),
            o.valid.eq(core.o_stream.valid),
            o.payload.tag.eq(core.o_stream.payload.tag),
        ]
        theirs, line = core.o_stream.payload.line, counts.o_stream.payload.line
        if self._design.profile.has("format_margin") and self._design.profile.has("gate_margin"):
            # every lane of the core gated, reading 0, for a count line
            blank = {"mode": Mode.GTERNARY, "format": Format.MARGIN,
                     "gate_kind": GateKind.MARGIN, "gate_threshold": ZERO_THRESHOLD}
            m.d.comb += [core.i_stream.payload[name].eq(Mux(count_line, value, i.payload[name]))
                         for name, value in blank.items()]
            m.d.comb += o.payload.line.eq(theirs | line)
            return m
        select = counts.o_stream.payload.select
        for g in range(len(select)):
            lane = slice(g * COUNT_LANE_BITS, (g + 1) * COUNT_LANE_BITS)
            m.d.comb += o.payload.line[lane].eq(Mux(select[g], line[lane], theirs[lane]))
        return m
