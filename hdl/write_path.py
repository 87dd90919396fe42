"""The M2S RwD path: accept, classify, queue; AXI AW/W issue for MemWr and
MemWrPtl, Cmp completions for the dropped ones (contract 4.2)."""

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import CXL_ADDR_BITS, RwdOpcode
from .bus import RwdLayout
from .credit import credit_ready
from .inflight import AllocSignature

__all__ = ["WritePath"]

#: Depth of the write queue: covers the writes between admission and the
#: queue's output, so that one is accepted per cycle.
QUEUE_DEPTH = 8


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
    enable and written into the queue.  The queue is two: the heads, whose
    output is registered, and the W beats, read straight from their memory,
    so that no wide register has a clock enable computed from the AXI
    handshakes.  At the queue's head a write takes an
    AXI ID and an in-flight entry, then presents AW and W (each leaves on its
    own handshake) and leaves the queue when both are done.

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
        Tags of dropped writes, for NDR Cmp.
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
        queue = m.submodules.queue = SyncFIFOBuffered(width=layout["head"].shape.size,
                                                      depth=QUEUE_DEPTH)
        beats = m.submodules.beats = SyncFIFO(width=layout["beat"].shape.size, depth=QUEUE_DEPTH)
        cmpq = m.submodules.cmp_queue = SyncFIFO(width=16, depth=2)

        # -- admission and the input register ----------------------------------------
        ready = credit_ready(m, QUEUE_DEPTH, self.rwd.valid, queue.r_rdy & queue.r_en)
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
        m.d.comb += [queue.w_en.eq(w0_valid), queue.w_data.eq(w0.head),
                     beats.w_en.eq(w0_valid), beats.w_data.eq(w0.beat)]

        # -- the head: take an ID, issue AW and W, or drop ------------------------------
        head = data.View(layout["head"].shape, queue.r_data)
        beat = data.View(layout["beat"].shape, beats.r_data)
        issued, aw_done, w_done = Signal(), Signal(), Signal()
        aw_id = Signal(p.id_bits)
        take = queue.r_rdy & head.good & ~issued & self.alloc.ok
        aw_fire = self.aw_valid & self.aw_ready
        w_fire = self.w_valid & self.w_ready
        finish = issued & (aw_done | aw_fire) & (w_done | w_fire)
        drop = queue.r_rdy & ~head.good & cmpq.w_rdy
        m.d.comb += [
            self.alloc.take.eq(take), self.alloc.entry.eq(head.tag),
            self.aw_valid.eq(issued & ~aw_done), self.aw_id.eq(aw_id),
            self.aw_addr.eq(head.addr),
            self.w_valid.eq(issued & ~w_done), self.w_data.eq(beat.data),
            self.w_strb.eq(beat.strb),
            queue.r_en.eq(finish | drop), beats.r_en.eq(finish | drop),
            cmpq.w_en.eq(drop), cmpq.w_data.eq(head.tag),
            self.completions.valid.eq(cmpq.r_rdy), self.completions.payload.eq(cmpq.r_data),
            cmpq.r_en.eq(self.completions.ready),
            self.poison_drop.eq(drop & head.poison),
            self.unsupported.eq(drop & ~head.poison),
            self.writes.eq(take),
        ]
        with m.If(take):
            m.d.sync += [issued.eq(1), aw_id.eq(self.alloc.id)]
        with m.If(finish):
            m.d.sync += [issued.eq(0), aw_done.eq(0), w_done.eq(0)]
        with m.Else():
            with m.If(aw_fire):
                m.d.sync += aw_done.eq(1)
            with m.If(w_fire):
                m.d.sync += w_done.eq(1)
        return m
