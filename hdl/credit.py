"""Admission by credit, the rule every block of the top that takes a stream
from outside follows: its ``ready`` is a register, high only while all it
has admitted and not yet passed on fits in the queue behind it."""

from amaranth import Signal

__all__ = ["credit_ready"]


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
    held = Signal(range(depth + 1))
    ready = Signal()
    nxt = held + (valid & ready) - give
    m.d.sync += [held.eq(nxt), ready.eq((nxt < depth) & (~hold if hold is not None else 1)
                                        & (room if room is not None else 1))]
    return ready
