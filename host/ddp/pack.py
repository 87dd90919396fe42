"""Packing a rank's gradient signs and decoding read responses: torch
tensors in and out, with numpy on the same memory where it is faster on one
thread (``packbits``, integer-to-float conversion).

Everything is vectorised: no Python loop runs per element or per line.

Write side (contract section 5.2, worker-major): worker ``k`` of a W-worker
controller owns line bits ``[k*E, (k+1)*E)`` (``E = LINE_BITS / W``), bit
``j`` of its segment being its sign for element ``j`` of the line (1 =
positive, 0 = zero or negative).  A rank's signs for ``L`` lines are
therefore its elements' sign bits packed LSB first, ``E / 8`` bytes a line:
:func:`pack_signs` gives them as a ``(L, E / 8)`` array, the bytes its
MemWrPtl of each line would carry.

Read side: a G-Binary / G-Ternary read returns W-bit output lanes (contract
section 2), a count-operand read 32-bit lanes (section 5.3).
:func:`decode_lanes` turns them into one integer per element (COUNT
unsigned, MARGIN and SIGN two's complement), as ``golden.decode`` and
``golden.decode_counts`` do in numpy; :func:`direction` turns those into
the update direction.
"""

import numpy as np
import torch

from neuron_fabric.contract.facts import Format

__all__ = ["pack_signs", "pack_counts", "decode_lanes", "direction", "decode_direction"]


def pack_signs(grad, elements):
    """Sign bits of ``grad`` (1-D float tensor, ``n <= elements``) packed LSB
    first into ``elements / 8`` bytes (``elements`` a multiple of 64); the
    elements past ``n`` pack as 0 (non-positive).

    Returns a uint8 numpy array of ``elements / 8`` bytes.
    """
    n = grad.numel()
    if elements % 64 or n > elements:
        raise ValueError(f"elements must be a multiple of 64 and at least n={n}, not {elements}")
    bits = torch.empty(elements, dtype=torch.bool)
    torch.gt(grad.reshape(-1), 0, out=bits[:n])
    bits[n:] = False
    return np.packbits(bits.numpy(), bitorder="little")


def pack_counts(counts, bits):
    """Partial counts (int array, one per element, ``0 .. 2**bits - 1``) as
    one contributor's segment of count lines, worker-major (contract
    section 5.3): element ``j`` at bit offset ``j * bits``.  ``bits`` is 4
    or 8; the number of counts must be even for 4.  Returns uint8 bytes."""
    c = np.asarray(counts, dtype=np.uint8)
    if bits == 8:
        return c
    return c[0::2] | (c[1::2] << np.uint8(4))


#: numpy type of a whole-byte lane, by width (8-bit COUNT lanes are read
#: unsigned; the counts of wider lanes never reach their sign bit, so one
#: signed type reads every format).
_WHOLE_LANES = {8: np.int8, 16: np.int16, 32: np.int32}


def _lanes(resp, lane_bits, signed, n, dtype):
    """The first ``n`` output lanes of ``resp`` as a new tensor of the numpy
    type ``dtype``.  The conversions run in numpy: with one thread it
    converts integers to float about four times as fast as torch, and does
    the 4-bit split's strided stores twice as fast."""
    flat = np.ascontiguousarray(resp).reshape(-1)
    if lane_bits in _WHOLE_LANES:
        kind = np.uint8 if lane_bits == 8 and not signed else _WHOLE_LANES[lane_bits]
        return torch.from_numpy(flat.view(kind)[:n].astype(dtype))
    if lane_bits == 4:
        # Low nibble, then high nibble of each byte, into alternate places;
        # signed lanes by arithmetic shifts of the byte as int8.
        b = flat[:(n + 1) // 2]
        if signed:
            b = b.view(np.int8)
        out = np.empty((b.size, 2), dtype=dtype)
        out[:, 0] = (b << 4) >> 4 if signed else b & 0x0F
        out[:, 1] = b >> 4
        return torch.from_numpy(out.reshape(-1)[:n])
    raise ValueError(f"lane_bits must be 4, 8, 16 or 32, not {lane_bits!r}")


def decode_lanes(resp, lane_bits, fmt, n):
    """The first ``n`` output lanes of the response lines ``resp`` (uint8
    numpy, ``(L, LINE_BYTES)``) as an int32 tensor: lanes of ``lane_bits``
    (4, 8, 16: a W-worker read; 32: a count-operand read), COUNT unsigned,
    MARGIN and SIGN in two's complement."""
    return _lanes(resp, lane_bits, fmt != Format.COUNT, n, np.int32)


def direction(values, fmt, voters, offset=0):
    """Update direction in [-1, 1] (float32) of decoded lanes over ``voters``
    workers: SIGN as it is, MARGIN ``a' / voters``, COUNT ``(2 (c' - offset)
    - voters) / voters``, where ``offset`` is the positive votes that are not
    workers' (padding slots; 0 without)."""
    v = values.to(torch.float32)
    if fmt == Format.SIGN:
        return v
    if fmt == Format.MARGIN:
        return v.div_(voters)
    return v.sub_(offset).mul_(2).sub_(voters).div_(voters)


def decode_direction(resp, lane_bits, fmt, n, voters, offset=0):
    """:func:`direction` of :func:`decode_lanes`, converting the lanes to
    float32 in one pass."""
    return direction(_lanes(resp, lane_bits, fmt != Format.COUNT, n, np.float32),
                     fmt, voters, offset)
