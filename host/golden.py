"""Golden model of the low-bit read transform (numpy only, no HDL).

This module defines every mode of contract section 2 bit-exactly.  It has two
independent forms that the tests hold against each other:

* :func:`transform_lane` -- one lane, plain integer arithmetic, written
  straight from the contract formulas; the reference for formal proofs and
  hand-worked examples;
* :func:`transform` -- many lines at once, vectorised with lookup tables;
  the oracle for simulation (a 64 MiB buffer transforms in a fraction of a
  second, see ``make bench``).

Line layout
-----------
A line is ``LINE_BYTES`` bytes; line bit ``n`` is bit ``n % 8`` of byte
``n // 8`` (so byte 0 holds Verilog bits ``[7:0]``).  Lane ``i`` is line bits
``[i*W, (i+1)*W)``; bit ``k`` of a lane is worker ``k``'s sign bit
(1 = positive gradient).  Arrays of lines are ``uint8`` of shape
``(L, LINE_BYTES)``.

Encoding
--------
:func:`encode_signs` packs FP32 gradients of shape ``(W, N)`` element-major.
The last line is padded with lanes whose bits are all 0 (every worker
"non-positive"); :func:`decode` drops them again when told ``N``.
"""

import functools

import numpy as np

from .facts import Format, GateKind, Mode, LINE_BITS_CHOICES, WORKERS_CHOICES

__all__ = [
    "check_config", "transform_lane", "transform", "gate_pattern",
    "encode_signs", "decode", "line_phase", "lines_from_ints", "lines_to_ints",
]


# -- configuration checks ----------------------------------------------------

def check_config(workers, mode, fmt=Format.COUNT, gate_kind=GateKind.PATTERN,
                 period=3, keep=2, threshold=0):
    """Raise ``ValueError`` naming the first field outside contract section 2."""
    if workers not in WORKERS_CHOICES:
        raise ValueError(f"workers must be one of {WORKERS_CHOICES}, not {workers!r}")
    if mode not in tuple(Mode):
        raise ValueError(f"mode must be one of {[int(m) for m in Mode]}, not {mode!r}")
    if fmt not in tuple(Format):
        raise ValueError(f"format must be one of {[int(f) for f in Format]}, not {fmt!r}")
    if gate_kind not in tuple(GateKind):
        raise ValueError(f"gate kind must be 0 or 1, not {gate_kind!r}")
    if not 1 <= period <= 15:
        raise ValueError(f"gate period P must be in 1..15, not {period!r}")
    if not 0 <= keep <= period:
        raise ValueError(f"gate keep K must be in 0..P={period}, not {keep!r}")
    if not 0 <= threshold <= workers:
        raise ValueError(f"gate threshold T must be in 0..W={workers}, not {threshold!r}")


def _check_lines(lines, line_bits=None):
    lines = np.asarray(lines)
    if lines.dtype != np.uint8 or lines.ndim != 2:
        raise ValueError(f"lines must be a uint8 array of shape (L, LINE_BYTES), "
                         f"not {lines.dtype} of shape {lines.shape}")
    if lines.shape[1] * 8 not in LINE_BITS_CHOICES:
        raise ValueError(f"a line must have LINE_BITS in {LINE_BITS_CHOICES}, "
                         f"not {lines.shape[1] * 8}")
    return lines


# -- one lane, straight from the contract -----------------------------------------

