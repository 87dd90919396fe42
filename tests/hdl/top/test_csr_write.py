"""The write channel of the control registers (``hdl/top/csr_write.py``),
driven alone in the Amaranth simulator over the register map's writable
words, against contract 4.4 written as a Python model: WSTRB honoured byte
by byte, a CFG write checked on the value it would produce
(``contract.regmap.cfg_check``) and refused whole with SLVERR, a write to a
read-only or unmapped offset answered SLVERR and changing nothing, STATUS
written 1 to clear; each refused write reported once; nothing written
before the request pipeline answers ``idle`` to ``hold``; and BVALID within
``control_write_bound`` cycles."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import PROFILES, TopParams
from neuron_fabric.contract.regmap import STATUS_BITS, RegisterMap, cfg_check, cfg_encode
from neuron_fabric.hdl.top.bus import AXI4LiteSignature
from neuron_fabric.hdl.top.cfg import ConfigSignature
from neuron_fabric.hdl.top.csr_write import (WRITE_CHECK, WRITE_COMMIT, byte_mask,
                                             control_write_bound, response, write_channel)
from neuron_fabric.sim.amaranth_sim import run_testbenches

WRITABLE = ("cfg", "status", "base_lo", "base_hi", "limit_lo", "limit_hi")
OKAY, SLVERR = 0b00, 0b10           # AXI BRESP


class _WriteSide(wiring.Component):
    """The write channel over the writable registers of ``params``' map."""

    def __init__(self, params):
        self.params, self.map = params, RegisterMap(params)
        self.regs = [r for r in self.map.registers if r.kind in WRITABLE]
        self.store = {r.name: Signal(32, name=r.name.lower(), init=r.reset)
                      for r in self.regs if r.kind != "status"}
        super().__init__({"bus": In(AXI4LiteSignature(addr_width=12, data_width=32)),
                          "config": Out(ConfigSignature(params)),
                          "bad": Out(1), "clear": Out(len(STATUS_BITS))})

    def elaborate(self, platform):
        m = Module()
        bad, clear = write_channel(m, self.bus, self.config, self.regs, self.store, self.params)
        m.d.comb += [self.bad.eq(bad), self.clear.eq(clear)]
        return m


def test_response_and_byte_mask():
    m = Module()
    err, strb = Signal(), Signal(4)
    resp, mask = Signal(2), Signal(32)
    m.d.comb += [resp.eq(response(err)), mask.eq(byte_mask(strb))]

    async def bench(ctx):
        for e in (0, 1):
            ctx.set(err, e)
            assert ctx.get(resp) == (SLVERR if e else OKAY)
        for s in range(16):
            ctx.set(strb, s)
            assert ctx.get(mask) == sum(0xFF << 8 * i for i in range(4) if s >> i & 1)

    run_testbenches(m, bench, clock=False)


def test_control_write_bound_hand_worked():
    """The check ends in cycle 3 + 3 = 6, the commit takes 3 more: a
    pipeline idle 9 cycles after hold bounds a write at 12 cycles, one
    idle at once at 9."""
    assert (WRITE_CHECK, WRITE_COMMIT) == (6, 3)
    assert control_write_bound(9) == 12 and control_write_bound(0) == 9


def _valid_cfg(rng, workers, region):
    period = rng.randint(1, 15)
    return cfg_encode(rng.randint(0, 3), rng.randint(0, 2), rng.getrandbits(1), period,
                      rng.randint(0, period), rng.randint(0, workers),
                      enable=rng.getrandbits(1) if region else 0)


@pytest.mark.parametrize("idle_after, profile", [(0, "full"), (2, "paper"), (9, "full")])
def test_writes_follow_the_contract(idle_after, profile):
    params = TopParams(line_bits=64, workers=8, stages=2, regions=2, max_outstanding=4,
                       profile=profile)
    features = PROFILES[profile].features
    dut = _WriteSide(params)
    rmap = dut.map
    rng = random.Random(idle_after)
    model = {name: rmap[name].reset for name in dut.store}
    targets = [r.offset for r in dut.regs] + [rmap["ID"].offset, rmap["COUNTER0_LO"].offset,
                                              0x0B0, 0x100 + 0x20 * params.regions, 0xFFC]
    bound = control_write_bound(idle_after)

    async def idle_bench(ctx):
        # the request pipeline: idle once hold has been high idle_after cycles
        held = 0
        while True:
            ctx.set(dut.config.idle, int(held >= idle_after))
            await ctx.tick()
            held = held + 1 if ctx.get(dut.config.hold) else 0

    async def bench(ctx):
        bus = dut.bus
        refused_seen = 0
        for n in range(40):
            offset = rng.choice(targets)
            reg = rmap.at(offset)
            if reg is not None and reg.kind == "cfg" and rng.random() < 0.7:
                data = _valid_cfg(rng, params.workers, reg.name != "DEFAULT_CFG")
            else:
                data = rng.getrandbits(32)
            strb = 0xF if rng.random() < 0.5 else rng.getrandbits(4)
            # the contract's answer
            mask = sum(0xFF << 8 * i for i in range(4) if strb >> i & 1)
            writable = reg is not None and reg.kind in WRITABLE
            want_clear = data & 0x1F if writable and reg.kind == "status" and strb & 1 else 0
            if writable and reg.kind != "status":
                merged = ((model[reg.name] & ~mask) | (data & mask)) & reg.writable_mask
                refused = reg.kind == "cfg" and \
                    cfg_check(merged, params.workers, features) is not None
            else:
                refused = not writable
            before = dict(model)
            if writable and reg.kind != "status" and not refused:
                model[reg.name] = merged
            # the bus: address and data together or apart, BREADY late
            ctx.set(bus.awaddr, offset | rng.getrandbits(2))
            ctx.set(bus.wdata, data)
            ctx.set(bus.wstrb, strb)
            aw_first = rng.random() < 0.3
            ctx.set(bus.awvalid, 1)
            ctx.set(bus.wvalid, int(not aw_first))
            ctx.set(bus.bready, 0)
            await ctx.tick()
            if aw_first:
                ctx.set(bus.awvalid, 0)
                for _ in range(rng.randint(0, 2)):
                    await ctx.tick()
                ctx.set(bus.wvalid, 1)
                await ctx.tick()
            # (the slave's ready is high while it holds no write)
            ctx.set(bus.awvalid, 0)
            ctx.set(bus.wvalid, 0)
            cycles, clear, bad, seen_idle = 0, 0, 0, False
            while not ctx.get(bus.bvalid):
                for name, sig in dut.store.items():
                    assert ctx.get(sig) == (model if seen_idle else before)[name] or \
                        ctx.get(sig) == before[name], (n, name)
                seen_idle |= bool(ctx.get(dut.config.idle) and ctx.get(dut.config.hold))
                clear |= ctx.get(dut.clear)
                bad += ctx.get(dut.bad)
                await ctx.tick()
                cycles += 1
            assert cycles <= bound, (n, cycles)
            assert ctx.get(bus.bresp) == (SLVERR if refused else OKAY), (n, hex(offset), hex(data))
            for k in range(rng.randint(0, 2) + 3):
                ctx.set(bus.bready, int(k == 2))
                clear |= ctx.get(dut.clear)
                bad += ctx.get(dut.bad)
                await ctx.tick()
            assert clear == want_clear, n
            assert bad == int(refused), n
            refused_seen += refused
            assert {name: ctx.get(sig) for name, sig in dut.store.items()} == model, n
        assert 3 < refused_seen < 35

    run_testbenches(dut, bench, background=[idle_bench])
