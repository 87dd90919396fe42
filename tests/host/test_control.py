"""The control plane: its roles against hand-worked traces, the Predictor's
isolation, the fault rule, and mode changes that never split a step.

The plane runs on the gradient runtime over the device model; what each
step's reads returned is checked against the golden model under exactly
one mode per group, and the region table is read back from the device.
"""

import asyncio
import inspect
import math

import numpy as np
import pytest

from neuron_fabric.host import golden
from neuron_fabric.host.control import (FP32, LOW_BIT_MODES, MODE_POLICY, Commander,
                                        CommanderConfig, ControlPlane, Predictor,
                                        PredictorConfig, Supervisor, SupervisorConfig,
                                        TraceRecord)
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.contract.facts import Mode, Operand, TopParams, view_beats
from neuron_fabric.contract.regmap import cfg_decode
from neuron_fabric.host.runtime import GradientRuntime
from neuron_fabric.models.envelope.params import GiB

PARAMS = TopParams(line_bits=64, workers=8, regions=2)
GROUPS = {"backbone": 1000, "head": 100}


def run(coro):
    return asyncio.run(coro)


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
    s = Supervisor(SupervisorConfig(ref_ema=0.5, drift=0.5, limit=2.0, min_samples=2,
                                    cooldown_steps=2))
    assert s.observe(1.0) is None            # R = 1
    assert s.observe(2.0) is None            # V = .5 (0 + .5 * 1) = .25, R = 1.5
    assert (s.reference, s.variance) == (1.5, 0.25)
    assert s.observe(2.0) is None            # x = .5 / .5 = 1, S = .5; V = .1875, R = 1.75
    assert s.cusum == pytest.approx(0.5)
    assert s.observe(2.5) is None            # x = .75 / .4330 = 1.7321, S = 1.7321
    assert s.cusum == pytest.approx(0.5 + 0.75 / math.sqrt(0.1875) - 0.5)
    assert s.variance == pytest.approx(0.234375) and s.reference == 2.125
    assert s.observe(3.0) == "CUSUM"         # x = .875 / .4841 = 1.8074, S = 3.04 > 2
    assert s.cusum == 0 and s.reference == 3.0 and s.cooling
    assert s.observe(2.0) is None and s.cooling       # one quiet step
    assert s.observe(2.0) is None and not s.cooling   # two: cooldown over


def test_supervisor_quiet_on_falling_loss_and_triggers_on_non_finite():
    s = Supervisor()
    rng = np.random.default_rng(0)
    for loss in np.linspace(2.3, 0.3, 300) * (1 + 0.05 * rng.standard_normal(300)):
        assert s.observe(loss) is None
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



# -- the control plane on the runtime and the device model -----------------------

class FaultyBus:
    """The device's control port with injected faults: write numbers
    (0-based) in ``fail`` answer SLVERR and change nothing, in ``raise_``
    raise a bus error, in ``drop`` are silently lost (a memory-mapped bus)."""

    def __init__(self, dev, fail=(), raise_=(), drop=()):
        self.dev = dev
        self.writes = 0
        self.fail, self.raise_, self.drop = set(fail), set(raise_), set(drop)

    async def read(self, offset):
        return await self.dev.read(offset)

    async def write(self, offset, value):
        n, self.writes = self.writes, self.writes + 1
        if n in self.raise_:
            raise OSError("injected bus error")
        if n in self.fail:
            return False
        return True if n in self.drop else await self.dev.write(offset, value)


class RecordingPort:
    """The device's memory port, recording each write and read."""

    def __init__(self, dev):
        self.dev = dev
        self.written = {}
        self.reads = []

    async def write_lines(self, addr, lines):
        self.written[addr] = lines.copy()
        await self.dev.write_lines(addr, lines)

    async def read_lines(self, addr, count):
        out = await self.dev.read_lines(addr, count)
        self.reads.append((addr, out))
        return out


async def make_plane(bus_faults=None, default=FP32, delay=0):
    dev = Device(PARAMS)
    bus = FaultyBus(dev, **(bus_faults or {}))
    drv = Driver(bus, PARAMS)
    port = RecordingPort(dev)
    port.bus = bus
    rt = await GradientRuntime.create(port, drv, GROUPS, {g: MODE_POLICY[FP32] for g in GROUPS})
    cmd = Commander(tuple(GROUPS), CommanderConfig(default_mode=default, warmup_steps=3,
                                                   diag_window=2))
    sup = Supervisor(SupervisorConfig(min_samples=3, cooldown_steps=3))
    plane = ControlPlane(rt, drv, Predictor(), cmd, sup, delay_steps=delay)
    return await plane.start(), dev, port


GOOD = {"backbone": {"gbinary": .9, "gternary": .8}, "head": {"gbinary": .2, "gternary": .1}}


