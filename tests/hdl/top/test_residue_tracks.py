"""Registered residue tracks (``hdl/top/residue_tracks.py``) in the Amaranth
simulator: ``track_length(width)`` cycles after ``x``, each plain sum
``u_q`` is ``x mod q`` up to a multiple of ``q`` and at most ``2q - 2``, and
``low`` is ``x``'s low three bits."""

import random

import pytest
from amaranth import Module, Signal

from neuron_fabric.hdl.top.phase import MODULI
from neuron_fabric.hdl.top.residue_tracks import plain_residues, track_length
from neuron_fabric.sim.amaranth_sim import run_testbenches


@pytest.mark.parametrize("width, cycles", [(4, 3), (8, 4), (46, 7), (49, 7)])
def test_track_length_hand_worked(width, cycles):
    """The leaves (one register), a level of pair sums per halving of the
    ``ceil(width / 4)`` leaves, the fold and its sum: 46 bits are 12 leaves,
    halved four times (6, 3, 2, 1), so 1 + 4 + 2 cycles."""
    assert track_length(width) == cycles


@pytest.mark.parametrize("width", [9, 46])
def test_plain_residues(width):
    m = Module()
    x = Signal(width)
    sums, low = plain_residues(m, "t", x)
    assert sorted(sums) == sorted(MODULI)
    delay = track_length(width)
    rng = random.Random(width)
    values = [0, (1 << width) - 1] + [rng.getrandbits(width) for _ in range(60)]

    async def bench(ctx):
        seen = []
        for value in values + [0] * delay:
            ctx.set(x, value)
            await ctx.tick()
            seen.append(value)
            if len(seen) < delay:
                continue
            v = seen[-delay]
            assert ctx.get(low) == v & 7, v
            for q, u in sums.items():
                got = ctx.get(u)
                assert got % q == v % q and got <= 2 * q - 2, (v, q, got)

    run_testbenches(m, bench)
