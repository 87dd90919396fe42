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

The hierarchy extension (contract section 5)
--------------------------------------------
* Worker-major layout (``layout=Layout.WORKER_MAJOR``): worker ``k`` owns
  line bits ``[k*E, (k+1)*E)``, bit ``j`` of its segment being its sign for
  element ``j``; :func:`to_element_major` / :func:`to_worker_major` are the
  permutation, and :func:`transform` of a worker-major line returns what the
  element-major line of the same signs returns.
* Count operands (:func:`encode_counts`, :func:`transform_counts`,
  :func:`decode_counts`, the one-element reference
  :func:`transform_count_lane`): a 32-bit count lane per element holds ``N``
  partial counts of ``b`` bits (``N, b`` = 8, 4 for COUNTS4 and 4, 8 for
  COUNTS8); a read sums them exactly (``c``), forms ``a = 2c - total`` and
  returns 32-bit output lanes.
* :func:`transform_wide`: the contract's formulas over any number of
  workers with 32-bit output lanes, the reference a multi-level hierarchy
  must match bit for bit.
"""

import functools

import numpy as np

from neuron_fabric.contract.facts import (COUNT_LANE_BITS, FIELD_WIDTHS, Format, GateKind, Layout, Mode, Operand,
                                          LINE_BITS_CHOICES, WORKERS_CHOICES, count_geometry)
from neuron_fabric.contract.regmap import count_total_max

__all__ = [
    "check_config", "check_count_config", "transform_lane", "transform", "gate_pattern",
    "encode_signs", "decode", "line_phase", "lines_from_ints", "lines_to_ints",
    "to_element_major", "to_worker_major", "encode_counts",
    "transform_count_lane", "transform_counts", "decode_counts", "transform_wide",
]

#: Largest MARGIN gate threshold the CFG word holds (contract section 4.4).
_MAX_THRESHOLD = (1 << FIELD_WIDTHS["gate_threshold"]) - 1


# -- configuration checks ----------------------------------------------------

def check_config(workers, mode, fmt=Format.COUNT, gate_kind=GateKind.PATTERN,
                 period=3, keep=2, threshold=0):
    """Raise ``ValueError`` naming the first field outside contract section 2."""
    if workers not in WORKERS_CHOICES:
        raise ValueError(f"workers must be one of {WORKERS_CHOICES}, not {workers!r}")
    _check_fields(mode, fmt, gate_kind, period, keep)
    if not 0 <= threshold <= workers:
        raise ValueError(f"gate threshold T must be in 0..W={workers}, not {threshold!r}")


def check_count_config(operand, total, mode, fmt=Format.COUNT, gate_kind=GateKind.PATTERN,
                       period=3, keep=2, threshold=0, layout=Layout.ELEMENT_MAJOR):
    """Raise ``ValueError`` naming the first field outside contract section 5
    for a count operand: ``1 <= total <= N * (2**b - 1)``, ``T <= total``
    (and T fits its 5-bit CFG field), the section 2 fields as for signs."""
    most = count_total_max(operand)
    if isinstance(total, bool) or not isinstance(total, (int, np.integer)) \
            or not 1 <= total <= most:
        raise ValueError(f"total must be an integer in 1..{most} for "
                         f"{Operand(operand).name}, not {total!r}")
    _check_fields(mode, fmt, gate_kind, period, keep)
    if not 0 <= threshold <= min(total, _MAX_THRESHOLD):
        raise ValueError(f"gate threshold T must be in 0..min(total={total}, "
                         f"{_MAX_THRESHOLD}), not {threshold!r}")
    _check_layout(layout)


def _check_layout(layout):
    if layout not in tuple(Layout):
        raise ValueError(f"layout must be one of {[int(x) for x in Layout]}, not {layout!r}")


def _check_fields(mode, fmt, gate_kind, period, keep):
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
    return _lane_value(c, workers, lane_index, mode, fmt, gate_kind, period, keep, threshold,
                       phase, gate_mask) & mask


def _lane_value(c, total, lane_index, mode, fmt, gate_kind, period, keep, threshold, phase,
                gate_mask):
    """The output value (a Python int, signed) of one lane of count ``c`` out of
    ``total`` votes under G-Binary or G-Ternary (contract sections 2 and 5)."""
    a = 2 * c - total
    if mode == Mode.GBINARY:
        m = True
    elif gate_kind == GateKind.PATTERN:
        if gate_mask is None:
            gate_mask = gate_pattern(lane_index + 1, period, keep, phase)
        m = bool(gate_mask[lane_index])
    else:
        m = abs(a) >= threshold
    c_g = c if m else total // 2
    a_g = a if m else 0
    if fmt == Format.COUNT:
        return c_g
    if fmt == Format.MARGIN:
        return a_g
    return (a_g > 0) - (a_g < 0)


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
    lines = _check_lines(lines)
    check_config(workers, mode, fmt, gate_kind, period, keep, threshold)
    _check_layout(layout)
    n_lines, line_bits = lines.shape[0], lines.shape[1] * 8
    if gate_mask is not None:
        gate_mask = _check_mask(gate_mask, n_lines, line_bits // workers)
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

def encode_signs(grads, line_bits, layout=Layout.ELEMENT_MAJOR):
    """Pack worker gradients ``(W, N)`` into sign lines of ``layout``.

    Returns ``uint8`` lines of shape ``(ceil(N / E), LINE_BYTES)``.  The last
    line is padded with all-zero lanes (element-major) or all-zero bits at
    the end of each worker's segment (worker-major).
    """
    grads = np.asarray(grads)
    if grads.ndim != 2:
        raise ValueError(f"grads must have shape (W, N), not {grads.shape}")
    workers, n = grads.shape
    if workers not in WORKERS_CHOICES:
        raise ValueError(f"W = grads.shape[0] must be one of {WORKERS_CHOICES}, not {workers}")
    if line_bits not in LINE_BITS_CHOICES:
        raise ValueError(f"line_bits must be one of {LINE_BITS_CHOICES}, not {line_bits!r}")
    _check_layout(layout)
    lanes = line_bits // workers
    n_lines = -(-n // lanes)
    if layout == Layout.WORKER_MAJOR:
        signs = np.zeros((workers, n_lines * lanes), dtype=bool)
        signs[:, :n] = grads > 0
        return _pack_rows(signs.reshape(workers, n_lines, lanes).transpose(1, 0, 2))
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
        raw = _nibbles(lines).astype(np.int32)
    if fmt != Format.COUNT:
        raw = np.where(raw >= 1 << (workers - 1), raw - (1 << workers), raw)
    flat = raw.reshape(-1).astype(np.int16)
    return flat if n is None else flat[:n]


def _nibbles(lines):
    """The 4-bit fields of ``lines`` (low nibble of each byte first): uint8, shape (L, 2 * LINE_BYTES)."""
    out = np.empty((lines.shape[0], lines.shape[1] * 2), dtype=np.uint8)
    out[:, 0::2] = lines & 0x0F
    out[:, 1::2] = lines >> 4
    return out


def line_phase(line_index, lanes, period):
    """Phase of a line within its region: ``(line_index * E) mod P`` (contract 4.3)."""
    return (np.asarray(line_index) * lanes) % period


# -- the hierarchy extension (contract section 5) ----------------------------

def _pack_rows(bits):
    """Bool bits of shape (L, ...) as lines: the trailing axes flattened in
    order are line bits 0, 1, ..."""
    return np.packbits(bits.reshape(bits.shape[0], -1), axis=1, bitorder="little")


def _transpose_bits(lines, rows, cols):
    """Each line's bits as a (rows, cols) matrix (line bit ``r*cols + c``),
    transposed: line bit ``c*rows + r`` of the result."""
    out = np.empty_like(lines)
    for start in range(0, lines.shape[0], _CHUNK_LINES):
        sl = slice(start, start + _CHUNK_LINES)
        if rows % 8 == 0 and cols % 8 == 0:
            out[sl] = _transpose_tiles(lines[sl], rows, cols)
        elif cols == 4 and rows % 16 == 0:
            out[sl] = _transpose_to_quads(lines[sl], rows)
        elif rows == 4 and cols % 16 == 0:
            out[sl] = _transpose_from_quads(lines[sl], cols)
        else:
            bits = np.unpackbits(lines[sl], axis=1, bitorder="little")
            out[sl] = _pack_rows(bits.reshape(-1, rows, cols).transpose(0, 2, 1))
    return out


@functools.cache
def _interleave_tables():
    """``spread[x]``: byte ``x``'s bit i at bit 2i of a uint16; ``gather[v]``:
    the even bits of uint16 ``v`` as a byte (its inverse)."""
    spread = np.zeros(256, dtype=np.uint16)
    for i in range(8):
        spread |= ((np.arange(256, dtype=np.uint16) >> i) & 1) << (2 * i)
    gather = np.zeros(1 << 16, dtype=np.uint8)
    gather[spread] = np.arange(256, dtype=np.uint8)
    gather = gather[np.arange(1 << 16) & int(spread[255])]
    return spread, gather


def _transpose_to_quads(lines, rows):
    """:func:`_transpose_bits` of a (rows, 4) matrix: as a (rows / 2, 8)
    matrix (two rows a row) its transpose holds the even rows' column ``q``
    in row ``q`` and the odd rows' in row ``4 + q``; interleaving the two
    gives column ``q`` of the (rows, 4) matrix."""
    spread, _ = _interleave_tables()
    half = _transpose_tiles(lines, rows // 2, 8).reshape(lines.shape[0], 8, -1)
    quads = spread[half[:, :4]] | (spread[half[:, 4:]] << np.uint16(1))
    return quads.view(np.uint8).reshape(lines.shape)


def _transpose_from_quads(lines, cols):
    """:func:`_transpose_bits` of a (4, cols) matrix: the inverse of
    :func:`_transpose_to_quads`."""
    _, gather = _interleave_tables()
    quads = np.ascontiguousarray(lines).view("<u2").reshape(lines.shape[0], 4, -1)
    half = np.concatenate([gather[quads], gather[quads >> np.uint16(1)]], axis=1)
    return _transpose_tiles(half.reshape(lines.shape), 8, cols // 2)


#: Steps of the 8 x 8 bit-matrix transpose in a uint64 (byte i = row i):
#: (shift, mask) swapping 1 x 1, 2 x 2 and 4 x 4 blocks (Hacker's Delight 7-3).
_TRANSPOSE8 = tuple((np.uint64(shift), np.uint64(mask)) for shift, mask in
                    ((7, 0x00AA00AA00AA00AA), (14, 0x0000CCCC0000CCCC), (28, 0x00000000F0F0F0F0)))


def _transpose_tiles(lines, rows, cols):
    """:func:`_transpose_bits` for ``rows`` and ``cols`` multiples of 8: the
    matrix as 8 x 8 tiles of one uint64 each, every tile transposed in
    place (SWAR) and the tiles moved as whole bytes (several times faster
    than unpacking every bit)."""
    n = lines.shape[0]
    # copy(): a fresh C-ordered array even where the reshape is a view of ``lines``.
    tiles = lines.reshape(n, rows // 8, 8, cols // 8).transpose(0, 1, 3, 2).copy().view("<u8")
    for shift, mask in _TRANSPOSE8:
        t = (tiles ^ (tiles >> shift)) & mask
        tiles ^= t ^ (t << shift)
    return tiles.view(np.uint8).reshape(n, rows // 8, cols // 8, 8) \
        .transpose(0, 2, 3, 1).reshape(n, -1)


def _sign_geometry(lines, workers):
    lines = _check_lines(lines)
    if workers not in WORKERS_CHOICES:
        raise ValueError(f"workers must be one of {WORKERS_CHOICES}, not {workers!r}")
    return lines, lines.shape[1] * 8 // workers


def to_element_major(lines, workers):
    """Worker-major sign lines as element-major ones (contract section 5):
    bit ``k*E + j`` moves to bit ``j*W + k``.  Inverse of :func:`to_worker_major`."""
    lines, lanes = _sign_geometry(lines, workers)
    return _transpose_bits(lines, workers, lanes)


def to_worker_major(lines, workers):
    """Element-major sign lines as worker-major ones (contract section 5):
    bit ``j*W + k`` moves to bit ``k*E + j``.  Inverse of :func:`to_element_major`."""
    lines, lanes = _sign_geometry(lines, workers)
    return _transpose_bits(lines, lanes, workers)


def _count_lanes(line_bits):
    """E_c, the count lanes (elements) of a line."""
    return line_bits // COUNT_LANE_BITS


def _count_matrix(lines, operand, layout):
    """The partial counts ``lines`` hold: uint8, shape (L, N, E_c), entry
    ``[l, k, j]`` contributor ``k``'s count for element ``j`` of line ``l``."""
    bits, contributors = count_geometry(operand)
    fields = _nibbles(lines) if bits == 4 else lines
    if layout == Layout.WORKER_MAJOR:
        return fields.reshape(lines.shape[0], contributors, -1)
    return fields.reshape(lines.shape[0], -1, contributors).transpose(0, 2, 1)


