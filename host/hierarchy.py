"""Multi-hop aggregation of gradient signs: exact count forwarding against
re-quantizing partial results at every hop.

A hierarchy has ``workers`` (W) workers per level-1 controller and ``hops``
forwarding hops above level 1, each combining ``fanin`` lower results, so
``K = W * fanin ** hops`` workers in all.  Workers are numbered so that a
level-1 controller holds W consecutive workers and a level-``h`` node
``fanin`` consecutive level-``h-1`` nodes.  Every scheme turns the workers'
gradients ``(K, n)`` into one update direction ``(n,)``:

===================  ==================================================================
scheme               what travels up each hop, what the top returns
===================  ==================================================================
``exact``            the exact count of positive workers below, ``ceil(log2(m+1))``
                     bits for a count of at most ``m`` (the width grows by about
                     ``log2(fanin)`` bits a hop); the top returns ``sgn(2c - K)``, the
                     global majority sign (G-Binary over all K workers, 0 on a tie)
``mom``              majority of majorities with 1-bit signs, as sign lines carry
                     them: a node's sign ``sgn(2c - m)`` is packed as ``> 0`` (a tie
                     travels as negative, the packing of :func:`golden.encode_signs`);
                     the top returns ``sgn`` of its own vote (0 on a tie)
``mom-ternary``      majority of majorities with ties forwarded as 0 (-1/0/+1,
                     log2(3) = 1.58 bits in the paper's accounting)
``dq-sign``          DynamiQ-style: level-1 counts exact, then each node's vote
                     margin ``2c - m`` is stochastically re-quantized to b bits before
                     every hop and summed at the next level; the top returns the sign
``dq-grad``          DynamiQ-style on the gradient values themselves: every worker
                     sends its gradient quantized to b bits, every node sums what it
                     receives and re-quantizes the sum to b bits; the top returns the
                     estimated mean gradient (magnitudes, not a sign)
``signofmean``       reference without compression: the sign of the FP32 mean
===================  ==================================================================

The quantizer (:func:`stochastic_quantize`) is a simplified DynamiQ: groups
of :data:`GROUP` coordinates share a scale, stored as an 8-bit multiple of a
half-precision super-group scale (:data:`SUPERGROUP` coordinates); values
are rounded stochastically to one of ``2**b`` evenly spaced levels in
``[-s, s]``, which is unbiased.  Rounding is independent per value, or
*correlated* as DynamiQ's shared randomness makes it: the m values summed
at one node round up against thresholds ``u_i = (pi_i + gamma_i) / m``
(``pi`` a random permutation of the m senders per coordinate, ``gamma_i``
uniform on [0, 1)), each still uniform (unbiased) but stratified, so the
rounding errors of a sum tend to cancel.  Left out of the paper's method:
the non-uniform levels and the variable bitwidth per super-group (so its
32/C_s-bit statistics stage is not needed and not counted).  Metadata is counted as DynamiQ counts it: ``8 / GROUP +
16 / SUPERGROUP`` bits per coordinate per hop.

The exact scheme's sums are checked against the contract's count path
(``golden.encode_counts``/``transform_counts``) where the hardware can
carry them: :func:`hardware_chain` says for each hop which count operand
(COUNTS4: counts up to 15, 8 per 32-bit lane; COUNTS8: up to 255, 4 per
lane) holds it, and where the fixed 32-bit count lane stops.

Metrics (:func:`compare`): the fraction of coordinates whose final sign
differs from the exact global majority sign (-1/0/+1 compared as values: a
tie of the exact vote counts as agreement only when the scheme also returns
0), the cosine of the direction to the FP32 mean, and bits per coordinate
moved on each hop (payload and metadata).
"""

import math
from dataclasses import dataclass

import numpy as np

from neuron_fabric.contract.facts import COUNT_LANE_BITS, Format, Mode, Operand, count_geometry
from neuron_fabric.host import golden
from neuron_fabric.models.multihop import GROUP, META_BITS, SCHEMES, SUPERGROUP, count_bits, partial_bits

