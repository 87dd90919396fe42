"""The host-side encodings of a zero gradient (host/encoding.py) through the
gradient runtime and the device model: an all-zero lane ties, one non-zero
worker decides its lane, the stored bytes are the documented ones, and the
abstaining G-Binary SIGN lane is numpy's sign of the summed signs."""

import asyncio

import numpy as np
import pytest

from neuron_fabric.contract.facts import Format, Layout, Mode, TopParams
from neuron_fabric.host import encoding
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.host.runtime import GradientRuntime, GroupPolicy


def run(coro):
    return asyncio.run(coro)


def through_device(grads, encoding_name, fmt=Format.SIGN, mode=Mode.GBINARY, workers=8):
    """The runtime's decoded output and the stored lines for one group."""
    async def go():
        dev = Device(TopParams(workers=workers))
        policy = GroupPolicy(mode, fmt, encoding=encoding_name)
        rt = await GradientRuntime.create(dev, Driver(dev, dev.params), {"g": grads.shape[1]},
                                          {"g": policy})
        out = await rt.step({"g": grads})
        return out["g"], dev.peek(0, rt.windows["g"].lines)
    return run(go())


@pytest.mark.parametrize("name", ["abstain", "alternate"])
@pytest.mark.parametrize("workers", [4, 8, 16])
def test_an_all_zero_lane_returns_the_tie(name, workers):
    g = np.zeros((workers, 10), np.float32)
    sign, _ = through_device(g, name, workers=workers)
    np.testing.assert_array_equal(sign, 0.0)
    count, _ = through_device(g, name, Format.COUNT, workers=workers)
    np.testing.assert_array_equal(count, 0.0)      # (2 c - W) / W with c = W / 2


def test_the_contract_packing_moves_an_all_zero_lane_a_full_step():
    g = np.zeros((8, 10), np.float32)
    margin, _ = through_device(g, "negative", Format.MARGIN)
    np.testing.assert_array_equal(margin, -1.0)    # a = -W, divided by W


@pytest.mark.parametrize("k", range(8))
@pytest.mark.parametrize("value", [-0.25, 3.0])
def test_one_non_zero_worker_decides_its_lane(k, value):
    g = np.zeros((8, 5), np.float32)
    g[k, 2] = value
    sign, _ = through_device(g, "abstain")
    np.testing.assert_array_equal(sign, [0, 0, np.sign(value), 0, 0])


def test_the_bytes_written_are_as_documented():
    # One element, W = 8: worker k's bit is bit k of the lane's byte.
    # Zeros at workers 0, 2, 4, 5, 7 (z = 5); the others +, -, + (s = +1).
    g = np.array([[0.0], [0.5], [0.0], [-1.0], [0.0], [0.0], [2.0], [0.0]], np.float32)
    _, stored = through_device(g, "abstain")
    # abstain: floor(5/2) + 1 (z odd, s > 0) = 3 ones, the first zeros 0, 2, 4:
    # bits 0, 1, 2, 4, 6 set = 0x57.
    assert stored[0, 0] == 0x57
    _, stored = through_device(g, "alternate")
    # alternate: zeros of odd workers (5, 7) pack 1; non-zeros 1, 6 positive: 0xE2.
    assert stored[0, 0] == 0xE2
    _, stored = through_device(g, "negative")
    # negative: only workers 1 and 6 are > 0: 0x42.
    assert stored[0, 0] == 0x42
    # padding lanes past n stay 0 under every encoding
    assert not stored[0, 1:].any()


def test_abstaining_g_binary_is_the_sign_of_the_summed_signs():
    # MajoritySignSGD with the contract's tie rule, in numpy: sgn(sum_k sgn(g_k)).
    rng = np.random.default_rng(5)
    g = rng.integers(-1, 2, size=(8, 4000)).astype(np.float32) * rng.random((8, 4000),
                                                                            dtype=np.float32)
    g[:, :50] = 0.0
    want = np.sign(np.sign(g).sum(axis=0)).astype(np.float32)
    sign, _ = through_device(g, "abstain")
    assert sign.tobytes() == want.tobytes()
    assert (np.sign(g) == 0).any(axis=0).mean() > 0.5      # zeros in most lanes


