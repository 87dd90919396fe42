"""A queue for a stream admitted by credit (:mod:`.credit`): nothing is ever
written into it while it is full, so it has no ``w_rdy`` and its memory
needs no write enable computed from its level.

The memory (LUT RAM) is written every cycle at a registered write address:
with fewer items than places, the place at the write address is free
whenever ``w_en`` is low, so a cycle without an item writes it and the
address does not move.  It is read at a registered address, straight from
the memory (no output register), and ``r_rdy`` is a register.  The width is
cut into slices, each with its own memory and its own write and read
address counters: each counter feeds only its slice, and the counters are
not equal flip-flops (each one counts from its own value), so synthesis
keeps them apart.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .credit import below, step

__all__ = ["CreditQueue", "select_copies"]


class CreditQueue(wiring.Component):
    """A FIFO of at most ``depth`` items, written only with room.

    Parameters
    ----------
    width : int
    depth : int
        Most items ever in the queue (its writer's credit).
    slices : int
        How many memories the width is cut into.

    Members
    -------
    w_en : In(1)
        Write ``w_data`` (meant to come straight from a register).
    w_data : In(width)
    r_rdy : Out(1)
        The queue holds an item (a register).
    rdy_next : Out(1)
        ``r_rdy`` of the next cycle, after this cycle's write and read.
    more : Out(1)
        The queue holds two items or more (a register).
    more_next : Out(1)
        ``more`` of the next cycle.
    r_en : In(1)
        The head leaves (only while ``r_rdy``).
    r_data : Out(width)
        The head, read from the memory at a registered address.
    """

    def __init__(self, width, depth, *, slices=1):
        if not 1 <= slices <= width:
            raise ValueError(f"slices must be in 1..{width}, not {slices!r}")
        self._width, self._depth, self._slices = width, depth, slices
        super().__init__({"w_en": In(1), "w_data": In(width), "r_rdy": Out(1),
                          "rdy_next": Out(1), "more": Out(1), "more_next": Out(1),
                          "r_en": In(1), "r_data": Out(width)})

    @property
    def places(self):
        """Places of each memory: more than ``depth``, so the place at the
        write address is free whenever nothing is written."""
        return 1 << self._depth.bit_length()

    def elaborate(self, platform):
        m = Module()
        size = self.places
        # The count's adder feeds only the count: r_rdy (one item or more)
        # and ``more`` (two or more) of the next cycle are registered flags
        # and compares of the count with a constant, chosen by w_en and r_en.
        count = Signal(range(self._depth + 1))
        more = self.more
        m.d.sync += [count.eq(step(count, self.w_en, self.r_en)), self.r_rdy.eq(self.rdy_next),
                     more.eq(self.more_next)]
        m.d.comb += [self.rdy_next.eq(self.w_en | Mux(self.r_en, more, self.r_rdy)),
                     self.more_next.eq(Mux(self.w_en, Mux(self.r_en, more, self.r_rdy),
                                           Mux(self.r_en, ~below(count, 3), more)))]

        cuts = [self._width * k // self._slices for k in range(self._slices + 1)]
        for k, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
            mem = m.submodules[f"mem{k}"] = Memory(shape=hi - lo, depth=size, init=[])
            wr, rd = mem.write_port(), mem.read_port(domain="comb")
            wptr = Signal(range(size), name=f"wptr{k}")
            rptr = Signal(range(size), name=f"rptr{k}")
            # (each counter counts from its own value, wrapping at size)
            with m.If(self.r_en):
                m.d.sync += rptr.eq(rptr + 1)
            with m.If(self.w_en):
                m.d.sync += wptr.eq(wptr + 1)
            m.d.comb += [wr.en.eq(1), wr.addr.eq(wptr), wr.data.eq(self.w_data[lo:hi]),
                         rd.addr.eq(rptr), self.r_data[lo:hi].eq(rd.data)]
        return m


def select_copies(m, value, n):
    """Up to four registered copies of the 1-bit ``value`` that synthesis
    keeps apart (equal flip-flops are merged): stored as it is or inverted,
    with a reset or without.  So the copies without one hold any value
    until the first clock after reset: they are for selects of data that
    is only looked at while a registered ``valid`` says so.

    Returns the registered values (each the copy, inverted back where
    stored inverted), one for each of ``n`` slices of the data.
    """
    if not 1 <= n <= 4:
        raise ValueError(f"n must be in 1..4, not {n!r}")
    copies = []
    for k in range(n):
        inverted, reset_less = k & 1, k >> 1 & 1
        reg = Signal(name=f"select{k}", init=inverted, reset_less=bool(reset_less))
        m.d.sync += reg.eq(~value if inverted else value)
        copies.append(~reg if inverted else reg)
    return copies
