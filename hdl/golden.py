"""Golden model of the low-bit read transform (numpy only, no HDL).

This module defines every mode of SPEC section 2 bit-exactly.  It has two
independent forms that the tests hold against each other:

* :func:`transform_lane` -- one lane, plain integer arithmetic, written
  straight from the SPEC formulas; the reference for formal proofs and
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

import numpy as np

from .params import Format, GateKind, Mode, LINE_BITS_CHOICES, WORKERS_CHOICES

__all__ = [
    "check_config", "transform_lane", "transform", "gate_pattern",
    "encode_signs", "decode", "line_phase", "lines_from_ints", "lines_to_ints",
]


# -- configuration checks ----------------------------------------------------

def check_config(workers, mode, fmt=Format.COUNT, gate_kind=GateKind.PATTERN,
                 period=3, keep=2, threshold=0):
    """Raise ``ValueError`` naming the first field outside SPEC section 2."""
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


# -- one lane, straight from the SPEC -----------------------------------------

def transform_lane(lane, lane_index, workers, mode, fmt=Format.COUNT,
                   gate_kind=GateKind.PATTERN, period=3, keep=2, threshold=0,
                   phase=0):
    """Return the W-bit output lane for one input lane (SPEC section 2).

    Parameters
    ----------
    lane : int
        The W sign bits of the lane; bit ``k`` is worker ``k``.
    lane_index : int
        ``i``, the lane's position in its line.
    phase : int
        Element index of lane 0 modulo P.
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
        m = (phase + lane_index) % period < keep
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

_POPCOUNT8 = np.array([bin(v).count("1") for v in range(256)], dtype=np.uint8)
_POPCOUNT16 = (_POPCOUNT8[np.arange(1 << 16) & 0xFF]
               + _POPCOUNT8[np.arange(1 << 16) >> 8]).astype(np.uint8)


def _lane_counts(lines, workers):
    """Sign counts, shape ``(L, E)``, ``uint8``."""
    if workers == 8:
        return _POPCOUNT8[lines]
    if workers == 16:
        return _POPCOUNT16[lines.view("<u2")]
    counts = np.empty((lines.shape[0], lines.shape[1] * 2), dtype=np.uint8)
    counts[:, 0::2] = _POPCOUNT8[lines & 0x0F]
    counts[:, 1::2] = _POPCOUNT8[lines >> 4]
    return counts


def _pack_lanes(values, workers, line_bytes):
    """Pack W-bit lane values ``(L, E)`` back into lines ``(L, LINE_BYTES)``."""
    if workers == 8:
        return values.astype(np.uint8, copy=False)
    if workers == 16:
        return values.astype("<u2").view(np.uint8).reshape(-1, line_bytes)
    values = values.astype(np.uint8, copy=False)
    return (values[:, 0::2] & 0x0F) | (values[:, 1::2] << 4)


def _output_table(workers, fmt, gate_kind, threshold, binary):
    """Output lane value for each count ``c = 0..W`` when the pattern gate keeps
    the lane, and the value of a gated lane."""
    tab = np.array([
        transform_lane((1 << c) - 1, 0, workers,
                       Mode.GBINARY if binary else Mode.GTERNARY,
                       fmt, gate_kind if not binary else GateKind.PATTERN,
                       1, 1, threshold)
        for c in range(workers + 1)], dtype=np.uint16)
    gated = transform_lane((1 << (workers // 2)) - 1, 0, workers, Mode.GTERNARY,
                           fmt, GateKind.PATTERN, 1, 0)
    return tab, gated


def gate_pattern(lanes, period, keep, phase):
    """PATTERN gate for ``lanes`` lanes: bool array, shape ``(E,)`` for a scalar
    ``phase`` or ``(L, E)`` for an array of per-line phases."""
    rows = ((np.arange(period)[:, None] + np.arange(lanes)[None, :]) % period) < keep
    phase = np.asarray(phase)
    if np.any((phase < 0) | (phase >= period)):
        raise ValueError(f"gate phase must be in 0..P-1={period - 1}")
    return rows[phase]


def transform(lines, workers, mode, fmt=Format.COUNT, gate_kind=GateKind.PATTERN,
              period=3, keep=2, threshold=0, phase=0):
    """Return the read responses for ``lines`` under one configuration.

    Parameters
    ----------
    lines : ndarray of uint8, shape (L, LINE_BYTES)
    phase : int or ndarray of int, shape (L,)
        Element index of each line's lane 0 modulo P (PATTERN gate only).

    Returns
    -------
    ndarray of uint8, shape (L, LINE_BYTES)
        A new array; ``lines`` is never modified.
    """
    lines = _check_lines(lines)
    check_config(workers, mode, fmt, gate_kind, period, keep, threshold)
    if mode in (Mode.BYPASS, Mode.IDENTITY):
        return lines.copy()
    binary = mode == Mode.GBINARY
    counts = _lane_counts(lines, workers)
    tab, gated = _output_table(workers, fmt, gate_kind, threshold, binary)
    tab = tab.astype(np.uint8) if workers <= 8 else tab
    values = tab[counts]
    if not binary and gate_kind == GateKind.PATTERN:
        keep_lane = gate_pattern(counts.shape[1], period, keep, phase)
        values = np.where(keep_lane, values, values.dtype.type(gated))
    return _pack_lanes(values, workers, lines.shape[1])


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
    bits = np.zeros((n_lines * lanes, workers), dtype=np.uint8)
    bits[:n] = (grads > 0).T
    packed = np.packbits(bits.reshape(n_lines, line_bits), axis=1, bitorder="little")
    return packed


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
    """Phase of a line within its region: ``(line_index * E) mod P`` (SPEC 4.3)."""
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
