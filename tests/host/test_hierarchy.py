"""Multi-hop schemes and metrics (host/hierarchy.py) against hand-worked
examples, the golden model's wide G-Binary (golden.transform_wide) and the
quantizer's own variance formula, checked statistically."""

import math
from statistics import NormalDist

import numpy as np
import pytest

from neuron_fabric.host import golden
from neuron_fabric.host import hierarchy as hy
from neuron_fabric.contract.facts import Format, Mode, Operand

# -- a 2-hop hierarchy small enough to work by hand ------------------------------
# W 4 workers per controller, fan-in 2, 2 hops: 16 workers, 4 controllers, 3
# coordinates.  Positive workers per controller (level-1 counts):
#   coordinate 0: 3, 3, 0, 1  -> 7 of 16: a = -2, exact sign -1
#   coordinate 1: 2, 2, 4, 0  -> 8 of 16: a tie, exact sign 0
#   coordinate 2: 3, 3, 3, 0  -> 9 of 16: a = +2, exact sign +1
HAND = hy.MultiHopTree(workers=4, fanin=2, hops=2)
HAND_COUNTS = np.array([[3, 2, 3], [3, 2, 3], [0, 4, 3], [1, 0, 0]])


def _hand_grads(negative=-1.0):
    g = np.full((16, 3), negative, dtype=np.float32)
    for ctrl in range(4):
        for j in range(3):
            g[4 * ctrl:4 * ctrl + HAND_COUNTS[ctrl, j], j] = 1.0
    return g


def test_hand_counts_per_level():
    levels = hy.exact_counts(HAND, _hand_grads())
    assert levels[0].tolist() == HAND_COUNTS.tolist()
    assert levels[1].tolist() == [[6, 4, 6], [1, 4, 3]]
    assert levels[2].tolist() == [[7, 8, 9]]


def test_hand_schemes():
    g = _hand_grads()
    assert hy.aggregate(HAND, g, "exact").tolist() == [-1, 0, 1]
    # Ternary: level-1 votes (+,+,-,-), (0,0,+,-), (+,+,+,-); level 2 sums
    # (2,-2), (0,0), (2,0) -> (+,-), (0,0), (+,0); top sums 0, 0, +1.
    assert hy.aggregate(HAND, g, "mom-ternary").tolist() == [0, 0, 1]
    # 1-bit: a tie travels as negative.  Coordinate 1: level-1 bits 0,0,1,0 ->
    # level-2 counts 0, 1 of 2 -> votes -1, 0 -> bits 0, 0 -> top -1.
    # Coordinate 2: bits 1,1,1,0 -> counts 2, 1 -> votes +1, 0 -> bits 1, 0
    # -> top count 1 of 2: 0.
    assert hy.aggregate(HAND, g, "mom").tolist() == [0, -1, 0]


def test_hand_metrics():
    g = _hand_grads()
    rows = {r["scheme"]: r for r in hy.compare(HAND, g, schemes=("exact", "mom", "mom-ternary"))}
    assert rows["exact"]["disagreement"] == 0
    assert rows["mom-ternary"]["disagreement"] == pytest.approx(1 / 3)
    assert rows["mom-ternary"]["disagreement_decided"] == pytest.approx(1 / 2)
    assert rows["mom"]["disagreement"] == pytest.approx(1)
    assert rows["mom"]["disagreement_decided"] == pytest.approx(1)
    # FP32 mean of +-1 gradients: (-2, 0, +2) / 16; exact (-1, 0, 1) is parallel
    # to it, (0, 0, 1) at 45 degrees.
    assert rows["exact"]["cosine"] == pytest.approx(1)
    assert rows["mom-ternary"]["cosine"] == pytest.approx(1 / math.sqrt(2))
    # Sign of the mean (-1, 0, +1): the exact vote matches it everywhere.
    assert rows["exact"]["disagreement_mean_sign"] == 0


