"""Fast checks of the top's pieces: register map against contract 4.4, generated
docs up to date, driver validation, the credit-admitted queues and their
compares (Amaranth simulator).  The gate phase and mask logic is tested in
test_phase.py."""

import asyncio
import collections
import random

import pytest
from amaranth import Module, Signal
from neuron_fabric.sim.amaranth_sim import run_testbenches

from neuron_fabric.host.driver import BusError, CfgError, Driver
from neuron_fabric.hdl.prims.credit import below, credit_ready
from neuron_fabric.hdl.prims.queue import CreditQueue, HeadQueue
from neuron_fabric.contract.facts import Format, GateKind, Mode
from neuron_fabric.contract.facts import TopParams
from neuron_fabric.contract.regmap import RegisterMap, markdown
from neuron_fabric.hdl.top.top import devload_level

from neuron_fabric.contract.paths import REPO


# -- register map ---------------------------------------------------------------

def test_regmap_offsets_follow_spec():
    rmap = RegisterMap(TopParams(regions=3))
    spec = {"ID": 0x000, "VERSION": 0x004, "CAPS0": 0x008, "CAPS1": 0x00C, "CAPS2": 0x018,
            "DEFAULT_CFG": 0x010, "STATUS": 0x014, "COUNTER0_LO": 0x080, "COUNTER0_HI": 0x084,
            "COUNTER5_LO": 0x0A8, "COUNTER5_HI": 0x0AC, "REGION0_CFG": 0x100,
            "REGION0_BASE_LO": 0x104, "REGION0_BASE_HI": 0x108, "REGION0_LIMIT_LO": 0x10C,
            "REGION0_LIMIT_HI": 0x110, "REGION2_CFG": 0x140, "REGION2_LIMIT_HI": 0x150}
    for name, offset in spec.items():
        assert rmap[name].offset == offset, name
    assert rmap.at(0x160) is None, "region 3 is unmapped when REGIONS = 3"
    assert rmap.at(0x0B0) is None
    assert rmap["ID"].reset == 0x4E464142
    # BYPASS, COUNT, PATTERN, P=3, K=2, T=0
    assert rmap["DEFAULT_CFG"].reset == 0x0000_2300
    assert rmap["CAPS0"].reset == 512 | 8 << 16 | 5 << 24
    assert rmap["CAPS1"].reset == 3 | 32 << 8


def test_register_docs_up_to_date():
    text = (REPO / "docs" / "registers.md").read_text()
    assert text == markdown(), "docs/registers.md is stale: run `make regdocs`"


# -- driver ------------------------------------------------------------------------

class RecordingBus:
    """Remembers every access; answers reads from a dict."""

    def __init__(self, values=None, fail=()):
        self.log = []
        self.values = values or {}
        self.fail = set(fail)

    async def read(self, offset):
        self.log.append(("r", offset))
        return self.values.get(offset, 0), offset not in self.fail

    async def write(self, offset, value):
        self.log.append(("w", offset, value))
        return offset not in self.fail


def run(coro):
    return asyncio.run(coro)


def test_driver_writes_what_spec_says():
    bus = RecordingBus()
    drv = Driver(bus, TopParams(regions=4))
    run(drv.set_default(Mode.GTERNARY, format=Format.SIGN, gate_kind=GateKind.MARGIN,
                        period=5, keep=4, threshold=3))
    # hand-assembled from the contract CFG layout
    assert bus.log == [("w", 0x010, 3 | 2 << 2 | 1 << 4 | 5 << 8 | 4 << 12 | 3 << 16)]
    bus.log.clear()
    run(drv.set_region(2, base=0x12_3456_7800, limit=0x12_3456_9000, mode=Mode.GBINARY))
    cfg = 2 | 3 << 8 | 2 << 12
    assert bus.log == [("w", 0x140, cfg), ("w", 0x144, 0x3456_7800), ("w", 0x148, 0x12),
                       ("w", 0x14C, 0x3456_9000), ("w", 0x150, 0x12),
                       ("w", 0x140, cfg | 1 << 31)]
    bus.log.clear()
    run(drv.clear_status("rd_err", "bad_csr"))
    assert bus.log == [("w", 0x014, 0b10010)]


