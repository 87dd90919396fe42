"""Admission by credit, the rule every block of the top that takes a stream
from outside follows: its ``ready`` is a register, high only while all it
has admitted and not yet passed on fits in the queue behind it."""

from functools import reduce

from amaranth import Const, Mux, Signal

__all__ = ["credit_ready", "below", "step"]


def below(x, k):
    """Whether the unsigned ``x`` is below the constant ``k``, as gates
    (no carry chain): at the first bit from the top where ``x`` and ``k``
    differ, ``k`` has the one."""
    if k <= 0:
        return Const(0)
    if k >= 1 << len(x):
        return Const(1)
    terms, same = [], Const(1)
    for i in reversed(range(len(x))):
        if k >> i & 1:
            terms.append(same & ~x[i])
            same = same & x[i]
        else:
            same = same & ~x[i]
    return reduce(lambda a, b: a | b, terms)


def step(count, up, down):
    """``count + up - down`` for the 1-bit ``up`` and ``down``, as a choice by
    them between ``count + 1`` and ``count - 1`` (each from the register
    alone), so the events, which often come late, meet the count's carry
    chain only in the last gate."""
    return Mux(up & ~down, count + 1, Mux(down & ~up, count - 1, count))[:len(count)]


def credit_ready(m, depth, valid, give, hold=None, room=None, late_give=False):
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
    late_give : bool
        ``ready`` sees an item leave a cycle later (the count still counts
        it at once), so ``give`` feeds only the count: for a ``give`` that
        comes late in the cycle, at the cost of a place of the queue.

    Returns
    -------
    ready : Signal
    """
    held = Signal(range(depth + 1))
    ready = Signal()
    admit = valid & ready
    m.d.sync += held.eq(step(held, admit, give))
    # Whether the count of the next cycle is below depth, as a compare of
    # the registered count with a constant chosen by what enters and
    # leaves (the count's adder feeds only the count).
    if late_give:
        fits = Mux(admit, below(held, depth - 1), below(held, depth))
    else:
        fits = Mux(admit, Mux(give, below(held, depth), below(held, depth - 1)),
                   Mux(give, 1, below(held, depth)))
    m.d.sync += ready.eq(fits & (~hold if hold is not None else 1)
                         & (room if room is not None else 1))
    return ready
