"""Gradient runtime on the device model: hand-worked examples, every low-bit
policy against the contract's one-lane reference, the region table it programs,
mode changes, bad input refused before anything is written, and the bytes
it counts."""

import asyncio

import numpy as np
import pytest

from neuron_fabric.host import golden
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.contract.facts import Format, GateKind, Mode, TopParams
from neuron_fabric.host.runtime import (FP32, G_BINARY, G_BINARY_MARGIN, G_TERNARY,
                                        G_TERNARY_ROTATING,
                                        GradientRuntime, GroupPolicy, g_ternary_margin)
from neuron_fabric.models.traffic import ParameterGroups, traffic_ratio


def run(coro):
    return asyncio.run(coro)


async def make(groups, policies, params=TopParams(), base=0):
    dev = Device(params)
    rt = await GradientRuntime.create(dev, Driver(dev, params), groups, policies, base=base)
    return dev, rt


#: A build whose low-bit reads return W-bit lanes (no packed view, contract
#: section 6): the windows, regions and bytes counted by hand below are
#: those of a lane read (a view's: test_runtime_view.py).
LANES = TopParams(profile="full-no-packed_view")


def grads_from_votes(votes, workers):
    """Gradients (W, n) where element i has ``votes[i]`` positive workers (0..W)."""
    g = -np.ones((workers, len(votes)), dtype=np.float32)
    for i, v in enumerate(votes):
        g[:v, i] = 0.5
    return g


def reference(g, policy):
    """Direction per element from the contract's one-lane reference (element j is
    lane j of a window whose first element is its lane 0, so phase is 0)."""
    workers = g.shape[0]
    out = []
    for j in range(g.shape[1]):
        lane = sum(int(g[k, j] > 0) << k for k in range(workers))
        value = golden.transform_lane(lane, j, workers, policy.mode, policy.format,
                                      policy.gate_kind, policy.period, policy.keep,
                                      policy.threshold, phase=0)
        if policy.format != Format.COUNT and value >= 1 << (workers - 1):
            value -= 1 << workers
        if policy.format == Format.SIGN:
            out.append(value)
        elif policy.format == Format.MARGIN:
            out.append(value / workers)
        else:
            out.append((2 * value - workers) / workers)
    return np.array(out, dtype=np.float32)


# -- hand-worked ------------------------------------------------------------------

def test_six_of_eight_positive_by_hand():
    # Paper section 2: six positive and two negative votes of eight workers give
    # a positive G-Binary direction; the 2-of-3 gate zeroes every third element.
    g = grads_from_votes([6, 6, 6, 2, 4], 8)
    pols = {"b": G_BINARY, "t": G_TERNARY, "m": G_BINARY_MARGIN,
            "c": GroupPolicy(Mode.GBINARY, Format.COUNT), "gm": g_ternary_margin(4)}

    async def go():
        _, rt = await make({k: 5 for k in pols}, pols)
        return await rt.step({k: g for k in pols})

    out = run(go())
    assert out["b"].tolist() == [1, 1, 1, -1, 0]
    assert out["t"].tolist() == [1, 1, 0, -1, 0]
    assert out["m"].tolist() == [0.5, 0.5, 0.5, -0.5, 0]
    assert out["c"].tolist() == [0.5, 0.5, 0.5, -0.5, 0]
    assert out["gm"].tolist() == [1, 1, 1, -1, 0]       # |a| = 4 >= T = 4 kept; the tie is 0


def test_zero_gradient_votes_non_positive():
    # b = 1 only for a positive gradient: all-zero gradients are a unanimous
    # non-positive vote, so the majority sign is -1.
    async def go():
        _, rt = await make({"g": 3}, {"g": G_BINARY})
        return await rt.step({"g": np.zeros((8, 3), np.float32)})
    assert run(go())["g"].tolist() == [-1, -1, -1]


# -- against the one-lane reference ---------------------------------------------------------

POLICIES = [G_BINARY, G_TERNARY, G_BINARY_MARGIN, GroupPolicy(Mode.GBINARY, Format.COUNT),
            GroupPolicy(Mode.GTERNARY, Format.COUNT, GateKind.PATTERN, period=5, keep=3),
            GroupPolicy(Mode.GTERNARY, Format.MARGIN, GateKind.PATTERN, period=3, keep=2)]


