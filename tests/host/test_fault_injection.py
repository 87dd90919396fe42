"""BitFlipPort: flips the fraction of written bits it is told to, only while
active, only in what was written; reads and the FP32 path are untouched."""

import asyncio

import numpy as np
import pytest

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.host.fault_injection import BitFlipPort
from neuron_fabric.host.runtime import FP32, G_BINARY, GradientRuntime


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
