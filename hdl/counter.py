"""A 64-bit event counter as two 32-bit halves with a registered carry, so
that no carry chain is longer than 32 bits."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SplitCounter"]


class SplitCounter(wiring.Component):
    """Counter of events, up to seven per cycle.

    The low half takes the increment; its carry out reaches the high half
    one cycle later.  ``hi_now`` is the high half with that carry added, so
    ``(hi_now, lo)`` read in the same cycle is always one consistent value.

    Parameters
    ----------
    name : str
        Prefix of its registers' names.
    half : int
        Width of each half (32; smaller in tests).

    Members
    -------
    inc : In(3)
        Events this cycle.
    lo : Out(32)
        Bits [31:0].
    hi_now : Out(32)
        Bits [63:32] of the value whose low bits are ``lo``.
    """

    def __init__(self, *, name=None, half=32):
        self._name = name or "counter"
        self._half = half
        super().__init__({"inc": In(3), "lo": Out(half), "hi_now": Out(half)})

    def elaborate(self, platform):
        m = Module()
        n = self._half
        lo = Signal(n + 1, name=f"{self._name}_lo")
        hi = Signal(n, name=f"{self._name}_hi")
        # lo[n] is the carry of the last addition, not yet in ``hi``.
        m.d.sync += [lo.eq(lo[:n] + self.inc), hi.eq(hi + lo[n])]
        m.d.comb += [self.lo.eq(lo[:n]), self.hi_now.eq(hi + lo[n])]
        return m