@pytest.mark.parametrize("workers", [4, 8, 16])
@pytest.mark.parametrize("line_bits", [64, 512])
def test_every_policy_matches_the_lane_reference(workers, line_bits):
    rng = np.random.default_rng(workers * line_bits)
    sizes = {"a": 130, "b": 1, "c": 77, "d": 64, "e": 200, "f": 33, "g": 50}
    pols = dict(zip(sizes, POLICIES + [g_ternary_margin(workers // 2)]))
    params = TopParams(line_bits=line_bits, workers=workers)
    grads = {k: rng.standard_normal((workers, n)).astype(np.float32) for k, n in sizes.items()}

    async def go():
        _, rt = await make(sizes, pols, params, base=params.line_bytes * 3)
        return await rt.step(grads)

    out = run(go())
    for k, pol in pols.items():
        np.testing.assert_array_equal(out[k], reference(grads[k], pol), err_msg=k)


def test_fp32_group_is_the_mean_and_touches_no_device():
    rng = np.random.default_rng(1)
    g = rng.standard_normal((8, 100)).astype(np.float32)

    async def go():
        dev, rt = await make({"g": 100}, {"g": FP32})
        out = await rt.step({"g": g})
        return out, await Driver(dev, dev.params).counters(), rt.regions

    out, counters, regions = run(go())
    np.testing.assert_array_equal(out["g"], np.mean(g, axis=0, dtype=np.float32))
    assert all(v == 0 for v in counters.values())
    assert regions == {}


def test_g_binary_is_majority_sign_sgd():
    # MajoritySignSGD in plain numpy: each worker sends sign bits (positive or
    # not), the update is the sign of (positive votes - other votes).
    rng = np.random.default_rng(2)
    g = rng.standard_normal((8, 5000)).astype(np.float32)
    g[:, :100] = 0.0
    votes = (g > 0).sum(axis=0)
    majority = np.sign(votes - (8 - votes)).astype(np.float32)

    async def go():
        _, rt = await make({"g": 5000}, {"g": G_BINARY})
        return await rt.step({"g": g})

    assert run(go())["g"].tobytes() == majority.tobytes()


# -- region table and mode changes ------------------------------------------------------------

def test_windows_and_regions():
    sizes = {"x": 100, "y": 64, "z": 65}

    async def go():
        dev, rt = await make(sizes, {"x": G_BINARY, "y": FP32, "z": G_TERNARY}, LANES,
                             base=0x1000)
        d = Driver(dev, dev.params)
        return rt, [await d.region(r) for r in range(2)]

    rt, regs = run(go())
    w = rt.windows
    assert [(w[k].base, w[k].lines) for k in sizes] == [(0x1000, 2), (0x1080, 1), (0x10C0, 2)]
    assert rt.regions == {"x": 0, "z": 1}
    assert (regs[0]["base"], regs[0]["limit"], regs[0]["mode"], regs[0]["enable"]) == \
        (0x1000, 0x1080, Mode.GBINARY, 1)
    assert (regs[1]["base"], regs[1]["limit"], regs[1]["mode"], regs[1]["period"],
            regs[1]["keep"], regs[1]["format"]) == (0x10C0, 0x1140, Mode.GTERNARY, 3, 2, Format.SIGN)


def test_set_policy_between_steps():
    g = grads_from_votes([6, 6, 6, 2], 8)

    async def go():
        dev, rt = await make({"g": 4}, {"g": G_BINARY})
        d = Driver(dev, dev.params)
        seen = [(await rt.step({"g": g}))["g"].tolist()]
        await rt.set_policy("g", G_TERNARY)
        seen.append((await rt.step({"g": g}))["g"].tolist())
        cfg = (await d.region(0))["mode"]
        await rt.set_policy("g", FP32)
        seen.append((await rt.step({"g": g}))["g"].tolist())
        cleared = await d.region(0)
        await rt.set_policy("g", G_BINARY_MARGIN)
        seen.append((await rt.step({"g": g}))["g"].tolist())
        return seen, cfg, cleared, rt.regions

    seen, cfg, cleared, regions = run(go())
    assert seen[0] == [1, 1, 1, -1]
    assert seen[1] == [1, 1, 0, -1]
    assert cfg == Mode.GTERNARY
    assert seen[2] == np.mean(g, axis=0).tolist()
    assert cleared["enable"] == 0 and cleared["limit"] == 0
    assert seen[3] == [0.5, 0.5, 0.5, -0.5]
    assert regions == {"g": 0}


def test_close_disables_the_regions():
    async def go():
        dev, rt = await make({"a": 10, "b": 10}, {"a": G_BINARY, "b": G_TERNARY})
        await rt.close()
        d = Driver(dev, dev.params)
        return [(await d.region(r))["enable"] for r in range(2)], rt.regions

    assert run(go()) == ([0, 0], {})


# -- bad input ----------------------------------------------------------------------------

def _nan():
    g = np.ones((8, 10), np.float32)
    g[3, 7] = np.nan
    return g


def _inf():
    g = np.ones((8, 10), np.float32)
    g[0, 0] = -np.inf
    return g


@pytest.mark.parametrize("grads, message", [
    ({"a": np.ones((4, 10), np.float32)}, "4 workers, but the device is built for W=8"),
    ({"a": np.ones((16, 10), np.float32)}, "16 workers"),
    ({"a": np.ones((8, 65), np.float32)}, "do not fit its window of 1 lines"),
    ({"a": np.ones((8, 9), np.float32)}, "has 10 elements, not 9"),
    ({"a": np.ones(10, np.float32)}, "shape (W, n)"),
    ({"a": np.ones((8, 10), np.int32)}, "floating point"),
    ({"a": _nan()}, "non-finite gradient nan at worker 3, element 7"),
    ({"a": _inf()}, "non-finite gradient -inf at worker 0, element 0"),
    ({"nope": np.ones((8, 10), np.float32)}, "unknown group 'nope'"),
])
def test_bad_input_is_refused_before_anything_is_written(grads, message):
    good = np.ones((8, 20), np.float32)

    async def go():
        dev, rt = await make({"b": 20, "a": 10}, {"b": G_BINARY, "a": G_BINARY})
        with pytest.raises(ValueError) as err:
            await rt.step({"b": good, **grads})
        counters = await Driver(dev, dev.params).counters()
        return str(err.value), counters, dev.peek(0, 2), rt.traffic()["total"].bytes_up

    text, counters, memory, moved = run(go())
    assert message in text
    assert counters["writes"] == 0 and counters["gbinary_reads"] == 0
    assert not memory.any()
    assert moved == 0


def test_overflowing_finite_gradients_are_not_refused():
    g = np.full((8, 10), 3e38, np.float32)           # the float32 sum overflows

    async def go():
        _, rt = await make({"a": 10}, {"a": G_BINARY})
        return await rt.step({"a": g})

    assert run(go())["a"].tolist() == [1] * 10


@pytest.mark.parametrize("kwargs, message", [
    (dict(groups={"a": 10}, policies={"b": G_BINARY}), "must name exactly the groups"),
    (dict(groups={"a": 0}, policies={"a": G_BINARY}), "positive element count"),
    (dict(groups={"a": 10}, policies={"a": g_ternary_margin(9)}), "threshold T must be in 0..W=8"),
    (dict(groups={f"g{i}": 10 for i in range(9)},
          policies={f"g{i}": G_BINARY for i in range(9)}), "9 low-bit groups need as many regions"),
    (dict(groups={"a": 10}, policies={"a": G_BINARY}, base=8), "not aligned"),
])
def test_bad_construction(kwargs, message):
    async def go():
        dev = Device(TopParams())
        await GradientRuntime.create(dev, Driver(dev, dev.params), **kwargs)

    with pytest.raises(ValueError, match=message):
        run(go())


def test_identity_is_not_an_aggregation():
    with pytest.raises(ValueError, match="BYPASS"):
        GroupPolicy(Mode.IDENTITY)


def test_device_built_for_another_worker_count():
    async def go():
        dev = Device(TopParams(workers=16))
        await GradientRuntime.create(dev, Driver(dev, TopParams()), {"a": 10}, {"a": G_BINARY})

    with pytest.raises(ValueError, match="built for LINE_BITS=512, W=16"):
        run(go())


def test_set_policy_checks():
    async def go():
        _, rt = await make({"a": 10}, {"a": FP32}, TopParams(regions=1))
        with pytest.raises(ValueError, match="unknown group"):
            await rt.set_policy("b", G_BINARY)
        with pytest.raises(ValueError, match="threshold"):
            await rt.set_policy("a", g_ternary_margin(9))
        await rt.set_policy("a", G_BINARY)
        return rt.regions

    assert run(go()) == {"a": 0}


# -- traffic accounting -------------------------------------------------------------------

def test_bytes_moved_and_ratios():
    workers, e, lb = 8, 64, 64
    sizes = {"low": 1000, "fp": 300}

    async def go():
        dev, rt = await make(sizes, {"low": G_BINARY, "fp": FP32}, LANES)
        g = {k: np.ones((workers, n), np.float32) for k, n in sizes.items()}
        for _ in range(3):
            await rt.step(g)
        await rt.step({"low": g["low"]})
        return rt.traffic(), await Driver(dev, dev.params).counters()

    t, counters = run(go())
    lines = -(-1000 // e)                                 # 16 lines, the last one padded
    assert t["low"].bytes_up == t["low"].bytes_down == 4 * lines * lb
    assert t["low"].fp32_up == 4 * workers * 1000 * 4
    assert t["fp"].bytes_up == 3 * workers * 300 * 4 and t["fp"].bytes_down == 3 * 300 * 4
    assert counters["writes"] == counters["gbinary_reads"] == 4 * lines
    assert t["low"].steps == 4 and t["fp"].steps == 3 and t["total"].steps == 4
    assert t["low"].payload_ratio() == lines * lb / (workers * 1000 * 4)
    assert t["low"].round_trip_ratio() == 2 * lines * lb / (workers * 1000 * 4 + 1000 * 4)
    total = t["total"]
    assert total.bytes_up == t["low"].bytes_up + t["fp"].bytes_up


@pytest.mark.parametrize("workers", [4, 8, 16])
def test_aligned_ratio_is_the_paper_accounting(workers):
    # With no padding the measured payload ratio is traffic.py's 1 bit / 32 bits,
    # whatever W; a backbone/head split matches its per-element accounting.
    params = TopParams(workers=workers)
    e = params.lanes
    sizes = {"backbone": 40 * e, "head": 3 * e}

    async def go():
        _, rt = await make(sizes, {"backbone": G_BINARY, "head": FP32}, params)
        await rt.step({k: np.ones((workers, n), np.float32) for k, n in sizes.items()})
        return rt.traffic()

    t = run(go())
    model = ParameterGroups("test", sizes)
    assert t["backbone"].payload_ratio() == traffic_ratio(model, {"backbone": "gbinary", "head": "gbinary"})
    assert t["total"].payload_ratio() == pytest.approx(
        traffic_ratio(model, {"backbone": "gbinary", "head": "fp32"}), rel=1e-12)


def test_host_fp32_leaves_the_device_alone_and_strands_the_region():
    """After a fault the control plane puts a group on the host mean: its
    steps touch no device memory, and its region is never handed out again."""
    params = TopParams(regions=2)
    g = np.random.default_rng(3).standard_normal((8, 40)).astype(np.float32)

    async def go():
        dev, rt = await make({"a": 40, "b": 40}, {"a": G_BINARY, "b": FP32}, params=params)
        stranded = rt.regions["a"]
        rt.host_fp32("a")
        before = [await rt._driver.read(f"COUNTER{j}_LO") for j in range(5)]
        out = await rt.step({"a": g, "b": g})
        after = [await rt._driver.read(f"COUNTER{j}_LO") for j in range(5)]
        await rt.set_policy("b", G_BINARY)
        return out, before, after, stranded, rt.regions, rt.policies

    out, before, after, stranded, regions, policies = run(go())
    assert np.array_equal(out["a"], g.mean(axis=0)) and policies["a"] == FP32
    assert before == after                              # no read or write reached the device
    assert "a" not in regions and regions["b"] != stranded


def test_rotating_pattern_gate_by_hand():
    """Six elements, all eight workers positive, 2-of-3 gate: without rotation
    the third and sixth element are zeroed at every step; turned by one lane a
    step, each element is zeroed in exactly one step of three."""
    g = grads_from_votes([8] * 6, 8)

    async def go(policy):
        _, rt = await make({"t": 6}, {"t": policy})
        return [(await rt.step({"t": g}))["t"].tolist() for _ in range(4)]

    assert run(go(G_TERNARY)) == [[1, 1, 0, 1, 1, 0]] * 4
    assert run(go(G_TERNARY_ROTATING)) == [[1, 1, 0, 1, 1, 0], [1, 0, 1, 1, 0, 1],
                                           [0, 1, 1, 0, 1, 1], [1, 1, 0, 1, 1, 0]]


def test_rotation_needs_the_pattern_gate():
    with pytest.raises(ValueError, match="PATTERN"):
        GroupPolicy(Mode.GBINARY, Format.SIGN, rotate=True)
    with pytest.raises(ValueError, match="PATTERN"):
        GroupPolicy(Mode.GTERNARY, Format.SIGN, GateKind.MARGIN, threshold=4, rotate=True)
