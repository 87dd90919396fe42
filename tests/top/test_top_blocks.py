"""Amaranth-simulator tests of the top's blocks, each against an independent
oracle: the bus signatures, the counter and its resolve pipeline (a Python integer), the
request pipeline (the golden model's gate pattern and the region rule of
contract 4.3 written out in Python), the control registers (the register map),
and the NDR arbiter (every tag once, in the right place); the read and
write paths are in test_read_path.py and test_write_path.py."""

import random

import pytest
from amaranth import Module
from neuron_fabric.sim.amaranth_sim import run_testbenches

from neuron_fabric.hdl.bus import AXI4LiteSignature, AXI4Signature
from neuron_fabric.hdl.counter import CarryResolve, DigitCounter
from neuron_fabric.hdl.csr import ControlRegisters
from neuron_fabric.hdl.ndr import NdrArbiter
from neuron_fabric.hdl.request import AR_LEAD, Kind, RequestPipeline
from neuron_fabric.host import golden
from neuron_fabric.host.facts import Mode, ReqOpcode, TopParams
from neuron_fabric.host.regmap import RegisterMap, cfg_encode

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


def test_counter_state_settles_to_the_running_total():
    """Every cycle's counter state, settled by the resolve pipeline, is the
    number of events counted so far (mod 2^16 here: 4-bit digits)."""
    m = Module()
    m.submodules.counter = counter = DigitCounter(width=16, digit=4)
    m.submodules.resolve = resolve = CarryResolve(width=16, digit=4)
    m.d.comb += resolve.state.eq(counter.state)
    rng = random.Random(1)

    async def bench(ctx):
        totals = [0]
        for _ in range(600):
            inc = rng.choice([0, 1, 5, 7, 7, 7])
            ctx.set(counter.inc, inc)
            await ctx.tick()
            totals.append(totals[-1] + inc)
            for k in range(resolve.steps + 1):
                if len(totals) > k:
                    settled = ctx.get(resolve.settled[k])
                    bits = 4 * (k + 1)
                    assert settled % (1 << bits) == totals[-1 - k] % (1 << bits)
        assert ctx.get(resolve.settled[resolve.steps]) == totals[-1 - resolve.steps] % (1 << 16)

    run_testbenches(m, bench)


def _region_rule(addr, regions, default):
    """contract 4.3 in Python: (cfg fields, base) of line address ``addr``."""
    for cfg, base, limit in regions:
        if cfg["enable"] and base <= addr < limit:
            return cfg, base
    return default, 0


