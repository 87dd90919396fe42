"""Small counts kept in unary: one register per value k, "the count is at
least k".  Each flag of the next cycle is a choice among three flags (at
k - 1, k and k + 1) by the count's two events, so an event that comes late
in the cycle meets the flags only in their last gate, and no flag needs a
carry chain or a compare."""

from amaranth import Const, Signal

__all__ = ["flag", "unary_count"]


def flag(up, down, below, here, above):
    """The flag "at least k" of the next cycle, from the flags at k - 1, k
    and k + 1, when the count goes ``up`` and/or ``down`` by one.  (Written
    as gates, not as a choice that keeps ``here``, which synthesis would
    turn into a clock enable formed by the events.)"""
    return (up & ~down & below) | (down & ~up & above) | (~(up ^ down) & here)


def unary_count(m, name, up, down, most):
    """A count from 0 (after reset) to ``most`` that rises by ``up`` and falls
    by ``down`` (1-bit values; it never goes below 0 or above ``most``).

    Returns ``(at_least, next_at_least)``: functions of ``k``, the register
    "the count is at least k" and its value of the next cycle (each a
    constant for ``k <= 0`` and ``k > most``)."""
    flags = Signal(most, name=name)

    def at_least(k):
        return Const(int(k <= 0)) if k <= 0 or k > most else flags[k - 1]

    def next_at_least(k):
        if k <= 0 or k > most:
            return at_least(k)
        return flag(up, down, at_least(k - 1), at_least(k), at_least(k + 1))

    m.d.sync += [flags[k - 1].eq(next_at_least(k)) for k in range(1, most + 1)]
    return at_least, next_at_least
