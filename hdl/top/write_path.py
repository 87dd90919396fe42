"""The M2S RwD path: accept, classify, queue; AXI AW/W issue for MemWr and
MemWrPtl, Cmp completions for the dropped ones (contract 4.2).

Stages::

    A   admission by credit (``rwd.ready`` a register); the write is
        classified into the input register (no clock enable)
    Q   three queues written from it: every write's tag and class, the good
        writes' line addresses, the good writes' W beats
    T   the tags leave their queue for two registers in turn (each loaded
        while empty, its enable a flip-flop, its class flags low unless it
        holds a write); the current one takes an AXI ID and its in-flight
        entry (``take``: its good flag, room to issue, the table's ``ok``),
        or is dropped into the completion queue
    I   the ID into the ID queue; AW is the heads of the ID and address
        queues while a write with an ID has not sent its AW, W the head of
        the beats' queue while one has not sent its W

AW and W each leave on their own handshake, each in acceptance order, so
a write's W may go before its AW, and (while AW waits) before the AW of
the write ahead of it (AXI4 has the W beats follow the AW order, not wait
for it).  A write leaves the admission window when it takes its ID or is
dropped (the credit sees it a cycle later); at most :data:`ISSUE_DEPTH`
writes have an ID and an AW or a W still to send, so the address and beat
queues hold the window and those.  One write a cycle while the memory and
the table keep up (one every two cycles before these queues); a MemWr's
AW and W still come four cycles after its acceptance.
"""

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import CXL_ADDR_BITS, RwdOpcode
from neuron_fabric.hdl.top.bus import RwdLayout
from neuron_fabric.hdl.prims.credit import credit_ready
from neuron_fabric.hdl.top.inflight import AllocSignature
from neuron_fabric.hdl.prims.queue import CreditQueue
from neuron_fabric.hdl.prims.unary import unary_count

__all__ = ["WritePath"]

#: Writes admitted and not yet given an ID or dropped: covers the cycles
#: between admission and the ID, so that one is accepted per cycle.
QUEUE_DEPTH = 8

#: Writes with an ID whose AW or W has not yet left: two more than the
#: room to take an ID sees, which is a cycle old and counts an ID a cycle
#: after it is taken.
ISSUE_DEPTH = 4

#: Depth of the dropped writes' completion queue (admitted by credit).
CMP_DEPTH = 2

#: Memories the W beats' queue is cut into (each with its own addresses).
BEAT_SLICES = 8


def _WriteLayout(params):
    """A classified write: its ``head`` (``good``: to be written, else dropped
    for ``poison`` or its opcode; its tag), its line address and its W
    ``beat``."""
    return data.StructLayout({
        "head": data.StructLayout({"good": 1, "poison": 1, "tag": 16}),
        "addr": CXL_ADDR_BITS - params.offset_bits,
        "beat": data.StructLayout({"data": params.line_bits, "strb": params.line_bytes})})


def _SlotLayout():
    """A head in its register: a good write waiting for its ID, or one to
    drop, and its tag."""
    return data.StructLayout({"good": 1, "drop": 1, "poison": 1, "tag": 16})