def test_request_pipeline_captures_region_and_mask():
    p = SMALL
    dut = RequestPipeline(p)
    rng = random.Random(2)
    default = dict(mode=Mode.BYPASS, format=0, gate_kind=0, period=3, keep=2, threshold=0)
    regions = [(dict(mode=Mode.GTERNARY, format=1, gate_kind=0, period=5, keep=3,
                     threshold=2, enable=1), 100, 200),
               (dict(mode=Mode.GBINARY, format=2, gate_kind=1, period=7, keep=7,
                     threshold=4, enable=1), 150, 1 << 40)]
    opcodes = {ReqOpcode.MEM_RD: Kind.READ, ReqOpcode.MEM_INV: Kind.CMP,
               ReqOpcode.MEM_SPEC_RD: Kind.DROP, 0b0111: Kind.UNSUPPORTED}
    sent = [(rng.choice(list(opcodes)), rng.choice([5, 120, 160, 199, 200, 1 << 41]) +
             rng.randrange(4), tag) for tag in range(60)]

    async def producer(ctx):
        ctx.set(dut.reserve.room, 1)             # the in-flight table always has room here
        for name, value in default.items():
            ctx.set(dut.config.default[name], value)
        for r, (cfg, base, limit) in enumerate(regions):
            for name, value in cfg.items():
                if name == "enable":
                    ctx.set(dut.config.regions[r].enable, value)
                else:
                    ctx.set(dut.config.regions[r].cfg[name], value)
            ctx.set(dut.config.regions[r].base, base)
            ctx.set(dut.config.regions[r].limit, limit)
        for opcode, line, tag in sent:
            ctx.set(dut.req.payload.opcode, opcode)
            ctx.set(dut.req.payload.addr, line << p.offset_bits)
            ctx.set(dut.req.payload.tag, tag)
            ctx.set(dut.req.valid, 1)
            await ctx.tick().until(dut.req.ready)
        ctx.set(dut.req.valid, 0)

    fills = []

    async def table(ctx):
        """The in-flight table's read side: IDs in order, entries as filled."""
        next_id = 0
        ctx.set(dut.alloc.id, next_id)
        async for _, _, take, fill, fill_id, entry in ctx.tick().sample(
                dut.alloc.take, dut.alloc.fill, dut.alloc.fill_id, dut.alloc.entry):
            if fill:
                fills.append((fill_id, entry))
            if take:
                next_id += 1
                ctx.set(dut.alloc.id, next_id % (1 << p.id_bits))

    async def consumer(ctx):
        reads = []
        for opcode, line, tag in sent:
            ctx.set(dut.out.ready, rng.random() < 0.6)
            while True:
                _, _, valid, ready, payload = await ctx.tick().sample(
                    dut.out.valid, dut.out.ready, dut.out.payload)
                if valid and ready:
                    break
                ctx.set(dut.out.ready, rng.random() < 0.6)
            assert payload.tag == tag and payload.kind == opcodes[opcode]
            if payload.kind != Kind.READ:
                continue
            assert payload.addr == line
            assert payload.id == len(reads) % (1 << p.id_bits)
            reads.append((line, tag, payload.mode))
        await ctx.tick().repeat(AR_LEAD + 2)
        assert len(fills) == len(reads)
        for n, (line, tag, mode) in enumerate(reads):
            fill_id, entry = fills[n]
            assert fill_id == n % (1 << p.id_bits)
            cfg, base = _region_rule(line, regions, default)
            assert entry.tag == tag and mode == cfg["mode"]
            assert (entry.cfg.mode, entry.cfg.format, entry.cfg.gate_kind,
                    entry.cfg.threshold) == (cfg["mode"], cfg["format"], cfg["gate_kind"],
                                             cfg["threshold"])
            phase = ((line - base) * p.lanes) % cfg["period"]
            want = golden.gate_pattern(p.lanes, cfg["period"], cfg["keep"], phase)
            assert entry.mask == sum(int(b) << i for i, b in enumerate(want)), (line, cfg)

    run_testbenches(dut, producer, consumer, background=[table])


def test_request_pipeline_hold_and_idle():
    dut = RequestPipeline(SMALL)

    async def bench(ctx):
        ctx.set(dut.reserve.room, 1)
        ctx.set(dut.out.ready, 1)
        ctx.set(dut.req.valid, 1)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.req.ready) and not ctx.get(dut.config.idle)
        ctx.set(dut.config.hold, 1)
        for cycle in range(8):
            await ctx.tick()
            assert not ctx.get(dut.req.ready)
            if ctx.get(dut.config.idle):
                break
        # idle 5 edges after hold: one for req.ready to fall, then the last
        # request accepted passes A, M1, M2 and M3 (where it reads the CFG)
        assert cycle == 4, cycle

    run_testbenches(dut, bench)


class _Lite:
    """AXI4-Lite manager for a testbench (one transaction at a time)."""

    def __init__(self, ctx, bus):
        self.ctx, self.bus = ctx, bus

    async def write(self, addr, value, strb=0xF):
        ctx, bus = self.ctx, self.bus
        ctx.set(bus.awaddr, addr), ctx.set(bus.wdata, value), ctx.set(bus.wstrb, strb)
        ctx.set(bus.awvalid, 1), ctx.set(bus.wvalid, 1), ctx.set(bus.bready, 1)
        await ctx.tick()
        ctx.set(bus.awvalid, 0), ctx.set(bus.wvalid, 0)
        while True:
            _, _, bvalid, bresp = await ctx.tick().sample(bus.bvalid, bus.bresp)
            if bvalid:
                return bresp

    async def read(self, addr):
        ctx, bus = self.ctx, self.bus
        ctx.set(bus.araddr, addr), ctx.set(bus.arvalid, 1), ctx.set(bus.rready, 1)
        await ctx.tick()
        ctx.set(bus.arvalid, 0)
        while True:
            _, _, rvalid, rdata, rresp = await ctx.tick().sample(bus.rvalid, bus.rdata, bus.rresp)
            if rvalid:
                return rdata, rresp


