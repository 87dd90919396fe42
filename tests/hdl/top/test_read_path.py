"""Amaranth-simulator tests of the read path against independent oracles:
the DRS round robin (a Python model of the policy docs/top.md states, cycle
by cycle) and the read path (every R beat answered once, on the core or the
bypass route as its entry and response say, with the core's exactly STAGES
cycles more, a beat a cycle)."""

import random

import pytest

from neuron_fabric.hdl.top.drs_arbiter import DrsArbiter
from neuron_fabric.hdl.top.read_path import ReadPath
from neuron_fabric.contract.facts import Mode, TopParams
from neuron_fabric.sim.amaranth_sim import run_testbenches


class RoundRobin:
    """The DRS round robin as docs/top.md states it: DRS shows the head of
    one of two queues, chosen in the cycle before from what the queues hold
    then (a line written in a cycle counts from the next one), holds it
    while DRS waits, and when both queues have a line takes the one not
    shown last."""

    def __init__(self):
        self.queues, self.valid, self.shown, self.last = ([], []), False, 0, 1

    def line(self):
        return self.queues[self.shown][0] if self.valid else None

    def step(self, ready, writes):
        hold = self.valid and not ready
        if self.valid and ready:
            self.queues[self.shown].pop(0)
        if not hold:
            have = [bool(q) for q in self.queues]
            self.valid = any(have)
            if all(have):
                self.shown = 1 - self.last
            elif self.valid:
                self.shown = have.index(True)
            if self.valid:
                self.last = self.shown
        for q, line in zip(self.queues, writes):
            if line is not None:
                q.append(line)