def test_sign_bits_oracle_on_random_ternary_matrices():
    # |margin of the bits| and the summed signs, for every W the device takes.
    rng = np.random.default_rng(11)
    for w in (4, 8, 16):
        g = rng.integers(-1, 2, size=(w, 3000)).astype(np.float32)
        bits = encoding.sign_bits(g, "abstain")
        a = 2 * bits.sum(axis=0) - w
        s = np.sign(g).sum(axis=0)
        z = (g == 0).sum(axis=0)
        np.testing.assert_array_equal(np.sign(a), np.sign(s))
        np.testing.assert_array_equal(a, s + np.where(z % 2 == 1, np.sign(s), 0))
        np.testing.assert_array_equal(bits[g != 0], g[g != 0] > 0)


def test_abstain_refuses_worker_major_lines():
    with pytest.raises(ValueError, match="element-major lines only"):
        GroupPolicy(Mode.GBINARY, Format.SIGN, layout=Layout.WORKER_MAJOR,
                    encoding="abstain").check(8, 512)
    with pytest.raises(ValueError, match="encoding must be one of"):
        GroupPolicy(Mode.GBINARY, Format.SIGN, encoding="zero").check(8, 512)


def test_zero_stats():
    g = np.array([[0, 1, 0], [0, 0, 2]], np.float32)
    assert encoding.zero_stats(g) == (4 / 6, 1 / 3)


# -- the worker-local random coin of a zero ----------------------------------------

def test_random_keeps_the_non_zero_signs_and_is_reproducible():
    rng = np.random.default_rng(2)
    g = rng.integers(-1, 2, size=(8, 5000)).astype(np.float32)
    bits = encoding.sign_bits(g, "random")
    np.testing.assert_array_equal(bits[g != 0], g[g != 0] > 0)
    np.testing.assert_array_equal(bits, encoding.sign_bits(g.copy(), "random"))


def test_random_is_worker_local():
    # Worker 3's bits depend on worker 3's gradient and index alone: changing
    # every other worker's gradient leaves them as they were.
    rng = np.random.default_rng(3)
    g = rng.integers(-1, 2, size=(8, 4000)).astype(np.float32)
    other = rng.integers(-1, 2, size=(8, 4000)).astype(np.float32)
    other[3] = g[3]
    np.testing.assert_array_equal(encoding.sign_bits(g, "random")[3],
                                  encoding.sign_bits(other, "random")[3])


def test_a_workers_zero_bits_are_a_fair_coin():
    # 200 draws (steps with different non-zero patterns) of 1,000 zeros of
    # worker 5: the mean of the bits is 1/2 within 6 standard errors
    # (sqrt(0.25 / 200,000) = 0.0011), each draw differs from the previous,
    # and two workers' coins agree on about half the zeros.
    rng = np.random.default_rng(4)
    ones, changed, agree, draws, n = 0, 0, 0, 200, 1000
    last = None
    for _ in range(draws):
        g = np.zeros((8, n + 64), np.float32)
        g[:, n:] = rng.standard_normal((8, 64))       # the step's non-zero entries
        bits = encoding.sign_bits(g, "random")[:, :n]
        ones += int(bits[5].sum())
        agree += int((bits[5] == bits[6]).sum())
        changed += last is not None and not np.array_equal(bits[5], last)
        last = bits[5]
    assert abs(ones / (draws * n) - 0.5) < 6 * np.sqrt(0.25 / (draws * n))
    assert abs(agree / (draws * n) - 0.5) < 6 * np.sqrt(0.25 / (draws * n))
    assert changed == draws - 1


def test_random_zeros_cancel_on_average_through_the_device():
    # An all-zero group of 20,000 elements: each lane's margin a = 2 c - W
    # has mean 0 and variance W (W fair coins of +-1); the decoded MARGIN lane
    # is a / W. The mean over the lanes is 0 within 6 standard errors.
    n, w = 20_000, 8
    g = np.zeros((w, n), np.float32)
    margin, _ = through_device(g, "random", Format.MARGIN, workers=w)
    a = margin * w
    assert abs(a.mean()) < 6 * np.sqrt(w / n)
    assert abs(a.var() - w) < 0.1 * w
    assert set(np.unique(a)) <= set(range(-w, w + 1, 2))


def test_random_works_on_worker_major_lines():
    GroupPolicy(Mode.GBINARY, Format.SIGN, layout=Layout.WORKER_MAJOR,
                encoding="random").check(8, 512)


def test_deployable_encodings_leave_out_abstain():
    assert "abstain" not in encoding.DEPLOYABLE
    assert set(encoding.DEPLOYABLE) < set(encoding.ENCODINGS)
