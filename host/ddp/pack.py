"""The hook's torch side: a rank's gradient signs and level-1 counts packed
into the bytes of its segments.  (The responses decode in the aggregation
engine, :func:`neuron_fabric.host.runtime.engine.decode_lanes`, in numpy;
the hook turns the directions into tensors without a copy.)

Everything is vectorised: no Python loop runs per element or per line.

Write side (contract section 5.2, worker-major): worker ``k`` of a W-worker
controller owns line bits ``[k*E, (k+1)*E)`` (``E = LINE_BITS / W``), bit
``j`` of its segment being its sign for element ``j`` of the line (1 =
positive, 0 = zero or negative).  A rank's signs for ``L`` lines are
therefore its elements' sign bits packed LSB first, ``E / 8`` bytes a line:
:func:`pack_signs` gives them as a ``(L, E / 8)`` array, the bytes its
MemWrPtl of each line would carry.  :func:`pack_counts` packs a
controller's counts as its segment of the level-2 count lines.
"""

import numpy as np
import torch

__all__ = ["pack_signs", "pack_counts"]


def pack_signs(grad, elements):
    """Sign bits of ``grad`` (1-D float tensor, ``n <= elements``) packed LSB
    first into ``elements / 8`` bytes (``elements`` a multiple of 8: whole
    lines of whole-byte segments, ``E = LINE_BITS / W >= 8``); the elements
    past ``n`` pack as 0 (non-positive).

    Returns a uint8 numpy array of ``elements / 8`` bytes.
    """
    n = grad.numel()
    if elements % 8 or n > elements:
        raise ValueError(f"elements must be a multiple of 8 and at least n={n}, not {elements}")
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

