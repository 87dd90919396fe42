"""Read issue: takes classified requests from the request pipeline and
queues each read's AR beat (its ID came with it); queues the Cmp
completions of MemInv and unsupported opcodes; drops MemSpecRd.

Both queues are :class:`.queue.CreditQueue` admitted by credit
(:mod:`.credit`): the head is taken only while the registered flags say
both queues have room (whatever its kind, so that ``ready`` is an AND of
two registers).  So the stream handed to the NDR arbiter has a
registered ``valid`` (the queue's ``r_rdy``), and the AR beat is read
straight from its queue's memory at a registered address, ``arvalid``
a register, with no clock enable from the AXI handshake on its wide
data.  A read is registered before its queue: its AR is offered two
cycles after it is taken, as the request pipeline's ``AR_LEAD`` counts."""

from amaranth import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import CXL_ADDR_BITS, Mode
from .credit import credit_ready
from .queue import CreditQueue
from .request import Kind, ReadEntryLayout, RequestLayout

__all__ = ["ReadIssue", "ReadEntryLayout"]

#: Depth of the completions' queue: covers the completions between its
#: admission and the NDR arbiter's ready, and the cycle its credit sees
#: one leave late, so that one is taken per cycle.
CMP_DEPTH = 5

#: Depth of the AR queue: covers the reads from their take to the AR
#: handshake (the input register, the queue) and the cycle its credit sees
#: one leave late, so that one goes per cycle.
AR_DEPTH = 4


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
        A read of mode 0..3 was issued (went into the AR queue) this cycle
        (counters 0..3).
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
        arq = m.submodules.ar_queue = CreditQueue(idw + len(self.ar_addr), AR_DEPTH)
        cmpq = m.submodules.cmp_queue = CreditQueue(16, CMP_DEPTH)
        head = self.requests.payload
        is_read = head.kind == Kind.READ
        is_cmp = (head.kind == Kind.CMP) | (head.kind == Kind.UNSUPPORTED)
        ar_taken = self.ar_valid & self.ar_ready
        # The head is taken while both queues have room, whatever its kind:
        # ``ready`` is an AND of two registers, with no decode of the head
        # on the way to the request queue's read enable and credit count.
        # (Each credit counts an item admitted only when the other's room
        # lets it be taken.)
        ar_room, cmp_room = Signal(), Signal()
        m.d.comb += [
            ar_room.eq(credit_ready(m, AR_DEPTH, self.requests.valid & is_read & cmp_room,
                                    ar_taken, late_give=True)),
            cmp_room.eq(credit_ready(m, CMP_DEPTH, self.requests.valid & is_cmp & ar_room,
                                     cmpq.r_rdy & self.completions.ready, late_give=True)),
        ]
        take = Signal()
        pop = cmpq.r_rdy & self.completions.ready
        # the read's AR beat (and its mode, for the counters), registered
        # before its queue
        ar_valid, ar_beat = Signal(), Signal(len(arq.w_data))
        ar_mode = Signal.like(head.mode)
        m.d.sync += [ar_valid.eq(take), ar_beat.eq(Cat(head.id, head.addr)),
                     ar_mode.eq(head.mode)]
        m.d.comb += [
            take.eq(self.requests.valid & is_read & ar_room & cmp_room),
            arq.w_en.eq(ar_valid), arq.w_data.eq(ar_beat),
            cmpq.w_en.eq(self.requests.valid & is_cmp & cmp_room & ar_room),
            cmpq.w_data.eq(head.tag),
            self.requests.ready.eq(ar_room & cmp_room),
            self.unsupported.eq(self.requests.valid & (head.kind == Kind.UNSUPPORTED)
                                & cmp_room & ar_room),
            self.reads.eq(Cat(*(ar_valid & (ar_mode == mode) for mode in Mode))),
            self.ar_valid.eq(arq.r_rdy),
            self.ar_id.eq(arq.r_data[:idw]),
            self.ar_addr.eq(arq.r_data[idw:]),
            arq.r_en.eq(ar_taken),
            self.completions.valid.eq(cmpq.r_rdy),
            self.completions.payload.eq(cmpq.r_data),
            cmpq.r_en.eq(pop),
        ]
        return m