def test_hand_bits_per_hop():
    # Hop 0 carries signs; hop 1 counts up to 4 (3 bits); hop 2 up to 8 (4 bits).
    assert hy.hop_bits(HAND, "exact") == [(1, 0), (3, 0), (4, 0)]
    assert hy.hop_bits(HAND, "mom") == [(1, 0)] * 3
    assert hy.hop_bits(HAND, "mom-ternary") == [(1, 0), (math.log2(3), 0), (math.log2(3), 0)]
    meta = 8 / 16 + 16 / 256
    assert hy.hop_bits(HAND, "dq-sign", 8) == [(1, 0), (8, meta), (8, meta)]
    assert hy.hop_bits(HAND, "dq-grad", 4) == [(4, meta)] * 3


def test_zero_gradient_is_negative():
    """A zero gradient votes negative, as golden.encode_signs packs it (> 0)."""
    g = _hand_grads(negative=0.0)
    assert hy.aggregate(HAND, g, "exact").tolist() == [-1, 0, 1]


# -- the exact scheme against the golden model --------------------------------------

@pytest.mark.parametrize("shape", [(8, 8, 1), (8, 4, 3), (16, 4, 1), (8, 8, 0), (16, 16, 2)])
def test_exact_is_wide_gbinary(shape):
    h = hy.MultiHopTree(*shape)
    rng = np.random.default_rng(list(shape))
    g = rng.standard_normal((h.total, 700)).astype(np.float32) + 0.05
    signs = g > 0
    for fmt in (Format.SIGN, Format.COUNT):
        wide = golden.decode_counts(golden.transform_wide(signs, Mode.GBINARY, fmt), fmt, 700)
        ours = (hy.aggregate(h, g, "exact") if fmt == Format.SIGN
                else hy.exact_counts(h, g)[-1][0])
        assert np.array_equal(ours, wide)
        if all(op is not None for op, _, _ in hy.hardware_chain(h)):
            assert np.array_equal(hy.contract_vote(h, g, fmt), wide)


def test_hardware_chain():
    ops = lambda *s: [op for op, _, _ in hy.hardware_chain(hy.MultiHopTree(*s))]  # noqa: E731
    assert ops(8, 8, 1) == [Operand.COUNTS4]          # the contract's two-level case
    assert ops(8, 8, 2) == [Operand.COUNTS4, None]    # a 64 count needs COUNTS8: fan-in <= 4
    assert ops(16, 4, 1) == [Operand.COUNTS8]         # a count of 16 needs 5 bits
    assert ops(16, 8, 1) == [None]                    # 8 x 8 bits > 32
    assert ops(8, 4, 3) == [Operand.COUNTS4, Operand.COUNTS8, Operand.COUNTS8]
    assert ops(16, 4, 3) == [Operand.COUNTS8, Operand.COUNTS8, None]   # a 256 count
    with pytest.raises(ValueError, match="no count operand"):
        hy.contract_vote(hy.MultiHopTree(8, 8, 2), np.zeros((512, 4), np.float32))


# -- the quantizer ---------------------------------------------------------------

def test_quantizer_hand_levels():
    # One group of scale 1 (super-group maximum 1.0 is exact in half
    # precision; group maximum 1.0 -> 255/255): b = 2 levels -1, -1/3, 1/3, 1.
    x = np.zeros(256)
    x[:4] = [1.0, 0.5, -1.0, 0.0]
    out = hy.stochastic_quantize(np.tile(x, (2000, 1)), 2, np.random.default_rng(0))
    assert set(np.unique(out[:, 0])) == {1.0}
    assert set(np.unique(out[:, 2])) == {-1.0}
    assert np.allclose(np.unique(out[:, 1]), [1 / 3, 1])          # 0.5 = 1/3 + 0.25 * 2/3
    assert np.allclose(np.unique(out[:, 3]), [-1 / 3, 1 / 3])
    assert np.all(out[:, 16:] == 0)                                # zero groups stay 0
    # P(0.5 -> 1) = (0.5 - 1/3) / (2/3) = 1/4
    p = np.mean(np.isclose(out[:, 1], 1.0))
    assert abs(p - 0.25) <= 5 * math.sqrt(0.25 * 0.75 / 2000)


