"""Admission by credit, the rule every block of the top that takes a stream
from outside follows: its ``ready`` is a register, high only while all it
has admitted and not yet passed on fits in the queue behind it.

The counts behind such flags are kept in unary (:func:`ladder`): one
registered flag "the count is at least k" for each k, so that a flag of
the next cycle is one of three registered flags chosen by the two events
of the cycle, with no adder, carry chain or compare on the way.  The
choice is written so that an unknown event in simulation (X) keeps the
flags as they are, as an enable would: no register takes an X from an
event.  (Each register's choice is in its own statements, so that a
simulator that does not evaluate processes at time zero still brings it
out of reset.)"""

from functools import reduce

from amaranth import Cat, Const, Mux, Signal

__all__ = ["credit_ready", "below", "step", "ladder"]


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


def ladder(m, size, up, down, *, name, init=0):
    """A count of ``0 .. size`` kept in unary, moved by one each cycle
    ``up`` or ``down`` is high alone (the caller keeps it within range).

    Returns ``(now, after)``: ``now(k)``, the registered flag "the count is
    at least ``k``" (a constant for ``k <= 0`` or ``k > size``);
    ``after(k)``, the same flag for the next cycle, one of ``now``'s flags
    chosen by ``up`` and ``down``.  The flags are chosen in the register's
    own statements, so an unknown event keeps them as they are.
    """
    flags = Signal(size, name=f"{name}_at_least", init=(1 << init) - 1)
    grow, shrink = Cat(Const(1, 1), flags[:-1]), Cat(flags[1:], Const(0, 1))
    with m.Switch(Cat(up, down)):
        with m.Case(0b01):
            m.d.sync += flags.eq(grow)
        with m.Case(0b10):
            m.d.sync += flags.eq(shrink)
    nxt = Mux(up & ~down, grow, Mux(down & ~up, shrink, flags))

    def pick(value):
        def flag(k):
            return Const(int(k <= 0), 1) if k <= 0 or k > size else value[k - 1]
        return flag

    return pick(flags), pick(nxt)


def credit_ready(m, depth, valid, give, hold=None, room=None, late_give=False,
                 late_admit=False, name=None):
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
        ``ready`` sees an item leave a cycle later, and the count counts
        it then, from a register of ``give``: for a ``give`` that comes
        late in the cycle or from another block, at the cost of a place of
        the queue.
    late_admit : bool
        The count counts an item admitted a cycle later, from a register
        of the admission, and ``ready`` is computed as if an item were
        admitted every cycle (room for two): so ``valid``, which may come
        from outside or from another block, meets one flip-flop only, at
        the cost of another place of the queue.
    name : str or None
        Prefix of the registers' names (for two credits in one block).

    Returns
    -------
    ready : Signal
    """
    prefix = f"{name}_" if name else ""
    ready = Signal(name=f"{prefix}ready")
    admit = valid & ready
    extra = (~hold if hold is not None else 1) & (room if room is not None else 1)
    if late_give:
        # Counted a cycle late, ``give`` comes from a register: the count
        # then holds one item more than there is for the cycle after one
        # leaves, and ``ready`` of the next cycle is the same as from the
        # exact count and this cycle's admission (see below), while every
        # flag's choice meets registered events only.
        late = Signal(name=f"{prefix}give_q")
        m.d.sync += late.eq(give)
        give = late
    # The items held, in unary: ``ready`` of the next cycle is the flag
    # "fewer than depth" of the next cycle, chosen in the register's own
    # statements, so an unknown event leaves it as with none.  (With
    # late_give, the count c' counts an item's leaving a cycle late: c' =
    # c + give of the cycle before, so "c' < depth" next cycle is "c +
    # admitted < depth" of this cycle, what an exact count would give with
    # the leaving seen a cycle late.)
    if late_admit:
        return _late_admit_ready(m, depth, ready, admit, give, extra, prefix)
    return _exact_ready(m, depth, ready, admit, give, extra, prefix)


def _exact_ready(m, depth, ready, admit, give, extra, prefix):
    """:func:`credit_ready`'s ``ready`` from a count of the items held that
    counts each admission in its cycle: the flag "fewer than depth" of the
    next cycle."""
    held, _ = ladder(m, depth, admit, give, name=f"{prefix}held")
    m.d.sync += ready.eq(~held(depth) & extra)
    with m.Switch(Cat(admit, give)):
        with m.Case(0b01):
            m.d.sync += ready.eq(~held(depth - 1) & extra)
        with m.Case(0b10):
            m.d.sync += ready.eq(extra)
    return ready


def _late_admit_ready(m, depth, ready, admit, give, extra, prefix):
    """:func:`credit_ready`'s ``ready`` with ``late_admit``: the count c'
    counts admissions a cycle late (c = c' + the admission registered), and
    ready of the next cycle is "c < depth" whatever this cycle admits: c of
    the next cycle is at most c' of the next cycle + 1, so the flag "c' >=
    depth - 1" of the next cycle, one of three registered flags chosen by
    registered events."""
    if depth < 2:
        raise ValueError(f"a late-admit credit needs a depth of 2 or more, not {depth!r}")
    admitted = Signal(name=f"{prefix}admit_q")
    m.d.sync += admitted.eq(admit)
    held, _ = ladder(m, depth, admitted, give, name=f"{prefix}held")
    m.d.sync += ready.eq(~held(depth - 1) & extra)
    with m.Switch(Cat(admitted, give)):
        with m.Case(0b01):
            m.d.sync += ready.eq(~held(depth - 2) & extra)
        with m.Case(0b10):
            m.d.sync += ready.eq(~held(depth) & extra)
    return ready
