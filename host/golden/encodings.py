"""Encodings of the runtime side: gradients to sign lines, partial counts to
count-operand lines (contract section 5.3), response lines to values, and
lines as Python integers for simulators."""

import numpy as np

from neuron_fabric.contract.facts import COUNT_LANE_BITS, Format, Layout, LINE_BITS_CHOICES, \
    WORKERS_CHOICES, count_geometry
from neuron_fabric.host.golden.checks import check_layout, check_lines
from neuron_fabric.host.golden.layout import pack_rows

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
    check_layout(layout)
    lanes = line_bits // workers
    n_lines = -(-n // lanes)
    if layout == Layout.WORKER_MAJOR:
        signs = np.zeros((workers, n_lines * lanes), dtype=bool)
        signs[:, :n] = grads > 0
        return pack_rows(signs.reshape(workers, n_lines, lanes).transpose(1, 0, 2))
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
    lines = check_lines(lines)
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


def count_lanes(line_bits):
    """E_c, the count lanes (elements) of a line."""
    return line_bits // COUNT_LANE_BITS


def count_matrix(lines, operand, layout):
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
    check_layout(layout)
    used, n = counts.shape
    lanes = count_lanes(line_bits)
    n_lines = -(-n // lanes)
    matrix = np.zeros((contributors, n_lines * lanes), dtype=np.uint8)
    matrix[:used, :n] = counts
    matrix = matrix.reshape(contributors, n_lines, lanes)
    order = (1, 0, 2) if layout == Layout.WORKER_MAJOR else (1, 2, 0)
    fields = np.ascontiguousarray(matrix.transpose(order)).reshape(n_lines, -1)
    if bits == 4:
        fields = fields[:, 0::2] | (fields[:, 1::2] << np.uint8(4))
    return fields


def decode_counts(lines, fmt, n=None):
    """Decode 32-bit output lanes into one ``int32`` value per element
    (COUNT unsigned, MARGIN and SIGN signed); ``n`` elements, or all lanes."""
    lines = check_lines(lines)
    if fmt not in tuple(Format):
        raise ValueError(f"format must be one of {[int(f) for f in Format]}, not {fmt!r}")
    flat = np.ascontiguousarray(lines).view("<i4").reshape(-1).astype(np.int32)
    return flat if n is None else flat[:n]


def lines_to_ints(lines):
    """One Python ``int`` per line (line bit n = integer bit n)."""
    return [int.from_bytes(row.tobytes(), "little") for row in check_lines(lines)]


def lines_from_ints(values, line_bits):
    """Inverse of :func:`lines_to_ints`."""
    nbytes = line_bits // 8
    buf = b"".join(int(v).to_bytes(nbytes, "little") for v in values)
    return np.frombuffer(buf, dtype=np.uint8).reshape(-1, nbytes).copy()