@pytest.mark.parametrize("bits", [1, 4, 8])
def test_quantizer_unbiased(bits):
    """E[q] = x: the mean of T draws lies within z standard errors of x, the
    standard error from the quantizer's variance formula, z for a
    family-wise error of 1e-3 over the coordinates (Bonferroni)."""
    rng = np.random.default_rng(123)
    n, trials = 512, 4000
    x = (rng.standard_normal(n) * np.exp(rng.standard_normal(n))).astype(np.float32)
    draws = hy.stochastic_quantize(np.tile(x, (trials, 1)), bits, rng).astype(np.float64)
    var = hy.quantize_variance(x, bits)
    z = NormalDist().inv_cdf(1 - 1e-3 / (2 * n))
    err = np.abs(draws.mean(axis=0) - x)
    tol = z * np.sqrt(var / trials) + 1e-6 * np.abs(x).max()   # float32 rounding
    assert np.all(err <= tol), (err / tol).max()
    # and the variance formula matches the draws (relative error of a sample
    # variance ~ sqrt(2 / T); checked in aggregate over coordinates)
    emp = draws.var(axis=0, ddof=1)
    assert emp.sum() == pytest.approx(var.sum(), rel=5 * math.sqrt(2 / trials))


def test_correlated_rounding_two_halves_cancel():
    """DynamiQ's example: two senders each round a value halfway between two
    levels (x = 0 with levels -1, +1 at one bit).  Independent rounding
    gives the sum -2, 0 or +2 (variance 2); correlated rounding (thresholds
    (pi + gamma) / 2) always rounds one up and one down: the sum is 0."""
    x = np.zeros((2, 256), np.float32)
    x[:, 1::2] = 1.0                       # every group's scale is 1
    rng = np.random.default_rng(9)
    sums_c = np.array([hy.stochastic_quantize(x, 1, rng, summed=2).sum(axis=0)[::2]
                       for _ in range(200)])
    sums_i = np.array([hy.stochastic_quantize(x, 1, rng).sum(axis=0)[::2] for _ in range(200)])
    assert np.all(sums_c == 0)
    assert set(np.unique(sums_i)) == {-2.0, 0.0, 2.0}
    assert sums_i.var() == pytest.approx(2.0, rel=0.1)     # 25,600 draws


@pytest.mark.parametrize("bits", [1, 3])
def test_correlated_rounding_unbiased(bits):
    """Each correlated threshold is uniform on [0, 1): E[q] = x per value, as
    for independent rounding (same bound as test_quantizer_unbiased)."""
    rng = np.random.default_rng(321)
    n, trials, m = 256, 2000, 4
    x = (rng.standard_normal((m, n)) * np.exp(rng.standard_normal(n))).astype(np.float32)
    draws = np.array([hy.stochastic_quantize(x, bits, rng, summed=m) for _ in range(trials)],
                     np.float64)
    var = hy.quantize_variance(x, bits)
    z = NormalDist().inv_cdf(1 - 1e-3 / (2 * n * m))
    tol = z * np.sqrt(var / trials) + 1e-6 * np.abs(x).max()
    assert np.all(np.abs(draws.mean(axis=0) - x) <= tol)
    with pytest.raises(ValueError, match="do not split"):
        hy.stochastic_quantize(x[:3], bits, rng, summed=2)


def test_dq_grad_unbiased_over_hops():
    """The DynamiQ-style multi-hop estimate of the mean is unbiased: each
    hop's quantization is unbiased given the level below."""
    h = hy.MultiHopTree(4, 2, 2)
    rng = np.random.default_rng(7)
    g = hy.synthetic_gradients(h.total, 64, rho=0.2, seed=3)
    trials = 3000
    est = np.array([hy.aggregate(h, g, "dq-grad", 4, rng) for _ in range(trials)], np.float64)
    mean = g.astype(np.float64).mean(axis=0)
    z = NormalDist().inv_cdf(1 - 1e-3 / (2 * 64))
    se = est.std(axis=0, ddof=1) / math.sqrt(trials)
    assert np.all(np.abs(est.mean(axis=0) - mean) <= z * se + 1e-6)


def test_rejects_bad_shapes():
    with pytest.raises(ValueError, match="shape"):
        hy.aggregate(HAND, np.zeros((15, 3)), "exact")
    with pytest.raises(ValueError, match="unknown scheme"):
        hy.aggregate(HAND, np.zeros((16, 3)), "nope")
    with pytest.raises(ValueError, match="rng"):
        hy.aggregate(HAND, np.zeros((16, 3)), "dq-grad")
