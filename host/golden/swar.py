"""Many sign lines at once: the vectorised read transform, W-bit lanes packed
in ``uint64`` words (SWAR) with lookup tables for the gate masks."""

import functools

import numpy as np

from neuron_fabric.contract.facts import Format, GateKind, Layout, Mode
from neuron_fabric.host.golden.checks import (CHUNK_LINES, check_layout, check_lines,
                                              check_mask, check_phase, check_config)
from neuron_fabric.host.golden.gate import gate_pattern
from neuron_fabric.host.golden.layout import to_element_major

class _Lanes:
    """SWAR constants for W-bit lanes packed in ``uint64`` words."""

    def __init__(self, workers):
        self.w = workers
        per_word = 64 // workers
        self.ones = np.uint64(sum(1 << (i * workers) for i in range(per_word)))
        self.high = np.uint64(int(self.ones) << (workers - 1))
        self.full = np.uint64((1 << 64) - 1)

    def splat(self, value):
        """``value`` in every lane of a word."""
        return np.uint64((value % (1 << self.w)) * int(self.ones))

    def popcount(self, x):
        """Per-lane population count."""
        x = x - ((x >> np.uint64(1)) & self.splat(0x5555))
        x = (x & self.splat(0x3333)) + ((x >> np.uint64(2)) & self.splat(0x3333))
        if self.w >= 8:
            x = (x + (x >> np.uint64(4))) & self.splat(0x0F0F)
        if self.w >= 16:
            x = (x + (x >> np.uint64(8))) & self.splat(0x00FF)
        return x

    def at_least(self, c, h):
        """Lane mask (all W bits set) where count ``c >= h``; 0 <= c, h <= W + 1."""
        bit = ((c + self.splat((1 << (self.w - 1)) - h)) & self.high) >> np.uint64(self.w - 1)
        return (bit << np.uint64(self.w)) - bit

    def add(self, x, y):
        """Per-lane addition modulo 2**W (no carry between lanes)."""
        low = ~self.high
        return ((x & low) + (y & low)) ^ ((x ^ y) & self.high)


def _kept_values(lanes, c, fmt):
    """Output lanes for counts ``c`` when the gate keeps them."""
    w = lanes.w
    if fmt == Format.COUNT:
        return c
    if fmt == Format.MARGIN:
        return lanes.add(c + c, lanes.splat(-w))
    positive = lanes.at_least(c, w // 2 + 1)
    negative = ~lanes.at_least(c, w // 2)
    return (positive & lanes.splat(1)) | negative


def _gated_value(workers, fmt):
    return workers // 2 if fmt == Format.COUNT else 0


@functools.cache
def _lane_bytes(workers):
    """For each byte of eight lane-keep bits, the W bytes of those eight
    lanes with all W bits of a kept lane set: shape (256, W)."""
    bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")
    return np.packbits(np.repeat(bits, workers, axis=1), axis=1, bitorder="little")


def _mask_words(mask, workers):
    """Lane-keep masks (bool, last axis one entry per lane) as ``uint64`` words
    with all W bits of a kept lane set (eight lanes per table lookup)."""
    lanes = mask.shape[-1]
    packed = np.packbits(mask, axis=-1, bitorder="little")
    spread = _lane_bytes(workers)[packed].reshape(*mask.shape[:-1], -1)
    return np.ascontiguousarray(spread[..., :lanes * workers // 8]).view("<u8")


def transform(lines, workers, mode, fmt=Format.COUNT, gate_kind=GateKind.PATTERN,
              period=3, keep=2, threshold=0, phase=0, *, gate_mask=None,
              layout=Layout.ELEMENT_MAJOR):
    """Return the read responses for ``lines`` under one configuration.

    Parameters
    ----------
    lines : ndarray of uint8, shape (L, LINE_BYTES)
        Sign lines in ``layout``.  A worker-major line reads as the
        element-major line of the same signs (:func:`to_element_major`)
        under G-Binary and G-Ternary, and as its stored bytes under BYPASS
        and IDENTITY (contract section 5).
    phase : int or ndarray of int, shape (L,)
        Element index of each line's lane 0 modulo P (PATTERN gate only).
    gate_mask : ndarray of bool, shape (E,) or (L, E), optional
        The PATTERN gate as the datapath core takes it (contract section 3):
        lane ``i`` of a line is kept iff its mask bit ``i`` is set; one mask
        for every line, or one per line.  When given, ``period``, ``keep``
        and ``phase`` are not used; otherwise the mask is
        :func:`gate_pattern` of them.

    Returns
    -------
    ndarray of uint8, shape (L, LINE_BYTES)
        A new array; ``lines`` is never modified.
    """
    lines = check_lines(lines)
    check_config(workers, mode, fmt, gate_kind, period, keep, threshold)
    check_layout(layout)
    n_lines, line_bits = lines.shape[0], lines.shape[1] * 8
    if gate_mask is not None:
        gate_mask = check_mask(gate_mask, n_lines, line_bits // workers)
    if mode in (Mode.BYPASS, Mode.IDENTITY):
        return lines.copy()
    if layout == Layout.WORKER_MAJOR:
        lines = to_element_major(lines, workers)
    ternary = mode == Mode.GTERNARY
    pattern = ternary and gate_kind == GateKind.PATTERN
    lanes = _Lanes(workers)
    words = np.ascontiguousarray(lines).view("<u8")
    out = np.empty_like(words)
    gated = lanes.splat(_gated_value(workers, fmt))
    if pattern and gate_mask is None:
        # Few distinct masks: one row of words per phase, picked per line.
        phase = np.broadcast_to(check_phase(phase, period), (n_lines,))
        keep_words = _mask_words(gate_pattern(line_bits // workers, period, keep,
                                              np.arange(period)), workers)
    elif pattern and gate_mask.ndim == 1:
        keep_words = _mask_words(gate_mask, workers)
    if ternary and gate_kind == GateKind.MARGIN:
        # |2c - W| >= T  <=>  c >= ceil((W + T) / 2)  or  c <= floor((W - T) / 2)
        hi, lo = -(-(workers + threshold) // 2), (workers - threshold) // 2
    for start in range(0, words.shape[0], CHUNK_LINES):
        sl = slice(start, start + CHUNK_LINES)
        c = lanes.popcount(words[sl])
        value = _kept_values(lanes, c, fmt)
        if pattern and gate_mask is None:
            kept = keep_words[phase[sl]]
        elif pattern:
            kept = keep_words if gate_mask.ndim == 1 else _mask_words(gate_mask[sl], workers)
        elif ternary and gate_kind == GateKind.MARGIN:
            kept = lanes.at_least(c, hi) | ~lanes.at_least(c, lo + 1)
        else:
            out[sl] = value
            continue
        out[sl] = (value & kept) | (gated & ~kept)
    return out.view(np.uint8).reshape(lines.shape)
