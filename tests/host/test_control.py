"""The control plane: its roles against hand-worked traces, the Predictor's
isolation, the fault rule, and mode changes that never split a step.

The register bus here is written from the register map's write rules
(SPEC 4.4: a CFG the port would reject answers SLVERR and changes nothing),
not from the control plane, so it can be an oracle for what was written.
"""

import asyncio
import inspect
import math

import numpy as np
import pytest

from neuron_fabric.host.control import (FP32, LOW_BIT_MODES, MODE_CFG, Commander,
                                        CommanderConfig, ControlPlane, Predictor,
                                        PredictorConfig, Supervisor, SupervisorConfig,
                                        TraceRecord)
from neuron_fabric.host.driver import Driver
from neuron_fabric.host.facts import Mode, TopParams
from neuron_fabric.host.regmap import RegisterMap, cfg_check, cfg_decode
from neuron_fabric.sim.envelope.params import GiB

PARAMS = TopParams(line_bits=64, workers=8, regions=2)
REGIONS = {"backbone": 0, "head": 1}


def run(coro):
    return asyncio.run(coro)


class RegisterBus:
    """Register file with SPEC 4.4's write rules; ``fail_writes`` holds
    write numbers (0-based) answered SLVERR, ``raise_writes`` those that
    raise, ``drop_writes`` those silently lost (a memory-mapped bus)."""

    def __init__(self, params=PARAMS, fail_writes=(), raise_writes=(), drop_writes=()):
        self.map = RegisterMap(params)
        self.params = params
        self.regs = {r.offset: r.reset for r in self.map.registers}
        self.writes = []
        self.fail, self.raise_, self.drop = set(fail_writes), set(raise_writes), set(drop_writes)

    async def read(self, offset):
        return self.regs.get(offset, 0), offset in self.regs

    async def write(self, offset, value):
        n = len(self.writes)
        self.writes.append((offset, value))
        if n in self.raise_:
            raise OSError("injected bus error")
        reg = self.map.at(offset)
        if n in self.fail or reg is None or reg.access == "RO":
            return False
        if reg.kind == "cfg" and cfg_check(value, self.params.workers):
            return False
        if n not in self.drop:
            self.regs[offset] = value & reg.writable_mask
        return True

    def mode(self, region):
        return cfg_decode(self.regs[self.map[f"REGION{region}_CFG"].offset])["mode"]


def trace(step, elements=(("backbone", 1000), ("head", 100)), compute_s=1e-3):
    return TraceRecord(step, compute_s, tuple(elements))


# -- Predictor ----------------------------------------------------------------------

def test_predictor_takes_only_a_trace_record():
    p = Predictor()
    params = list(inspect.signature(p.observe).parameters)
    assert params == ["record"]
    for bad in (np.zeros(10), {"loss": 1.0}, 1.0, (0, 1e-3, ())):
        with pytest.raises(TypeError):
            p.observe(bad)
    assert {f for f in TraceRecord.__dataclass_fields__} == {"step", "compute_s", "group_elements"}


@pytest.mark.parametrize("record", [
    dict(step=0, compute_s=np.ones(3), group_elements=()),
    dict(step=0, compute_s=1e-3, group_elements=(("backbone", np.ones(5)),)),
    dict(step=0, compute_s=1e-3, group_elements={"backbone": 5}),
    dict(step=np.arange(2), compute_s=1e-3, group_elements=()),
    dict(step=0, compute_s=math.nan, group_elements=()),
])
def test_trace_record_refuses_arrays_and_non_numbers(record):
    with pytest.raises(TypeError):
        TraceRecord(**record)


def test_predictor_forecasts_from_the_communication_time_model():
    p = Predictor(PredictorConfig(line_bits=512))
    assert p.forecast() is None
    p.observe(trace(0, compute_s=2e-3))
    p.observe(trace(1, compute_s=4e-3))
    f = p.forecast()
    # compute: EMA with weight 0.2 on the newest
    assert f.compute_s == pytest.approx(0.8 * 2e-3 + 0.2 * 4e-3)
    # FP32 through CXL pooled memory: every GPU writes and reads S = 4 bytes/element
    s = 1100 * 4
    assert f.gradient_bytes == s
    assert f.allreduce_s[FP32] == pytest.approx(2 * s / (128 * GiB))
    assert f.shard_bytes_per_gpu == s / 8
    # 1-bit G-Binary is 32x less payload, then the datapath's exposed overhead (~1.13 %)
    ratio = f.allreduce_s["gbinary"] / f.allreduce_s[FP32]
    assert 1 / 32 < ratio < 1.02 / 32
    # cache lines: 512-bit lines of 64 lanes at W = 8
    assert f.cache_line_reads == math.ceil(1000 / 64) + math.ceil(100 / 64)
    assert f.pressure == pytest.approx(f.allreduce_s[FP32] / f.compute_s)


