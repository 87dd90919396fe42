"""The write response path and the NDR arbiter: AXI B -> in-flight entry ->
finished-write queue, and S2M NDR Cmp round robin over the Req
completions, the dropped RwD completions and the finished writes.

Each source has its own queue here (:class:`.queue.CreditQueue`), and each
stream from another block is admitted by credit (:mod:`.credit`): its
``ready`` is a register, so a handshake with another block is a register
and a gate on each side.  The round robin chooses a cycle ahead which
queue NDR shows, from the queues' registered flags (``r_rdy``, ``more``)
and NDR's ready, and holds it while NDR waits; the tag is read straight
from the chosen queue's memory through a 3:1 choice by registered selects.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import NDR_CMP
from .bus import NdrLayout, OKAY
from .credit import credit_ready
from .inflight import response_members
from .queue import CreditQueue, select_copies

__all__ = ["NdrArbiter", "round_robin"]

#: Depth of the finished-write queue: covers the B beats between
#: ``b_ready`` and NDR, so that one is taken per cycle.
B_DEPTH = 8

#: Depth of the queue of each completion stream: covers its items between
#: its ``ready`` and NDR, so that one is taken per cycle.
CMP_DEPTH = 4


class NdrArbiter(wiring.Component):
    """Answers every write (after its B beat) and every completion with NDR Cmp.

    ``b_ready``, ``req_cmp.ready`` and ``rwd_cmp.ready`` are registers,
    each high while everything its stream has handed over and not yet
    answered on NDR fits in its queue.

    Parameters
    ----------
    params : TopParams

    Members
    -------
    b_id, b_resp, b_valid, b_ready, lookup, devload, wr_err :
        :func:`.inflight.response_members` of the B channel (entry: the tag).
    req_cmp, rwd_cmp : In(stream.Signature(16))
        Tags to answer without a memory access (``valid`` meant to come
        from a register of the sending block).
    ndr : Out(stream.Signature(NdrLayout()))
        ``valid`` is a register; the tag is read from a queue's memory at a
        registered address through a choice by registered selects.
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
        queues = [m.submodules.req_queue, m.submodules.rwd_queue, m.submodules.write_done_queue] = [
            CreditQueue(16, depth) for depth in (CMP_DEPTH, CMP_DEPTH, B_DEPTH)]

        # -- the completion streams, admitted by credit into their queues -----------
        for src, q in zip((self.req_cmp, self.rwd_cmp), queues):
            ready = credit_ready(m, CMP_DEPTH, src.valid, q.r_en, late_give=True)
            m.d.comb += [src.ready.eq(ready), q.w_en.eq(src.valid & ready),
                         q.w_data.eq(src.payload)]

        # -- B: B0 the beat (its lookup), B1 the entry, into the queue --------------
        doneq = queues[2]
        ready = credit_ready(m, B_DEPTH, self.b_valid, doneq.r_en, late_give=True)
        m.d.comb += self.b_ready.eq(ready)
        b0_valid, b0_err = Signal(), Signal()
        b0_id = Signal(self._params.id_bits)
        b1_valid = Signal()
        m.d.sync += [b0_valid.eq(self.b_valid & ready), b0_id.eq(self.b_id),
                     b0_err.eq(self.b_resp != OKAY), b1_valid.eq(b0_valid)]
        m.d.comb += [self.lookup.valid.eq(b0_valid), self.lookup.id.eq(b0_id),
                     self.wr_err.eq(b0_valid & b0_err),
                     doneq.w_en.eq(b1_valid), doneq.w_data.eq(self.lookup.entry)]

        # -- NDR ----------------------------------------------------------------------
        # ``show``: one-hot, the queue NDR shows, or while NDR is empty the
        # last one shown.
        valid = Signal()
        show = [Signal(name=f"show{i}", init=int(i == len(queues) - 1))
                for i in range(len(queues))]
        valid_next, show_next = round_robin(valid, show, [(q.r_rdy, q.more) for q in queues],
                                            self.ndr.ready)
        m.d.sync += [valid.eq(valid_next), *(s.eq(v) for s, v in zip(show, show_next))]
        take = valid & self.ndr.ready
        m.d.comb += [q.r_en.eq(take & s) for s, q in zip(show, queues)]
        # The tag: the queues' heads chosen by two registered selects, each
        # stored inverted (so synthesis keeps them apart from ``show``).
        hi, lo = (select_copies(m, bit, 2)[1] for bit in (show_next[2], show_next[1]))
        heads = [q.r_data for q in queues]
        tag = Mux(hi, heads[2], Mux(lo, heads[1], heads[0]))
        m.d.comb += [self.ndr.valid.eq(valid), self.ndr.payload.tag.eq(tag),
                     self.ndr.payload.opcode.eq(NDR_CMP),
                     self.ndr.payload.devload.eq(self.devload)]
        return m


def round_robin(valid, show, queues, ready):
    """The round robin of an output shown from one of several queues, chosen
    a cycle ahead: ``valid`` and ``show`` (one-hot: the queue shown, or
    while the output is empty the last one shown) of the next cycle from
    this cycle's and the output's ``ready``; ``queues`` are each queue's
    ``(r_rdy, more)`` (registers).  It chooses from what is in the queues
    now (an item written this cycle waits a cycle more); while the output
    waits it holds its choice.  The queues after the one shown come first,
    in order, and that one last, so none is starved.

    Each queue's "an item stays for next cycle" is a table of five inputs
    (the output's ``valid`` and ``ready``, the queue's ``show``, ``r_rdy``
    and ``more``); the next state is a function of those and ``show``."""
    n = len(queues)
    take, hold = valid & ready, valid & ~ready
    stays = [Mux(take & s, more, rdy) for s, (rdy, more) in zip(show, queues)]
    show_next = []
    for j in range(n):
        # j is chosen when it is the first with an item in the order after
        # the one shown: for the one shown c, ahead of j are c+1 .. j-1
        terms = []
        for c in range(n):
            ahead = [(c + k) % n for k in range(1, n + 1)]
            before = ahead[:ahead.index(j)]
            if c == j:
                # the one shown stays chosen unless another has an item
                term = ~Cat(*(stays[i] for i in before)).any() if before else 1
            else:
                term = stays[j] & (~Cat(*(stays[i] for i in before)).any() if before else 1)
            terms.append(show[c] & term)
        show_next.append(Mux(hold, show[j], Cat(*terms).any()))
    return hold | Cat(*stays).any(), show_next