@pytest.mark.parametrize("depth, slices, groups", [(4, 2, 2), (13, 12, 4)])
def test_drs_round_robin_follows_the_policy(depth, slices, groups):
    """Random lines offered (never more than ``depth`` in a queue, each
    written the cycle after it is offered) and random ``ready``: DRS's
    valid and line equal the model's in every cycle."""
    dut = DrsArbiter(24, depth, slices=slices, groups=groups)
    rng = random.Random(depth)
    model = RoundRobin()

    async def bench(ctx):
        serial, offered = 0, [None, None]
        for cycle in range(3000):
            p_write = 0.7 if (cycle // 300) % 2 else 0.3
            writes = []
            for k, valid, data in ((0, dut.core_valid, dut.core_data),
                                   (1, dut.bypass_valid, dut.bypass_data)):
                line = None
                held = len(model.queues[k]) + (offered[k] is not None)
                if held < depth and rng.random() < p_write:
                    serial += 1
                    line = (k << 20) | serial
                ctx.set(valid, line is not None)
                ctx.set(data, line or 0)
                writes.append(line)
            ready = cycle < 20 or rng.random() < (0.9 if (cycle // 500) % 2 else 0.4)
            ctx.set(dut.ready, ready)
            assert bool(ctx.get(dut.valid)) == model.valid, cycle
            if model.valid:
                assert ctx.get(dut.data) == model.line(), cycle
            await ctx.tick()
            model.step(ready, offered)
            offered = writes

    run_testbenches(dut, bench)


def _read_path_bench(p, beats, *, drs_ready, gap, lookup_cycles=1):
    """Run ``beats`` (``(tag, entry bits, data, error)``) through a
    :class:`ReadPath` whose core the bench plays (exactly STAGES cycles,
    each line's data XOR its tag), under ``drs_ready`` (a function of the
    cycle), a beat offered every ``gap`` cycles at most.  Returns the DRS
    responses ``(cycle, tag, data, poison)``, the R beats' accept cycles,
    and the lines the core took ``(tag, entry bits, data)``.  The bench's
    table answers a lookup ``lookup_cycles`` later."""
    dut = ReadPath(p, lookup_cycles=lookup_cycles)
    mask = (1 << p.line_bits) - 1
    table, accepted, drs, into_core = {}, {}, [], []

    async def memory(ctx):
        cycle = 0
        for n, (tag, entry, data, error) in enumerate(beats):
            table[n % p.max_outstanding] = entry
            ctx.set(dut.r_id, n % p.max_outstanding), ctx.set(dut.r_data, data)
            ctx.set(dut.r_resp, 0b10 if error else 0), ctx.set(dut.r_valid, 1)
            while True:
                _, _, ready = await ctx.tick().sample(dut.r_ready)
                cycle += 1
                if ready:
                    break
            accepted[tag] = cycle
            ctx.set(dut.r_valid, 0)
            for _ in range(gap - 1):
                await ctx.tick()
                cycle += 1

    async def lookup_and_core(ctx):
        line = []   # the core's pipeline: (valid, tag, data) per stage
        looked = [None] * (lookup_cycles - 1)
        async for _, _, valid, ident, c_valid, c_line in ctx.tick().sample(
                dut.lookup.valid, dut.lookup.id, dut.to_core.valid, dut.to_core.payload):
            looked.append(table[ident] if valid else None)
            entry = looked.pop(0)
            if entry is not None:
                ctx.set(dut.lookup.entry.as_value(), entry)
            if c_valid:
                into_core.append((c_line.tag, c_line.as_value().value >> p.line_bits,
                                  c_line.data))
            line.append((c_valid, c_line.tag, c_line.data ^ c_line.tag))
            if len(line) == p.stages:
                out_valid, out_tag, out_data = line.pop(0)
                ctx.set(dut.from_core.valid, out_valid)
                ctx.set(dut.from_core.payload.tag, out_tag)
                ctx.set(dut.from_core.payload.data, out_data & mask)

    async def sink(ctx):
        cycle = 0
        while len(drs) < len(beats):
            ctx.set(dut.drs.ready, drs_ready(cycle))
            level = cycle % 4
            ctx.set(dut.devload, level)
            _, _, valid, ready, payload = await ctx.tick().sample(
                dut.drs.valid, dut.drs.ready, dut.drs.payload)
            cycle += 1
            if valid and ready:
                assert payload.opcode == 0 and payload.devload == level
                drs.append((cycle, payload.tag, payload.data, payload.poison))
            assert cycle < 40 * len(beats) + 100, "the read path stopped"

    run_testbenches(dut, memory, sink, background=[lookup_and_core])
    return drs, accepted, into_core


def _entry(p, rng, tag, mode):
    """The bits of a read's in-flight entry: its tag, a CFG with ``mode`` and
    random other fields, a random mask."""
    from neuron_fabric.hdl.top.request import ReadEntryLayout
    layout = ReadEntryLayout(p)
    cfg_bits = layout["cfg"].shape.size
    cfg = (rng.getrandbits(cfg_bits) & ~0b11) | int(mode)
    return tag | cfg << 16 | rng.getrandbits(p.lanes) << (16 + cfg_bits)


@pytest.mark.parametrize("profile, lookup_cycles", [("full", 1), ("paper", 1), ("full", 2)])
def test_read_path_answers_every_beat_once(profile, lookup_cycles):
    """Random modes, read errors and DRS backpressure: each beat is answered
    once with its tag; an error or a BYPASS read carries the memory's line
    (poison = the error) and never enters the core; every other read enters
    the core with its entry's configuration and mask and returns the core's
    line."""
    p = TopParams(line_bits=64, workers=4, stages=3, regions=2, max_outstanding=4,
                  profile=profile)
    rng = random.Random(7)
    beats = [(tag, _entry(p, rng, tag, rng.choice(list(Mode))), rng.getrandbits(64),
              rng.random() < 0.15) for tag in range(300)]
    drs, _, into_core = _read_path_bench(
        p, beats, drs_ready=lambda c: rng.random() < (0.3 if (c // 100) % 2 else 0.95), gap=1,
        lookup_cycles=lookup_cycles)
    mask = (1 << 64) - 1
    core = [b for b in beats if not b[3] and b[1] >> 16 & 0b11 != Mode.BYPASS]
    assert sorted(into_core) == sorted((t, e, d) for t, e, d, _ in core)
    expected = {t: (d ^ t if b in core else d, int(err))
                for b in beats for t, _, d, err in [b]}
    got = {}
    for _, tag, data, poison in drs:
        assert tag not in got, f"tag {tag} answered twice"
        got[tag] = (data & mask, poison)
    assert got == expected


def test_read_path_core_takes_exactly_stages_more():
    """Contract 4.3: with nothing stalled a low-bit read's DRS comes exactly
    STAGES cycles after a BYPASS read's would."""
    p = TopParams(line_bits=64, workers=4, stages=3, regions=2, max_outstanding=4)
    rng = random.Random(8)
    beats = [(tag, _entry(p, rng, tag, mode), rng.getrandbits(64), False)
             for tag, mode in enumerate([Mode.BYPASS, Mode.GBINARY, Mode.IDENTITY,
                                         Mode.BYPASS, Mode.GTERNARY])]
    drs, accepted, _ = _read_path_bench(p, beats, drs_ready=lambda c: True, gap=30)
    latency = {tag: cycle - accepted[tag] for cycle, tag, _, _ in drs}
    assert latency[0] == latency[3]
    for tag in (1, 2, 4):
        assert latency[tag] - latency[0] == p.stages


@pytest.mark.parametrize("stages, lookup_cycles", [(1, 1), (5, 1), (8, 1), (5, 2)])
def test_read_path_takes_a_beat_every_cycle(stages, lookup_cycles):
    """With DRS always ready the credit never stops the R channel: a beat
    offered in every cycle is taken in every cycle, core and bypass alike."""
    p = TopParams(line_bits=64, workers=4, stages=stages, regions=2, max_outstanding=4)
    rng = random.Random(stages)
    beats = [(tag, _entry(p, rng, tag, rng.choice(list(Mode))), rng.getrandbits(64), False)
             for tag in range(120)]
    drs, accepted, _ = _read_path_bench(p, beats, drs_ready=lambda c: True, gap=1,
                                        lookup_cycles=lookup_cycles)
    first = accepted[0]
    assert [accepted[t] - first for t in range(len(beats))] == list(range(len(beats)))
    assert len(drs) == len(beats)
