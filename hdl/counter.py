"""64-bit event counters kept as short digits with registered carries, and
the pipeline that turns a captured counter state into its value.

No carry chain in either is longer than one digit (16 bits): a counter's
state is its digits and, per digit, the carry out of its last addition,
which the next digit takes one cycle later.  Such a state is one exact
value, ``sum(digit[i] << 16 i) + sum(carry[i] << 16 (i + 1))`` (the top
digit's carry wraps, as a 64-bit counter does), so a state captured in any
cycle is one consistent count; :class:`CarryResolve` turns it into the
plain binary value a digit per cycle.
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["CounterState", "DigitCounter", "CarryResolve"]


def CounterState(width, digit):
    """Digits of ``digit`` bits and their pending carries, lowest first."""
    if width % digit:
        raise ValueError(f"counter width {width} is not a multiple of the digit width {digit}")
    return data.ArrayLayout(data.StructLayout({"digit": digit, "carry": 1}), width // digit)


def _step(digits, carry_in):
    """One addition per digit: ``(digit + carry_in[i])``, value and carry out."""
    return [d + c for d, c in zip(digits, carry_in)]


class DigitCounter(wiring.Component):
    """Counter of events, up to seven per cycle.

    Digit 0 takes the increment; each other digit adds the carry its lower
    neighbour produced the cycle before.

    Parameters
    ----------
    width : int
        Counter width (64; smaller in tests).
    digit : int
        Width of each digit (16).
    name : str
        Prefix of its registers' names.

    Members
    -------
    inc : In(3)
        Events this cycle.
    state : Out(CounterState(width, digit))
        Digits and pending carries (registers).
    """

    def __init__(self, *, width=64, digit=16, name=None):
        self._name = name or "counter"
        super().__init__({"inc": In(3), "state": Out(CounterState(width, digit))})

    def elaborate(self, platform):
        m = Module()
        state = self.state
        n = len(state)
        regs = [Signal(len(state[0].digit) + 1, name=f"{self._name}_d{i}") for i in range(n)]
        adds = _step([r[:-1] for r in regs], [self.inc] + [r[-1] for r in regs[:-1]])
        m.d.sync += [r.eq(a) for r, a in zip(regs, adds)]
        m.d.comb += [state[i].eq(Cat(r[:-1], r[-1])) for i, r in enumerate(regs)]
        return m


class CarryResolve(wiring.Component):
    """Pipeline from a counter state to its value, one digit settled per cycle.

    Step ``k`` adds each pending carry into the digit above it; after step
    ``k`` digits ``0..k`` hold their final value, so the value of the state
    presented ``k`` cycles earlier is complete in its low ``(k + 1) * digit``
    bits.  Runs every cycle (no valid): the caller knows when its state went in.

    Parameters
    ----------
    width, digit : int
        As :class:`DigitCounter`.

    Members
    -------
    state : In(CounterState(width, digit))
    settled : Out(ArrayLayout(width, steps + 1))
        ``settled[k]``: after ``k`` steps (``k`` cycles after ``state``);
        its low ``(k + 1) * digit`` bits are final.  ``settled[steps]`` is the
        value.
    """

    def __init__(self, *, width=64, digit=16):
        self._digits = width // digit
        super().__init__({"state": In(CounterState(width, digit)),
                          "settled": Out(data.ArrayLayout(width, self.steps + 1))})

    @property
    def steps(self):
        """Cycles from a state to its full value."""
        return self._digits - 1

    def elaborate(self, platform):
        m = Module()
        n = self._digits
        width = len(self.state[0].digit)
        cur = [Cat(self.state[i].digit, self.state[i].carry) for i in range(n)]
        m.d.comb += self.settled[0].eq(Cat(c[:width] for c in cur))
        for k in range(1, n):
            nxt = [Signal(width + 1, name=f"step{k}_d{i}", reset_less=True) for i in range(n)]
            # digits below k are final already: carries into them are zero
            m.d.sync += [nxt[i].eq(cur[i][:width]) for i in range(k)]
            m.d.sync += [q.eq(a) for q, a in zip(nxt[k:], _step([c[:width] for c in cur[k:]],
                                                                [c[-1] for c in cur[k - 1:-1]]))]
            m.d.comb += self.settled[k].eq(Cat(c[:width] for c in nxt))
            cur = nxt
        return m