__all__ = ["GROUP", "SUPERGROUP", "META_BITS", "SCHEMES", "ROUNDINGS", "MultiHopTree",
           "stochastic_quantize", "quantize_variance", "exact_counts", "contract_vote", "aggregate",
           "partial_bits", "hop_bits", "hardware_chain", "compare", "cosine", "disagreement",
           "synthetic_gradients"]



#: Rounding of the ``dq-*`` schemes: per value, or DynamiQ's correlated rounding.
ROUNDINGS = ("independent", "correlated")


@dataclass(frozen=True)
class MultiHopTree:
    """W workers per level-1 controller, ``hops`` hops of ``fanin`` above it."""
    workers: int = 8
    fanin: int = 8
    hops: int = 1

    def __post_init__(self):
        for name in ("workers", "fanin"):
            if getattr(self, name) < 2:
                raise ValueError(f"{name} must be at least 2, not {getattr(self, name)}")
        if self.hops < 0:
            raise ValueError(f"hops must be at least 0, not {self.hops}")

    @property
    def total(self):
        """K, the workers of the whole hierarchy."""
        return self.workers * self.fanin ** self.hops

    def below(self, level):
        """Workers under one node of ``level`` (1 = a controller)."""
        return self.workers * self.fanin ** (level - 1)

    def label(self):
        return f"W {self.workers} x {self.fanin}^{self.hops} = {self.total}"


def _check(h, grads):
    grads = np.asarray(grads)
    if grads.ndim != 2 or grads.shape[0] != h.total:
        raise ValueError(f"grads must have shape ({h.total}, n) for {h.label()}, "
                         f"not {grads.shape}")
    return grads


def _combine(x, fanin):
    """Sum groups of ``fanin`` consecutive rows."""
    return x.reshape(-1, fanin, x.shape[-1]).sum(axis=1)


# -- the quantizer ----------------------------------------------------------------

def _pad(x, multiple):
    n = x.shape[-1]
    pad = -n % multiple
    return np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, pad)]) if pad else x