def encode_counts(counts, line_bits, operand, layout=Layout.ELEMENT_MAJOR):
    """Pack partial counts into count-operand lines (contract section 5).

    Parameters
    ----------
    counts : array of int, shape (N_used, n)
        Row ``k`` is contributor ``k``'s count of each of ``n`` elements,
        0 .. 2**b - 1; ``N_used <= N`` (contributors ``N_used..N-1`` hold 0).
    operand : Operand
        COUNTS4 or COUNTS8.

    Returns
    -------
    ndarray of uint8, shape (ceil(n / E_c), LINE_BYTES)
        Elements past ``n`` in the last line hold all-zero counts.
    """
    counts = np.asarray(counts)
    bits, contributors = count_geometry(operand)
    if counts.ndim != 2 or not 1 <= counts.shape[0] <= contributors \
            or not np.issubdtype(counts.dtype, np.integer):
        raise ValueError(f"counts must be integers of shape (N_used <= {contributors}, n), "
                         f"not {counts.dtype} of shape {counts.shape}")
    bad = (counts < 0) | (counts >= 1 << bits)
    if bad.any():
        raise ValueError(f"a {bits}-bit partial count must be in 0..{(1 << bits) - 1}, "
                         f"not {counts[bad][0]}")
    if line_bits not in LINE_BITS_CHOICES:
        raise ValueError(f"line_bits must be one of {LINE_BITS_CHOICES}, not {line_bits!r}")
    _check_layout(layout)
    used, n = counts.shape
    lanes = _count_lanes(line_bits)
    n_lines = -(-n // lanes)
    matrix = np.zeros((contributors, n_lines * lanes), dtype=np.uint8)
    matrix[:used, :n] = counts
    matrix = matrix.reshape(contributors, n_lines, lanes)
    order = (1, 0, 2) if layout == Layout.WORKER_MAJOR else (1, 2, 0)
    fields = np.ascontiguousarray(matrix.transpose(order)).reshape(n_lines, -1)
    if bits == 4:
        fields = fields[:, 0::2] | (fields[:, 1::2] << np.uint8(4))
    return fields


def transform_count_lane(lane, lane_index, operand, total, mode, fmt=Format.COUNT,
                         gate_kind=GateKind.PATTERN, period=3, keep=2, threshold=0, phase=0,
                         *, gate_mask=None):
    """Return the 32-bit output lane for one element-major count lane
    (contract section 5), in plain integer arithmetic.

    Parameters
    ----------
    lane : int
        The element's 32-bit count lane: contributor ``k``'s count is bits
        ``[k*b, (k+1)*b)``.
    lane_index, phase, gate_mask
        As for :func:`transform_lane`, with E_c = LINE_BITS / 32 lanes a line.
    """
    check_count_config(operand, total, mode, fmt, gate_kind, period, keep, threshold)
    word = (1 << COUNT_LANE_BITS) - 1
    if mode in (Mode.BYPASS, Mode.IDENTITY):
        return lane & word
    bits, contributors = count_geometry(operand)
    c = sum((lane >> (k * bits)) & ((1 << bits) - 1) for k in range(contributors))
    return _lane_value(c, total, lane_index, mode, fmt, gate_kind, period, keep, threshold,
                       phase, gate_mask) & word


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


def _pattern_kept(gate_mask, phase, period, keep, n_lines, lanes):
    """The PATTERN gate of ``n_lines`` lines: bool, shape (E_c,) or (L, E_c)."""
    if gate_mask is not None:
        return _check_mask(gate_mask, n_lines, lanes)
    return gate_pattern(lanes, period, keep, np.broadcast_to(_check_phase(phase, period),
                                                             (n_lines,)))


def _chunk_mask(kept, sl):
    return kept if kept.ndim == 1 else kept[sl]


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
    lines = _check_lines(lines)
    check_count_config(operand, total, mode, fmt, gate_kind, period, keep, threshold, layout)
    n_lines, lanes = lines.shape[0], _count_lanes(lines.shape[1] * 8)
    kept = None
    if mode == Mode.GTERNARY and gate_kind == GateKind.PATTERN:
        kept = _pattern_kept(gate_mask, phase, period, keep, n_lines, lanes)
    elif gate_mask is not None:
        _check_mask(gate_mask, n_lines, lanes)
    if mode in (Mode.BYPASS, Mode.IDENTITY):
        return lines.copy()
    out = np.empty((n_lines, lanes), dtype="<i4")
    for start in range(0, n_lines, _CHUNK_LINES):
        sl = slice(start, start + _CHUNK_LINES)
        matrix = _count_matrix(lines[sl], operand, layout)
        c = functools.reduce(np.add, matrix.transpose(1, 0, 2), np.zeros(matrix.shape[::2], np.int16))
        out[sl] = _count_outputs(c, total, mode, fmt, gate_kind, threshold,
                                 None if kept is None else _chunk_mask(kept, sl))
    return out.view(np.uint8).reshape(lines.shape)


def decode_counts(lines, fmt, n=None):
    """Decode 32-bit output lanes into one ``int32`` value per element
    (COUNT unsigned, MARGIN and SIGN signed); ``n`` elements, or all lanes."""
    lines = _check_lines(lines)
    if fmt not in tuple(Format):
        raise ValueError(f"format must be one of {[int(f) for f in Format]}, not {fmt!r}")
    flat = np.ascontiguousarray(lines).view("<i4").reshape(-1).astype(np.int32)
    return flat if n is None else flat[:n]


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
    _check_fields(mode, fmt, gate_kind, period, keep)
    if not 0 <= threshold <= workers:
        raise ValueError(f"gate threshold T must be in 0..{workers}, not {threshold!r}")
    if line_bits not in LINE_BITS_CHOICES:
        raise ValueError(f"line_bits must be one of {LINE_BITS_CHOICES}, not {line_bits!r}")
    lanes = _count_lanes(line_bits)
    n_lines = -(-n // lanes)
    kept = None
    if mode == Mode.GTERNARY and gate_kind == GateKind.PATTERN:
        kept = _pattern_kept(gate_mask, phase, period, keep, n_lines, lanes)
    counts = np.zeros(n_lines * lanes, dtype=np.int32)
    counts[:n] = signs.sum(axis=0, dtype=np.int32)
    out = _count_outputs(counts.reshape(n_lines, lanes), workers, mode, fmt, gate_kind,
                         threshold, kept)
    return out.view(np.uint8).reshape(n_lines, line_bits // 8)


# -- helpers for simulators that carry lines as Python integers -------------

def lines_to_ints(lines):
    """One Python ``int`` per line (line bit n = integer bit n)."""
    return [int.from_bytes(row.tobytes(), "little") for row in _check_lines(lines)]


def lines_from_ints(values, line_bits):
    """Inverse of :func:`lines_to_ints`."""
    nbytes = line_bits // 8
    buf = b"".join(int(v).to_bytes(nbytes, "little") for v in values)
    return np.frombuffer(buf, dtype=np.uint8).reshape(-1, nbytes).copy()
