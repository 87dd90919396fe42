"""The low-bit aggregation datapath core (contract section 3).

Structure
---------
The read transform is four combinational steps; pipeline registers sit on
the boundaries between them.  The paper profile (no optional feature) is
built for area (:mod:`.steps_paper`), every other profile for depth
(:mod:`.steps_full`): for W = 8 each bit a step computes is a function of
at most six register outputs (one LUT on ECP5: LUT4s with the slice's
wide-function multiplexers)::

                 paper profile              other profiles
    boundary 0 | A: decode; first full-    A: popcounts of 5 and 3 worker
               |    adder layer of each       bits; output code, whether each
               |    lane's popcount           gate applies, margin limit as a
               |                              thermometer
    boundary 1 | B: two more layers        B: sign count c, c < W/2,
               |                              |c - W/2| == k
    boundary 2 | C: the count c            C: output bit before gating (raw
               |                              bit or value by format); drop
               |                              partials (mask bit, margin)
    boundary 3 | D: output lane (c, W/2    D: gated output
               |    if gated, or raw)
    boundary 4 | (output register, always present)

The PATTERN gate arrives as a mask, one bit per lane (``gate_mask``): the
top computes it from P, K and the line's phase when it accepts the
request.  A lane's mask bit travels with the lane's data, in its group's
registers, so no lane reads another lane's gate.

``STAGES`` registers are spread over the boundaries by
:data:`~.pipeline.PLACEMENT`, so that STAGES = 1 is one register between
input and output and each extra stage shortens the longest run of steps
between two registers (for STAGES 2 and 3: step A alone, then B, C and D,
or B and then C and D).  Past five stages the extra registers go on
boundary 0 (input side), where they cost only latency.

The registers, their clock enables (one per stage and copy, from local
valid chains) and the per-group copies of the per-line controls are the
:class:`~.pipeline.Pipeline`'s.  Every profile but the paper's has a
one-line skid register behind the last stage, so that each clock enable
is a flip-flop (:func:`~.chains.skid_chain`); the paper profile's enables
are ``out_ready | ~out_valid``.  Only the valid bits have a reset; data
registers are reset-less.

The core's ports are two streams; :class:`neuron_fabric.hdl.export.verilog.FlatDatapath`
builds the same logic under the contract's flat port names for export.
"""

from dataclasses import dataclass

from amaranth import Cat, Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import CORE_FEATURES, DatapathParams, Profile, profile_named

from neuron_fabric.hdl.datapath.pipeline import PLACEMENT, REPLICA_BITS, Geometry, Pipeline
from neuron_fabric.hdl.datapath.ports import InputLayout, LineIn, LineOut, OutputLayout
from neuron_fabric.hdl.datapath.steps_full import FullSteps
from neuron_fabric.hdl.datapath.steps_paper import PaperSteps

__all__ = ["Datapath", "DatapathDesign", "InputLayout", "OutputLayout", "PLACEMENT",
           "REPLICA_BITS"]