# -- Supervisor ----------------------------------------------------------------------

def test_supervisor_cusum_hand_worked():
    s = Supervisor(SupervisorConfig(ref_ema=0.5, drift=0.1, limit=0.3, spike_ratio=10,
                                    cooldown_steps=2))
    assert s.observe(1.0) is None            # reference R = 1
    assert s.observe(1.2) is None            # x = .2, S = .1, R = 1.1
    assert s.cusum == pytest.approx(0.1)
    assert s.observe(1.4) is None            # x = .3/1.1, S = .2727, R = 1.25
    assert s.cusum == pytest.approx(0.3 / 1.1)
    assert s.reference == pytest.approx(1.25)
    assert s.observe(1.5) == "CUSUM"         # x = .2, S = .3727 > .3
    assert s.cusum == 0 and s.reference == 1.5 and s.cooling
    assert s.observe(1.4) is None and s.cooling       # one quiet step
    assert s.observe(1.3) is None and not s.cooling   # two: cooldown over


def test_supervisor_quiet_on_falling_loss_and_triggers():
    s = Supervisor(SupervisorConfig(drift=0.05, limit=1.0, spike_ratio=3.0))
    for loss in np.linspace(2.3, 0.1, 200):
        assert s.observe(loss) is None
    assert s.observe(s.reference * 3.5) == "loss spike"
    assert s.observe(math.inf) == "non-finite loss"
    assert s.observe(math.nan) == "non-finite loss"


# -- Commander -----------------------------------------------------------------------

def feed(c, cos, n):
    for _ in range(n):
        c.record_diagnostics(cos)


def test_commander_ladder_keeps_the_head_on_fp32_when_only_the_backbone_passes():
    c = Commander(("backbone", "head"), CommanderConfig(diag_window=3))
    # the paper's CIFAR-100 Table 5 cosines
    feed(c, {"backbone": {"gbinary": .723, "gternary": .591},
             "head": {"gbinary": .174, "gternary": .142}}, 3)
    assert c.ready()
    assert c.propose() == {"backbone": "gbinary", "head": FP32}


def test_commander_lowest_traffic_mode_that_passes():
    assert LOW_BIT_MODES == ("gbinary", "gternary")
    cfg = CommanderConfig(diag_window=2, cos_min={"gbinary": 0.8, "gternary": 0.5})
    c = Commander(("backbone", "head"), cfg)
    feed(c, {"backbone": {"gbinary": .7, "gternary": .6},
             "head": {"gbinary": .9, "gternary": .9}}, 2)
    assert c.propose() == {"backbone": "gternary", "head": "gbinary"}
    # head passes but the backbone does not: the sensitive head stays FP32
    feed(c, {"backbone": {"gbinary": .1, "gternary": .1},
             "head": {"gbinary": .9, "gternary": .9}}, 2)
    assert c.propose() == {"backbone": FP32, "head": FP32}


def test_commander_needs_pressure():
    c = Commander(("backbone", "head"), CommanderConfig(diag_window=1, min_pressure=0.5))
    feed(c, {g: {m: 1.0 for m in LOW_BIT_MODES} for g in ("backbone", "head")}, 1)
    p = Predictor()
    p.observe(trace(0, compute_s=1.0))        # a tiny gradient: no pressure
    assert p.forecast().pressure < 0.5
    assert c.propose(p.forecast()) == {"backbone": FP32, "head": FP32}
    assert c.propose() == {"backbone": "gbinary", "head": "gbinary"}


# -- the control plane ----------------------------------------------------------------

