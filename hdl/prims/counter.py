"""64-bit event counters kept as short digits with registered carries, and
the pipeline that turns a captured counter state into its value.

Every register of both is a function of at most four register bits, so each
is one LUT4 packed with its flip-flop: synthesis can make no wide LUT (which
reaches a flip-flop only through routing) and no carry chain (a routed hop
into it and one out of it) of them.

A counter is 3-bit digits, each with the carry out of its last addition,
which the next digit adds one cycle later (a 3-bit digit plus a carry bit:
each output bit is a function of four).  The lowest digit takes up to seven
events a cycle, so it is kept in carry-save form: a sum ``S`` and a carry
word ``C``, each event count added bit by bit as full adders.  Such a state
is one exact value: ``S + C``, each other digit at its place and each carry
at the place above its digit (the top digit's carry wraps, as a 64-bit
counter does), so a state captured in any cycle is one consistent count.

:class:`CarryResolve` turns a state into the plain binary value by carry
look-ahead: one step adds each pending carry into its digit (giving each
digit's generate and propagate), then a Kogge-Stone prefix of those over
the digits, one level per step, then the carries into the digits.
"""

from amaranth import Cat, Const, Module, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.hdl.prims.gather import and_all

__all__ = ["DIGITS", "CounterState", "DigitCounter", "CarryResolve", "digit_ends", "add_gates"]

#: Digit widths of a 64-bit counter, lowest first (the lowest in carry-save form).
DIGITS = (3,) * 21 + (1,)


def CounterState(digits):
    """The lowest digit's sum and carry word, the other digits (concatenated,
    lowest first), and one pending carry per digit (into the digit above)."""
    return data.StructLayout({"sum": digits[0], "carry_word": digits[0],
                              "digits": sum(digits[1:]), "carries": len(digits)})


def digit_ends(digits):
    """The bit above each digit: digit ``i`` is bits ``[ends[i-1], ends[i])``."""
    ends, end = [], 0
    for width in digits:
        end += width
        ends.append(end)
    return ends


def _split(value, widths):
    starts = [0] + digit_ends(widths)[:-1]
    return [value[s:s + w] for s, w in zip(starts, widths)]


def _increment(digit, carry):
    """``digit + carry`` (a bit), and its carry out, as gates."""
    out, run = [], carry
    for bit in digit:
        out.append(bit ^ run)
        run = run & bit
    return Cat(*out), run


def add_gates(a, b):
    """``a + b`` (``b`` no wider than ``a``) and its carry out, as gates (for
    the lowest digit, ``b`` the carry word, whose bit 0 is zero: no output
    bit depends on more than four of their bits)."""
    b = Cat(b, Const(0, max(0, len(a) - len(Value.cast(b)))))
    out, carry = [], Const(0, 1)
    for ai, bi in zip(a, b):
        out.append(ai ^ bi ^ carry)
        carry = (ai & bi) | (carry & (ai ^ bi))
    return Cat(*out), carry


def _carry_save(s, c, inc):
    """``s + c + inc`` (``c`` bit 0 is zero) as a sum, a carry word and a
    carry out of the top bit: a full adder per bit."""
    inc = Cat(inc, Const(0, max(0, len(s) - len(inc))))
    total = [s[i] ^ c[i] ^ inc[i] for i in range(len(s))]
    carry = [(s[i] & c[i]) | (s[i] & inc[i]) | (c[i] & inc[i]) for i in range(len(s))]
    return Cat(*total), Cat(Const(0, 1), *carry[:-1]), carry[-1]


class DigitCounter(wiring.Component):
    """Counter of events, up to seven per cycle.

    The lowest digit adds the increment in carry-save form; each other
    digit adds the carry its lower neighbour produced the cycle before.

    Parameters
    ----------
    digits : tuple of int
        Digit widths, lowest first (:data:`DIGITS`; smaller in tests), each
        at most 3, the lowest at least 3 (it takes up to seven a cycle).
    name : str
        Prefix of its registers' names.

    Members
    -------
    inc : In(3)
        Events this cycle.
    state : Out(CounterState(digits))
        The digits and pending carries (registers).
    """

    def __init__(self, *, digits=DIGITS, name=None):
        if digits[0] < 3 or max(digits) > 3:
            raise ValueError(f"digits {digits!r}: the lowest must be 3 bits, the others at most 3")
        name = name or "counter"
        self._digits = tuple(digits)
        super().__init__({"inc": In(3), "state": Out(CounterState(self._digits))})
        #: The registers: the lowest digit's sum and carry word, the other
        #: digits, and each digit's carry out.
        self.low = [Signal(self._digits[0], name=f"{name}_{n}") for n in ("sum", "carry_word")]
        self.digit_regs = [Signal(w, name=f"{name}_d{i}")
                           for i, w in enumerate(self._digits) if i]
        self.carry_regs = [Signal(name=f"{name}_c{i}") for i in range(len(self._digits))]

    def elaborate(self, platform):
        m = Module()
        st, low, regs, carries = self.state, self.low, self.digit_regs, self.carry_regs
        total, word, out = _carry_save(*low, self.inc)
        m.d.sync += [low[0].eq(total), low[1].eq(word), carries[0].eq(out)]
        for reg, c_in, c_out in zip(regs, carries, carries[1:]):
            value, carry = _increment(reg, c_in)
            m.d.sync += [reg.eq(value), c_out.eq(carry)]
        m.d.comb += [st.sum.eq(low[0]), st.carry_word.eq(low[1]), st.digits.eq(Cat(regs)),
                     st.carries.eq(Cat(carries))]
        return m