def transform_lane(lane, lane_index, workers, mode, fmt=Format.COUNT,
                   gate_kind=GateKind.PATTERN, period=3, keep=2, threshold=0,
                   phase=0, *, gate_mask=None):
    """Return the W-bit output lane for one input lane (contract section 2).

    Parameters
    ----------
    lane : int
        The W sign bits of the lane; bit ``k`` is worker ``k``.
    lane_index : int
        ``i``, the lane's position in its line.
    phase : int
        Element index of lane 0 modulo P.
    gate_mask : sequence of bool, optional
        The line's PATTERN gate as the datapath core takes it (contract section
        3): the lane is kept iff ``gate_mask[lane_index]``.  When given,
        ``period``, ``keep`` and ``phase`` are not used; otherwise the gate
        is :func:`gate_pattern` of them.
    """
    check_config(workers, mode, fmt, gate_kind, period, keep, threshold)
    mask = (1 << workers) - 1
    if mode in (Mode.BYPASS, Mode.IDENTITY):
        return lane & mask
    c = bin(lane & mask).count("1")
    a = 2 * c - workers
    if mode == Mode.GBINARY:
        m = True
    elif gate_kind == GateKind.PATTERN:
        if gate_mask is None:
            gate_mask = gate_pattern(lane_index + 1, period, keep, phase)
        m = bool(gate_mask[lane_index])
    else:
        m = abs(a) >= threshold
    c_g = c if m else workers // 2
    a_g = a if m else 0
    if fmt == Format.COUNT:
        value = c_g
    elif fmt == Format.MARGIN:
        value = a_g
    else:
        value = (a_g > 0) - (a_g < 0)
    return value & mask


# -- many lines, vectorised ---------------------------------------------------

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


def gate_pattern(lanes, period, keep, phase):
    """PATTERN gate for ``lanes`` lanes (contract section 2): lane ``i`` is kept
    iff ``(phase + i) mod P < K``.  The one definition of the gate mask in
    the host side; the top computes the same mask for the datapath core.

    Returns a bool array, shape ``(E,)`` for a scalar ``phase`` or ``(L, E)``
    for an array of per-line phases.
    """
    rows = ((np.arange(period)[:, None] + np.arange(lanes)[None, :]) % period) < keep
    return rows[_check_phase(phase, period)]


def _check_phase(phase, period):
    phase = np.asarray(phase)
    if np.any((phase < 0) | (phase >= period)):
        raise ValueError(f"gate phase must be in 0..P-1={period - 1}")
    return phase


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


def _check_mask(gate_mask, n_lines, lanes):
    mask = np.asarray(gate_mask)
    if mask.dtype != np.bool_ or mask.shape not in ((lanes,), (n_lines, lanes)):
        raise ValueError(f"gate_mask must be a bool array of shape ({lanes},) or "
                         f"({n_lines}, {lanes}), not {mask.dtype} of shape {mask.shape}")
    return mask


_CHUNK_LINES = 1 << 14


