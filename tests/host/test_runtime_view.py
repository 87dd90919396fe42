"""The gradient runtimes on device models with the packed view (contract section
6): SIGN-format groups, and the level-2 read of two levels, read 2-bit results
through a view and get what the lanes give; the other formats read lanes; the
bytes they count."""

import asyncio

import numpy as np
import pytest

from neuron_fabric.contract.facts import (FEATURES, PROFILES, Format, GateKind, Layout, Mode, Operand,
                                          Profile, TopParams)
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.host.runtime import (FP32, G_BINARY, G_BINARY_MARGIN, G_TERNARY,
                                        G_TERNARY_ROTATING, GradientRuntime, GroupPolicy,
                                        TwoLevelRuntime, g_ternary_margin)

VIEW_BUILD = Profile("full-view", frozenset(FEATURES))
GROUPS = {"a": 5000, "b": 777, "c": 3000}


def run(coro):
    return asyncio.run(coro)


async def make(params, profile=None):
    dev = Device(params, profile=profile)
    driver = Driver(dev, params, profile=profile)
    return dev, driver


async def steps(params, profile, policies, grads, changes=()):
    dev, driver = await make(params, profile)
    rt = await GradientRuntime.create(dev, driver, GROUPS, policies)
    out = [await rt.step(grads)]
    for name, policy in changes:
        await rt.set_policy(name, policy)
        out.append(await rt.step(grads))
    return out, rt, dev, driver


@pytest.mark.parametrize("workers", [4, 8, 16])
def test_views_give_what_lanes_give(workers):
    params = TopParams(workers=workers)
    rng = np.random.default_rng(workers)
    grads = {name: rng.standard_normal((workers, n)).astype(np.float32)
             for name, n in GROUPS.items()}
    policies = {"a": G_BINARY, "b": G_TERNARY_ROTATING, "c": g_ternary_margin(2)}
    changes = [("a", G_BINARY_MARGIN), ("c", FP32), ("c", G_TERNARY), ("a", G_BINARY)]
    lanes, _, _, _ = run(steps(params, None, policies, grads, changes))
    viewed, rt, dev, driver = run(steps(params, VIEW_BUILD, policies, grads, changes))
    for want, got in zip(lanes, viewed):
        for name in GROUPS:
            assert np.array_equal(want[name], got[name]), name
    regions = {name: run(driver.region(r)) for name, r in rt.regions.items()}
    # SIGN-format groups are views of their own 4 KiB-aligned windows; MARGIN reads lanes
    assert regions["a"]["view"] == 1 and regions["c"]["view"] == 1
    assert regions["a"]["source"] == rt.windows["a"].base
    assert regions["b"]["view"] == 1 and regions["b"]["source"] == rt.windows["b"].base
    assert all(w.base % 4096 == 0 for w in rt.windows.values())
    counts = run(driver.counters())
    assert counts["errors"] == 0


def test_margin_format_reads_lanes():
    params = TopParams()
    rng = np.random.default_rng(1)
    grads = {"a": rng.standard_normal((8, 5000)).astype(np.float32)}
    dev, driver = run(make(params, VIEW_BUILD))
    rt = run(GradientRuntime.create(dev, driver, {"a": 5000}, {"a": G_BINARY_MARGIN}))
    run(rt.step(grads))
    assert run(driver.region(0))["view"] == 0
    w = rt.windows["a"]
    assert rt.traffic()["a"].bytes_down == w.lines * w.line_bytes


def test_round_trip_traffic_at_w8():
    # 512-bit lines, W 8: 8192 elements are 128 sign lines (8 KiB written by
    # the eight workers together) and 32 view lines (2 KiB read): one rank
    # writes 1 bit and reads 2 bits an element, 3/64 of FP32's 32 + 32.
    params, n = TopParams(), 8192
    rng = np.random.default_rng(2)
    dev, driver = run(make(params, VIEW_BUILD))
    rt = run(GradientRuntime.create(dev, driver, {"a": n}, {"a": G_BINARY}))
    run(rt.step({"a": rng.standard_normal((8, n)).astype(np.float32)}))
    t = rt.traffic()["a"]
    assert (t.bytes_up, t.bytes_down, t.reads) == (8 * 1024, 2 * 1024, 32)
    assert (t.fp32_up, t.fp32_down) == (8 * n * 4, n * 4)
    per_rank = (t.bytes_up / 8 + t.bytes_down) / (n * 4 + n * 4)
    assert per_rank == 3 / 64 and per_rank <= 1 / 20
    assert Mode(run(driver.region(0))["mode"]) == Mode.GBINARY
    assert run(driver.region(0))["format"] == Format.SIGN


@pytest.mark.parametrize("layout", list(Layout))
def test_level_two_read_through_a_view(layout):
    # 8 level-1 devices of W 8, a COUNTS4 level 2 over 64 workers (contract
    # 5.4): through a view the level-2 read returns sgn(2c - 64) of each
    # element, what the 32-bit lanes give, in 1/16 of their bytes.
    n = 1000
    rng = np.random.default_rng(9 + layout)
    g = rng.standard_normal((64, n)).astype(np.float32)
    g[:, 0], g[:32, 1], g[32:, 1] = 1.0, 1.0, -1.0            # +1, a tie

    async def go(profile):
        level1 = [await make(TopParams()) for _ in range(8)]
        level2 = await make(TopParams(), profile)
        policy = GroupPolicy(Mode.GTERNARY, Format.SIGN, GateKind.PATTERN, period=5, keep=3,
                             layout=layout)
        h = await TwoLevelRuntime.create(level1, level2, n, policy, base2=0x10000)
        return await h.aggregate(g), h.traffic()["level2"], level2[1]

    want, lanes, _ = run(go(PROFILES["full"].without("packed_view")))
    got, viewed, driver2 = run(go(VIEW_BUILD))
    assert got.tolist() == want.tolist() and want[:2].tolist() == [1, 0]
    assert (lanes.bytes_down, lanes.reads) == (63 * 64, 63)      # ceil(1000 / 16) count lines
    assert (viewed.bytes_down, viewed.reads) == (4 * 64, 4)      # ceil(63 / 16) view lines
    region = run(driver2.region(0))
    assert (region["view"], region["source"], region["operand"], region["total"]) == \
        (1, 0x10000, Operand.COUNTS4, 64)


def test_a_view_needs_an_aligned_source():
    async def go():
        level1 = [await make(TopParams())]
        level2 = await make(TopParams(), VIEW_BUILD)
        await TwoLevelRuntime.create(level1, level2, 100, G_BINARY, base2=0x40)
    with pytest.raises(ValueError, match="aligned to 4096"):
        run(go())
