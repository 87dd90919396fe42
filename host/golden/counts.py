"""Count operands and wide votes (contract section 5): the vectorised read of
partial-count lines, and the contract's formulas over any number of workers
with 32-bit output lanes."""

import functools

import numpy as np

from neuron_fabric.contract.facts import Format, GateKind, Layout, Mode, LINE_BITS_CHOICES
from neuron_fabric.host.golden.checks import (CHUNK_LINES, check_fields, check_lines,
                                              check_mask, check_count_config)
from neuron_fabric.host.golden.encodings import count_lanes, count_matrix
from neuron_fabric.host.golden.gate import chunk_mask, pattern_kept

def _count_outputs(counts, total, mode, fmt, gate_kind, threshold, kept):
    """Output lanes (``<i4``) of sign counts ``counts`` out of ``total`` votes;
    ``kept`` is the PATTERN gate (bool, broadcastable to ``counts``)."""
    c = counts.astype(np.int32)
    a = 2 * c - total
    if mode == Mode.GTERNARY:
        if gate_kind == GateKind.MARGIN:
            kept = np.abs(a) >= threshold
        c = np.where(kept, c, total // 2)
        a = np.where(kept, a, 0)
    value = c if fmt == Format.COUNT else a if fmt == Format.MARGIN else np.sign(a)
    return value.astype("<i4")


def transform_counts(lines, operand, total, mode, fmt=Format.COUNT, gate_kind=GateKind.PATTERN,
                     period=3, keep=2, threshold=0, phase=0, *, gate_mask=None,
                     layout=Layout.ELEMENT_MAJOR):
    """Return the read responses for count-operand ``lines`` (contract section 5).

    Parameters
    ----------
    lines : ndarray of uint8, shape (L, LINE_BYTES)
        Partial counts in ``operand``'s geometry and ``layout``.
    total : int
        The number of contributions the counts sum over, 1 .. N * (2**b - 1).
    phase, gate_mask
        As for :func:`transform`, with E_c = LINE_BITS / 32 lanes a line (a
        region's line ``l`` has phase ``(l * E_c) mod P``, :func:`line_phase`).

    Returns
    -------
    ndarray of uint8, shape (L, LINE_BYTES)
        BYPASS and IDENTITY: a copy of ``lines``.  G-Binary and G-Ternary:
        element ``j``'s 32-bit output lane at bits ``[32j, 32j + 32)`` (COUNT
        ``c'`` unsigned, MARGIN ``a'`` and SIGN ``sgn(a')`` two's complement).
    """
    lines = check_lines(lines)
    check_count_config(operand, total, mode, fmt, gate_kind, period, keep, threshold, layout)
    n_lines, lanes = lines.shape[0], count_lanes(lines.shape[1] * 8)
    kept = None
    if mode == Mode.GTERNARY and gate_kind == GateKind.PATTERN:
        kept = pattern_kept(gate_mask, phase, period, keep, n_lines, lanes)
    elif gate_mask is not None:
        check_mask(gate_mask, n_lines, lanes)
    if mode in (Mode.BYPASS, Mode.IDENTITY):
        return lines.copy()
    out = np.empty((n_lines, lanes), dtype="<i4")
    for start in range(0, n_lines, CHUNK_LINES):
        sl = slice(start, start + CHUNK_LINES)
        matrix = count_matrix(lines[sl], operand, layout)
        c = functools.reduce(np.add, matrix.transpose(1, 0, 2), np.zeros(matrix.shape[::2], np.int16))
        out[sl] = _count_outputs(c, total, mode, fmt, gate_kind, threshold,
                                 None if kept is None else chunk_mask(kept, sl))
    return out.view(np.uint8).reshape(lines.shape)


def transform_wide(signs, mode, fmt=Format.COUNT, gate_kind=GateKind.PATTERN, period=3, keep=2,
                   threshold=0, phase=0, *, gate_mask=None, line_bits=512):
    """The contract's G-Binary / G-Ternary formulas over any number of workers,
    with 32-bit output lanes (contract section 5): what a hierarchy of
    controllers must return for the same signs.

    Parameters
    ----------
    signs : ndarray of bool, shape (n_workers, n)
        Worker ``k``'s sign of element ``i`` (True = positive).  ``c`` is the
        number of True in a column, ``a = 2c - n_workers``.
    mode : Mode
        GBINARY or GTERNARY (BYPASS and IDENTITY return stored bytes, which a
        sign matrix does not have).
    threshold : int
        ``T`` of the MARGIN gate, 0 .. n_workers.
    phase, gate_mask
        As for :func:`transform_counts`: one value (or mask) per line of
        E_c = line_bits / 32 elements.

    Returns
    -------
    ndarray of uint8, shape (ceil(n / E_c), line_bits / 8)
        Element ``i``'s output lane at bits ``[32i, 32i + 32)`` of the flat
        buffer; elements past ``n`` in the last line count no positive vote.
    """
    signs = np.asarray(signs)
    if signs.dtype != np.bool_ or signs.ndim != 2 or signs.shape[0] < 1:
        raise ValueError(f"signs must be a bool array of shape (n_workers >= 1, n), "
                         f"not {signs.dtype} of shape {signs.shape}")
    if mode not in (Mode.GBINARY, Mode.GTERNARY):
        raise ValueError(f"mode must be GBINARY (2) or GTERNARY (3), not {mode!r}")
    workers, n = signs.shape
    check_fields(mode, fmt, gate_kind, period, keep)
    if not 0 <= threshold <= workers:
        raise ValueError(f"gate threshold T must be in 0..{workers}, not {threshold!r}")
    if line_bits not in LINE_BITS_CHOICES:
        raise ValueError(f"line_bits must be one of {LINE_BITS_CHOICES}, not {line_bits!r}")
    lanes = count_lanes(line_bits)
    n_lines = -(-n // lanes)
    kept = None
    if mode == Mode.GTERNARY and gate_kind == GateKind.PATTERN:
        kept = pattern_kept(gate_mask, phase, period, keep, n_lines, lanes)
    counts = np.zeros(n_lines * lanes, dtype=np.int32)
    counts[:n] = signs.sum(axis=0, dtype=np.int32)
    out = _count_outputs(counts.reshape(n_lines, lanes), workers, mode, fmt, gate_kind,
                         threshold, kept)
    return out.view(np.uint8).reshape(n_lines, line_bits // 8)
