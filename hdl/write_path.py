"""The M2S RwD path: accept, classify, queue; AXI AW/W issue for MemWr and
MemWrPtl, Cmp completions for the dropped ones (contract 4.2)."""

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import CXL_ADDR_BITS, RwdOpcode
from .bus import RwdLayout
from .credit import credit_ready
from .inflight import AllocSignature
from .queue import CreditQueue

__all__ = ["WritePath"]

#: Depth of the write queue: covers the writes between admission and the
#: queue's output, so that one is accepted per cycle.
QUEUE_DEPTH = 8

#: Depth of the dropped writes' completion queue (admitted by credit).
CMP_DEPTH = 2

#: Memories the W beats' queue is cut into (each with its own addresses).
BEAT_SLICES = 8


def _WriteLayout(params):
    """A classified write: its ``head``, ``good`` (to be written) or dropped
    for ``poison``, and its W ``beat``."""
    return data.StructLayout({
        "head": data.StructLayout({"good": 1, "poison": 1, "tag": 16,
                                   "addr": CXL_ADDR_BITS - params.offset_bits}),
        "beat": data.StructLayout({"data": params.line_bits, "strb": params.line_bytes})})


class WritePath(wiring.Component):
    """Queues RwD requests and issues the good ones as one-beat AXI writes in
    acceptance order.

    ``rwd.ready`` is a register, high while the queue has room for every
    write accepted so far; the wide data is registered without a clock
    enable and written into the queue.  The queue is two
    :class:`.queue.CreditQueue`: the heads and the W beats, each written
    every cycle at a registered address and read at a registered address,
    so no wide register or memory has an enable or address computed from
    the AXI handshakes.  The heads leave their queue for two registers
    (narrow) in turn, each with a flag that says whether its write waits
    for an ID, so a write's ``take`` is that flag and the table's ``ok``.
    There a write takes an AXI ID and an in-flight entry, then presents AW
    and W (W straight from the beats' memory; each leaves on its own
    handshake) and leaves when both are done.

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
        heads = m.submodules.queue = CreditQueue(layout["head"].shape.size, QUEUE_DEPTH)
        beats = m.submodules.beats = CreditQueue(layout["beat"].shape.size, QUEUE_DEPTH,
                                                 slices=BEAT_SLICES)

        # -- admission and the input register ----------------------------------------
        # A write leaves (``leave``) when its head is done; the credit and the
        # beats' read address see it a cycle later (``left``): the next
        # beat is presented at the earliest two cycles after its head
        # becomes the current one, and the window counts the write a cycle
        # longer.
        leave, left = Signal(), Signal()
        m.d.sync += left.eq(leave)
        ready = credit_ready(m, QUEUE_DEPTH, self.rwd.valid, left)
        accept = self.rwd.valid & ready
        m.d.comb += self.rwd.ready.eq(ready)

        rwd = self.rwd.payload
        full_line = Const((1 << p.line_bytes) - 1, p.line_bytes)
        w0_valid = Signal()
        w0 = Signal(layout, reset_less=True)
        m.d.sync += [
            w0_valid.eq(accept),
            w0.head.good.eq(~rwd.poison & ((rwd.opcode == RwdOpcode.MEM_WR) |
                                           (rwd.opcode == RwdOpcode.MEM_WR_PTL))),
            w0.head.poison.eq(rwd.poison), w0.head.tag.eq(rwd.tag),
            w0.head.addr.eq(rwd.addr[p.offset_bits:]),
            w0.beat.data.eq(rwd.data),
            w0.beat.strb.eq(Mux(rwd.opcode == RwdOpcode.MEM_WR, full_line, rwd.be)),
        ]
        # (a beat is readable a cycle before its head, and leaves with it)
        m.d.comb += [heads.w_en.eq(w0_valid), heads.w_data.eq(w0.head),
                     beats.w_en.eq(w0_valid), beats.w_data.eq(w0.beat)]

        m.d.comb += beats.r_en.eq(left)
        self._head(m, layout, heads, beats, leave)
        return m

    def _head(self, m, layout, heads, beats, leave):
        """The heads leave their queue for two registers in turn, each loaded
        only while it is empty (an enable from registers); the current one
        takes an ID, issues AW and W, or is dropped."""
        p = self._params
        cmpq = m.submodules.cmp_queue = CreditQueue(16, CMP_DEPTH)
        shape = layout["head"].shape
        slots = [Signal(shape, reset_less=True, name=f"head{k}") for k in range(2)]
        full = [Signal(name=f"full{k}") for k in range(2)]
        # each slot: it holds a good write not yet taken / a write to drop
        wait = [Signal(name=f"wait{k}") for k in range(2)]
        drops = [Signal(name=f"drops{k}") for k in range(2)]
        cur, nxt = Signal(name="cur"), Signal(name="nxt")  # the current slot, the next loaded
        issued, need_aw = Signal(name="issued"), Signal(name="need_aw")
        need_w = Signal(name="need_w")
        aw_id = Signal(p.id_bits)
        head = data.View(shape, Mux(cur, slots[1], slots[0]))
        queued = data.View(shape, heads.r_data)
        beat = data.View(layout["beat"].shape, beats.r_data)
        loads = [heads.r_rdy & ~full[k] & (nxt == k) for k in range(2)]
        take = Mux(cur, wait[1], wait[0]) & self.alloc.ok
        finish = issued & (~need_aw | self.aw_ready) & (~need_w | self.w_ready)
        # a dropped write's completion is queued by credit (cmp_room a register)
        pop = cmpq.r_rdy & self.completions.ready
        cmp_room = credit_ready(m, CMP_DEPTH, Mux(cur, drops[1], drops[0]), pop)
        drop = Mux(cur, drops[1], drops[0]) & cmp_room
        m.d.comb += [
            leave.eq(finish | drop),
            heads.r_en.eq(loads[0] | loads[1]),
            self.alloc.take.eq(take), self.alloc.entry.eq(head.tag),
            self.aw_valid.eq(need_aw), self.aw_id.eq(aw_id), self.aw_addr.eq(head.addr),
            self.w_valid.eq(need_w), self.w_data.eq(beat.data), self.w_strb.eq(beat.strb),
            cmpq.w_en.eq(drop), cmpq.w_data.eq(head.tag),
            self.completions.valid.eq(cmpq.r_rdy), self.completions.payload.eq(cmpq.r_data),
            cmpq.r_en.eq(pop),
            self.poison_drop.eq(drop & head.poison),
            self.unsupported.eq(drop & ~head.poison),
            self.writes.eq(take),
        ]
        m.d.sync += [
            cur.eq(cur ^ leave), nxt.eq(nxt ^ loads[0] ^ loads[1]),
        ]
        for k in range(2):
            here = cur == k
            with m.If(loads[k]):
                m.d.sync += [slots[k].eq(queued), full[k].eq(1), wait[k].eq(queued.good),
                             drops[k].eq(~queued.good)]
            with m.Else():
                with m.If(leave & here):
                    m.d.sync += full[k].eq(0)
                with m.If(take & here):
                    m.d.sync += wait[k].eq(0)
                with m.If(drop & here):
                    m.d.sync += drops[k].eq(0)
        with m.If(take):
            m.d.sync += [issued.eq(1), need_aw.eq(1), need_w.eq(1), aw_id.eq(self.alloc.id)]
        with m.Else():
            with m.If(finish):
                m.d.sync += issued.eq(0)
            with m.If(self.aw_ready):
                m.d.sync += need_aw.eq(0)
            with m.If(self.w_ready):
                m.d.sync += need_w.eq(0)