def test_driver_reads_counters_lo_then_hi():
    bus = RecordingBus({0x0A0: 7, 0x0A4: 2})
    drv = Driver(bus)
    assert run(drv.counter(4)) == (2 << 32) | 7
    assert bus.log == [("r", 0x0A0), ("r", 0x0A4)]


@pytest.mark.parametrize("call", [
    lambda d: d.set_default(Mode.GTERNARY, format=3),
    lambda d: d.set_default(Mode.GTERNARY, period=0, keep=0),
    lambda d: d.set_default(Mode.GTERNARY, period=4, keep=5),
    lambda d: d.set_default(Mode.GTERNARY, threshold=9),
    lambda d: d.set_default(4),
    lambda d: d.set_region(4, base=0, limit=64, mode=Mode.GBINARY),
    lambda d: d.set_region(0, base=32, limit=128, mode=Mode.GBINARY),
    lambda d: d.set_region(0, base=128, limit=64, mode=Mode.GBINARY),
    lambda d: d.set_region(0, base=0, limit=1 << 52, mode=Mode.GBINARY),
    lambda d: d.clear_region(-1),
    lambda d: d.counter(6),
    lambda d: d.clear_status("nonsense"),
    lambda d: d.write("CAPS0", 1),
])
def test_driver_rejects_before_the_bus(call):
    bus = RecordingBus()
    drv = Driver(bus, TopParams(workers=8, regions=4))
    with pytest.raises((CfgError, ValueError)):
        run(call(drv))
    assert bus.log == []


def test_driver_raises_on_slverr_and_probes():
    caps = {0x000: 0x4E464142, 0x008: 64 | 4 << 16 | 2 << 24, 0x00C: 2 | 4 << 8}
    drv = run(Driver.probe(RecordingBus(caps)))
    assert drv.params == TopParams(line_bits=64, workers=4, stages=2, regions=2, max_outstanding=4)
    with pytest.raises(BusError):
        run(Driver(RecordingBus(fail={0x010})).set_default(Mode.GBINARY))
    with pytest.raises(BusError):
        run(Driver.probe(RecordingBus({0x000: 0})))


def test_probe_takes_the_profile_and_features_from_caps2():
    # contract 4.4: CAPS2 [31:24] profile (1 paper), bit 4 hierarchy
    base = {0x000: 0x4E464142, 0x008: 64 | 4 << 16 | 2 << 24, 0x00C: 2 | 4 << 8}
    paper = run(Driver.probe(RecordingBus({**base, 0x018: 0x01000000})))
    assert (paper.params.profile, paper.profile.features) == ("paper", frozenset())
    hier = run(Driver.probe(RecordingBus({**base, 0x018: 1 << 4})))
    assert (hier.params.profile, hier.profile.features) == ("full", {"hierarchy"})
    # a build older than contract 2.2 answers CAPS2 SLVERR: the argument decides
    old = run(Driver.probe(RecordingBus(base, fail={0x018}), profile="paper"))
    assert old.params.profile == "paper" and old.profile.features == frozenset()
    with pytest.raises(ValueError, match="names profile 7"):
        run(Driver.probe(RecordingBus({**base, 0x018: 0x07000000})))


# -- devload thresholds ---------------------------------------------------------------

def test_devload_thresholds():
    assert [devload_level(c, 4) for c in range(5)] == [0, 1, 1, 2, 3]
    assert [devload_level(c, 32) for c in (0, 7, 8, 23, 24, 31, 32)] == [0, 0, 1, 1, 2, 2, 3]


