"""The packed result view (contract section 6) on the whole top against the
device model (whose view is the golden model's ``pack_view``): in the
Amaranth simulator, random source lines in both layouts and every operand,
every mode, format and gate, a memory that interleaves the beats of
different IDs' bursts at random, random pauses on AR, R and DRS, and
errors on single beats (W 4, 8, 16); the control port's view registers and
their refusals (section 6.4); ``make latency``'s view figures; and the
cocotb bench ``sim/cocotb_view.py`` on the exported top (Verilator).

Until ``packed_view`` leaves ``UNBUILT_FEATURES`` the tests build the
``full`` profile with the feature added (the ``view_profile`` fixture)."""

import random

import numpy as np
import pytest

from neuron_fabric.contract import facts
from neuron_fabric.contract.facts import TOP_MODULE, Format, Mode, Operand, ReqOpcode, TopParams, view_beats
from neuron_fabric.contract.paths import BUILD
from neuron_fabric.contract.regmap import RegisterMap, caps2_value, cfg_encode
from neuron_fabric.hdl.export.verilog import top_verilog, write_verilog
from neuron_fabric.hdl.top.bus import OKAY, SLVERR
from neuron_fabric.hdl.top.top import Top
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.sim.amaranth_sim import AxiLiteManager, run_testbenches
from neuron_fabric.sim.cocotb_view import random_fields
from neuron_fabric.sim.formal import run_sby
from neuron_fabric.sim.formal_view import view_pack_job
from neuron_fabric.sim.latency import measure
from neuron_fabric.sim.tb_top import SMALL_TOP
from neuron_fabric.sim.toolchain import run_cocotb
from neuron_fabric.synth.summary import summary_configs

#: The window of view lines each configuration reads, and where its source is.
VIEW_BASE, VIEW_LINES, SOURCE = 0x10_0000, 8, 0x4_0000


@pytest.fixture
def view_profile(monkeypatch):
    """The ``full`` profile with the packed view (until it is built there)."""
    full = facts.PROFILES["full"]
    profile = facts.Profile("full", frozenset(full.features | {"packed_view"}))
    monkeypatch.setitem(facts.PROFILES, "full", profile)
    return profile


class _BothBus:
    """The driver's bus on the RTL's control port and the device model at
    once; each answer must agree."""

    def __init__(self, axil, device):
        self.axil, self.device = axil, device

    async def read(self, offset):
        value, resp = await self.axil.read(offset)
        model, ok = await self.device.read(offset)
        assert (value, resp == OKAY) == (model, ok), (hex(offset), value, resp, model, ok)
        return value, ok

    async def write(self, offset, value, strb=0xF):
        resp = await self.axil.write(offset, value, strb)
        ok = await self.device.write(offset, value, strb)
        assert (resp == OKAY) == ok, (hex(offset), hex(value), resp)
        return ok


class _Memory:
    """The AXI4 memory behind the top: lines by line address; each burst's
    beats in order, the beats of different bursts interleaved at random;
    random pauses on AR and R; SLVERR for the lines in ``bad``."""

    def __init__(self, dut, rng, lines, bad):
        self.dut, self.rng, self.lines, self.bad = dut, rng, lines, bad
        self.bursts = []
        self.bursts_seen = []

    async def ar(self, ctx):
        axi, ob = self.dut.m_axi, self.dut.params.offset_bits
        while True:
            ctx.set(axi.arready, self.rng.random() < 0.7)
            _, _, valid, ready, arid, addr, arlen, arsize, arburst = await ctx.tick().sample(
                axi.arvalid, axi.arready, axi.arid, axi.araddr, axi.arlen, axi.arsize, axi.arburst)
            if valid and ready:
                assert arsize == ob and arburst == 1
                assert addr % (1 << ob) == 0
                # a burst never crosses 4 KiB (contract 6.3)
                assert addr >> 12 == (addr + (arlen + 1 << ob) - 1) >> 12
                self.bursts.append([arid, addr >> ob, arlen + 1])
                self.bursts_seen.append(arlen + 1)

    async def r(self, ctx):
        axi, lb = self.dut.m_axi, self.dut.params.line_bytes
        beat = None
        while True:
            if beat is None and self.bursts and self.rng.random() < 0.8:
                beat = self.rng.choice(self.bursts)
                line = beat[1]
                data = self.lines.get(line, bytes(lb))
                ctx.set(axi.rid, beat[0])
                ctx.set(axi.rdata, int.from_bytes(data, "little"))
                ctx.set(axi.rresp, SLVERR if line in self.bad else OKAY)
                ctx.set(axi.rlast, beat[2] == 1)
                ctx.set(axi.rvalid, 1)
            _, _, valid, ready = await ctx.tick().sample(axi.rvalid, axi.rready)
            if valid and ready:
                beat[1] += 1
                beat[2] -= 1
                if not beat[2]:
                    self.bursts.remove(beat)
                beat = None
                ctx.set(axi.rvalid, 0)


