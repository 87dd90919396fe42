"""The request pipeline's steps of a packed view (``hdl/top/view_source.py``)
in the Amaranth simulator, against contract section 6.3 in Python: the
burst's first source line ``SOURCE + ((addr - BASE) << log2 B)`` modulo the
line address space, ARLEN ``B - 1``, and a read that is no view keeping
its own address and ARLEN 0."""

import random

import pytest
from amaranth import Module, Signal

from neuron_fabric.contract.facts import Operand, TopParams, view_beats
from neuron_fabric.hdl.top.view_source import SOURCE_STEPS, view_request_steps
from neuron_fabric.sim.amaranth_sim import run_testbenches


@pytest.mark.parametrize("line_bits,workers", [(64, 4), (512, 8), (1024, 16)])
def test_burst_address_and_length(line_bits, workers):
    params = TopParams(line_bits=line_bits, workers=workers)
    width = 52 - params.offset_bits
    m = Module()
    addr, base, source = Signal(width), Signal(width), Signal(width)
    view, operand = Signal(), Signal(2)
    out_addr, out_len = view_request_steps(m, params, addr, base, source, view, operand)
    rng = random.Random(line_bits)
    top = (1 << width) - 1
    cases = [(0, 0, 0), (5, 3, 64), (3, 5, 64), (top, 0, top), (0, top, 1)]
    cases += [(rng.getrandbits(width), rng.getrandbits(width), rng.getrandbits(width))
              for _ in range(20)]

    async def bench(ctx):
        for a, b, s in cases:
            for v in (0, 1):
                for op in (Operand.SIGNS, Operand.COUNTS4, Operand.COUNTS8):
                    ctx.set(addr, a), ctx.set(base, b), ctx.set(source, s)
                    ctx.set(view, v), ctx.set(operand, op)
                    await ctx.tick().repeat(SOURCE_STEPS)
                    beats = view_beats(line_bits, workers, op)
                    want = ((s + (a - b) * beats) & top, beats - 1) if v else (a, 0)
                    assert (ctx.get(out_addr), ctx.get(out_len)) == want, (a, b, s, v, op)

    run_testbenches(m, bench)