def test_control_registers_write_waits_for_idle():
    p = SMALL
    dut = ControlRegisters(p)
    rmap = RegisterMap(p)
    good = cfg_encode(Mode.GTERNARY, period=5, keep=3)
    bad = cfg_encode(Mode.GTERNARY, period=4, keep=5)

    async def bench(ctx):
        lite = _Lite(ctx, dut.bus)
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


def test_ndr_arbiter_answers_every_source_once():
    dut = NdrArbiter(SMALL)
    rng = random.Random(5)
    req_tags, rwd_tags = list(range(0, 30)), list(range(100, 130))

    def feeder(port, tags):
        async def bench(ctx):
            for tag in tags:
                ctx.set(port.payload, tag)
                ctx.set(port.valid, 1)
                await ctx.tick().until(port.ready)
            ctx.set(port.valid, 0)
        return bench

    async def writes(ctx):
        # B beats for IDs 0..3 in turn; the table answers tag 200 + id
        for i in range(20):
            ctx.set(dut.b_id, i % 4), ctx.set(dut.b_valid, 1)
            await ctx.tick().until(dut.b_ready)
            ctx.set(dut.b_valid, 0)
            await ctx.tick()
            ctx.set(dut.lookup.entry, 200 + i % 4)

    async def sink(ctx):
        got = []
        while len(got) < 80:
            ctx.set(dut.ndr.ready, rng.random() < 0.7)
            _, _, valid, ready, tag = await ctx.tick().sample(dut.ndr.valid, dut.ndr.ready,
                                                               dut.ndr.payload.tag)
            if valid and ready:
                got.append(tag)
        assert sorted(t for t in got if t < 200) == req_tags + rwd_tags
        assert sorted(t for t in got if t >= 200) == sorted(200 + i % 4 for i in range(20))

    run_testbenches(dut, feeder(dut.req_cmp, req_tags), feeder(dut.rwd_cmp, rwd_tags), writes, sink)


def test_read_entry_filled_before_its_data_returns():
    """The top with a memory that answers each AR the cycle after it (the
    earliest AXI allows) and reads back to back: every DRS carries its own
    tag and line, so no R beat looked up its in-flight entry before the
    request pipeline had filled it (the entry holds the tag and the
    configuration; AR_LEAD in request.py)."""
    from neuron_fabric.hdl.top import Top
    from neuron_fabric.host.facts import ReqOpcode

    p = SMALL
    dut = Top(line_bits=p.line_bits, workers=p.workers, stages=p.stages, regions=p.regions,
              max_outstanding=p.max_outstanding)
    count = 40
    got = {}

    def line(addr):
        return (addr * 0x9E3779B97F4A7C15 + 1) % (1 << p.line_bits)

    async def memory(ctx):
        axi = dut.m_axi
        ctx.set(axi.arready, 1)
        pending = []
        async for _, _, ar, arid, araddr, rready in ctx.tick().sample(
                axi.arvalid, axi.arid, axi.araddr, axi.rready):
            if ctx.get(axi.rvalid) and rready:
                pending.pop(0)
            if ar:
                pending.append((arid, araddr))
            ctx.set(axi.rvalid, bool(pending))
            if pending:
                ctx.set(axi.rid, pending[0][0])
                ctx.set(axi.rdata, line(pending[0][1]))

    async def drs(ctx):
        ctx.set(dut.s2m_drs.ready, 1)
        async for _, _, valid, payload in ctx.tick().sample(dut.s2m_drs.valid,
                                                            dut.s2m_drs.payload):
            if valid:
                assert payload.tag not in got, payload.tag
                got[payload.tag] = payload.data

    async def bench(ctx):
        ctx.set(dut.m2s_req.payload.opcode, ReqOpcode.MEM_RD)
        for tag in range(1, count + 1):
            ctx.set(dut.m2s_req.payload.addr, tag << p.offset_bits)
            ctx.set(dut.m2s_req.payload.tag, tag)
            ctx.set(dut.m2s_req.valid, 1)
            await ctx.tick().until(dut.m2s_req.ready)
        ctx.set(dut.m2s_req.valid, 0)
        for _ in range(400):
            await ctx.tick()
            if len(got) == count:
                break

    run_testbenches(dut, bench, background=[memory, drs])
    assert got == {tag: line(tag << p.offset_bits) for tag in range(1, count + 1)}