async def _drs(ctx, dut, rng, got):
    drs = dut.s2m_drs
    while True:
        ctx.set(drs.ready, rng.random() < 0.6)
        _, _, valid, ready, tag, data, poison = await ctx.tick().sample(
            drs.valid, drs.ready, drs.payload.tag, drs.payload.data, drs.payload.poison)
        if valid and ready:
            assert tag not in got, f"tag {tag} answered twice"
            got[tag] = (data, poison)


def _run(params, profile, seed, configs, reads, bad_rate):
    """``configs`` configurations, each with ``reads`` random reads of the
    view, of its source lines through a plain region and of default lines;
    every DRS against the device model."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    dut = Top(line_bits=params.line_bits, workers=params.workers, stages=params.stages,
              regions=params.regions, max_outstanding=params.max_outstanding)
    device = Device(params, profile=profile)
    lb, ob = params.line_bytes, params.offset_bits
    lines, bad = {}, set()
    memory = _Memory(dut, rng, lines, bad)
    got = {}
    beats_max = max(view_beats(params.line_bits, params.workers, op) for op in Operand)
    n_source = VIEW_LINES * beats_max

    async def bench(ctx):
        ctx.set(dut.s_axil.rready, 1)
        await ctx.tick().repeat(5)
        bus = _BothBus(AxiLiteManager(ctx, dut.s_axil), device)
        nf = Driver(bus, params, profile=profile)
        tag = 0
        for c in range(configs):
            # new source lines and faults
            raw = nrng.integers(0, 256, (n_source, lb), dtype=np.uint8)
            bad.clear()
            bad.update(SOURCE // lb + k for k in range(n_source) if rng.random() < bad_rate)
            device.faults.read_lines = set(bad)
            device.poke(SOURCE, raw)
            for k in range(n_source):
                lines[SOURCE // lb + k] = raw[k].tobytes()
            fields = random_fields(rng, params)
            await nf.set_view(0, base=VIEW_BASE, limit=VIEW_BASE + VIEW_LINES * lb,
                              source=SOURCE, **fields)
            await nf.set_region(1, base=SOURCE, limit=SOURCE + n_source * lb,
                                **random_fields(rng, params))
            await ctx.tick().repeat(40)
            expected = {}
            for _ in range(reads):
                kind = rng.random()
                if kind < 0.7:
                    addr = VIEW_BASE + rng.randrange(VIEW_LINES) * lb
                elif kind < 0.9:
                    addr = SOURCE + rng.randrange(n_source) * lb
                else:
                    addr = 0x8000 + rng.randrange(16) * lb
                response = device.m2s_req(ReqOpcode.MEM_RD, addr, tag)
                expected[tag] = (addr, response)
                req = dut.m2s_req
                ctx.set(req.payload.opcode, ReqOpcode.MEM_RD)
                ctx.set(req.payload.addr, addr)
                ctx.set(req.payload.tag, tag)
                ctx.set(req.valid, 1)
                await ctx.tick().until(req.ready)
                ctx.set(req.valid, 0)
                if rng.random() < 0.3:
                    await ctx.tick().repeat(rng.randrange(1, 6))
                tag += 1
            for _ in range(5000):
                if all(t in got for t in expected):
                    break
                await ctx.tick()
            missing = [t for t in expected if t not in got]
            assert not missing, f"config {c} ({fields}): no DRS for tags {missing[:8]}"
            for t, (addr, response) in expected.items():
                data, poison = got[t]
                assert poison == response.poison, (c, fields, hex(addr), t)
                if not poison:
                    assert data == int.from_bytes(response.data, "little"), \
                        (c, fields, hex(addr), t, hex(data),
                         response.data.hex())
            # the counters and STATUS agree (RD_ERR for every error beat)
            for name in ("STATUS", *(f"COUNTER{j}_LO" for j in range(6))):
                await bus.read(nf.map[name].offset)
            await nf.clear_region(0)
        assert any(b > 1 for b in memory.bursts_seen)

    async def drs(ctx):
        await _drs(ctx, dut, rng, got)

    run_testbenches(dut, bench, background=(memory.ar, memory.r, drs))


@pytest.mark.long
@pytest.mark.parametrize("workers", [4, 8, 16])
def test_view_against_device_model(view_profile, workers):
    """Views of every operand and layout through the top at 64 bits (B from
    2 to 16), beside plain reads, under random pauses and interleaving,
    with an error on about one beat in forty."""
    params = TopParams(line_bits=64, workers=workers, stages=2, regions=4, max_outstanding=8)
    _run(params, view_profile, seed=workers, configs=6, reads=60, bad_rate=0.025)


def test_view_registers_and_refusals(view_profile):
    """VIEW, SOURCE_LO and SOURCE_HI read back what the contract keeps
    (SOURCE 4 KiB-aligned), and the writes section 6.4 refuses are
    refused (SLVERR, the register unchanged), on the RTL and the model
    alike (through the bus that checks both)."""
    params = TopParams(line_bits=64, workers=4, stages=2, regions=2, max_outstanding=4)
    dut = Top(line_bits=64, workers=4, stages=2, regions=2, max_outstanding=4)
    device = Device(params, profile=view_profile)
    rmap = RegisterMap(params, view_profile.features)

    async def bench(ctx):
        await ctx.tick().repeat(5)
        bus = _BothBus(AxiLiteManager(ctx, dut.s_axil), device)
        view, cfg = rmap["REGION1_VIEW"].offset, rmap["REGION1_CFG"].offset
        assert await bus.write(rmap["REGION1_SOURCE_LO"].offset, 0xFFFF_FFFF)
        assert await bus.read(rmap["REGION1_SOURCE_LO"].offset) == (0xFFFF_F000, True)
        assert await bus.write(rmap["REGION1_SOURCE_HI"].offset, 0xFFFF_FFFF)
        assert await bus.read(rmap["REGION1_SOURCE_HI"].offset) == (0x000F_FFFF, True)
        # VIEW set while CFG is BYPASS: refused
        assert not await bus.write(view, 1)
        assert await bus.read(view) == (0, True)
        assert await bus.write(cfg, cfg_encode(Mode.GTERNARY))
        assert await bus.write(view, 0xFFFF_FFFF)
        assert await bus.read(view) == (1, True)
        # CFG to IDENTITY or BYPASS while a view: refused; G-Binary taken
        for mode in (Mode.IDENTITY, Mode.BYPASS):
            assert not await bus.write(cfg, cfg_encode(mode))
        assert await bus.read(cfg) == (cfg_encode(Mode.GTERNARY), True)
        assert await bus.write(cfg, cfg_encode(Mode.GBINARY, Format.SIGN))
        # a byte of CFG that leaves the mode alone is taken
        assert await bus.write(cfg, 0, strb=0b0100)
        # VIEW cleared first, then CFG may go back to BYPASS
        assert await bus.write(view, 0)
        assert await bus.write(cfg, cfg_encode(Mode.BYPASS))
        status, _ = await bus.read(rmap["STATUS"].offset)
        assert status & 0x10

    run_testbenches(dut, bench)


@pytest.mark.long
@pytest.mark.parametrize("workers", [4, 16])
def test_view_latency_and_rate(view_profile, workers):
    """``make latency``'s view figures (64 bits): a view's read takes a
    G-Binary read's cycles and B - 1 more (its burst's beats come one a
    cycle and the last completes the line, which leaves as a G-Binary
    line would), and back-to-back view reads reach the R channel's bound,
    a response every B cycles; a G-Binary read still takes exactly STAGES
    cycles more than a BYPASS read in a build with the view (contract 4.3:
    the bypass line waits beside the packing)."""
    res = measure(line_bits=64, workers=workers, profile="full")
    beats = view_beats(64, workers, Operand.SIGNS)
    stages = TopParams(line_bits=64, workers=workers, profile="full").stages
    assert res["G-Binary read -> DRS"] - res["BYPASS read -> DRS"] == stages
    assert res[f"packed view read (B = {beats}) -> DRS"] == res["G-Binary read -> DRS"] + beats - 1
    assert res["packed view reads back to back, cycles per DRS"] == beats


def _run_view_bench(params, simulator, seed, **bench):
    """The cocotb bench ``sim/cocotb_view.py`` on the exported top of
    ``params`` with the packed view (exported without the Verilog cache,
    whose key does not see the profile's features)."""
    src = BUILD / "cocotb" / "src" / f"{params.tag()}_view" / "neuron_fabric.v"
    write_verilog(src, top_verilog(line_bits=params.line_bits, workers=params.workers,
                                   stages=params.stages, regions=params.regions,
                                   max_outstanding=params.max_outstanding, profile=params.profile))
    return run_cocotb(sources=[src], toplevel=TOP_MODULE, test_module="neuron_fabric.sim.cocotb_view",
                      simulator=simulator, build_dir=BUILD / "cocotb" / f"view_{simulator}_{params.tag()}",
                      params=dict(params.__dict__, seed=seed, **bench))


@pytest.mark.long
def test_exported_view_verilator(view_profile):
    """The exported small top (64 bits, W 4) on Verilator against the device
    model: a few hundred reads of views, plain regions and DEFAULT_CFG.
    (make test-long while no exported build has the view: the bench then
    compiles a top of its own, minutes on 2 cores; it rejoins make test
    when the view is built and the benches' top is shared.)"""
    assert _run_view_bench(SMALL_TOP, "verilator", seed=3, configs=3, batches=3) == 1


@pytest.mark.long
@pytest.mark.parametrize("workers", [8, 16])
def test_exported_view_wide(view_profile, workers):
    """The same at 128 bits, W 8 and 16, and more rounds (make test-long)."""
    params = TopParams(line_bits=128, workers=workers, stages=3, regions=4, max_outstanding=16)
    assert _run_view_bench(params, "verilator", seed=workers, configs=12, batches=4) == 1


@pytest.mark.long
def test_view_pack_formal():
    """``sim/formal_view.py``: a view's DRS holds exactly the 2-bit results of
    its own B beats in order, poisoned exactly when one failed, its ID
    retired once (bounded, 64 bits, W 4), and a cover trace reaches a whole
    G-Ternary view response (one to three minutes with Yices: make test-long).
    It fails when a beat's slice goes to the wrong place of the line."""
    passed, log = run_sby(view_pack_job(64, 4))
    assert passed, "\n".join(log.splitlines()[-25:])
    assert "reached cover statement" in log


def test_summary_sets_the_top_without_the_view_beside(view_profile):
    """Where the full profile has the view, ``make summary`` builds the top
    without it beside (``full-no-packed_view``): that build maps no view
    register and its CAPS2 names no view, the full top's does."""
    configs = summary_configs()
    assert configs["top-no-view"].profile == "full-no-packed_view"
    without = TopParams(line_bits=64, profile="full-no-packed_view")
    assert "REGION0_VIEW" not in RegisterMap(without)
    assert "REGION0_VIEW" in RegisterMap(TopParams(line_bits=64))
    assert caps2_value("full") & ~caps2_value("full-no-packed_view") == 1 << 5