def _scales(groups):
    """Per-group scale ``s >= |x|`` from the groups' maxima ``(M, G)``: the
    super-group maximum rounded up to half precision, the group maximum
    rounded up to an 8-bit multiple of it."""
    m, g = groups.shape
    sg = groups.reshape(m, g // (SUPERGROUP // GROUP), -1).max(axis=2)
    half = sg.astype(np.float16)
    half = np.where(half.astype(np.float64) < sg, np.nextafter(half, np.float16(np.inf)), half)
    sg = np.repeat(half.astype(np.float64), SUPERGROUP // GROUP, axis=1)
    safe = np.where(sg > 0, sg, 1.0)
    q = np.ceil(255 * groups / safe)
    return np.maximum(sg * q / 255, groups)     # never below the group's maximum


def _levels(bits):
    if bits < 1:
        raise ValueError(f"bits must be at least 1, not {bits}")
    return 2 ** bits - 1      # intervals between the 2**b levels


def _positions(x, bits):
    """``(t, s, shape, n)``: each coordinate's position ``t`` in level
    spacings above ``-s`` (0 .. 2**b - 1), shape ``(M, G, GROUP)``, and its
    group's scale ``s`` ``(M, G, 1)``."""
    x = np.asarray(x, dtype=np.float32)
    flat = x.reshape(-1, x.shape[-1]) if x.ndim > 1 else x[None]
    n = flat.shape[1]
    xp = _pad(flat, SUPERGROUP)
    xg = xp.reshape(xp.shape[0], -1, GROUP)
    s = _scales(np.abs(xg).max(axis=2).astype(np.float64)).astype(np.float32)
    s = np.where(s < np.abs(xg).max(axis=2), np.nextafter(s, np.float32(np.inf)), s)
    steps = _levels(bits)
    inv = np.where(s > 0, 1 / np.where(s > 0, s, 1.0), 0.0)
    t = (xg * inv[:, :, None].astype(np.float32) + 1) * np.float32(steps / 2)
    np.clip(t, 0, steps, out=t)
    s = s[:, :, None]
    return t, s, x.shape, n


def _thresholds(shape, rng, summed):
    """Rounding thresholds, uniform on [0, 1) each: independent, or (``summed``
    = m) stratified within each block of m consecutive rows,
    ``(pi + gamma) / m`` with ``pi`` a permutation of 0..m-1 per coordinate."""
    if not summed or summed == 1:
        return rng.random(shape, dtype=np.float32)
    rows = shape[0]
    if rows % summed:
        raise ValueError(f"{rows} rows do not split into sums of {summed}")
    flat = (rows // summed, summed, int(np.prod(shape[1:])))
    pi = np.argsort(rng.random(flat, dtype=np.float32), axis=1).astype(np.float32)
    gamma = rng.random(flat, dtype=np.float32)
    return ((pi + gamma) / np.float32(summed)).reshape(shape)


def stochastic_quantize(x, bits, rng, summed=None):
    """Unbiased stochastic quantization of the rows of ``x`` to ``bits`` bits.

    Each coordinate becomes one of ``2**bits`` evenly spaced levels of
    ``[-s, s]`` (``s`` its group's scale, :func:`_scales`), the level above
    with probability equal to its distance past the level below over the
    spacing, so ``E[q] = x`` (in float32 arithmetic).  ``summed`` = m
    rounds each block of m consecutive rows (the values one node sums) with
    DynamiQ's correlated thresholds (:func:`_thresholds`); None rounds every
    value independently.  Returns the decoded values, float32, the shape of
    ``x``.
    """
    t, s, shape, n = _positions(x, bits)
    k = np.floor(t)
    k += _thresholds(t.shape, rng, summed) < (t - k)
    out = (k * np.float32(2 / _levels(bits)) - 1) * s
    return out.reshape(out.shape[0], -1)[:, :n].reshape(shape)


def quantize_variance(x, bits):
    """The variance of :func:`stochastic_quantize` per coordinate,
    ``spacing**2 * f * (1 - f)`` (``f``: the fractional position between
    two levels), from the same scales: the oracle of the unbiasedness test."""
    t, s, shape, n = _positions(x, bits)
    f = t - np.floor(t)
    var = (2 * s.astype(np.float64) / _levels(bits)) ** 2 * f * (1 - f)
    return var.reshape(var.shape[0], -1)[:, :n].reshape(shape)


# -- the schemes -------------------------------------------------------------------

def exact_counts(h, grads):
    """Per level, the exact counts of positive workers ``(nodes, n)``: level 1
    first, the top last (one row).  A worker is positive when its gradient is
    ``> 0``, as :func:`golden.encode_signs` packs it."""
    grads = _check(h, grads)
    counts = [_combine((grads > 0).astype(np.int64), h.workers)]
    for _ in range(h.hops):
        counts.append(_combine(counts[-1], h.fanin))
    return counts


def contract_vote(h, grads, fmt=None, line_bits=512):
    """The exact scheme through the contract's count path (the golden model):
    each level-1 controller packs its W workers' signs
    (:func:`golden.encode_signs`) and reads them back in G-Binary COUNT
    (:func:`golden.transform`); every hop packs ``fanin`` counts into the
    operand :func:`hardware_chain` picks (:func:`golden.encode_counts`) and
    reads them in G-Binary (:func:`golden.transform_counts`, total = the
    workers below), COUNT on the way and ``fmt`` (default SIGN) at the top.
    Returns the top's values ``(n,)``, int32.  Raises ``ValueError`` where
    the contract's operands cannot carry the hierarchy."""
    grads = _check(h, grads)
    fmt = Format.SIGN if fmt is None else fmt
    chain = hardware_chain(h)
    bad = [(hop, why) for hop, (op, _, why) in enumerate(chain, 1) if op is None]
    if bad:
        raise ValueError(f"{h.label()}: no count operand carries hop {bad[0][0]} ({bad[0][1]})")
    n = grads.shape[1]
    level_fmt = fmt if h.hops == 0 else Format.COUNT
    counts = np.stack([
        golden.decode(golden.transform(golden.encode_signs(grads[i:i + h.workers], line_bits),
                                       h.workers, Mode.GBINARY, level_fmt),
                      h.workers, level_fmt, n)
        for i in range(0, h.total, h.workers)]).astype(np.int32)
    for hop, (op, _, _) in enumerate(chain, 1):
        hop_fmt = fmt if hop == h.hops else Format.COUNT
        counts = np.stack([
            golden.decode_counts(golden.transform_counts(
                golden.encode_counts(counts[i:i + h.fanin], line_bits, op),
                op, h.below(hop + 1), Mode.GBINARY, hop_fmt), hop_fmt, n)
            for i in range(0, len(counts), h.fanin)])
    return counts[0]


def _sign_vote(counts, members):
    return np.sign(2 * counts - members)


def aggregate(h, grads, scheme, bits=4, rng=None, rounding="independent"):
    """The update direction ``(n,)`` of ``scheme`` (:data:`SCHEMES`) over the
    hierarchy ``h`` for the workers' gradients ``(K, n)``; ``bits``, ``rng``
    (a numpy Generator) and ``rounding`` (:data:`ROUNDINGS`) for the
    ``dq-*`` schemes."""
    grads = _check(h, grads)
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; known: {SCHEMES}")
    if scheme == "exact":
        return _sign_vote(exact_counts(h, grads)[-1][0], h.total).astype(np.float64)
    if scheme in ("mom", "mom-ternary"):
        vote = _sign_vote(_combine((grads > 0).astype(np.int64), h.workers), h.workers)
        for _ in range(h.hops):
            if scheme == "mom":
                up = (vote > 0).astype(np.int64)          # a tie travels as negative
                vote = _sign_vote(_combine(up, h.fanin), h.fanin)
            else:
                vote = np.sign(_combine(vote, h.fanin))
        return vote[0].astype(np.float64)
    if scheme == "signofmean":
        return np.sign(grads.astype(np.float64).mean(axis=0))
    if rng is None:
        raise ValueError(f"scheme {scheme!r} needs rng")
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {ROUNDINGS}, not {rounding!r}")
    corr = rounding == "correlated"
    if scheme == "dq-sign":
        part = (2 * exact_counts(h, grads)[0] - h.workers).astype(np.float64)
        for _ in range(h.hops):
            part = _combine(stochastic_quantize(part, bits, rng, h.fanin if corr else None),
                            h.fanin)
        return np.sign(part[0])
    part = _combine(stochastic_quantize(grads, bits, rng, h.workers if corr else None),
                    h.workers)     # dq-grad
    for _ in range(h.hops):
        part = _combine(stochastic_quantize(part, bits, rng, h.fanin if corr else None), h.fanin)
    return part[0] / h.total


# -- bits moved ------------------------------------------------------------------

def hop_bits(h, scheme, bits=4):
    """Bits per coordinate on each upward hop, hop 0 (workers -> level-1
    controller) first: a list of ``(payload, metadata)``."""
    return [partial_bits(scheme, 1 if hop == 0 else h.below(hop), bits)
            for hop in range(h.hops + 1)]


def hardware_chain(h):
    """How the contract's count operands carry the exact scheme's hops.

    Returns a list, one entry per hop above level 1: ``(operand or None,
    count_max, why)``: the narrowest operand whose b-bit count holds the
    lower level's largest count (``W * fanin**(hop-1)``) and whose 32-bit
    lane holds ``fanin`` contributors (``fanin * b <= 32``), with the
    contract's total limit (``N * (2**b - 1)``: 120 / 1020) checked on the
    node's own workers; None and the reason where none does.
    """
    chain = []
    for hop in range(1, h.hops + 1):
        below, total = h.below(hop), h.below(hop + 1)
        pick, why = None, []
        for op in (Operand.COUNTS4, Operand.COUNTS8):
            b, n = count_geometry(op)
            if below > 2 ** b - 1:
                why.append(f"{op.name}: a count up to {below} needs {count_bits(below)} bits")
            elif h.fanin > n:
                why.append(f"{op.name}: fan-in {h.fanin} x {b} bits > the "
                           f"{COUNT_LANE_BITS}-bit count lane")
            elif total > n * (2 ** b - 1):
                why.append(f"{op.name}: total {total} > {n * (2 ** b - 1)}")
            else:
                pick, why = op, [f"{h.fanin} x {b}-bit counts in a {COUNT_LANE_BITS}-bit lane"]
                break
        chain.append((pick, below, ", ".join(why)))
    return chain


# -- metrics -----------------------------------------------------------------------

def cosine(u, v):
    """Cosine of the angle between ``u`` and ``v`` (0 if either is zero)."""
    u = np.asarray(u, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    norm = np.sqrt(np.sum(u * u) * np.sum(v * v))
    return float(np.sum(u * v) / norm) if norm else 0.0


def disagreement(direction, reference):
    """Fraction of coordinates where ``sgn(direction)`` differs from the
    reference signs (-1/0/+1 compared as values)."""
    return float(np.mean(np.sign(direction) != np.sign(reference)))


def compare(h, grads, schemes=SCHEMES, bits=(4, 8), seed=0, roundings=("independent",)):
    """Every scheme on one set of gradients: a list of rows (dicts) with
    ``scheme``, ``bits`` (None when the scheme has no b), ``rounding``
    (None, or one of ``roundings`` for the ``dq-*`` schemes), ``disagreement``
    (with the exact global majority sign), ``disagreement_decided`` (the
    same over the coordinates whose exact vote is not a tie),
    ``disagreement_mean_sign`` (with
    the sign of the FP32 mean), ``cosine`` (to the FP32 mean), ``hop_bits``
    and ``bits_per_coord`` (the sum over hops of payload + metadata)."""
    grads = _check(h, grads)
    mean = grads.astype(np.float64).mean(axis=0)
    exact = aggregate(h, grads, "exact")
    decided = exact != 0
    rows = []
    for scheme in schemes:
        dq = scheme.startswith("dq")
        for b, rounding in [(b, r) for b in bits for r in roundings] if dq else [(None, None)]:
            rng = np.random.default_rng([seed, b or 0, SCHEMES.index(scheme),
                                         ROUNDINGS.index(rounding) if dq else 0])
            d = aggregate(h, grads, scheme, bits=b, rng=rng, rounding=rounding or "independent")
            per_hop = hop_bits(h, scheme, b)
            rows.append(dict(scheme=scheme, bits=b, rounding=rounding,
                             disagreement=disagreement(d, exact),
                             disagreement_decided=disagreement(d[decided], exact[decided]),
                             disagreement_mean_sign=disagreement(d, mean),
                             cosine=cosine(d, mean),
                             hop_bits=[list(p) for p in per_hop],
                             bits_per_coord=float(sum(p + m for p, m in per_hop))))
    return rows


def synthetic_gradients(k, n, rho=0.01, seed=0, group=GROUP):
    """Correlated Gaussian gradients ``(k, n)``, float32: worker ``i``'s
    coordinate ``j`` is ``a_j (mu_j + sqrt(1 - rho) z_ij)`` with ``mu_j ~
    N(0, rho)`` shared by all workers (correlation ``rho`` between two
    workers) and a log-normal scale ``a`` per group of coordinates (the
    magnitude skew across groups that DynamiQ exploits)."""
    rng = np.random.default_rng([seed, k, n])
    mu = rng.standard_normal(n) * math.sqrt(rho)
    scale = np.repeat(np.exp(rng.standard_normal(-(-n // group))), group)[:n]
    z = rng.standard_normal((k, n), dtype=np.float32)
    return (scale * (mu + math.sqrt(1 - rho) * z)).astype(np.float32)