class WritePath(wiring.Component):
    """Queues RwD requests and issues the good ones as one-beat AXI writes in
    acceptance order (the stages in the module's docstring).

    ``rwd.ready`` is a register, high while the window has room for every
    write admitted and not yet given an ID or dropped; the wide data is
    registered without a clock enable and written into the queues, each a
    :class:`.queue.CreditQueue` (written every cycle at a registered
    address, read at a registered address), so no wide register or memory
    has an enable or address computed from the AXI handshakes or the
    in-flight table.

    Parameters
    ----------
    params : TopParams

    Members
    -------
    rwd : In(stream.Signature(RwdLayout(line_bits)))
    alloc : Out(AllocSignature(id_bits, 16))
        The write side of the in-flight table (entry: the tag).
    aw_id, aw_addr, aw_valid, aw_ready, w_data, w_strb, w_valid, w_ready :
        The AXI AW and W beats (line address).
    completions : Out(stream.Signature(16))
        Tags of dropped writes, for NDR Cmp (``valid`` a register: its queue's ``r_rdy``).
    poison_drop, unsupported, writes : Out(1)
        Events this cycle: a poisoned write dropped, an unsupported opcode
        dropped, a write issued (counter 4).
    """

    def __init__(self, params):
        self._params = params
        super().__init__({
            "rwd": In(stream.Signature(RwdLayout(params.line_bits))),
            "alloc": Out(AllocSignature(params.id_bits, 16)),
            "aw_id": Out(params.id_bits), "aw_addr": Out(CXL_ADDR_BITS - params.offset_bits),
            "aw_valid": Out(1), "aw_ready": In(1),
            "w_data": Out(params.line_bits), "w_strb": Out(params.line_bytes),
            "w_valid": Out(1), "w_ready": In(1),
            "completions": Out(stream.Signature(16)),
            "poison_drop": Out(1), "unsupported": Out(1), "writes": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        layout = _WriteLayout(p)
        issue = QUEUE_DEPTH + ISSUE_DEPTH
        heads = m.submodules.heads = CreditQueue(layout["head"].width, QUEUE_DEPTH)
        addrs = m.submodules.addrs = CreditQueue(layout["addr"].width, issue)
        beats = m.submodules.beats = CreditQueue(layout["beat"].width, issue,
                                                 slices=BEAT_SLICES)

        # A write leaves the window (``leave``) when it takes its ID or is
        # dropped; the credit sees it a cycle later (``left``).
        leave, left = Signal(), Signal()
        m.d.sync += left.eq(leave)
        ready = credit_ready(m, QUEUE_DEPTH, self.rwd.valid, left, late_admit=True)
        accept = self.rwd.valid & ready
        m.d.comb += self.rwd.ready.eq(ready)

        rwd = self.rwd.payload
        full_line = Const((1 << p.line_bytes) - 1, p.line_bytes)
        good = ~rwd.poison & ((rwd.opcode == RwdOpcode.MEM_WR) |
                              (rwd.opcode == RwdOpcode.MEM_WR_PTL))
        w0_valid, w0_good = Signal(), Signal()
        w0 = Signal(layout, reset_less=True)
        m.d.sync += [
            w0_valid.eq(accept), w0_good.eq(accept & good),
            w0.head.good.eq(good), w0.head.poison.eq(rwd.poison), w0.head.tag.eq(rwd.tag),
            w0.addr.eq(rwd.addr[p.offset_bits:]),
            w0.beat.data.eq(rwd.data),
            w0.beat.strb.eq(Mux(rwd.opcode == RwdOpcode.MEM_WR, full_line, rwd.be)),
        ]
        m.d.comb += [heads.w_en.eq(w0_valid), heads.w_data.eq(w0.head),
                     addrs.w_en.eq(w0_good), addrs.w_data.eq(w0.addr),
                     beats.w_en.eq(w0_good), beats.w_data.eq(w0.beat)]
        take = self._take(m, layout, heads, leave)
        self._issue(m, addrs, beats, take)
        return m

    def _take(self, m, layout, heads, leave):
        """The heads leave their queue for two registers in turn, each loaded
        while empty (its enable a flip-flop); the current one takes an ID
        (while fewer than ISSUE_DEPTH writes wait to send their AW and W) or
        is dropped into the completion queue.  Returns ``take``."""
        shape = layout["head"].shape
        # a slot's class flags are loaded with the load itself, and the
        # current slot's kept again in registers of their own (``cur_good``,
        # ``cur_drop``, formed from the slots' next flags), so ``take`` is
        # an AND of three flip-flops: that good flag, ``room`` and ``ok``
        held = [Signal(name=f"held{k}") for k in range(2)]
        slots = [Signal(_SlotLayout(), reset_less=True, name=f"slot{k}") for k in range(2)]
        cur, nxt = Signal(name="cur"), Signal(name="nxt")  # the current slot, the next loaded
        room = self._room = Signal(name="issue_room")
        cmpq = m.submodules.cmp_queue = CreditQueue(16, CMP_DEPTH)
        pop = cmpq.r_rdy & self.completions.ready
        head = data.View(_SlotLayout(), Mux(cur, slots[1].as_value(), slots[0].as_value()))
        cur_good, cur_drop = Signal(name="cur_good"), Signal(name="cur_drop")
        cmp_room = credit_ready(m, CMP_DEPTH, cur_drop, pop)
        take = cur_good & room & self.alloc.ok
        drop = cur_drop & cmp_room
        queued = data.View(shape, heads.r_data)
        loads = [heads.r_rdy & ~held[k] & (nxt == k) for k in range(2)]
        # each slot's flags of the next cycle, and the current slot's
        good_next = [Mux(held[k], slots[k].good, loads[k] & queued.good) for k in range(2)]
        drop_next = [Mux(held[k], slots[k].drop, loads[k] & ~queued.good) for k in range(2)]
        cur_next = cur ^ leave
        m.d.sync += [cur_good.eq(Mux(cur_next, good_next[1], good_next[0])),
                     cur_drop.eq(Mux(cur_next, drop_next[1], drop_next[0]))]
        m.d.comb += [
            leave.eq(take | drop),
            heads.r_en.eq(loads[0] | loads[1]),
            self.alloc.take.eq(take), self.alloc.entry.eq(head.tag),
            cmpq.w_en.eq(drop), cmpq.w_data.eq(head.tag),
            self.completions.valid.eq(cmpq.r_rdy), self.completions.payload.eq(cmpq.r_data),
            cmpq.r_en.eq(pop),
            self.poison_drop.eq(drop & head.poison),
            self.unsupported.eq(drop & ~head.poison),
            self.writes.eq(take),
        ]
        m.d.sync += [cur.eq(cur ^ leave), nxt.eq(nxt ^ loads[0] ^ loads[1])]
        for k in range(2):
            # An empty slot follows the queue's head, its flags low unless it
            # loads it; a slot that leaves is not current in the next cycle,
            # when it still shows its flags.
            with m.If(~held[k]):
                m.d.sync += [slots[k].good.eq(loads[k] & queued.good),
                             slots[k].drop.eq(loads[k] & ~queued.good),
                             slots[k].poison.eq(queued.poison), slots[k].tag.eq(queued.tag)]
            # (a choice by ``held``, a register: no clock enable from ``leave``)
            m.d.sync += held[k].eq(Mux(held[k], ~(leave & (cur == k)), loads[k]))
        return take

    def _issue(self, m, addrs, beats, take):
        """AW from the queues of IDs and addresses while a write with an ID has
        not sent its AW, W from the beats' queue while one has not sent its
        W (each count in unary)."""
        ids = m.submodules.ids = CreditQueue(self._params.id_bits, ISSUE_DEPTH)
        aw_go = self.aw_valid & self.aw_ready
        w_go = self.w_valid & self.w_ready
        # the counts take an ID a cycle after ``take`` (which reaches the
        # in-flight table and the ID queue), from a register of it: so the
        # counts, which sit by the W beats' queue they pop, are a register
        # away from the slots' flags
        took = Signal(name="took")
        m.d.sync += took.eq(take)
        counts = [unary_count(m, name, took, go, ISSUE_DEPTH)
                  for name, go in (("aw_pending", aw_go), ("w_pending", w_go))]
        beat = data.View(_WriteLayout(self._params)["beat"].shape, beats.r_data)
        m.d.comb += [
            ids.w_en.eq(take), ids.w_data.eq(self.alloc.id), ids.r_en.eq(aw_go),
            addrs.r_en.eq(aw_go), beats.r_en.eq(w_go),
            self.aw_valid.eq(counts[0][0](1)), self.aw_id.eq(ids.r_data),
            self.aw_addr.eq(addrs.r_data),
            self.w_valid.eq(counts[1][0](1)),
            self.w_data.eq(beat.data), self.w_strb.eq(beat.strb),
        ]
        # an ID only while both counts were below ISSUE_DEPTH - 2 a cycle
        # before: a count is then at most ISSUE_DEPTH - 2 now, and the IDs
        # queued are the count, the ID taken a cycle ago and this one: at
        # most ISSUE_DEPTH.  A register
        m.d.sync += self._room.eq(~counts[0][0](ISSUE_DEPTH - 2) & ~counts[1][0](ISSUE_DEPTH - 2))
