"""The in-flight table's free list of AXI transaction IDs."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

__all__ = ["IdPool"]


class IdPool(wiring.Component):
    """Free list of the IDs ``0 .. size-1``.

    After reset the IDs are handed out in order from a counter; IDs given
    back go through a FIFO and are handed out again from there.  No state
    survives a reset, so a reset in the middle of traffic leaves every ID
    free.

    Parameters
    ----------
    size : int
        Number of IDs.
    id_bits : int
        Width of an ID.

    Members
    -------
    alloc_ok : Out(1)
        An ID is available on ``alloc_id``.
    alloc_id : Out(id_bits)
    alloc : In(1)
        Take ``alloc_id`` (only while ``alloc_ok``).
    free : In(1)
        Give ``free_id`` back.
    free_id : In(id_bits)
    """

    def __init__(self, *, size, id_bits):
        if size < 1 or size > (1 << id_bits):
            raise ValueError(f"size must be in 1..{1 << id_bits}, not {size!r}")
        self._size = size
        super().__init__({
            "alloc_ok": Out(1), "alloc_id": Out(id_bits), "alloc": In(1),
            "free": In(1), "free_id": In(id_bits),
        })

    @property
    def size(self):
        return self._size

    def elaborate(self, platform):
        m = Module()
        returned = m.submodules.returned = SyncFIFO(width=len(self.alloc_id), depth=self._size)
        fresh = Signal(range(self._size + 1))
        fresh_left = Signal()
        m.d.comb += [
            fresh_left.eq(fresh != self._size),
            self.alloc_ok.eq(fresh_left | returned.r_rdy),
            self.alloc_id.eq(Mux(fresh_left, fresh, returned.r_data)),
            returned.r_en.eq(self.alloc & ~fresh_left),
            returned.w_en.eq(self.free),
            returned.w_data.eq(self.free_id),
        ]
        with m.If(self.alloc & fresh_left):
            m.d.sync += fresh.eq(fresh + 1)
        return m
