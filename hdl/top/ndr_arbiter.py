"""The write response path and the NDR arbiter: AXI B -> in-flight entry ->
finished-write queue, and S2M NDR Cmp round robin over the Req
completions, the dropped RwD completions and the finished writes.

Each source has its own queue here (:class:`.queue.HeadQueue`, its head a
register), and each stream from another block is admitted by credit
(:mod:`.credit`) and registered before it enters its queue.  The dropped
RwD completions and B have their ``ready`` here, a register; the Req
completions have none: the request pipeline admits a MemInv or
unsupported request only while their queue here has room for every one
it has admitted and not yet seen moved out of it (``req_left``, a
register), so read issue hands each over, from a register, the cycle it
has it.  A round robin moves one head a
cycle from the queues into the output queue, NDR's own: which queue, and
whether there is room, decided a cycle ahead from registered flags only
(the queues' ``r_rdy`` and ``more``, the output queue's fill, counting
NDR's takes a cycle late), so NDR's ready meets nothing but the output
queue's read pointer and count.  NDR's ``valid`` is a register and its
tag is read from the output queue's registers at a registered address.

Stages: a completion is registered (C0), then queued; a B beat is
registered (B0, its lookup), its entry comes back from the table two
cycles later and is queued.  From a queue written in cycle t, the head
moves in cycle t+2 at the earliest and NDR shows it from cycle t+3.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import NDR_CMP
from neuron_fabric.hdl.top.bus import NdrLayout, OKAY
from neuron_fabric.hdl.prims.credit import credit_ready, ladder
from neuron_fabric.hdl.top.inflight import WRITE_LOOKUP_CYCLES, response_members
from neuron_fabric.hdl.prims.queue import HeadQueue, select_copies
from neuron_fabric.hdl.top.request_stages import credit_windows

__all__ = ["NdrArbiter", "round_robin"]

#: Depth of the finished-write queue: covers the B beats between
#: ``b_ready`` and their move, so that one is taken per cycle.
B_DEPTH = 8

#: Depth of the dropped RwD completions' queue: covers its items between
#: its ``ready`` and their move, so that one is taken per cycle.
CMP_DEPTH = 4

#: Places of the output queue: covers a move decided, made and shown
#: while NDR's takes count a cycle late, so that one is taken per cycle.
OUT_DEPTH = 3


class NdrArbiter(wiring.Component):
    """Answers every write (after its B beat) and every completion with NDR Cmp.

    ``b_ready`` and ``rwd_cmp.ready`` are registers, each high while
    everything its stream has handed over and not yet moved to NDR's
    output queue fits in its queue; the Req completions' queue is as deep
    as the request pipeline's credit window for them.

    Parameters
    ----------
    params : TopParams

    Members
    -------
    b_id, b_resp, b_valid, b_ready, lookup, devload, wr_err :
        :func:`.inflight.response_members` of the B channel (entry: the
        tag, back ``WRITE_LOOKUP_CYCLES`` after the lookup).
    req_cmp : In(stream.Signature(16, always_ready=True))
    rwd_cmp : In(stream.Signature(16))
        Tags to answer without a memory access (``valid`` meant to come
        from a register of the sending block).
    req_left : Out(1)
        A Req completion moved out of its queue this cycle (a register).
    ndr : Out(stream.Signature(NdrLayout()))
        ``valid`` is a register; the tag is read from registers at a
        registered address.
    """

    def __init__(self, params):
        self._params = params
        super().__init__({
            **response_members(params, "b", 16, "wr_err"),
            "req_cmp": In(stream.Signature(16, always_ready=True)),
            "rwd_cmp": In(stream.Signature(16)), "req_left": Out(1),
            "ndr": Out(stream.Signature(NdrLayout())),
        })

    def elaborate(self, platform):
        m = Module()
        queues = [m.submodules.req_queue, m.submodules.rwd_queue, m.submodules.write_done_queue] = [
            HeadQueue(16, depth) for depth in (credit_windows(self._params)["cmp"], CMP_DEPTH,
                                               B_DEPTH)]
        moves = [Signal(name=f"move{i}") for i in range(len(queues))]

        # -- the completion streams: C0, then their queues ------------------------------
        for name, src, q, move in zip(("req", "rwd"), (self.req_cmp, self.rwd_cmp), queues, moves):
            if name == "req":
                ready = 1       # (the request pipeline's credit covers the queue)
            else:
                ready = credit_ready(m, CMP_DEPTH, src.valid, move, late_admit=True, name=name)
                m.d.comb += src.ready.eq(ready)
            c0_valid, c0_tag = Signal(name=f"{name}_c0_valid"), Signal(16, name=f"{name}_c0_tag")
            m.d.sync += [c0_valid.eq(src.valid & ready), c0_tag.eq(src.payload)]
            m.d.comb += [q.w_en.eq(c0_valid), q.w_data.eq(c0_tag)]
        m.d.comb += self.req_left.eq(moves[0])

        # -- B: B0 the beat (its lookup), the entry WRITE_LOOKUP_CYCLES later, queued ---
        doneq = queues[2]
        ready = credit_ready(m, B_DEPTH, self.b_valid, moves[2], late_admit=True, name="b")
        m.d.comb += self.b_ready.eq(ready)
        b0_valid, b0_err = Signal(), Signal()
        b0_id = Signal(self._params.id_bits)
        m.d.sync += [b0_valid.eq(self.b_valid & ready), b0_id.eq(self.b_id),
                     b0_err.eq(self.b_resp != OKAY)]
        entry_valid = b0_valid
        for k in range(WRITE_LOOKUP_CYCLES):
            entry_valid, prev = Signal(name=f"b{k + 1}_valid"), entry_valid
            m.d.sync += entry_valid.eq(prev)
        m.d.comb += [self.lookup.valid.eq(b0_valid), self.lookup.id.eq(b0_id),
                     self.wr_err.eq(b0_valid & b0_err),
                     doneq.w_en.eq(entry_valid), doneq.w_data.eq(self.lookup.entry)]
        m.d.comb += [q.r_en.eq(move) for q, move in zip(queues, moves)]
        self._output(m, queues, moves)
        return m

    def _output(self, m, queues, moves):
        """The round robin into the output queue, and NDR from it."""
        take = Signal()
        shown, _ = ladder(m, OUT_DEPTH, Cat(*moves).any(), take, name="shown")
        # (a move may be decided while the output queue and the move of
        # this cycle leave a place, NDR's take of this cycle not counted)
        room = ~(shown(OUT_DEPTH) | (shown(OUT_DEPTH - 1) & Cat(*moves).any()))
        last = [Signal(name=f"last{i}", init=int(i == len(queues) - 1))
                for i in range(len(queues))]
        moves_next, last_next = round_robin(moves, last, [(q.r_rdy, q.more) for q in queues],
                                            room)
        m.d.sync += [*(a.eq(b) for a, b in zip(moves + last, moves_next + last_next))]
        # the output queue: one place more than it holds, so the place at
        # the write place (one-hot) is free whenever no move is made and is
        # written every cycle from the head moved (chosen by registered
        # copies of the move), each place's enable a flip-flop; read at its
        # read place
        places = OUT_DEPTH + 1
        wp = Signal(places, name="out_wp", init=1)
        rp = Signal(range(places), name="out_rp")
        hi, lo = (select_copies(m, bit, 2, name=f"mv{i}")[1]
                  for i, bit in ((2, moves_next[2]), (1, moves_next[1])))
        heads = [q.r_data for q in queues]
        moved = Mux(hi, heads[2], Mux(lo, heads[1], heads[0]))
        out = [Signal(16, name=f"out{k}", reset_less=True) for k in range(places)]
        with m.If(Cat(*moves).any()):
            m.d.sync += wp.eq(wp.rotate_left(1))
        for k, reg in enumerate(out):
            with m.If(wp[k]):
                m.d.sync += reg.eq(moved)
        with m.If(take):
            m.d.sync += rp.eq(Mux(rp == places - 1, 0, rp + 1))
        valid = shown(1)
        m.d.comb += [take.eq(valid & self.ndr.ready),
                     self.ndr.valid.eq(valid),
                     self.ndr.payload.tag.eq(Cat(*out).word_select(rp, 16)),
                     self.ndr.payload.opcode.eq(NDR_CMP),
                     self.ndr.payload.devload.eq(self.devload)]


def round_robin(moves, last, queues, room):
    """The round robin of moves out of several queues, decided a cycle
    ahead: ``moves`` (one-hot or none: the queue whose head moves this
    cycle) and ``last`` (one-hot: the queue that moved last) of the next
    cycle, from this cycle's, each queue's ``(r_rdy, more)`` (registers)
    and ``room`` (a move may be decided).  It moves what is in the queues
    now (an item written this cycle waits a cycle more).  The queues after
    the last one moved come first, in order, and that one last, so none is
    starved; that one may move again only while no other has an item."""
    n = len(queues)
    rdy = [r for r, _ in queues]
    moving = Cat(*moves).any()
    # the last one moved has an item left after this cycle's move
    left = [Mux(moving, more, r) for r, more in queues]
    moves_next, last_next = [], []
    for j in range(n):
        move_terms, last_terms = [], []
        for c in range(n):
            ahead = [(c + k) % n for k in range(1, n)]
            if c == j:
                others = ~Cat(*(rdy[i] for i in ahead)).any()
                move_terms.append(last[c] & others & left[j])
                last_terms.append(last[c] & (~room | others))
            else:
                before = ahead[:ahead.index(j)]
                first = rdy[j] & ~Cat(*(rdy[i] for i in before)).any()
                move_terms.append(last[c] & first)
                last_terms.append(last[c] & room & first)
        moves_next.append(room & Cat(*move_terms).any())
        last_next.append(Cat(*last_terms).any())
    return moves_next, last_next
