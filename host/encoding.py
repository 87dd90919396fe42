"""How a gradient's sign becomes a worker's bit: the host-side encodings of
zero (no hardware change).

The contract packs worker ``k``'s bit as ``g > 0`` (:func:`golden.encode_signs`),
so an exact zero is a *negative* vote: a lane where all W workers hold 0
returns ``a = -W`` and the parameter moves a full step at every step.  Exact
zeros are common in small-batch training (ReLU units no example of a
worker's batch activates, border pixels), so this module offers encodings in
which a zero abstains.  Every one writes one bit per worker and element, in
the same lines, through the same read transform: only the bits the host
chooses for a zero differ.

==============  ===================================================================
encoding        bit of worker ``k`` for element ``i``
==============  ===================================================================
``negative``    ``g > 0`` (the contract's packing): a zero votes negative
``abstain``     a non-zero gradient: ``g > 0``; the ``z`` zeros of element ``i``
                (in worker order) take ``floor(z / 2)`` ones, the first zeros
                first, plus one more when ``z`` is odd and the non-zero workers'
                sign sum ``s`` is positive.  The zeros then add 0 (``z`` even) or
                ``sgn(s)`` (``z`` odd, when ``s`` is odd and so not 0) to the
                margin, so for even W the SIGN lane is ``sgn(s)``: the sign of
                the sum of the workers' ``sgn(g)`` with a zero counted as 0, and
                0 on a tie (all zero included).  The MARGIN lane is ``s`` or
                ``s + sgn(s)``.  The writer must see every worker's value of an
                element: element-major lines only (whoever writes a line holds
                every worker's signs)
``alternate``   a non-zero gradient: ``g > 0``; a zero: ``k mod 2``.  Worker-local
                (any layout): W zeros tie, but a partial set of zeros adds
                ``#odd - #even`` of them to the margin, so it abstains only on
                average
``random``      a non-zero gradient: ``g > 0``; a zero: a fair coin of worker
                ``k``'s own.  Worker-local (any layout): the coin comes from a
                generator seeded by the worker's private seed
                (:func:`worker_seed`, shared with nobody) and a digest of the
                worker's own packed ``g > 0`` bits of this step (a nonce that
                changes from step to step with no state kept), so the zeros of
                an element add 0 to its margin on average, with no bias towards
                any worker or element
==============  ===================================================================

Only ``abstain`` needs a writer that holds every worker's signs, so it is an
upper bound for the packing, not an encoding a distributed worker can use;
``negative``, ``alternate`` and ``random`` each need only the worker's own
gradient.  Software majority vote with ``sgn(0) = 0`` (MajoritySignSGD) is
the reference all four are measured against.

The tie rule is the contract's: G-Binary SIGN returns 0 when ``a = 0``
(``c = W / 2``); G-Ternary's gated value for a tie is 0 too.
"""

import zlib

import numpy as np

from neuron_fabric.contract.facts import Layout
from neuron_fabric.host import golden

__all__ = ["ENCODINGS", "DEPLOYABLE", "NEGATIVE", "ABSTAIN", "ALTERNATE", "RANDOM",
           "check_encoding", "worker_seed", "zero_coins", "sign_bits", "encode_signs",
           "zero_stats"]

NEGATIVE = "negative"
ABSTAIN = "abstain"
ALTERNATE = "alternate"
RANDOM = "random"
#: Encoding names, the contract's packing first.
ENCODINGS = (NEGATIVE, ABSTAIN, ALTERNATE, RANDOM)
#: The encodings a worker computes from its own gradient alone (``abstain``
#: needs one writer holding every worker's signs: an upper bound).
DEPLOYABLE = (NEGATIVE, ALTERNATE, RANDOM)

#: Root of the workers' private seeds of the ``random`` encoding.
ZERO_SEED = 0x5A4F


def check_encoding(encoding, layout=Layout.ELEMENT_MAJOR):
    """Raise ``ValueError`` for an unknown encoding, or ``abstain`` with a
    worker-major layout (where no writer sees the other workers' values)."""
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS}, not {encoding!r}")
    if encoding == ABSTAIN and layout == Layout.WORKER_MAJOR:
        raise ValueError("the abstain encoding needs every worker's value of an element at the "
                         "writer: element-major lines only (use 'alternate' for worker-major)")
    return encoding


def worker_seed(k):
    """Worker ``k``'s private seed of the ``random`` encoding (no two workers
    share one)."""
    if k < 0:
        raise ValueError(f"worker index must be >= 0, not {k}")
    return (ZERO_SEED, int(k))


def zero_coins(grad, k):
    """Worker ``k``'s coins for its gradient ``grad`` (n,): bool (n,), fair
    and drawn from :func:`worker_seed` and a CRC-32 of the worker's own
    packed ``grad > 0`` bits (the step's nonce).  Only the coins at the
    worker's zeros are used."""
    g = np.asarray(grad).ravel()
    nonce = zlib.crc32(np.packbits(g > 0).tobytes())
    rng = np.random.default_rng([*worker_seed(k), nonce])
    raw = np.frombuffer(rng.bytes((g.size + 7) // 8), np.uint8)
    return np.unpackbits(raw, count=g.size).astype(bool)


def sign_bits(grads, encoding=NEGATIVE):
    """Worker ``k``'s bit of element ``i``: bool ``(W, n)`` for gradients ``(W, n)``."""
    check_encoding(encoding)
    g = np.asarray(grads)
    if g.ndim != 2:
        raise ValueError(f"grads must have shape (W, n), not {g.shape}")
    bits = g > 0
    if encoding == NEGATIVE:
        return bits
    zero = g == 0
    if encoding == ALTERNATE:
        odd = (np.arange(g.shape[0]) % 2 == 1)[:, None]
        return bits | (zero & odd)
    if encoding == RANDOM:
        coins = np.stack([zero_coins(g[k], k) for k in range(g.shape[0])])
        return bits | (zero & coins)
    # abstain: the zeros of an element counted in worker order (8-bit
    # counts: W is at most 16); the zero of count c, c = 1..z, takes a one
    # when c <= ones
    count = np.cumsum(zero, axis=0, dtype=np.int8)
    z = count[-1]
    s = bits.sum(axis=0, dtype=np.int8) - (g < 0).sum(axis=0, dtype=np.int8)
    ones = (z >> 1) + ((z & 1).astype(bool) & (s > 0))
    return bits | (zero & (count <= ones[None, :]))


def encode_signs(grads, line_bits, layout=Layout.ELEMENT_MAJOR, encoding=NEGATIVE):
    """:func:`golden.encode_signs` of the bits :func:`sign_bits` chooses:
    uint8 lines of shape ``(ceil(n / E), LINE_BYTES)`` (padding lanes all 0,
    as the golden model pads them)."""
    check_encoding(encoding, layout)
    if encoding == NEGATIVE:
        return golden.encode_signs(grads, line_bits, layout)
    return golden.encode_signs(sign_bits(grads, encoding), line_bits, layout)


def zero_stats(grads):
    """``(zero, all_zero)``: the fraction of the entries of ``grads`` (W, n)
    that are exactly 0, and the fraction of elements (lanes) where every
    worker's entry is 0."""
    g = np.asarray(grads)
    zero = g == 0
    return float(zero.mean()), float(zero.all(axis=0).mean())
