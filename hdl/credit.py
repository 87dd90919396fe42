"""Admission by credit, the rule every block of the top that takes a stream
from outside follows: its ``ready`` is a register, high only while all it
has admitted and not yet passed on fits in the queue behind it.

The counts behind such flags are kept in unary (:func:`unary_count`), so
that a flag of the next cycle is a choice among registered flags by this
cycle's takes and gives, with no adder or compare on the way."""

from amaranth import Array, Cat, Const, Signal

__all__ = ["credit_ready", "unary_count"]


def unary_count(m, size, ups, downs, name):
    """A count of ``0 .. size`` held in unary.

    Parameters
    ----------
    m : Module
    size : int
        The largest count (the callers keep the count within it).
    ups, downs : list of Value
        One-bit events that raise or lower the count by one this cycle.
    name : str
        Prefix of the flags' names.

    Returns
    -------
    now, after : function
        ``now(k)``: the count is below ``k``, a register (a constant for
        ``k <= 0`` or ``k > size``); ``after(k)``: the same for the count
        after this cycle's events, one of ``now``'s flags chosen by them.
    """
    below = Signal(size, init=(1 << size) - 1, name=f"{name}_below")
    events = Cat(*ups, *downs)
    changes = [sum(v >> i & 1 for i in range(len(ups))) -
               sum(v >> i & 1 for i in range(len(ups), len(events)))
               for v in range(1 << len(events))]
    nexts = {}

    def now(k):
        return Const(int(k > size), 1) if k <= 0 or k > size else below[k - 1]

    def after(k):
        if k not in nexts:
            nexts[k] = Signal(name=f"{name}_below{k}_next")
            m.d.comb += nexts[k].eq(Array(now(k - c) for c in changes)[events])
        return nexts[k]

    m.d.sync += [below[k - 1].eq(after(k)) for k in range(1, size + 1)]
    return now, after


def credit_ready(m, depth, valid, give, hold=None, room=None):
    """The registered ``ready`` of an input that may hold ``depth`` items.

    Parameters
    ----------
    m : Module
    depth : int
        Items the queue behind the input holds.
    valid : Value
        The input's ``valid`` (an item is admitted when ``valid & ready``).
    give : Value
        An item leaves the window this cycle.
    hold : Value or None
        When high, admit nothing from the next cycle on.
    room : Value or None
        Low when a place further on (the in-flight table) will have no room
        next cycle: admit nothing then.

    Returns
    -------
    ready : Signal
    """
    ready = Signal()
    _, after = unary_count(m, depth, [valid & ready], [give], "credit")
    m.d.sync += ready.eq(after(depth) & (~hold if hold is not None else 1)
                         & (room if room is not None else 1))
    return ready