def plane(bus, *, default=FP32, delay=0, verify=True):
    cmd = Commander(("backbone", "head"), CommanderConfig(default_mode=default, warmup_steps=3,
                                                          diag_window=2))
    sup = Supervisor(SupervisorConfig(cooldown_steps=3))
    return ControlPlane(Driver(bus, PARAMS), REGIONS, Predictor(), cmd, sup,
                        delay_steps=delay, verify=verify)


GOOD = {"backbone": {"gbinary": .9, "gternary": .8}, "head": {"gbinary": .2, "gternary": .1}}


async def drive(cp, losses, diag=GOOD):
    """Run steps with ``losses``; return the modes of every step."""
    seen = []
    for step, loss in enumerate(losses):
        modes = await cp.before_step(step)
        seen.append(modes)
        on_fp32 = all(m == FP32 for m in modes.values())
        cp.after_step(trace(step), loss, diag if on_fp32 else None)
    return seen


def test_admission_recovery_and_readmission_write_the_region_cfgs():
    bus = RegisterBus()
    cp = plane(bus)
    losses = [2.0, 1.9, 1.8, 1.7, 1.6, 1.5, 6.0, 1.4, 1.3, 1.2, 1.1, 1.0, 1.0]
    seen = run(drive(cp, losses))
    split = {"backbone": "gbinary", "head": FP32}
    every_fp32 = {"backbone": FP32, "head": FP32}
    # warm-up of 3 FP32 steps, admission at step 3, spike at step 6 -> FP32 at 7,
    # cooldown of 3 quiet steps (8, 9, 10 end it after step 9's observation counts 3)
    assert seen[:3] == [every_fp32] * 3
    assert seen[3:7] == [split] * 4
    assert seen[7] == every_fp32
    assert seen[-1] == split
    assert [d.reason for d in cp.log] == ["Commander: admission", "Supervisor: loss spike",
                                         "Commander: re-admission"]
    assert bus.mode(0) == Mode.GBINARY and bus.mode(1) == Mode.BYPASS
    assert cfg_decode(bus.regs[0x100]) == cfg_decode(Driver(bus, PARAMS).cfg_value(
        enable=0, **MODE_CFG["gbinary"]))
    assert not cp.faults


def test_gbinary_default_starts_low_bit():
    bus = RegisterBus()
    cp = plane(bus, default="gbinary")
    seen = run(drive(cp, [1.0, 0.9]))
    assert seen[0] == {"backbone": "gbinary", "head": "gbinary"}
    assert bus.mode(0) == bus.mode(1) == Mode.GBINARY


def test_delayed_update_applies_k_steps_late():
    losses = [2.0, 1.9, 1.8, 1.7, 1.6, 1.5, 6.0, 1.4, 1.3, 1.2]
    on_time = run(drive(plane(RegisterBus(), default="gbinary"), losses))
    late = run(drive(plane(RegisterBus(), default="gbinary", delay=2), losses))
    first_fp32 = lambda seen: next(i for i, m in enumerate(seen) if m["backbone"] == FP32)
    assert first_fp32(on_time) == 7
    assert first_fp32(late) == 9


@pytest.mark.parametrize("fault", [dict(fail_writes={1}), dict(raise_writes={1}),
                                   dict(drop_writes={0})])
def test_a_control_fault_leaves_every_group_on_fp32_and_is_reported(fault):
    bus = RegisterBus(**fault)
    cp = plane(bus, default="gbinary")
    seen = run(drive(cp, [1.0] * 8))
    assert cp.faults, "the fault was not reported"
    assert all(m == {"backbone": FP32, "head": FP32} for m in seen)
    # writes that got through after the fault put the regions on BYPASS
    assert all(bus.mode(r) == Mode.BYPASS for r in REGIONS.values())
    # and the Commander never re-admits on a faulted plane
    assert cp.modes == {"backbone": FP32, "head": FP32}


def test_fault_on_admission_after_warm_up():
    # writes 0, 1 are never made (default FP32 = reset value); the admission's
    # first CFG write (after its shadow read) is write 0
    bus = RegisterBus(fail_writes={0})
    cp = plane(bus)
    seen = run(drive(cp, [2.0, 1.9, 1.8, 1.7, 1.6]))
    assert cp.faults and cp.faults[0].step == 3
    assert all(m == {"backbone": FP32, "head": FP32} for m in seen)