def expected_reads(lines, mode):
    """What the device must return for ``lines`` read under ``mode`` (golden model)."""
    p = MODE_POLICY[mode]
    phase = golden.line_phase(np.arange(len(lines)), PARAMS.lanes, p.period)
    return golden.transform(lines, PARAMS.workers, p.mode, p.format, p.gate_kind, p.period,
                            p.keep, p.threshold, phase)


def expected_view(dev, window, view, mode):
    """What a packed view of ``window`` must return under ``mode``: the golden
    model's view lines of the source lines the device holds (contract
    section 6; the last view line reads past the window's own lines)."""
    p = MODE_POLICY[mode]
    beats = view_beats(PARAMS.line_bits, PARAMS.workers, Operand.SIGNS)
    source = dev.peek(window.base, view.lines * beats)
    return golden.pack_view(source, PARAMS.workers, p.mode, p.gate_kind, p.period, p.keep,
                            p.threshold, layout=p.layout)


async def drive(plane, port, losses, diag=GOOD, seed=0):
    """Run steps with ``losses``; check each group's reads against one mode;
    return the modes of every step."""
    rng = np.random.default_rng(seed)
    rt = plane.runtime
    seen = []
    for step, loss in enumerate(losses):
        modes = await plane.before_step(step)
        seen.append(modes)
        port.reads.clear()
        grads = {g: rng.standard_normal((PARAMS.workers, n)) for g, n in GROUPS.items()}
        out = await rt.step(grads)
        low = [g for g in GROUPS if modes[g] != FP32]
        assert len(port.reads) == len(low)
        for g in low:
            base = rt.windows[g].base
            view = rt.views.get(g)
            if view is None:
                got = next(r for a, r in port.reads if a == base)
                want = expected_reads(port.written[base], modes[g])
            else:       # a build with the packed view reads the group's results there
                got = next(r for a, r in port.reads if a == view.base)
                want = expected_view(port.dev, rt.windows[g], view, modes[g])
            assert np.array_equal(got, want), \
                f"step {step}: group {g} read not entirely under {modes[g]}"
        for g in GROUPS:
            if modes[g] == FP32:
                assert np.array_equal(out[g], np.mean(grads[g], axis=0, dtype=np.float32))
        on_fp32 = not low
        plane.after_step(trace(step), loss, diag if on_fp32 else None)
    return seen


async def region_modes(dev):
    """The mode of every enabled region, read from the device."""
    drv = Driver(dev, PARAMS)
    out = []
    for r in range(PARAMS.regions):
        cfg = cfg_decode(await drv.read(f"REGION{r}_CFG"))
        if cfg["enable"]:
            out.append(Mode(cfg["mode"]))
    return sorted(out)


SPLIT = {"backbone": "gbinary", "head": FP32}
ALL_FP32 = {"backbone": FP32, "head": FP32}


def test_admission_recovery_and_readmission_never_mix_modes_in_a_step():
    async def body():
        plane, dev, port = await make_plane()
        losses = [2.0, 1.9, 1.8, 1.7, 1.6, 1.5, 6.0, 1.4, 1.3, 1.2, 1.1, 1.0, 1.0]
        seen = await drive(plane, port, losses)
        # warm-up of 3 FP32 steps with diagnostics, admission before step 3,
        # CUSUM alarm at step 6 -> FP32 from step 7, cooldown, re-admission
        assert seen[:3] == [ALL_FP32] * 3
        assert seen[3:7] == [SPLIT] * 4
        assert seen[7] == ALL_FP32
        assert seen[-1] == SPLIT
        assert [d.reason for d in plane.log] == ["Commander: admission", "Supervisor: CUSUM",
                                                 "Commander: re-admission"]
        assert await region_modes(dev) == [Mode.GBINARY]
        assert cfg_decode((await dev.read(0x010))[0])["mode"] == Mode.BYPASS
        assert not plane.faults
    run(body())


def test_gbinary_default_starts_low_bit():
    async def body():
        plane, dev, port = await make_plane(default="gbinary")
        seen = await drive(plane, port, [1.0, 0.9])
        assert seen[0] == {"backbone": "gbinary", "head": "gbinary"}
        assert await region_modes(dev) == [Mode.GBINARY, Mode.GBINARY]
    run(body())


def test_delayed_update_applies_k_steps_late():
    losses = [2.0, 1.9, 1.8, 1.7, 1.6, 1.5, 6.0, 1.4, 1.3, 1.2]

    async def first_fp32(delay):
        plane, _, port = await make_plane(default="gbinary", delay=delay)
        seen = await drive(plane, port, losses)
        return next(i for i, m in enumerate(seen) if m["backbone"] == FP32)

    assert run(first_fp32(0)) == 7
    assert run(first_fp32(2)) == 9


