"""The packed result view (contract section 6): a view line holds the results
of ``LINE_BITS / 2`` elements, 2 bits each (+1 ``01``, 0 ``00``, -1 ``11``),
gathered from the ``B`` source lines that hold them (:func:`.facts.view_beats`:
W / 2 for the SIGNS operand, 16 for a count operand).

:func:`pack_view` is the executable form of section 6.2: it reads each
source line through the SIGN format of sections 2 and 5 (:func:`transform`,
:func:`transform_counts`) and keeps the low two bits of each output lane.
:func:`unpack_view` turns view lines back into results, and :func:`view_code`
is the encoding of one result.
"""

import numpy as np

from neuron_fabric.contract.facts import (COUNT_LANE_BITS, Format, GateKind, Layout, Mode, Operand,
                                          view_beats)
from neuron_fabric.host.golden.checks import check_lines
from neuron_fabric.host.golden.counts import transform_counts
from neuron_fabric.host.golden.gate import line_phase
from neuron_fabric.host.golden.swar import transform

__all__ = ["pack_view", "unpack_view", "view_code", "RESULT_BITS"]

#: Bits of one element's result in a view line.
RESULT_BITS = 2


def view_code(result):
    """The 2-bit code of a result -1, 0 or +1 (two's complement: 0b11, 0b00, 0b01)."""
    if result not in (-1, 0, 1):
        raise ValueError(f"a view result is -1, 0 or +1, not {result!r}")
    return result & 0b11


def pack_view(source, workers, mode, gate_kind=GateKind.PATTERN, period=3, keep=2, threshold=0,
              index=0, *, layout=Layout.ELEMENT_MAJOR, operand=Operand.SIGNS, total=0):
    """The view lines of ``source`` under one region's configuration.

    Parameters
    ----------
    source : ndarray of uint8, shape (L * B, LINE_BYTES)
        The source lines of ``L`` consecutive view lines, ``B`` (``view_beats``)
        each, in ``layout`` and ``operand``'s geometry.
    mode : Mode
        G-Binary or G-Ternary (a view has no other mode, contract section 6.4).
    index : int
        ``j``, the line index of the first view line in its region: its source
        lines are lines ``j*B ..`` of the source window, whose PATTERN phase
        is ``(k * E') mod P`` for source line ``k``.
    total : int
        With a count operand, the contributions the counts sum over.

    Returns
    -------
    ndarray of uint8, shape (L, LINE_BYTES)
        Element ``t`` of view line ``l`` at bits ``[2t, 2t+2)``.
    """
    source = check_lines(source)
    if mode not in (Mode.GBINARY, Mode.GTERNARY):
        raise ValueError(f"a packed view needs mode G-Binary or G-Ternary, not {mode!r}")
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
        raise ValueError(f"index must be a line index >= 0, not {index!r}")
    line_bits = source.shape[1] * 8
    beats = view_beats(line_bits, workers, operand)
    if source.shape[0] % beats:
        raise ValueError(f"a view line takes {beats} source lines; {source.shape[0]} "
                         f"is no multiple of it")
    counts = operand != Operand.SIGNS
    lane_bits = COUNT_LANE_BITS if counts else workers
    first = index * beats
    phase = line_phase(np.arange(first, first + source.shape[0]), line_bits // lane_bits,
                       period)
    gate = dict(period=period, keep=keep, threshold=threshold, phase=phase, layout=layout)
    if counts:
        signs = transform_counts(source, operand, total, mode, Format.SIGN, gate_kind, **gate)
    else:
        signs = transform(source, workers, mode, Format.SIGN, gate_kind, **gate)
    bits = np.unpackbits(signs, axis=1, bitorder="little")
    low = bits.reshape(len(signs), -1, lane_bits)[:, :, :RESULT_BITS]
    return np.packbits(low.reshape(-1, line_bits), axis=1, bitorder="little")


def unpack_view(lines, n=None):
    """The results (int8, -1/0/+1) of view ``lines``, ``LINE_BITS / 2`` a line,
    flat; the first ``n`` when given."""
    lines = check_lines(lines)
    codes = np.empty((lines.shape[0], lines.shape[1] * 4), dtype=np.int8)
    for k in range(4):
        codes[:, k::4] = (lines >> np.uint8(2 * k)) & 0b11
    flat = np.where(codes >= 2, codes - 4, codes).astype(np.int8).reshape(-1)
    return flat if n is None else flat[:n]