class CarryResolve(wiring.Component):
    """Pipeline from a counter state to its value, by carry look-ahead.

    Step 1 adds each pending carry into the digit above it and the lowest
    digit's carry word into its sum, giving each digit ``x``, its carry out
    ``g`` and whether it is all ones ``p``; steps ``2..`` are the levels of
    a Kogge-Stone prefix of ``(g, p)``; the last adds the carry into each
    digit.  Runs every cycle (no valid): the caller knows when its state
    went in.

    Parameters
    ----------
    digits : tuple of int
        As :class:`DigitCounter`.

    Members
    -------
    state : In(CounterState(digits))
    value : Out(sum(digits))
        The value of the state presented :attr:`steps` cycles earlier.
    low : Out(sum(digits))
        The value of the state presented :attr:`low_steps` cycles earlier,
        final in its low ``low_bits`` bits.
    """

    def __init__(self, *, digits=DIGITS, low_bits=32):
        self._digits = tuple(digits)
        ends = digit_ends(self._digits)
        # the carry into the digit holding bit low_bits - 1 covers that many
        self._low_digits = next(i for i, e in enumerate(ends) if e >= low_bits)
        super().__init__({"state": In(CounterState(self._digits)),
                          "value": Out(sum(self._digits)), "low": Out(sum(self._digits))})

    @staticmethod
    def _levels(span):
        """Prefix levels for carries out of ``span`` digits."""
        return max(0, (span - 1).bit_length())

    @property
    def steps(self):
        """Cycles from a state to its value."""
        return 2 + self._levels(len(self._digits) - 1)

    @property
    def low_steps(self):
        """Cycles from a state to its low bits (see ``low_bits``)."""
        return 2 + self._levels(self._low_digits)

    def elaborate(self, platform):
        m = Module()
        st, n = self.state, len(self._digits)
        digits = [st.sum] + _split(st.digits, self._digits[1:])
        carries = [st.carries[i] for i in range(n)]
        # step 1: x, g (carry out of the digit) and p (x all ones) per digit
        x = [Signal(w, name=f"x{i}", reset_less=True) for i, w in enumerate(self._digits)]
        g = [Signal(name=f"g{i}", reset_less=True) for i in range(n)]
        p = [Signal(name=f"p{i}", reset_less=True) for i in range(n)]
        value, carry = add_gates(st.sum, st.carry_word)
        m.d.sync += [x[0].eq(value), g[0].eq(carry)]
        for i in range(1, n):
            value, carry = _increment(digits[i], carries[i - 1])
            m.d.sync += [x[i].eq(value), g[i].eq(carry), p[i].eq(and_all(value))]
        # prefix levels: after level l, g[i] is the carry out of digit i over
        # digits i - 2^l + 1 .. i
        stages = [(x, g)]
        for level in range(self._levels(n - 1)):
            span = 1 << level
            xq = [Signal(len(v), name=f"l{level}_x{i}", reset_less=True) for i, v in enumerate(x)]
            gq = [Signal(name=f"l{level}_g{i}", reset_less=True) for i in range(n)]
            pq = [Signal(name=f"l{level}_p{i}", reset_less=True) for i in range(n)]
            m.d.sync += [a.eq(b) for a, b in zip(xq, x)]
            for i in range(n):
                lower = i - span >= 0
                m.d.sync += [gq[i].eq(g[i] | (p[i] & g[i - span]) if lower else g[i]),
                             pq[i].eq(p[i] & p[i - span] if lower else p[i])]
            x, g, p = xq, gq, pq
            stages.append((x, g))
        m.d.sync += self.value.eq(_add_carries(*stages[-1]))
        m.d.sync += self.low.eq(_add_carries(*stages[self._levels(self._low_digits)]))
        return m


def _add_carries(x, g):
    """Each digit of ``x`` plus the carry out of the digits below it."""
    return Cat(x[0], *(_increment(d, c)[0] for d, c in zip(x[1:], g)))
