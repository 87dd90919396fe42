"""Worker-major sign lines (contract section 5.2): the bit permutation between
the worker-major and element-major layouts, as bit-matrix transposes."""

import functools

import numpy as np

from neuron_fabric.contract.facts import WORKERS_CHOICES
from neuron_fabric.host.golden.checks import CHUNK_LINES, check_lines

def pack_rows(bits):
    """Bool bits of shape (L, ...) as lines: the trailing axes flattened in
    order are line bits 0, 1, ..."""
    return np.packbits(bits.reshape(bits.shape[0], -1), axis=1, bitorder="little")


def _transpose_bits(lines, rows, cols):
    """Each line's bits as a (rows, cols) matrix (line bit ``r*cols + c``),
    transposed: line bit ``c*rows + r`` of the result."""
    out = np.empty_like(lines)
    for start in range(0, lines.shape[0], CHUNK_LINES):
        sl = slice(start, start + CHUNK_LINES)
        if rows % 8 == 0 and cols % 8 == 0:
            out[sl] = _transpose_tiles(lines[sl], rows, cols)
        elif cols == 4 and rows % 16 == 0:
            out[sl] = _transpose_to_quads(lines[sl], rows)
        elif rows == 4 and cols % 16 == 0:
            out[sl] = _transpose_from_quads(lines[sl], cols)
        else:
            bits = np.unpackbits(lines[sl], axis=1, bitorder="little")
            out[sl] = pack_rows(bits.reshape(-1, rows, cols).transpose(0, 2, 1))
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
    lines = check_lines(lines)
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
