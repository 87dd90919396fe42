"""The request pipeline's steps for a packed view (contract section 6.3): the
AR beat of a view read is a burst of ``B`` source lines from line ``j*B``
of the source window, so its address is ``SOURCE + ((addr - BASE) << log2
B)`` in line units, and its ARLEN ``B - 1``; a read that is no view keeps
its own address and ARLEN 0.

The address is formed in :data:`SOURCE_STEPS` registered steps beside the
pipeline, each a carry chain of half the address or a 2:1 choice: the
difference ``addr - BASE`` (low half with its borrow out, high half
without borrow in; then the borrow taken), shifted by ``log2 B`` (a choice by the
operand), the sum with SOURCE in two halves likewise, and the choice of
the view's address or the request's own.  (``B * LINE_BYTES`` is at most
2 KiB and SOURCE is 4 KiB-aligned, so the burst never crosses 4 KiB.)
"""

from amaranth import Cat, Const, Mux

from neuron_fabric.contract.facts import Operand, view_beats
from neuron_fabric.hdl.prims.pipe import register
from neuron_fabric.hdl.top.request_layout import ARLEN_BITS

__all__ = ["SOURCE_STEPS", "view_request_steps"]

#: Registered steps of :func:`view_request_steps`.
SOURCE_STEPS = 6


def view_request_steps(m, params, addr, base, source, view, operand):
    """From the request's line address ``addr`` and its region's ``base``,
    ``source`` (line addresses), ``view`` bit and CFG ``operand``, all of
    one pipeline stage: the AR beat's address and ARLEN,
    :data:`SOURCE_STEPS` stages later."""
    width = len(addr)
    half = width // 2
    counts = operand != Operand.SIGNS
    shifts = {False: view_beats(params.line_bits, params.workers, Operand.SIGNS),
              True: view_beats(params.line_bits, params.workers, Operand.COUNTS4)}
    shifts = {k: b.bit_length() - 1 for k, b in shifts.items()}
    # 1: addr - BASE, low half with its borrow out, high half without borrow
    # in (each one subtraction, one carry chain)
    low = register(m, "view_diff_lo", (addr[:half] - base[:half])[:half + 1])
    high = register(m, "view_diff_hi", (addr[half:] - base[half:])[:width - half])
    keep = register(m, "view_keep1", Cat(source, view, counts, addr))
    # 2: the borrow taken
    diff = register(m, "view_diff", Cat(low[:half], (high - low[half])[:width - half]))
    keep = register(m, "view_keep2", keep)
    source, view, counts, addr = (keep[:width], keep[width], keep[width + 1],
                                  keep[width + 2:])
    # 3: shifted by log2 B
    shifted = register(m, "view_shifted", Mux(counts, (diff << shifts[True])[:width],
                                              (diff << shifts[False])[:width]))
    keep = register(m, "view_keep3", Cat(source, view, counts, addr))
    source, view, counts, addr = (keep[:width], keep[width], keep[width + 1],
                                  keep[width + 2:])
    # 4, 5: + SOURCE in two halves
    low = register(m, "view_sum_lo", (shifted[:half] + source[:half])[:half + 1])
    high = register(m, "view_sum_hi", (shifted[half:] + source[half:])[:width - half])
    keep = register(m, "view_keep4", Cat(view, counts, addr))
    total = register(m, "view_sum", Cat(low[:half], (high + low[half])[:width - half]))
    keep = register(m, "view_keep5", keep)
    view, counts, addr = keep[0], keep[1], keep[2:]
    # 6: the view's address and ARLEN, or the request's own and 0
    length = Mux(counts, _arlen(shifts[True]), _arlen(shifts[False]))
    out_addr = register(m, "view_ar_addr", Mux(view, total, addr))
    out_len = register(m, "view_ar_len", Mux(view, length, 0))
    return out_addr, out_len


def _arlen(shift):
    """ARLEN of a burst of ``2^shift`` beats."""
    return Const((1 << shift) - 1, ARLEN_BITS)
