"""FaultPort: BitFlips flips the fraction of written bits it is told to, only
while active, only in what was written; reads and the FP32 path are
untouched; a stuck lane and a stale worker change exactly the bits the
contract's packing puts there."""

import asyncio

import numpy as np
import pytest

from neuron_fabric.contract.facts import Format, Mode, TopParams
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.host.fault_injection import (BitFlipPort, BitFlips, FaultPort, StaleWorker,
                                                  StuckLane)
from neuron_fabric.host.runtime import FP32, G_BINARY, GradientRuntime, GroupPolicy


def run(coro):
    return asyncio.run(coro)


def test_inactive_port_writes_what_it_is_given():
    dev = Device(TopParams())
    port = BitFlipPort(dev, 0.5, seed=1)
    lines = np.arange(4 * 64, dtype=np.uint8).reshape(4, 64)
    run(port.write_lines(0, lines))
    np.testing.assert_array_equal(dev.peek(0, 4), lines)
    assert port.flipped == 0


def test_active_port_flips_about_the_fraction_of_written_bits():
    dev = Device(TopParams())
    port = BitFlipPort(dev, 0.25, seed=2)
    port.active = True
    lines = np.zeros((200, 64), np.uint8)
    run(port.write_lines(64 * 10, lines))
    stored = dev.peek(64 * 10, 200)
    ones = int(np.unpackbits(stored).sum())
    assert ones == port.flipped
    # 102,400 bits, each flipped with p = 0.25: std 139, so 6 std is 830
    assert abs(ones - 0.25 * 200 * 512) < 830
    assert not dev.peek(0, 10).any() and not dev.peek(64 * 210, 10).any()


def test_full_flip_inverts_the_g_binary_vote_and_spares_fp32():
    rng = np.random.default_rng(3)
    g = rng.standard_normal((8, 1000)).astype(np.float32)
    g[:, ::2] = np.abs(g[:, ::2])        # unanimous positive on even elements

    async def go(fraction):
        dev = Device(TopParams())
        port = BitFlipPort(dev, fraction, seed=4)
        port.active = True
        rt = await GradientRuntime.create(port, Driver(dev, dev.params), {"a": 1000, "b": 1000},
                                          {"a": G_BINARY, "b": FP32})
        return await rt.step({"a": g, "b": g})

    clean, flipped = run(go(0.0)), run(go(1.0))
    np.testing.assert_array_equal(flipped["a"], -clean["a"])    # every bit flipped: sgn(-a)
    np.testing.assert_array_equal(clean["a"][::2], 1.0)
    np.testing.assert_array_equal(flipped["b"], np.mean(g, axis=0, dtype=np.float32))


def test_partial_writes_flip_only_enabled_bytes():
    dev = Device(TopParams(profile="full"))
    port = BitFlipPort(dev, 1.0, seed=5)
    port.active = True
    enables = np.zeros(64, bool)
    enables[8:16] = True
    run(port.write_lines_partial(0, np.zeros((3, 64), np.uint8), enables))
    stored = dev.peek(0, 3)
    assert (stored[:, 8:16] == 0xFF).all() and not stored[:, :8].any() and not stored[:, 16:].any()


def test_bad_arguments():
    with pytest.raises(ValueError, match="fraction"):
        BitFlipPort(Device(TopParams()), 1.5)
    with pytest.raises(TypeError, match="needs write_lines"):
        BitFlipPort(object(), 0.1)


# -- the subtler faults --------------------------------------------------------------

def _through(fault, g, steps=1):
    """G-Binary MARGIN lane values (a / W) of ``g`` (W, n) after ``steps``
    steps through a FaultPort that is active from the last step on, and the
    port."""
    async def go():
        dev = Device(TopParams())
        port = FaultPort(dev, fault, seed=6)
        rt = await GradientRuntime.create(port, Driver(dev, dev.params), {"a": g.shape[-1]},
                                          {"a": GroupPolicy(Mode.GBINARY, Format.MARGIN)})
        out = None
        for step in range(steps):
            port.active = step == steps - 1
            out = await rt.step({"a": g[step] if g.ndim == 3 else g})
        return out["a"], port
    return run(go())


def test_a_stuck_lane_votes_unanimously_in_that_lane_of_every_line():
    # W = 8, 512-bit lines: 64 lanes a line; lane 5 of lines 0, 1, 2 holds
    # elements 5, 69, 133. All workers negative: clean margin -1 everywhere.
    g = -np.ones((8, 192), np.float32)
    out, port = _through(StuckLane(lane=5, value=True), g)
    want = -np.ones(192, np.float32)
    want[[5, 69, 133]] = 1.0
    np.testing.assert_array_equal(out, want)
    assert port.flipped == 3 * 8
    out, _ = _through(StuckLane(lane=5, value=False), g)
    np.testing.assert_array_equal(out, -1.0)      # stuck at the value already there


def test_a_stale_worker_keeps_last_steps_bits():
    # Step 0 all positive (margin +1); step 1 all negative with worker 3
    # stale: it still votes +, so a = -7 + 1 = -6, margin -6/8.
    g = np.stack([np.ones((8, 100), np.float32), -np.ones((8, 100), np.float32)])
    out, port = _through(StaleWorker(worker=3), g, steps=2)
    np.testing.assert_array_equal(out, -0.75)
    assert port.flipped == 100


def test_one_percent_flips_move_about_one_percent_of_the_votes():
    # 64,000 votes (8 x 8,000), each flipped with p = 0.01: 640 flips, std 25.
    g = np.ones((8, 8000), np.float32)
    out, port = _through(BitFlips(0.01), g)
    assert abs(port.flipped - 640) < 6 * 25
    # each flipped vote lowers its lane's a by 2 from +8
    assert int(round((8 - out * 8).sum() / 2)) == port.flipped


def test_fault_arguments():
    with pytest.raises(TypeError, match="fault must be"):
        FaultPort(Device(TopParams()), 0.1)
    with pytest.raises(ValueError, match="worker 9"):
        _through(StaleWorker(worker=9), np.ones((8, 10), np.float32))
    with pytest.raises(ValueError, match="lane 64"):
        _through(StuckLane(lane=64), np.ones((8, 10), np.float32))