@pytest.mark.parametrize("depth, slices", [(8, 1), (13, 4), (16, 3), (1, None), (2, None),
                                           (4, None), (8, None)])
def test_credit_queue_follows_a_fifo(depth, slices):
    """Random writes (never more than ``depth`` items in) and reads (only
    while ``r_rdy``), in spells of mostly writes and mostly reads: ``r_rdy``,
    ``more`` and the head follow a model FIFO, and ``rdy_next`` and
    ``more_next`` are the next cycle's.  ``slices`` None: the queue with
    its head in a register (:class:`HeadQueue`)."""
    dut = CreditQueue(24, depth, slices=slices) if slices else HeadQueue(24, depth)
    rng = random.Random(depth)

    async def bench(ctx):
        model = collections.deque()
        for cycle in range(2000):
            assert ctx.get(dut.r_rdy) == bool(model)
            assert ctx.get(dut.more) == (len(model) >= 2)
            if model:
                assert ctx.get(dut.r_data) == model[0]
            p_write = (0.9, 0.3)[cycle // 100 % 2]
            read = bool(model) and rng.random() < 1 - p_write
            write = len(model) - read < depth and rng.random() < p_write
            word = rng.getrandbits(24)
            ctx.set(dut.w_en, write), ctx.set(dut.w_data, word), ctx.set(dut.r_en, read)
            if read:
                model.popleft()
            if write:
                model.append(word)
            assert ctx.get(dut.rdy_next) == bool(model)
            assert ctx.get(dut.more_next) == (len(model) >= 2)
            await ctx.tick()

    run_testbenches(dut, bench)


@pytest.mark.parametrize("late_give, late_admit", [(False, False), (True, False),
                                                   (False, True), (True, True)])
@pytest.mark.parametrize("depth", [2, 3, 7])
def test_credit_ready_keeps_its_window(depth, late_give, late_admit):
    """Random offers and leaves (each leave of an item admitted in an earlier
    cycle): the items admitted and not yet left never exceed ``depth``, and
    ``ready`` is high whenever they leave room for two (room for one when
    both events are counted at once)."""
    m = Module()
    valid, give = Signal(), Signal()
    ready = credit_ready(m, depth, valid, give, late_give=late_give, late_admit=late_admit)
    rng = random.Random(depth * 4 + late_give * 2 + late_admit)
    # each event counted a cycle late costs the window a place
    slack = 1 + late_give + late_admit

    async def bench(ctx):
        held, waiting = 0, 0          # in the window; admitted before this cycle
        for cycle in range(3000):
            phase = cycle // 150 % 2
            offer = rng.random() < (0.9, 0.3)[phase]
            leave = waiting > 0 and rng.random() < (0.3, 0.9)[phase]
            ctx.set(valid, offer)
            ctx.set(give, leave)
            r = ctx.get(ready)
            assert held <= depth
            if cycle and held + slack <= depth:        # (ready rises after reset)
                assert r, (cycle, held)
            await ctx.tick()
            admitted = offer and r
            held += admitted - leave
            waiting += admitted - leave
            assert held <= depth, (cycle, held)

    run_testbenches(m, bench)


def test_below_compares_with_a_constant():
    x = Signal(5)
    ks = range(-2, 36)
    m = Module()
    outs = [Signal(name=f"below{i}") for i in range(len(ks))]
    m.d.comb += [o.eq(below(x, k)) for o, k in zip(outs, ks)]

    async def bench(ctx):
        for v in range(32):
            ctx.set(x, v)
            assert [ctx.get(o) for o in outs] == [int(v < k) for k in ks], v

    run_testbenches(m, bench, clock=False)


def test_register_map_region_lookup():
    regs = RegisterMap(TopParams(regions=2))
    assert regs.region(1, "CFG").offset == 0x100 + 0x20 * 1
    assert regs.region(0, "LIMIT_HI").offset == 0x110
    with pytest.raises(ValueError, match="2"):
        regs.region(2, "CFG")