@dataclass(frozen=True)
class DatapathDesign:
    """The core for one parameter set, apart from any component: its
    signature and its logic between two streams.  :class:`Datapath` is it
    as a component; the flat export builds the same logic into its own
    module, so the exported core stays one module.

    Raises
    ------
    TypeError, ValueError
        For a parameter outside contract section 1 (the message quotes it).
    """
    params: DatapathParams
    profile: Profile

    @classmethod
    def of(cls, *, line_bits=512, workers=8, stages=5, profile="full"):
        """From :class:`Datapath`'s parameters (``profile`` a name or a
        :class:`Profile`)."""
        if isinstance(profile, Profile):
            return cls(DatapathParams(line_bits, workers, stages), profile)
        return cls(DatapathParams(line_bits, workers, stages, profile), profile_named(profile))

    @property
    def signature(self):
        p = self.params
        return wiring.Signature({
            "i_stream": In(stream.Signature(InputLayout(line_bits=p.line_bits, lanes=p.lanes))),
            "o_stream": Out(stream.Signature(OutputLayout(line_bits=p.line_bits))),
        })

    @property
    def paper_like(self):
        """The profile has none of the optional features of the core: the
        paper's datapath, built for area."""
        return not any(self.profile.has(f) for f in CORE_FEATURES)

    @property
    def geometry(self):
        """How the line is cut into groups, one control copy each: groups
        of :data:`REPLICA_BITS` bits for the profile, or one lane if wider."""
        p = self.params
        group_bits = max(REPLICA_BITS["paper" if self.paper_like else "other"], p.workers)
        return Geometry(p.line_bits, p.workers, group_bits)

    def build(self, m, i_stream, o_stream, keep_copies=None):
        """The core's logic in module ``m``, from stream ``i_stream`` to
        ``o_stream`` (interfaces of :attr:`signature`'s members);
        ``keep_copies`` as :class:`~.pipeline.Pipeline`'s."""
        geo = self.geometry
        pipe = Pipeline(m, stages=self.params.stages, in_valid=i_stream.valid,
                        out_ready=o_stream.ready, skid=not self.paper_like,
                        keep_copies=keep_copies)
        steps = PaperSteps(geo, pipe.wire) if self.paper_like \
            else FullSteps(geo, self.profile, pipe.wire)
        line = LineIn.from_payload(i_stream.payload, geo)
        out: LineOut = pipe.run(line, steps.steps, self.params.stages)
        m.d.comb += [
            i_stream.ready.eq(pipe.in_ready),
            o_stream.valid.eq(pipe.out_valid),
            o_stream.payload.line.eq(Cat(*out.data)),
            o_stream.payload.tag.eq(out.tag),
        ]


class Datapath(wiring.Component):
    """Low-bit aggregation datapath (contract section 3).

    Parameters
    ----------
    line_bits : int
        LINE_BITS, one of 64, 128, 256, 512, 1024.
    workers : int
        W, one of 4, 8, 16.
    stages : int
        Latency in cycles, 1..8.
    profile : str or :class:`~neuron_fabric.contract.facts.Profile`
        ``"full"`` (all of contract section 2) or ``"paper"`` (identity,
        G-Binary, G-Ternary with the PATTERN gate, COUNT output), or any
        other :class:`Profile` (for feature-cost studies).  Only the
        features of :data:`~neuron_fabric.contract.facts.CORE_FEATURES` concern
        the core; every profile takes the PATTERN gate as ``gate_mask``.
    keep_copies : bool or None
        Mark the registers of every per-line control's copies ``keep``, so
        that synthesis does not merge them where their enables are equal
        (default: for the profiles with the output skid; the top keeps them
        in every profile, its core's output being always ready).

    Members
    -------
    i_stream : ``In(stream.Signature(InputLayout(line_bits=, lanes=)))``
        Lines and their configuration.  ``ready`` is low while ``rst`` is
        high and, with ``o_stream.ready`` high, high in every cycle after.
    o_stream : ``Out(stream.Signature(OutputLayout(line_bits=)))``
        Transformed lines and their tags, in order; with ``o_stream.ready``
        high a line accepted at edge ``t`` leaves at edge ``t + stages``.

    Raises
    ------
    TypeError, ValueError
        For a parameter outside contract section 1 (the message quotes it).
    """

    def __init__(self, *, line_bits=512, workers=8, stages=5, profile="full",
                 keep_copies=None):
        self._design = DatapathDesign.of(line_bits=line_bits, workers=workers, stages=stages,
                                         profile=profile)
        self._keep_copies = keep_copies
        super().__init__(self._design.signature)

    @property
    def params(self):
        return self._design.params

    @property
    def line_bits(self):
        return self.params.line_bits

    @property
    def workers(self):
        return self.params.workers

    @property
    def stages(self):
        return self.params.stages

    @property
    def profile(self):
        return self._design.profile

    @property
    def lanes(self):
        return self.params.lanes

    def elaborate(self, platform):
        m = Module()
        self._design.build(m, self.i_stream, self.o_stream, self._keep_copies)
        return m
