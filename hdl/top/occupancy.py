"""The in-flight table's occupancy: how many of its MAX_OUTSTANDING places
are taken, whether a read or a write may take one, and ``devload``.

A place is taken by a read when its request is accepted (``read_take``)
and by a write when it is issued (``write_take``), and given back when
its response is looked up (``read_free``, ``write_free``); it counts
until the cycle after.  The takes come late in the cycle from other blocks, so
they only go into registers: the places are handed out as promises,
registered a cycle ahead, and what each cycle took and gave back is
counted from registers the cycle after.

* ``room`` (a register) promises a read a place for the next cycle: the
  requester registers its ``ready`` from it, so a read accepted in cycle
  t+1 was promised in cycle t and its place stays promised until then;
* ``ok`` (a register) promises a write a place in this cycle.

Each cycle the places neither taken nor promised (``spare``, in unary)
and the places coming back (``back``, a registered count: the promises
not used two cycles before, and the places given back then) make new
promises: both when two or more are free, else one, to the read and the
write side in turn.  So the places taken never pass MAX_OUTSTANDING, a
read and a write taken in one cycle always fit, and an ID is free for
every take (a place comes back after its ID, see
:class:`.inflight.IdPool`).  The promises are conservative only near the
end: with at least seven places free two cycles before, both sides
have one.

``devload`` is the level of the count of places taken two cycles before
(a second unary count, moved by the takes and frees of then).
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.hdl.prims.pipe import boundary

__all__ = ["Occupancy", "devload_level"]


def devload_level(in_flight, max_outstanding):
    """``devload`` for ``in_flight`` table entries (contract 4.2, thresholds of
    this implementation): 0 light below 1/4 full, 1 optimal from 1/4,
    2 moderate from 3/4, 3 severe when full."""
    if in_flight >= max_outstanding:
        return 3
    if 4 * in_flight >= 3 * max_outstanding:
        return 2
    if 4 * in_flight >= max_outstanding:
        return 1
    return 0


class Occupancy(wiring.Component):
    """The count of places of the in-flight table and its promises.

    Parameters
    ----------
    size : int
        Places (MAX_OUTSTANDING).

    Members
    -------
    read_take, write_take : In(1)
        A read is reserved (only after ``room`` the cycle before), a write
        is taken (only while ``ok``).
    read_free, write_free : In(1)
        A place is given back (meant to come from registers): it is taken
        until the next cycle.
    room : Out(1)
        A read may be reserved in the next cycle (a register).
    ok : Out(1)
        A write may be taken in this cycle (a register).
    devload : Out(2)
        :func:`devload_level` of the places taken two cycles before.
    """

    def __init__(self, size):
        if size < 4:
            raise ValueError(f"size must be at least 4, not {size!r}")
        self._size = size
        super().__init__({"read_take": In(1), "write_take": In(1), "read_free": In(1),
                          "write_free": In(1), "room": Out(1), "ok": Out(1),
                          "devload": Out(2)})

    def elaborate(self, platform):
        m = Module()
        n = self._size
        # The promises: ``room`` (for the next cycle), ``due`` (this cycle's,
        # promised the cycle before) and ``ok``; from reset both sides have one.
        room, due, ok = Signal(init=1, name="room"), Signal(name="due"), Signal(init=1, name="ok")
        turn = Signal(name="turn")
        # What this cycle takes and gives back, registered (an unknown take
        # counts as none).
        took = [Signal(name=f"{side}_took") for side in ("read", "write")]
        for flag, take in zip(took, (self.read_take, self.write_take)):
            with m.If(take):
                m.d.sync += flag.eq(1)
            with m.Else():
                m.d.sync += flag.eq(0)
        takes = took[0] + took[1]
        # back_ge[j]: at least j places come back next cycle (the promises
        # of this cycle not used, and the frees of the cycle before, as
        # their IDs come back a cycle later): chosen by the takes last
        frees = Signal(2, name="frees_was")
        m.d.sync += frees.eq(self.read_free + self.write_free)
        unused = due + ok + frees
        back_ge = _by_takes(m, "back", range(1, 5), self.read_take, self.write_take,
                            lambda j, t: unused >= j + t)
        spare = Signal(n, init=(1 << (n - 2)) - 1, name="spare_ge")
        free_ge = _shift(m, _flags(spare, n), back_ge, "free")
        one, two = free_ge(1), free_ge(2)
        # a side whose last promise went unused gives way to the other for
        # a last place; else they take turns
        idle = [Signal(name=f"{side}_idle") for side in ("read", "write")]
        for flag, promise, take in zip(idle, (due, ok), (self.read_take, self.write_take)):
            m.d.sync += flag.eq(promise)
            with m.If(take):
                m.d.sync += flag.eq(0)
        to_read = Mux(idle[0] ^ idle[1], idle[1], turn)
        m.d.sync += [
            # two or more free places make both promises, one makes one
            room.eq(two | (one & to_read)), ok.eq(two | (one & ~to_read)), due.eq(room),
            turn.eq(turn ^ (one & ~two)),
            spare.eq(Cat(*(free_ge(k + 2) for k in range(1, n + 1)))),
        ]
        m.d.comb += [self.room.eq(room), self.ok.eq(ok)]

        # devload: the places taken, two cycles late, moved by what the
        # cycle before took and gave back (change_ge[j]: by j or more).
        change_ge = _registered(m, "change", range(-1, 3), lambda j: takes >= j + frees,
                                init=lambda j: j <= 0)
        taken = Signal(n, name="taken_ge")
        taken_ge = _flags(taken, n)
        moved = _shift(m, taken_ge, change_ge, "moved")
        m.d.sync += taken.eq(Cat(*(moved(k) for k in range(1, n + 1))))
        at_least = [taken_ge(-(-n // 4)), taken_ge(-(-3 * n // 4)), taken_ge(n)]
        m.d.comb += self.devload.eq(Cat(at_least[0] ^ at_least[1] ^ at_least[2], at_least[1]))
        return m


def _flags(flags, size):
    """``ge(k)``: the unary count ``flags`` is at least ``k``."""
    def ge(k):
        return Const(int(k <= 0), 1) if k <= 0 or k > size else flags[k - 1]
    return ge


def _shift(m, ge, step_ge, name):
    """``ge`` of a count plus a step given in unary (``step_ge[j]``: the
    step is at least ``j``, for its values above the lowest): the count
    plus the step is at least ``k`` when, for some step ``j``, the step is
    at least ``j`` and the count at least ``k - j``.  For four values of
    ``step_ge``: two kept gates of two terms each, then one of them and
    the last term, so each flag is two gates of four inputs."""
    low = min(step_ge) - 1

    def shifted(k):
        # (the step's copies taken in turn)
        terms = [ge(k - low)] + [s[k % len(s)] & ge(k - j) for j, s in step_ge.items()]
        pairs = [boundary(m, terms[i] | terms[i + 1], f"{name}{k}_{i // 2}".replace("-", "m"))
                 for i in range(0, len(terms) - 1, 2)]
        return Cat(*pairs, *terms[2 * len(pairs):]).any()
    return shifted


def _by_takes(m, name, values, rt, wt, rule):
    """Registered flags ``rule(j, takes)`` for each ``j`` of ``values``,
    falling with ``takes``, how many of ``rt``, ``wt`` are high: chosen by
    the takes last, among the flag for one take and a gate of the flags
    for none and two (which of them the first says), each in its own
    statements (an unknown take keeps the choice for none).  Two copies
    each, as :func:`_registered`; all zero after reset."""
    flags = {}
    for j in values:
        v0, v1, v2 = (rule(j, t) for t in range(3))
        tag = f"{name}{j}"
        one = boundary(m, v1, f"{tag}_one")
        other = boundary(m, Mux(v1, v0 & v2, v0 | v2), f"{tag}_other")
        copies = [Signal(name=f"{tag}_ge"), Signal(name=f"{tag}_le", init=1)]
        for copy, inv in zip(copies, (0, 1)):
            def put(value):
                return copy.eq(~value if inv else value)
            m.d.sync += put(one | other)
            with m.Switch(Cat(rt, wt)):
                with m.Case(0b01, 0b10):
                    m.d.sync += put(one)
                with m.Case(0b11):
                    m.d.sync += put(one & other)
        flags[j] = [copies[0], ~copies[1]]
    return flags


def _registered(m, name, values, rule, init):
    """Registered flags ``rule(j)`` for each ``j`` of ``values``, each with
    two copies (one stored inverted, so synthesis keeps both) for its many
    readers; ``init``: their value after reset (a function of ``j``, or 0).
    Returns the list of copies for each ``j``."""
    flags = {}
    for j in values:
        value = int(init(j)) if callable(init) else init
        tag = f"{name}{j}".replace("-", "m")
        copies = [Signal(name=f"{tag}_ge", init=value), Signal(name=f"{tag}_le", init=1 - value)]
        m.d.sync += [copies[0].eq(rule(j)), copies[1].eq(~rule(j))]
        flags[j] = [copies[0], ~copies[1]]
    return flags
