"""The gradient runtime on a device model with the packed view (contract section
6): SIGN-format groups read 2-bit results through a view and get what the
W-bit lanes give; the other formats read lanes; the bytes it counts."""

import asyncio

import numpy as np
import pytest

from neuron_fabric.contract.facts import FEATURES, Format, Mode, Profile, TopParams
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.host.runtime import (FP32, G_BINARY, G_BINARY_MARGIN, G_TERNARY,
                                        G_TERNARY_ROTATING, GradientRuntime, g_ternary_margin)

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
