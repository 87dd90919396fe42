"""The write response path and the NDR arbiter: AXI B -> in-flight entry ->
completion queue, and S2M NDR Cmp round robin over the Req completions,
the dropped RwD completions and the finished writes."""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import NDR_CMP
from .bus import NdrLayout, OKAY
from .credit import credit_ready
from .inflight import response_members

__all__ = ["NdrArbiter"]

#: Depth of the finished-write queue: covers the B beats between
#: ``b_ready`` and the NDR register, so that one is taken per cycle.
B_DEPTH = 8


class NdrArbiter(wiring.Component):
    """Answers every write (after its B beat) and every completion with NDR Cmp.

    ``b_ready`` is a register, high while every B beat taken and not yet
    answered on NDR fits in the finished-write queue.  The NDR register is
    loaded round robin from the three sources.

    Parameters
    ----------
    params : TopParams

    Members
    -------
    b_id, b_resp, b_valid, b_ready, lookup, devload, wr_err :
        :func:`.inflight.response_members` of the B channel (entry: the tag).
    req_cmp, rwd_cmp : In(stream.Signature(16))
        Tags to answer without a memory access.
    ndr : Out(stream.Signature(NdrLayout()))
    """

    def __init__(self, params):
        self._params = params
        super().__init__({
            **response_members(params, "b", 16, "wr_err"),
            "req_cmp": In(stream.Signature(16)), "rwd_cmp": In(stream.Signature(16)),
            "ndr": Out(stream.Signature(NdrLayout())),
        })

    def elaborate(self, platform):
        m = Module()
        doneq = m.submodules.write_done_queue = SyncFIFOBuffered(width=16, depth=B_DEPTH)

        from_b = Signal()
        ready = credit_ready(m, B_DEPTH, self.b_valid, from_b)
        m.d.comb += self.b_ready.eq(ready)

        b0_valid, b0_err = Signal(), Signal()
        b0_id = Signal(self._params.id_bits)
        b1_valid = Signal()
        m.d.sync += [b0_valid.eq(self.b_valid & ready), b0_id.eq(self.b_id),
                     b0_err.eq(self.b_resp != OKAY), b1_valid.eq(b0_valid)]
        m.d.comb += [self.lookup.valid.eq(b0_valid), self.lookup.id.eq(b0_id),
                     self.wr_err.eq(b0_valid & b0_err),
                     doneq.w_en.eq(b1_valid), doneq.w_data.eq(self.lookup.entry)]

        sources = [self.req_cmp, self.rwd_cmp,
                   stream.Signature(16).create(path=("write_done",))]
        m.d.comb += [sources[2].valid.eq(doneq.r_rdy), sources[2].payload.eq(doneq.r_data),
                     doneq.r_en.eq(sources[2].ready)]
        self._round_robin(m, sources)
        m.d.comb += from_b.eq(sources[2].valid & sources[2].ready)
        return m

    def _round_robin(self, m, sources):
        """The NDR register, loaded from ``sources`` in turn (the one after the
        last served has priority)."""
        valid = Signal()
        tag = Signal(16)
        first = Signal(range(len(sources)))
        load = ~valid | self.ndr.ready
        grant = [Signal(name=f"ndr_grant{i}") for i in range(len(sources))]
        for start in range(len(sources)):
            with m.If(first == start):
                taken = Const(0, 1)
                for k in range(len(sources)):
                    i = (start + k) % len(sources)
                    m.d.comb += grant[i].eq(sources[i].valid & ~taken)
                    taken = taken | sources[i].valid
        m.d.comb += [s.ready.eq(g & load) for s, g in zip(sources, grant)]
        with m.If(load):
            m.d.sync += valid.eq(Cat(*grant).any())
            for i, g in enumerate(grant):
                with m.If(g):
                    m.d.sync += [tag.eq(sources[i].payload), first.eq((i + 1) % len(sources))]
        m.d.comb += [self.ndr.valid.eq(valid), self.ndr.payload.tag.eq(tag),
                     self.ndr.payload.opcode.eq(NDR_CMP),
                     self.ndr.payload.devload.eq(self.devload)]
