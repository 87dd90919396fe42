"""Amaranth-simulator checks of the request pipeline's logic, each against
an independent oracle: the gate phase (the plain integer), the gate mask
(the golden model's gate_pattern) and the region compare (Python's)."""

import random

import pytest
from amaranth import Cat, Module, Signal
from amaranth.sim import Simulator

from neuron_fabric.hdl.phase import (MODULI, add_pairs, gate_mask, halve, keep_below, leaves,
                                    mask_high, mask_low, pattern_start, pattern_table,
                                    phase_candidates, phase_lookup, reduce, residue_high,
                                    residue_low, tree_levels)
from neuron_fabric.hdl.region import RUN, below, chunk_compare, runs
from neuron_fabric.host import golden


# -- gate phase logic (Amaranth simulator) ------------------------------------------

@pytest.mark.parametrize("width,lanes", [(49, 16), (46, 64), (45, 32)])
def test_phase_logic(width, lanes):
    """The phase for every P against the plain integer, with the residues
    from the modular-adder trees and from the request pipeline's sums of
    the leaves (reduced in two steps)."""
    m = Module()
    x = Signal(width)
    period = Signal(4)
    parts = leaves(m, x)
    sums = dict(parts)
    for _ in range(tree_levels(width)):
        parts = {q: reduce(v, q, levels=1) for q, v in parts.items()}
        sums = {q: add_pairs(v) for q, v in sums.items()}
    assert all(len(v) == 1 for v in parts.values()) and all(len(v) == 1 for v in sums.values())
    residues = {q: v[0] for q, v in parts.items()}
    stepped = {q: residue_high(*residue_low(v[0], q)) for q, v in sums.items()}
    phase = phase_lookup(period, phase_candidates(x[:3], residues, lanes))
    phase_2 = phase_lookup(period, phase_candidates(x[:3], stepped, lanes))
    rng = random.Random(width)
    values = [0, 1, (1 << width) - 1] + [rng.getrandbits(width) for _ in range(60)]

    async def bench(ctx):
        for value in values:
            ctx.set(x, value)
            for q in MODULI:
                assert ctx.get(stepped[q]) == value % q, (value, q)
            for p in range(1, 16):
                ctx.set(period, p)
                assert ctx.get(phase) == (value * lanes) % p, (value, p)
                assert ctx.get(phase_2) == (value * lanes) % p, (value, p)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert set(MODULI) == {3, 5, 7, 9, 11, 13}


@pytest.mark.parametrize("lanes", [4, 64])
def test_gate_mask_logic(lanes):
    """The mask the top hands the core, for every P, K and phase, against
    the golden model's gate_pattern (contract section 2): in one step, and
    in the request pipeline's steps (the table from r < K, then by each bit
    of P in turn; the mask by phase[1:0], then phase[3:2])."""
    m = Module()
    period, keep, phase = Signal(4), Signal(4), Signal(4)
    mask, stepped, fixed = Signal(lanes), Signal(lanes), Signal(lanes)
    starts = [Signal(lanes + 15) for _ in range(8)]
    table, shifted = Signal(lanes + 15), Signal(lanes + 12)
    m.d.comb += [mask.eq(gate_mask(pattern_table(period, keep, lanes), phase, lanes)),
                 fixed.eq(gate_mask(pattern_table(3, 2, lanes), phase, lanes)),
                 Cat(*starts).eq(Cat(*pattern_start(period, keep_below(keep), lanes))),
                 table.eq(halve(halve(halve(starts, period[1]), period[2]), period[3])[0]),
                 shifted.eq(mask_low(table, phase, lanes)),
                 stepped.eq(mask_high(shifted, phase, lanes))]

    def as_int(bits):
        return sum(int(b) << i for i, b in enumerate(bits))

    async def bench(ctx):
        for p in range(1, 16):
            ctx.set(period, p)
            for k in range(p + 1):
                ctx.set(keep, k)
                for ph in range(p):
                    ctx.set(phase, ph)
                    want = as_int(golden.gate_pattern(lanes, p, k, ph))
                    assert ctx.get(mask) == want, (p, k, ph)
                    assert ctx.get(stepped) == want, (p, k, ph)
        # The fixed 2-of-3 gate takes any 4-bit phase modulo 3.
        for ph in range(16):
            ctx.set(phase, ph)
            assert ctx.get(fixed) == as_int(golden.gate_pattern(lanes, 3, 2, ph % 3)), ph

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


# -- region compare (Amaranth simulator) -----------------------------------------------

@pytest.mark.parametrize("width", [46, 49])
def test_region_compare(width):
    """addr < bound from the chunks, from the runs and whole, against
    Python's compare, for values that differ in one chunk or not at all."""
    m = Module()
    addr, bound = Signal(width), Signal(width)
    lt, le = chunk_compare(addr, bound)
    run_lt, run_le = Signal(-(-len(lt) // RUN)), Signal(-(-len(lt) // RUN))
    whole, stepped = Signal(), Signal()
    m.d.comb += [Cat(run_lt, run_le).eq(Cat(*runs(lt, le))), whole.eq(below(lt, le)),
                 stepped.eq(below(run_lt, run_le))]
    rng = random.Random(width)
    pairs = [(0, 0), (0, 1), (1, 0), ((1 << width) - 1, 0)]
    for _ in range(300):
        a = rng.getrandbits(width)
        b = a ^ (rng.getrandbits(3) << rng.randrange(width - 2)) if rng.random() < 0.7 else a
        pairs.append((a, b))

    async def bench(ctx):
        for a, b in pairs:
            ctx.set(addr, a), ctx.set(bound, b)
            assert (ctx.get(whole), ctx.get(stepped)) == (a < b, a < b), (a, b)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
