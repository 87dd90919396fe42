# amaranth: UnusedElaboratable=no
"""The gate phase and mask steps of the request pipeline (``hdl/top/gate.py``)
on a :class:`~neuron_fabric.hdl.prims.pipe.Line` in the Amaranth simulator,
one new line a cycle, against contract 4.3 and section 2 through the golden
model's ``gate_pattern``: the mask of a line ``x`` lines past its region's
BASE keeps lane ``i`` iff ``(phase + i) mod P < K`` with
``phase = (x * E) mod P``; a count line (contract 5.3) uses ``E_c =
LINE_BITS / 32`` elements; a build without ``gate_pattern_programmable``
applies the fixed 2-of-3 gate with the phase modulo 3."""

import random

import numpy as np
import pytest
from amaranth import Module, Signal

from neuron_fabric.contract.facts import Operand, TopParams
from neuron_fabric.hdl.prims.pipe import Line, register
from neuron_fabric.hdl.top.cfg import CfgLayout
from neuron_fabric.hdl.top.gate import CONTROL_COPIES, FIXED_PATTERN, gate_mask_steps, slices
from neuron_fabric.host import golden
from neuron_fabric.sim.amaranth_sim import run_testbenches

#: The registers from the inputs to the mask: the line's first stage, and
#: the seven steps of the module's docstring (the eighth is the caller's).
LATENCY = 1 + 7
RESIDUE_MODULI = (3, 5, 7, 9, 11, 13)


def test_slices_cut_as_equal_as_they_come():
    sig = Signal(10)
    parts = slices(sig, 4)
    assert [len(p) for p in parts] == [2, 3, 2, 3]
    assert [len(p) for p in slices(Signal(3), CONTROL_COPIES)] == [1, 1, 1]
    assert FIXED_PATTERN == (3, 2)


def _harness(params):
    m = Module()
    cfg, x = Signal(CfgLayout), Signal(20)
    line = Line(m, "g")
    line.step(valid=1, fields={"cfg": cfg})
    # the residues of x, registered with the line's first stage
    residues = {q: register(m, f"res{q}", x % q) for q in RESIDUE_MODULI}
    low = register(m, "low", x[:3])
    mask = Signal(params.lanes)
    m.d.comb += mask.eq(gate_mask_steps(m, line, params, residues, low))
    return m, cfg, x, mask


def _bits(array):
    return sum(int(b) << i for i, b in enumerate(array))


@pytest.mark.parametrize("line_bits, workers, profile", [
    (64, 8, "full"), (128, 4, "full"), (256, 8, "full"), (64, 8, "paper"),
    (64, 16, "full"), (64, 16, "paper")])
def test_gate_mask_follows_the_contract(line_bits, workers, profile):
    params = TopParams(line_bits=line_bits, workers=workers, stages=2, profile=profile)
    m, cfg, x, mask = _harness(params)
    rng = random.Random(line_bits + workers)
    lanes, count_lanes = params.lanes, line_bits // 32
    cases = []
    for _ in range(150):
        period = rng.randint(1, 15)
        operand = rng.choice([Operand.SIGNS, Operand.COUNTS4, Operand.COUNTS8]) \
            if profile == "full" else Operand.SIGNS
        cases.append((rng.getrandbits(20), period, rng.randint(0, period), operand))

    def want(value, period, keep, operand):
        """(expected mask, bits that must match)."""
        if profile == "paper":
            phase = (value * lanes) % period
            p, k = FIXED_PATTERN
            return _bits(golden.gate_pattern(lanes, p, k, phase % p)), (1 << lanes) - 1
        if operand == Operand.SIGNS:
            return _bits(golden.gate_pattern(lanes, period, keep,
                                             (value * lanes) % period)), (1 << lanes) - 1
        pattern = golden.gate_pattern(count_lanes, period, keep, (value * count_lanes) % period)
        return _bits(pattern), (1 << count_lanes) - 1

    async def bench(ctx):
        for t, (value, period, keep, operand) in enumerate(cases + [cases[-1]] * LATENCY):
            ctx.set(x, value)
            ctx.set(cfg.period, period)
            ctx.set(cfg.keep, keep)
            ctx.set(cfg.operand, operand)
            ctx.set(cfg.mode, 3)
            await ctx.tick()
            if t + 1 >= LATENCY:
                case = cases[min(t + 1 - LATENCY, len(cases) - 1)]
                expected, care = want(*case)
                assert ctx.get(mask) & care == expected, (t, case)

    run_testbenches(m, bench)
    assert np.unique([c[1] for c in cases]).size == 15
