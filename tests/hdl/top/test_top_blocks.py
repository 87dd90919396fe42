"""Amaranth-simulator tests of the top's blocks, each against an independent
oracle: the bus signatures, the counter and its resolve pipeline (a Python integer),
the control registers (the register map) and the NDR arbiter (every tag once,
in the right place).  The request pipeline's are in test_request.py, the read
and write paths' in test_read_path.py and test_write_path.py."""

import random

import pytest
from amaranth import Module
from neuron_fabric.sim.amaranth_sim import AxiLiteManager, run_testbenches

from neuron_fabric.hdl.top.bus import AXI4LiteSignature, AXI4Signature
from neuron_fabric.hdl.prims.counter import DIGITS, CarryResolve, DigitCounter, digit_ends
from neuron_fabric.hdl.top.csr import ControlRegisters
from neuron_fabric.contract.facts import Mode, TopParams
from neuron_fabric.contract.regmap import RegisterMap, cfg_encode

SMALL = TopParams(line_bits=64, workers=4, stages=2, regions=2, max_outstanding=4)


def test_bus_signatures_compare_by_widths():
    assert AXI4LiteSignature(addr_width=12, data_width=32) == \
        AXI4LiteSignature(addr_width=12, data_width=32)
    assert AXI4LiteSignature(addr_width=12, data_width=32) != \
        AXI4LiteSignature(addr_width=16, data_width=32)
    sig = AXI4Signature(addr_width=52, data_width=512, id_width=5)
    assert repr(sig) == "AXI4Signature(addr_width=52, data_width=512, id_width=5)"
    assert sig.id_width == 5 and sig.members["wstrb"].shape == 64
    with pytest.raises(TypeError, match="0"):
        AXI4Signature(addr_width=52, data_width=512, id_width=0)


@pytest.mark.parametrize("digits", [(3, 3, 3, 3, 3, 1), (3, 2, 3, 1, 3, 3, 1), DIGITS])
def test_counter_state_resolves_to_the_running_total(digits):
    """Every cycle's counter state, resolved, is the number of events
    counted so far (mod 2^width), its low half as early as promised; from
    0 and from a count near the top of the width, so that carries run
    through every digit and wrap."""
    width = sum(digits)
    m = Module()
    m.submodules.counter = counter = DigitCounter(digits=digits)
    m.submodules.resolve = resolve = CarryResolve(digits=digits, low_bits=width // 2)
    m.d.comb += resolve.state.eq(counter.state)
    rng = random.Random(1)

    async def bench(ctx):
        for start in (0, (1 << width) - 150):
            # a state with no pending carry holds the count in its digits
            ctx.set(counter.low[0], start & 7)
            ctx.set(counter.low[1], 0)
            for reg, end in zip(counter.digit_regs, digit_ends(digits)):
                ctx.set(reg, (start >> end) & ((1 << len(reg)) - 1))
            for reg in counter.carry_regs:
                ctx.set(reg, 0)
            totals = [start]
            for _ in range(300):
                inc = rng.choice([0, 1, 5, 7, 7, 7])
                ctx.set(counter.inc, inc)
                await ctx.tick()
                totals.append(totals[-1] + inc)
                if len(totals) > resolve.steps:
                    assert ctx.get(resolve.value) == totals[-1 - resolve.steps] % (1 << width)
                if len(totals) > resolve.low_steps:
                    low = totals[-1 - resolve.low_steps] % (1 << width // 2)
                    assert ctx.get(resolve.low) % (1 << width // 2) == low

    run_testbenches(m, bench)


def test_control_registers_write_waits_for_idle():
    p = SMALL
    dut = ControlRegisters(p)
    rmap = RegisterMap(p)
    good = cfg_encode(Mode.GTERNARY, period=5, keep=3)
    bad = cfg_encode(Mode.GTERNARY, period=4, keep=5)

    async def bench(ctx):
        lite = AxiLiteManager(ctx, dut.bus)
        ctx.set(dut.config.idle, 1)
        assert await lite.write(rmap["DEFAULT_CFG"].offset, good) == 0
        assert await lite.read(rmap["DEFAULT_CFG"].offset) == (good, 0)
        assert ctx.get(dut.config.default.period) == 5
        assert await lite.write(rmap["DEFAULT_CFG"].offset, bad) == 0b10
        assert await lite.read(rmap["DEFAULT_CFG"].offset) == (good, 0)
        assert await lite.read(rmap["ID"].offset) == (rmap["ID"].reset, 0)
        assert await lite.read(0x0B0) == (0, 0b10)
        # while the request pipeline is busy, the write is held, not applied
        ctx.set(dut.config.idle, 0)
        ctx.set(dut.bus.awaddr, rmap["DEFAULT_CFG"].offset)
        ctx.set(dut.bus.wdata, rmap["DEFAULT_CFG"].reset), ctx.set(dut.bus.wstrb, 0xF)
        ctx.set(dut.bus.awvalid, 1), ctx.set(dut.bus.wvalid, 1), ctx.set(dut.bus.bready, 1)
        await ctx.tick()
        ctx.set(dut.bus.awvalid, 0), ctx.set(dut.bus.wvalid, 0)
        for _ in range(20):
            await ctx.tick()
            assert ctx.get(dut.config.hold) and not ctx.get(dut.bus.bvalid)
            assert ctx.get(dut.config.default.period) == 5
        ctx.set(dut.config.idle, 1)
        await ctx.tick().until(dut.bus.bvalid)
        assert ctx.get(dut.config.default.period) == 3
        # counters: events in, LO then HI out
        ctx.set(dut.events.count_inc, 0b10000)
        await ctx.tick().repeat(5)
        ctx.set(dut.events.count_inc, 0)
        assert await lite.read(rmap["COUNTER4_LO"].offset) == (5, 0)
        assert await lite.read(rmap["COUNTER4_HI"].offset) == (0, 0)

    run_testbenches(dut, bench)


def test_control_registers_counter_lo_then_hi_is_one_value():
    """A counter read LO then HI (the next read as soon as the bus allows)
    gives one 64-bit value the counter held during the LO read, while it
    counts an event every cycle across the carry out of bit 31."""
    dut = ControlRegisters(SMALL)
    rmap = RegisterMap(SMALL)
    counter = dut.counters[4]

    async def bench(ctx):
        lite = AxiLiteManager(ctx, dut.bus)
        for below in range(30):
            start = (0x1234 << 32) + (1 << 32) - below
            ctx.set(dut.events.count_inc, 0)
            await ctx.tick().repeat(3)
            ctx.set(counter.low[0], start & 7), ctx.set(counter.low[1], 0)
            for reg, end in zip(counter.digit_regs, digit_ends(DIGITS)):
                ctx.set(reg, (start >> end) & ((1 << len(reg)) - 1))
            for reg in counter.carry_regs:
                ctx.set(reg, 0)
            await ctx.tick()
            ctx.set(dut.events.count_inc, 0b10000)
            lo, resp = await lite.read(rmap["COUNTER4_LO"].offset)
            assert resp == 0
            hi, resp = await lite.read(rmap["COUNTER4_HI"].offset)
            assert resp == 0
            value = hi << 32 | lo
            # events reach the counter a cycle after they are reported, and
            # the read takes under 20 cycles
            assert 0 <= value - start < 20, (below, hex(start), hex(value))

    run_testbenches(dut, bench)
