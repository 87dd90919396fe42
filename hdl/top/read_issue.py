"""Read issue: takes every classified request the request pipeline hands
over, the cycle it comes, and queues each read's AR beat (its ID came
with it); hands the tag of each MemInv and unsupported request, from a
register, to the NDR arbiter; drops MemSpecRd.

The AR queue is a :class:`.queue.CreditQueue` as deep as the request
pipeline's credit window for reads (:func:`.request_stages.credit_windows`),
written from a register: the pipeline admits a read only while the
queue has room for every read it has admitted and not yet seen leave
(``read_left``, registered there), and a completion only while the NDR
arbiter's queue for them has room likewise; so nothing here ever pushes
back and there is no handshake between the blocks.  The AR beat is read
straight from its queue's memory at a registered address, ``arvalid`` a
register, with no clock enable from the AXI handshake on its wide data.
A read is registered before its queue: its AR is offered two cycles
after it is taken, as the request pipeline's ``AR_LEAD`` counts."""

from amaranth import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import CXL_ADDR_BITS, Mode
from neuron_fabric.hdl.prims.queue import CreditQueue
from neuron_fabric.hdl.top.request import Kind, ReadEntryLayout, RequestLayout
from neuron_fabric.hdl.top.request_layout import ARLEN_BITS, answered_here
from neuron_fabric.hdl.top.request_stages import credit_windows

__all__ = ["ReadIssue", "ReadEntryLayout"]


class ReadIssue(wiring.Component):
    """Issues reads to the AXI4 AR channel and queues Req completions.

    Parameters
    ----------
    params : TopParams

    Members
    -------
    requests : In(stream.Signature(RequestLayout(params), always_ready=True))
        Sent only within the request pipeline's credit windows.
    read_left : Out(1)
        An AR beat left its queue this cycle.
    ar_id, ar_addr, ar_len, ar_valid, ar_ready :
        The AR beat (line address; the top shifts it to a byte address);
        ARLEN is 0 but for a packed view's burst (contract section 6.3).
    completions : Out(stream.Signature(16, always_ready=True))
        Tags of MemInv/MemInvNT and unsupported requests, for NDR Cmp
        (``valid`` and the tag registers), sent within the request
        pipeline's credit window for them.
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
            "requests": In(stream.Signature(RequestLayout(params), always_ready=True)),
            "read_left": Out(1),
            "ar_id": Out(idw), "ar_addr": Out(CXL_ADDR_BITS - params.offset_bits),
            "ar_len": Out(ARLEN_BITS), "ar_valid": Out(1), "ar_ready": In(1),
            "completions": Out(stream.Signature(16, always_ready=True)),
            "unsupported": Out(1), "reads": Out(4),
        })

    def elaborate(self, platform):
        m = Module()
        idw = self._params.id_bits
        windows = credit_windows(self._params)
        head = self.requests.payload
        view = "len" in head.shape().members
        arq = m.submodules.ar_queue = CreditQueue(idw + len(self.ar_addr) + (ARLEN_BITS if view else 0),
                                                  windows["read"])
        valid = self.requests.valid
        ar_taken = self.ar_valid & self.ar_ready
        # the read's AR beat (and its mode, for the counters), registered
        # before its queue
        ar_valid, ar_beat = Signal(), Signal(len(arq.w_data))
        ar_mode = Signal.like(head.mode)
        m.d.sync += [ar_valid.eq(valid & (head.kind == Kind.READ)),
                     ar_beat.eq(Cat(head.id, head.addr, head.len if view else Cat())),
                     ar_mode.eq(head.mode)]
        # a completion's tag, registered for the NDR arbiter
        cmp_valid, cmp_tag = Signal(), Signal(16)
        is_cmp = answered_here(head.kind)
        m.d.sync += [cmp_valid.eq(valid & is_cmp), cmp_tag.eq(head.tag)]
        m.d.comb += [
            arq.w_en.eq(ar_valid), arq.w_data.eq(ar_beat),
            self.unsupported.eq(valid & (head.kind == Kind.UNSUPPORTED)),
            self.reads.eq(Cat(*(ar_valid & (ar_mode == mode) for mode in Mode))),
            self.ar_valid.eq(arq.r_rdy),
            self.ar_id.eq(arq.r_data[:idw]),
            self.ar_addr.eq(arq.r_data[idw:idw + len(self.ar_addr)]),
            self.ar_len.eq(arq.r_data[idw + len(self.ar_addr):] if view else 0),
            arq.r_en.eq(ar_taken),
            self.completions.valid.eq(cmp_valid), self.completions.payload.eq(cmp_tag),
            self.read_left.eq(ar_taken),
        ]
        return m