def group_writes():
    """Control writes that program one group's region at the G-Binary default
    start, counted on a fault-free bus: after DEFAULT_CFG (write 0), ``n``
    for the backbone (1..n), then ``n`` for the head (n+1..2n): six for
    set_region, more for set_view on a build with the packed view."""
    async def count():
        plane, _, port = await make_plane(default="gbinary")
        await plane.before_step(0)
        return port.bus.writes
    total = run(count())
    assert total % 2 == 1, f"{total} writes: DEFAULT_CFG and two groups' equal writes expected"
    return (total - 1) // 2


# Faults by the writes of one group's region (n, :func:`group_writes`): the
# head's third fails, the head's last raises, the backbone's last (its
# enable) is lost, DEFAULT_CFG fails, writes 3 .. n+4 raise.
@pytest.mark.parametrize("faults", [lambda n: dict(fail={n + 2}), lambda n: dict(raise_={2 * n}),
                                    lambda n: dict(drop={n}), lambda n: dict(fail={0}),
                                    lambda n: dict(raise_=set(range(3, n + 5)))],
                         ids=["fail-head", "raise-head-last", "drop-backbone-enable",
                              "fail-default", "raise-many"])
def test_a_control_fault_leaves_every_group_on_fp32_and_is_reported(faults):
    faults = faults(group_writes())

    async def body():
        plane, dev, port = await make_plane(faults, default="gbinary")
        seen = await drive(plane, port, [1.0] * 8)
        assert plane.faults, "the fault was not reported"
        assert all(m == ALL_FP32 for m in seen)
        assert plane.modes == ALL_FP32
        assert all(not p.low_bit for p in plane.runtime.policies.values())
        return dev
    run(body())


def test_fault_on_admission_after_warm_up():
    async def body():
        # write 0 is DEFAULT_CFG; the admission's set_region starts at write 1
        plane, dev, port = await make_plane(dict(fail={3}))
        seen = await drive(plane, port, [2.0, 1.9, 1.8, 1.7, 1.6])
        assert plane.faults and plane.faults[0].step == 3
        assert "SLVERR" in plane.faults[0].error
        assert all(m == ALL_FP32 for m in seen)
        assert await region_modes(dev) == []
    run(body())


def test_a_group_whose_region_cannot_be_released_still_runs_fp32_on_the_host():
    n = group_writes()

    async def body():
        # both groups admitted by default (writes 0..2n); every write after
        # that, from the Supervisor's return to FP32 on, raises
        plane, dev, port = await make_plane(dict(raise_=set(range(2 * n + 1, 64 + 2 * n))),
                                            default="gbinary")
        seen = await drive(plane, port, [1.0, 1.0, 1.0, 9.0, 1.0, 1.0])
        assert seen[:4] == [{"backbone": "gbinary", "head": "gbinary"}] * 4
        assert seen[4:] == [ALL_FP32] * 2          # and drive() saw no device read
        assert plane.faults and "injected bus error" in plane.faults[0].error
        assert all(not p.low_bit for p in plane.runtime.policies.values())
    run(body())


def test_pilot_report_and_plots_from_records(tmp_path):
    """The pilots' report and plots from hand-made records: the means over
    seeds in the tables, the paper's figures beside them, both PNGs written."""
    from neuron_fabric.experiments import pilots

    def record(acc, traffic, share, modes):
        return dict(low_bit_share=share, traffic_ratio=traffic, final_accuracy=acc,
                    step_ms=1.0, modes=[modes] * 4, loss=[2.0, 1.5, 1.0, 0.8],
                    curve=[dict(step=2, test=acc / 2), dict(step=4, test=acc)],
                    decisions=[], faults=[])

    fp32, gb = {"backbone": "fp32", "head": "fp32"}, {"backbone": "gbinary", "head": "fp32"}
    results = {
        "recovery": {"always-fp32": {"0": record(0.90, 1.0, 0.0, fp32),
                                     "1": record(0.94, 1.0, 0.0, fp32)}},
        "ladder": {"live ladder": {"0": record(0.80, 0.2, 0.9, gb)},
                   "fp32": {"0": record(0.85, 1.0, 0.0, fp32)}},
        "late": {"delay 0": {"0": record(0.7, 0.1, 0.9, gb)},
                 "delay 8": {"0": record(0.9, 0.12, 0.8, gb)}},
    }
    text = pilots.report(results)
    assert "| always-fp32 | 0.00% | 1.000x | 92.00 ± 2.83 |" in text   # sample std of 90 and 94
    assert "81.11%" in text and "0.214x" in text and "90.87 ± 1.04" in text
    assert "gbinary backbone + fp32 head" in text
    pilots.plot_recovery(results, tmp_path / "recovery.png")
    pilots.plot_ladder_and_late(results, tmp_path / "ladder_late.png")
    for png in ("recovery.png", "ladder_late.png"):
        assert (tmp_path / png).read_bytes()[:4] == b"\x89PNG"
