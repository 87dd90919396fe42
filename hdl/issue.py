"""Read issue: takes classified requests from the request pipeline and
queues each read's AR beat (its ID came with it); queues the Cmp
completions of MemInv and unsupported opcodes; drops MemSpecRd.

The completions' queue is a :class:`.queue.CreditQueue` admitted by credit
(:mod:`.credit`): a completion is taken only while a registered flag says
the queue has room, so the stream handed to the NDR arbiter has a
registered ``valid`` (the queue's ``r_rdy``)."""

from amaranth import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import CXL_ADDR_BITS, Mode
from .credit import credit_ready
from .queue import CreditQueue
from .request import Kind, ReadEntryLayout, RequestLayout

__all__ = ["ReadIssue", "ReadEntryLayout"]

#: Depth of the completions' queue: covers the completions between its
#: admission and the NDR arbiter's ready, so that one is taken per cycle.
CMP_DEPTH = 4


class ReadIssue(wiring.Component):
    """Issues reads to the AXI4 AR channel and queues Req completions.

    Parameters
    ----------
    params : TopParams

    Members
    -------
    requests : In(stream.Signature(RequestLayout(params)))
    ar_id, ar_addr, ar_valid, ar_ready :
        The AR beat (line address; the top shifts it to a byte address).
    completions : Out(stream.Signature(16))
        Tags of MemInv/MemInvNT and unsupported requests, for NDR Cmp
        (``valid`` a register: its queue's ``r_rdy``).
    unsupported : Out(1)
        An unsupported request was answered this cycle.
    reads : Out(4)
        A read of mode 0..3 was issued this cycle (counters 0..3).
    """

    def __init__(self, params):
        self._params = params
        idw = params.id_bits
        super().__init__({
            "requests": In(stream.Signature(RequestLayout(params))),
            "ar_id": Out(idw), "ar_addr": Out(CXL_ADDR_BITS - params.offset_bits),
            "ar_valid": Out(1), "ar_ready": In(1),
            "completions": Out(stream.Signature(16)),
            "unsupported": Out(1), "reads": Out(4),
        })

    def elaborate(self, platform):
        m = Module()
        idw = self._params.id_bits
        arq = m.submodules.ar_queue = SyncFIFOBuffered(width=idw + len(self.ar_addr), depth=3)
        cmpq = m.submodules.cmp_queue = CreditQueue(16, CMP_DEPTH)
        head = self.requests.payload
        is_read = head.kind == Kind.READ
        is_cmp = (head.kind == Kind.CMP) | (head.kind == Kind.UNSUPPORTED)
        take = Signal()
        pop = cmpq.r_rdy & self.completions.ready
        cmp_room = credit_ready(m, CMP_DEPTH, self.requests.valid & is_cmp, pop)
        m.d.comb += [
            take.eq(self.requests.valid & is_read & arq.w_rdy),
            arq.w_en.eq(take),
            arq.w_data.eq(Cat(head.id, head.addr)),
            cmpq.w_en.eq(self.requests.valid & is_cmp & cmp_room),
            cmpq.w_data.eq(head.tag),
            self.requests.ready.eq(take | (is_cmp & cmp_room) | (head.kind == Kind.DROP)),
            self.unsupported.eq(self.requests.valid & (head.kind == Kind.UNSUPPORTED)
                                & cmp_room),
            self.reads.eq(Cat(*(take & (head.mode == mode) for mode in Mode))),
            self.ar_valid.eq(arq.r_rdy),
            self.ar_id.eq(arq.r_data[:idw]),
            self.ar_addr.eq(arq.r_data[idw:]),
            arq.r_en.eq(self.ar_ready),
            self.completions.valid.eq(cmpq.r_rdy),
            self.completions.payload.eq(cmpq.r_data),
            cmpq.r_en.eq(pop),
        ]
        return m
