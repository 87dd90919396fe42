"""The gate phase and gate mask logic of the request pipeline (``hdl/top/phase.py``,
its steps chained without registers; Amaranth simulator), against Python's
integer arithmetic and the golden model's gate pattern (contract 4.3 and
section 2)."""

import random

import pytest
from amaranth import Module, Signal

from neuron_fabric.hdl.top.phase import (MODULI, gate_mask, pattern_table, phase_candidates,
                                         phase_choose, residue)
from neuron_fabric.host import golden
from neuron_fabric.sim.amaranth_sim import run_testbenches


def _signal(m, value, name):
    sig = Signal(len(value) if hasattr(value, "__len__") else 1, name=name)
    m.d.comb += sig.eq(value)
    return sig


def _phase(m, x, period, lanes, alternatives=()):
    """The steps of the phase, each result a Signal (as the pipeline
    registers them)."""
    residues = {q: _signal(m, residue(m, x, q), f"r{q}") for q in (3,) + MODULI}
    cand = [_signal(m, c, f"cand{p}") for p, c in
            enumerate(phase_candidates(x[:3], residues, lanes, alternatives))]
    half = [_signal(m, h, f"half{k}") for k, h in enumerate(phase_choose(cand, period, 0))]
    return _signal(m, phase_choose(half, period, 1), "phase")


@pytest.mark.parametrize("width,lanes", [(49, 16), (46, 64), (45, 32), (49, 4)])
def test_phase_logic(width, lanes):
    """(x * E) mod P for every P from the residues, their candidates and the
    two choices by P."""
    m = Module()
    x, period = Signal(width), Signal(4)
    phase = _phase(m, x, period, lanes)
    rng = random.Random(width)
    values = [0, 1, (1 << width) - 1] + [rng.getrandbits(width) for _ in range(60)]

    async def bench(ctx):
        for value in values:
            ctx.set(x, value)
            for p in range(1, 16):
                ctx.set(period, p)
                assert ctx.get(phase) == (value * lanes) % p, (value, p)

    run_testbenches(m, bench, clock=False)
    assert set(MODULI) == {5, 7, 9, 11, 13}


@pytest.mark.parametrize("width", [45, 46, 49])
def test_residues_with_an_offset(width):
    """(x + offset) mod q for every modulus and offset below it: the sum the
    pipeline forms with a region's (-BASE) residue."""
    m = Module()
    x = Signal(width)
    offsets = {q: Signal(4, name=f"off{q}") for q in (3,) + MODULI}
    out = {q: _signal(m, residue(m, x, q, offsets[q]), f'out{q}') for q in offsets}
    rng = random.Random(width)

    async def bench(ctx):
        for value in [0, (1 << width) - 1] + [rng.getrandbits(width) for _ in range(40)]:
            ctx.set(x, value)
            for q, off in offsets.items():
                for o in range(q):
                    ctx.set(off, o)
                    assert ctx.get(out[q]) == (value + o) % q, (value, q, o)

    run_testbenches(m, bench, clock=False)


@pytest.mark.parametrize("width,lanes,count_lanes,view_lanes", [(46, 64, 16, 256), (49, 8, 2, 32)])
def test_count_and_view_line_phase(width, lanes, count_lanes, view_lanes):
    """phase_candidates with the alternatives of the count lines and of a
    packed view's lines: (x * E) mod P for a SIGNS line, (x * E_c) mod P for
    a count line (contract 4.3, 5.3) and (x * LINE_BITS/2) mod P for a view
    line of either (section 6.2: the view decides)."""
    m = Module()
    x, period, counts, view = Signal(width), Signal(4), Signal(), Signal()
    phase = _phase(m, x, period, lanes, [(view, view_lanes), (counts, count_lanes)])
    rng = random.Random(width)
    values = [0, 1, (1 << width) - 1] + [rng.getrandbits(width) for _ in range(25)]

    async def bench(ctx):
        for value in values:
            ctx.set(x, value)
            for c, v in ((0, 0), (1, 0), (0, 1), (1, 1)):
                factor = view_lanes if v else count_lanes if c else lanes
                ctx.set(counts, c)
                ctx.set(view, v)
                for p in range(1, 16):
                    ctx.set(period, p)
                    assert ctx.get(phase) == (value * factor) % p, (value, c, v, p)

    run_testbenches(m, bench, clock=False)


@pytest.mark.parametrize("lanes", [4, 64])
def test_gate_mask_logic(lanes):
    """The mask the top hands the core, for every P, K and phase, against
    the golden model's gate_pattern (contract section 2)."""
    m = Module()
    period, keep, phase = Signal(4), Signal(4), Signal(4)
    mask = Signal(lanes)
    fixed = Signal(lanes)
    table = _signal(m, pattern_table(period, keep, lanes, m), "table")
    m.d.comb += [mask.eq(gate_mask(table, phase, lanes, m)),
                 fixed.eq(gate_mask(pattern_table(3, 2, lanes), phase, lanes, m))]

    def as_int(bits):
        return sum(int(b) << i for i, b in enumerate(bits))

    async def bench(ctx):
        for p in range(1, 16):
            ctx.set(period, p)
            for k in range(p + 1):
                ctx.set(keep, k)
                for ph in range(p):
                    ctx.set(phase, ph)
                    assert ctx.get(mask) == as_int(golden.gate_pattern(lanes, p, k, ph)), \
                        (p, k, ph)
        # The fixed 2-of-3 gate takes any 4-bit phase modulo 3.
        for ph in range(16):
            ctx.set(phase, ph)
            assert ctx.get(fixed) == as_int(golden.gate_pattern(lanes, 3, 2, ph % 3)), ph

    run_testbenches(m, bench, clock=False)
