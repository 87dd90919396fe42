"""Rules of the control port (contract 4.4 and 5.1) on the control
registers alone in the Amaranth simulator, each against a value worked by
hand from the contract's text:

- the CFG word has no reserved bits: each bit 2.0 reserved ([7:5],
  [30:21]) is checked as its field, so a write with it set is refused on
  every build unless it is a configuration the build implements; bits
  that are no field read 0 and what is written to them is ignored;
- counter 5 counts every event, whether or not its STATUS bit is already
  set (a refused write with BAD_CSR set counts);
- worker-major signs are accepted whatever E (W 16 at 64 bits: E = 4).
"""

import pytest

from neuron_fabric.contract.facts import Format, Layout, Mode, TopParams
from neuron_fabric.contract.regmap import RegisterMap, cfg_encode
from neuron_fabric.hdl.top.csr import ERROR_EVENTS, ControlRegisters
from neuron_fabric.sim.amaranth_sim import AxiLiteManager, run_testbenches

SMALL = dict(line_bits=64, workers=4, stages=1, regions=1, max_outstanding=4)
OKAY, SLVERR = 0b00, 0b10


class _ControlPort(AxiLiteManager):
    """AXI4-Lite manager of :class:`ControlRegisters` (one transaction at a
    time, the request pipeline always idle); a write returns once its
    events have reached the counters."""

    def __init__(self, ctx, dut):
        super().__init__(ctx, dut.bus)
        self.dut = dut
        ctx.set(dut.config.idle, 1)

    async def write(self, offset, value, strb=0xF):
        bresp = await super().write(offset, value, strb)
        await self.ctx.tick().repeat(4)       # (events reach the counters)
        return bresp

    async def counter(self, j, rmap):
        lo, _ = await self.read(rmap[f"COUNTER{j}_LO"].offset)
        hi, _ = await self.read(rmap[f"COUNTER{j}_HI"].offset)
        return hi << 32 | lo

    async def event(self, *names):
        """One cycle with the error events ``names`` (of ERROR_EVENTS) high."""
        index = [n for n, _ in ERROR_EVENTS]
        self.ctx.set(self.dut.events.errors, sum(1 << index.index(n) for n in names))
        await self.ctx.tick()
        self.ctx.set(self.dut.events.errors, 0)
        await self.ctx.tick().repeat(4)


def _run(params, bench):
    dut = ControlRegisters(params)

    async def testbench(ctx):
        await bench(_ControlPort(ctx, dut), RegisterMap(params))

    run_testbenches(dut, testbench)


#: Each bit 2.0 reserved, set alone in DEFAULT_CFG's reset value
#: (BYPASS, COUNT, PATTERN 2 of 3, T 0, SIGNS, total 0), worked from
#: contract 5.1: accepted by the full profile?  (The paper profile has no
#: hierarchy feature and refuses every one.)
FORMERLY_RESERVED = {
    5: True,                           # layout WORKER_MAJOR, SIGNS: a configuration of 5.2
    6: False,                          # operand COUNTS4 with total 0
    7: False,                          # operand COUNTS8 with total 0
    **{b: False for b in range(21, 31)},   # SIGNS with total != 0
}


@pytest.mark.parametrize("profile", ["full", "paper"])
def test_formerly_reserved_cfg_bits_are_fields(profile):
    params = TopParams(**SMALL, profile=profile)
    status_bad = 1 << 4

    async def bench(port, rmap):
        cfg = rmap["DEFAULT_CFG"]
        reset = cfg.reset
        for bit, full_accepts in FORMERLY_RESERVED.items():
            accepted = full_accepts and profile == "full"
            value = reset | 1 << bit
            assert await port.write(cfg.offset, value) == (OKAY if accepted else SLVERR), bit
            assert await port.read(cfg.offset) == (value if accepted else reset, OKAY), bit
            assert await port.write(cfg.offset, reset) == OKAY
        # a 2.0 driver's word: a valid 2.0 configuration with junk in [30:21]
        junk = cfg_encode(Mode.GTERNARY, Format.SIGN, period=5, keep=3) | 0x5A5 << 21
        assert await port.write(cfg.offset, junk) == SLVERR
        assert await port.read(cfg.offset) == (reset, OKAY)
        # bits that are no field: read 0, a write to them ignored
        assert await port.write(cfg.offset, reset | 1 << 31) == OKAY
        assert await port.read(cfg.offset) == (reset, OKAY)
        region = rmap.region(0, "CFG")
        assert await port.write(region.offset, reset | 1 << 31) == OKAY
        assert await port.read(region.offset) == (reset | 1 << 31, OKAY)   # enable: a field
        base_hi = rmap.region(0, "BASE_HI")
        assert await port.write(base_hi.offset, 0xFFFF_FFFF) == OKAY
        assert await port.read(base_hi.offset) == (0x000F_FFFF, OKAY)
        status = rmap["STATUS"].offset
        assert await port.read(status) == (status_bad, OKAY)
        assert await port.write(status, 0xFFFF_FFE0) == OKAY      # no STATUS bit
        assert await port.read(status) == (status_bad, OKAY)
        assert await port.write(status, status_bad) == OKAY
        assert await port.read(status) == (0, OKAY)

    _run(params, bench)


def test_counter5_counts_every_event_even_with_its_bit_set():
    """Counter 5 counts events, not STATUS bits that rise: a refused write
    while BAD_CSR is already set counts, and so do a repeated event and two
    events of one STATUS bit in the same cycle.  Neither clearing STATUS
    nor a read answered SLVERR is an event."""
    params = TopParams(**SMALL)

    async def bench(port, rmap):
        status = rmap["STATUS"].offset
        bad_cfg = cfg_encode(Mode.GTERNARY, 3)                       # format 3
        expect = 0
        for offset, value in [(rmap["DEFAULT_CFG"].offset, bad_cfg),     # BAD_CSR rises
                              (rmap["DEFAULT_CFG"].offset, bad_cfg),     # BAD_CSR already set
                              (rmap["ID"].offset, 0),                    # read-only
                              (0x0B0, 0)]:                               # unmapped
            assert await port.write(offset, value) == SLVERR
            expect += 1
            assert await port.read(status) == (1 << 4, OKAY)
            assert await port.counter(5, rmap) == expect
        await port.event("rd_err")
        await port.event("rd_err")                                       # RD_ERR already set
        expect += 2
        assert await port.counter(5, rmap) == expect
        await port.event("req_unsupported", "rwd_unsupported")           # one bit, two events
        expect += 2
        assert await port.read(status) == (0b10011, OKAY)
        assert await port.counter(5, rmap) == expect
        assert await port.write(status, 0x1F) == OKAY
        assert await port.read(status) == (0, OKAY)
        assert await port.read(0x0B0) == (0, SLVERR)
        assert await port.counter(5, rmap) == expect == 8

    _run(params, bench)


def test_worker_major_signs_accepted_with_four_lanes():
    """Contract 5.2: at 64 bits with W 16 (E = 4) a worker's segment is half
    a byte, and the layout is accepted all the same (the full profile)."""
    params = TopParams(line_bits=64, workers=16, stages=1, regions=1, max_outstanding=4)
    assert params.lanes == 4

    async def bench(port, rmap):
        value = cfg_encode(Mode.GTERNARY, Format.SIGN, threshold=16, layout=Layout.WORKER_MAJOR)
        assert await port.write(rmap["DEFAULT_CFG"].offset, value) == OKAY
        assert await port.read(rmap["DEFAULT_CFG"].offset) == (value, OKAY)

    _run(params, bench)
