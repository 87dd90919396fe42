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
keeps them apart.  The count of items is kept in unary
(:func:`.credit.ladder`), so ``r_rdy`` and ``more`` are registers and each
of the next cycle a choice of registered flags by ``w_en`` and ``r_en``.

:class:`HeadQueue` is the same queue for a narrow stream with its head in
a register: for an output chosen among several queues, whose choice then
meets registers only.
"""

from amaranth import Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from neuron_fabric.hdl.prims.credit import ladder

__all__ = ["CreditQueue", "HeadQueue", "select_copies"]


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
        super().__init__(_members(width))

    @property
    def places(self):
        """Places of each memory: more than ``depth``, so the place at the
        write address is free whenever nothing is written."""
        return 1 << self._depth.bit_length()

    def elaborate(self, platform):
        m = Module()
        size = self.places
        # The count in unary: r_rdy (one item or more) and ``more`` (two or
        # more) are its first two flags, each of the next cycle a choice of
        # registered flags by w_en and r_en.
        count, after = ladder(m, self._depth, self.w_en, self.r_en, name="count")
        m.d.comb += [self.r_rdy.eq(count(1)), self.more.eq(count(2)),
                     self.rdy_next.eq(after(1)), self.more_next.eq(after(2))]

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


class HeadQueue(wiring.Component):
    """A FIFO of at most ``depth`` items, written only with room, whose
    head is a register: the items behind it wait in a memory written every
    cycle at a registered address and read at a registered address.  The
    head is loaded while it is empty or leaves: from the memory while two
    items or more are in the queue, else with the item written this cycle
    (an item written into an empty queue is the head the next cycle).

    Parameters
    ----------
    width : int
    depth : int
        Most items ever in the queue (its writer's credit).

    Members
    -------
    The members of :class:`CreditQueue`; ``r_data`` is a register.
    """

    def __init__(self, width, depth):
        self._width, self._depth = width, depth
        super().__init__(_members(width))

    def elaborate(self, platform):
        m = Module()
        count, after = ladder(m, self._depth, self.w_en, self.r_en, name="count")
        rdy, more = count(1), count(2)
        m.d.comb += [self.r_rdy.eq(rdy), self.more.eq(more),
                     self.rdy_next.eq(after(1)), self.more_next.eq(after(2))]
        size = 1 << max(self._depth - 1, 1).bit_length()
        mem = m.submodules.mem = Memory(shape=self._width, depth=size, init=[])
        wr, rd = mem.write_port(), mem.read_port(domain="comb")
        wptr, rptr = Signal(range(size), name="wptr"), Signal(range(size), name="rptr")
        head = Signal(self._width, name="head")
        # an item written goes behind a head that stays or is replaced
        # from the memory; the head is replaced from the memory while it
        # holds an item
        with m.If(self.w_en & rdy & (~self.r_en | more)):
            m.d.sync += wptr.eq(wptr + 1)
        with m.If(self.r_en & more):
            m.d.sync += rptr.eq(rptr + 1)
        with m.If(self.r_en | ~rdy):
            m.d.sync += head.eq(Mux(more, rd.data, self.w_data))
        m.d.comb += [wr.en.eq(1), wr.addr.eq(wptr), wr.data.eq(self.w_data),
                     rd.addr.eq(rptr), self.r_data.eq(head)]
        return m


def _members(width):
    """The members of a queue (:class:`CreditQueue`)."""
    return {"w_en": In(1), "w_data": In(width), "r_rdy": Out(1), "rdy_next": Out(1),
            "more": Out(1), "more_next": Out(1), "r_en": In(1), "r_data": Out(width)}


def select_copies(m, value, n, *, name="select", invert=True):
    """Up to four registered copies of ``value`` that synthesis keeps apart
    (equal flip-flops are merged): stored as it is or inverted (or, with
    ``invert=False``, with an initial value of zeros or ones), with a reset
    or without.  So the copies differ until the first clock after reset:
    they are for selects and addresses of data that is only looked at
    while a registered ``valid`` says so.  Copies for memory addresses want
    ``invert=False``: an inverted copy costs a gate on the way.

    Returns the registered values (each the copy, inverted back where
    stored inverted), one for each of ``n`` slices of the data.
    """
    if not 1 <= n <= 4:
        raise ValueError(f"n must be in 1..4, not {n!r}")
    width = len(Value.cast(value))
    copies = []
    for k in range(n):
        ones, reset_less = k & 1, k >> 1 & 1
        inverted = ones and invert
        reg = Signal(width, name=f"{name}{k}", init=(1 << width) - 1 if ones else 0,
                     reset_less=bool(reset_less))
        m.d.sync += reg.eq(~value if inverted else value)
        copies.append(~reg if inverted else reg)
    return copies
