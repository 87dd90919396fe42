"""Arithmetic pieces of the count-sum unit's steps (``hdl/count_steps.py``),
each a small function of a few register outputs or one carry chain.

The gate (contract section 5.3) is two compares of the margin a = 2c - T
with a threshold Th' on each side, made the sign bits of two carry chains:
``g1`` = a >= Th' and ``g2`` = a <= -Th'.  Each lane takes one of four
*limit codes*:

==========  =========================================================
``TH``      Th' = T: the MARGIN gate
``ONE``     Th' = 1: the SIGN format, kept by G-Binary or the PATTERN
            mask (so +1, -1 or 0 by the sign of a), or under the MARGIN
            gate with T = 0
``NEVER``   neither side: the lane is gated (or the line is no count line)
``ALWAYS``  g2 always: the lane is kept (COUNT and MARGIN formats)
==========  =========================================================

so that the lane is kept iff ``g1 | g2``, and in the SIGN format reads +1
for ``g1`` alone and -1 for ``g2``.  The code is the line's *class* and
the lane's keep bit (G-Binary, or its PATTERN mask bit):

==============  ==================================  ================
class           lines                               code
==============  ==================================  ================
``ALL_TH``      MARGIN gate (not SIGN with T = 0)   TH
``ALL_ONE``     MARGIN gate, SIGN, T = 0            ONE
``KEEP_ONE``    no MARGIN gate, SIGN                keep ? ONE : NEVER
``KEEP_ALWAYS`` no MARGIN gate, COUNT or MARGIN     keep ? ALWAYS : NEVER
==============  ==================================  ================

(a lane of a line that is no transformed count line has keep 0 and a
class that reads NEVER then).
"""

from amaranth import Cat, Const

__all__ = ["ARITH_BITS", "COUNT_BITS", "MARGIN_BITS", "fit", "add_carry", "sub_borrow",
           "carry_save", "limit_constants", "limit_class", "line_limits", "lane_limits"]

#: Width of the carry-save sums and their chains: 2c - T - Th' and
#: 2c - T + Th' - 1 lie in -1054 .. 2070 (c <= 1020, T <= 1023, Th' <= 31).
ARITH_BITS = 13
#: c <= 1020; a = 2c - T in -1023 .. 2040, 12-bit two's complement.
COUNT_BITS = 10
MARGIN_BITS = 12

#: Limit codes, and line classes.
TH, ONE, NEVER, ALWAYS = range(4)
ALL_TH, ALL_ONE, KEEP_ONE, KEEP_ALWAYS = range(4)


def fit(value, width):
    """``value`` (an arithmetic result) cut or extended, by its sign, to
    ``width`` bits."""
    if len(value) >= width:
        return value[:width]
    top = value[-1] if value.shape().signed else Const(0)
    return Cat(value, top.replicate(width - len(value)))


def add_carry(x, y, carry, width):
    """The low ``width`` bits of ``x + y + carry`` as one carry chain: the
    carry (1 bit) enters below both operands' lowest bits."""
    return fit(Cat(carry, x) + Cat(carry, y), width + 1)[1:]


def sub_borrow(x, y, width):
    """The low ``width`` bits of ``x - y - 1`` (``x + ~y``) as one carry chain."""
    return fit(Cat(Const(0, 1), x) - Cat(Const(1, 1), y), width + 1)[1:]


def carry_save(x, y, k):
    """``(s, c)`` with ``x + y + k == s + 2c`` (mod 2**len(k)): a full adder a
    bit, each output bit a function of three."""
    n = len(k)

    def bit(v, j):
        return v[j] if 0 <= j < len(v) else Const(0)

    s = Cat(*(bit(x, j) ^ bit(y, j) ^ k[j] for j in range(n)))
    c = Cat(*((bit(x, j) & bit(y, j)) | (bit(x, j) & k[j]) | (bit(y, j) & k[j])
              for j in range(n)))
    return s, c


def limit_constants(total, threshold):
    """The per-line sums the lanes' limits are chosen from, each one carry
    chain of the CFG fields: T + Th, T + 1 (the positive side, complemented
    when used), Th - T - 1 and -T (the negative side), ARITH_BITS each."""
    n = ARITH_BITS
    return Cat(fit(total + threshold, n), fit(total + 1, n), sub_borrow(threshold, total, n),
               fit(Const(0, n) - total, n))


def limit_class(margin_on, is_sign, th_zero):
    """The line's class (2 bits, see the module's table)."""
    one = is_sign & th_zero
    return Cat(_choose(margin_on, one, ~is_sign), ~margin_on)


def _choose(sel, a, b):
    """``a`` if ``sel`` else ``b``, as AND/OR logic."""
    return (sel & a) | (~sel & b)


def line_limits(limits, cls):
    """The line's candidate constants, for a lane whose keep bit is 0 and for
    one whose keep bit is 1: ``Cat(kh0, kh1, kl0, kl1)``, where ``2c + kh + 1``
    is negative unless a >= Th' and ``2c + kl`` is negative iff a <= -Th'.
    Each bit a function of four: the class's two bits and two candidates."""
    n = ARITH_BITS
    s_th, s_one, d_th, d_one = (limits[i * n:(i + 1) * n] for i in range(4))
    never_h = Const((1 << (n - 1)) - 1, n)      # 2c + 2**(n-1): always negative
    always_l = Const(1 << (n - 1), n)           # 2c - 2**(n-1): always negative
    low, high = cls[0], cls[1]

    def pick(th, one, never, always, keep):
        # ALL_TH 0, ALL_ONE 1, KEEP_ONE 2, KEEP_ALWAYS 3
        kept = [_choose(low, always[j], one[j]) if keep else never[j] for j in range(n)]
        return Cat(*(_choose(high, kept[j], _choose(low, one[j], th[j])) for j in range(n)))

    h = [pick(~s_th, ~s_one, never_h, never_h, keep) for keep in (0, 1)]
    low_side = [pick(d_th, d_one, Const(0, n), always_l, keep) for keep in (0, 1)]
    return Cat(*h, *low_side)


def lane_limits(candidates, keep):
    """The lane's ``(kh, kl)`` from the line's candidates
    (:func:`line_limits`) by its keep bit: each bit a function of three."""
    n = ARITH_BITS
    kh0, kh1, kl0, kl1 = (candidates[i * n:(i + 1) * n] for i in range(4))
    return (Cat(*(_choose(keep, kh1[j], kh0[j]) for j in range(n))),
            Cat(*(_choose(keep, kl1[j], kl0[j]) for j in range(n))))