def transform(lines, workers, mode, fmt=Format.COUNT, gate_kind=GateKind.PATTERN,
              period=3, keep=2, threshold=0, phase=0, *, gate_mask=None):
    """Return the read responses for ``lines`` under one configuration.

    Parameters
    ----------
    lines : ndarray of uint8, shape (L, LINE_BYTES)
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
    lines = _check_lines(lines)
    check_config(workers, mode, fmt, gate_kind, period, keep, threshold)
    n_lines, line_bits = lines.shape[0], lines.shape[1] * 8
    if gate_mask is not None:
        gate_mask = _check_mask(gate_mask, n_lines, line_bits // workers)
    if mode in (Mode.BYPASS, Mode.IDENTITY):
        return lines.copy()
    ternary = mode == Mode.GTERNARY
    pattern = ternary and gate_kind == GateKind.PATTERN
    lanes = _Lanes(workers)
    words = np.ascontiguousarray(lines).view("<u8")
    out = np.empty_like(words)
    gated = lanes.splat(_gated_value(workers, fmt))
    if pattern and gate_mask is None:
        # Few distinct masks: one row of words per phase, picked per line.
        phase = np.broadcast_to(_check_phase(phase, period), (n_lines,))
        keep_words = _mask_words(gate_pattern(line_bits // workers, period, keep,
                                              np.arange(period)), workers)
    elif pattern and gate_mask.ndim == 1:
        keep_words = _mask_words(gate_mask, workers)
    if ternary and gate_kind == GateKind.MARGIN:
        # |2c - W| >= T  <=>  c >= ceil((W + T) / 2)  or  c <= floor((W - T) / 2)
        hi, lo = -(-(workers + threshold) // 2), (workers - threshold) // 2
    for start in range(0, words.shape[0], _CHUNK_LINES):
        sl = slice(start, start + _CHUNK_LINES)
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


# -- runtime side: encode gradients, decode responses ------------------------

def encode_signs(grads, line_bits):
    """Pack worker gradients ``(W, N)`` into element-major sign lines.

    Returns ``uint8`` lines of shape ``(ceil(N / E), LINE_BYTES)``.  The last
    line is padded with all-zero lanes.
    """
    grads = np.asarray(grads)
    if grads.ndim != 2:
        raise ValueError(f"grads must have shape (W, N), not {grads.shape}")
    workers, n = grads.shape
    if workers not in WORKERS_CHOICES:
        raise ValueError(f"W = grads.shape[0] must be one of {WORKERS_CHOICES}, not {workers}")
    if line_bits not in LINE_BITS_CHOICES:
        raise ValueError(f"line_bits must be one of {LINE_BITS_CHOICES}, not {line_bits!r}")
    lanes = line_bits // workers
    n_lines = -(-n // lanes)
    # One lane per element, built by OR-ing in one worker's sign at a time:
    # bit k of lane i is worker k's sign (several times faster than a
    # transpose and packbits over the (N, W) bit matrix).
    lane_type = np.uint16 if workers == 16 else np.uint8
    lane = np.zeros(n_lines * lanes, dtype=lane_type)
    for k in range(workers):
        lane[:n] |= (grads[k] > 0).astype(lane_type) << lane_type(k)
    if workers == 4:  # two 4-bit lanes per byte, the even lane in the low nibble
        lane = lane[0::2] | (lane[1::2] << np.uint8(4))
    return lane.view(np.uint8).reshape(n_lines, line_bits // 8)


def decode(lines, workers, fmt, n=None):
    """Decode response lines into one value per element.

    COUNT gives the unsigned count ``c'``; MARGIN and SIGN give signed values.
    The result is a flat ``int16`` array of ``n`` elements (all lanes when
    ``n`` is None).
    """
    lines = _check_lines(lines)
    if workers not in WORKERS_CHOICES:
        raise ValueError(f"workers must be one of {WORKERS_CHOICES}, not {workers!r}")
    if fmt not in tuple(Format):
        raise ValueError(f"format must be one of {[int(f) for f in Format]}, not {fmt!r}")
    if workers == 16:
        raw = lines.view("<u2").astype(np.int32)
    elif workers == 8:
        raw = lines.astype(np.int32)
    else:
        raw = np.empty((lines.shape[0], lines.shape[1] * 2), dtype=np.int32)
        raw[:, 0::2] = lines & 0x0F
        raw[:, 1::2] = lines >> 4
    if fmt != Format.COUNT:
        raw = np.where(raw >= 1 << (workers - 1), raw - (1 << workers), raw)
    flat = raw.reshape(-1).astype(np.int16)
    return flat if n is None else flat[:n]


def line_phase(line_index, lanes, period):
    """Phase of a line within its region: ``(line_index * E) mod P`` (contract 4.3)."""
    return (np.asarray(line_index) * lanes) % period


# -- helpers for simulators that carry lines as Python integers -------------

def lines_to_ints(lines):
    """One Python ``int`` per line (line bit n = integer bit n)."""
    return [int.from_bytes(row.tobytes(), "little") for row in _check_lines(lines)]


def lines_from_ints(values, line_bits):
    """Inverse of :func:`lines_to_ints`."""
    nbytes = line_bits // 8
    buf = b"".join(int(v).to_bytes(nbytes, "little") for v in values)
    return np.frombuffer(buf, dtype=np.uint8).reshape(-1, nbytes).copy()
