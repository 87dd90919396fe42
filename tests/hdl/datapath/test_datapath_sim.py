# amaranth: UnusedElaboratable=no
"""The datapath core in the Amaranth simulator, against the golden model.

Every lane value (all 2^W for W = 4 and 8, random values of every sign
count for W = 16) meets every mode, format and gate kind under gate
settings that cover the edges of contract section 2 (PATTERN masks from the
edge values of P, K and the phase, and arbitrary masks).  Many lanes share a line,
so a few hundred cycles cover the whole matrix.  The handshake checks
(order, tags, exact latency, one line per cycle) run on every simulation.
"""

import itertools
import random
from dataclasses import dataclass

import numpy as np
import pytest
from amaranth.hdl import ClockDomain, Module
from neuron_fabric.sim.amaranth_sim import run_testbenches

from neuron_fabric.host import golden
from neuron_fabric.hdl.datapath import Datapath
from neuron_fabric.contract.facts import PROFILES, Format, GateKind, Mode


@dataclass(frozen=True)
class Config:
    """The per-line configuration fields of the core's input; ``mask`` is
    ``gate_mask`` as an integer (bit i keeps lane i)."""
    mode: int
    format: int = Format.COUNT
    gate_kind: int = GateKind.PATTERN
    mask: int = 0
    threshold: int = 0


def pattern_mask(lanes, period, keep, phase):
    """The PATTERN gate of P, K and a phase as a ``gate_mask`` value."""
    return pack(golden.gate_pattern(lanes, period, keep, phase), 1)


def mask_bits(mask, lanes):
    return np.array([(mask >> i) & 1 for i in range(lanes)], dtype=bool)


@dataclass
class Beat:
    data: int
    tag: int
    config: Config
    expected: int = None        # None: output unspecified (out-of-range fields)


def gate_settings(w):
    """(P, K, T, phase) covering the edges: P = 1 and 15, K = 0 and K = P,
    T = 0 and T = W, phase 0 and P - 1, and the paper's P = 3, K = 2."""
    return [
        (1, 0, 0, 0), (1, 1, w, 0), (15, 0, 1, 14), (15, 15, w - 1, 0),
        (15, 7, w // 2, 14), (3, 2, 0, 0), (3, 2, w, 1), (3, 2, w // 2 + 1, 2),
        (2, 1, 2, 1), (7, 3, 3, 6),
    ]


def config_matrix(w, lanes, rng):
    """Every mode x format x gate kind; G-Ternary meets every gate setting
    (and masks of no lane, every lane, and random lanes), the other modes
    (which ignore the gate fields) a rotating few."""
    settings = [(pattern_mask(lanes, p, k, ph), t) for p, k, t, ph in gate_settings(w)]
    settings += [(0, w), ((1 << lanes) - 1, 0), (rng.getrandbits(lanes), w // 2)]
    configs = []
    for n, (mode, fmt, kind) in enumerate(itertools.product(Mode, Format, GateKind)):
        chosen = settings if mode == Mode.GTERNARY else \
            [settings[(n + k) % len(settings)] for k in (0, 3, 7)]
        for mask, t in chosen:
            configs.append(Config(mode, fmt, kind, mask, t))
    return configs


def pack(values, w):
    return sum(int(v) << (i * w) for i, v in enumerate(values))


def golden_lines(datas, line_bits, w, cfg, profile=PROFILES["full"]):
    """Golden read responses for lines (Python ints) under ``cfg`` as a core
    of ``profile`` applies it (every profile's core applies the mask)."""
    fmt, kind, _, _ = profile.effective(cfg.format, cfg.gate_kind, 3, 2)
    lines = golden.lines_from_ints(datas, line_bits)
    out = golden.transform(lines, w, cfg.mode, fmt, kind, threshold=cfg.threshold,
                           gate_mask=mask_bits(cfg.mask, line_bits // w))
    return golden.lines_to_ints(out)


def lane_values(w, rng, per_config):
    """Lane values for one configuration: every W-bit value for W <= 8 (in a
    fresh order each time, so values meet different lane positions); for
    W = 16 random values whose sign count is uniform over 0..W."""
    if w <= 8:
        values = list(range(1 << w))
        rng.shuffle(values)
        return values
    return [sum(1 << b for b in rng.sample(range(w), rng.randint(0, w)))
            for _ in range(per_config)]


def matrix_beats(line_bits, w, rng, configs, profile=PROFILES["full"], w16_lines=3):
    lanes = line_bits // w
    beats = []
    for cfg in configs:
        values = lane_values(w, rng, w16_lines * lanes)
        size = -(-len(values) // lanes) * lanes        # whole lines
        values = [values[i % len(values)] for i in range(size)]
        datas = [pack(values[i:i + lanes], w) for i in range(0, len(values), lanes)]
        for data, exp in zip(datas, golden_lines(datas, line_bits, w, cfg, profile)):
            beats.append(Beat(data, len(beats) & 0xFFFF, cfg, exp))
    return beats


# -- the simulation harness -------------------------------------------------

def simulate(dut, beats, *, seed=0, valid_prob=1.0, ready_prob=1.0):
    """Stream ``beats`` through ``dut`` with random input ``valid`` gaps and
    output ``ready`` backpressure; check the handshake rules of contract section 3
    cycle by cycle.  Returns ``(beat, data, latency)`` per output line."""
    rng = random.Random(seed)
    stages = dut.stages
    i, o = dut.i_stream, dut.o_stream
    limit = (len(beats) + stages + 10) * 50
    results = []

    async def bench(ctx):
        pending, sent, accepted_at, cycle = None, 0, [], 0
        while len(results) < len(beats):
            assert cycle < limit, f"core stalled: {len(results)} of {len(beats)} lines out"
            if pending is None and sent < len(beats) and rng.random() < valid_prob:
                pending = beats[sent]
                cfg = pending.config
                ctx.set(i.payload, {
                    "line": pending.data, "tag": pending.tag, "mode": cfg.mode,
                    "format": cfg.format, "gate_kind": cfg.gate_kind,
                    "gate_mask": cfg.mask, "gate_threshold": cfg.threshold})
            ctx.set(i.valid, pending is not None)
            ready = rng.random() < ready_prob
            ctx.set(o.ready, ready)
            in_ready = ctx.get(i.ready)
            if cycle > 0 and ready:
                assert in_ready, f"input ready low in cycle {cycle} while output ready is high"
            if ready and ctx.get(o.valid):
                n = len(results)
                assert n < len(accepted_at), f"line out in cycle {cycle} that never went in"
                tag = ctx.get(o.payload.tag)
                assert tag == beats[n].tag, \
                    f"cycle {cycle}: tag {tag:#x}, expected {beats[n].tag:#x} (line {n})"
                results.append((beats[n], ctx.get(o.payload.line), cycle - accepted_at[n]))
            if pending is not None and in_ready:
                accepted_at.append(cycle)
                pending, sent = None, sent + 1
            await ctx.tick()
            cycle += 1
        # Nothing more may come out.
        ctx.set(o.ready, 1)
        ctx.set(i.valid, 0)
        for _ in range(stages + 2):
            assert not ctx.get(o.valid), "an extra line came out"
            await ctx.tick()

    run_testbenches(dut, bench)
    return results


def check_results(dut, results, *, exact_latency):
    w = dut.workers
    for n, (beat, data, latency) in enumerate(results):
        if exact_latency:
            assert latency == dut.stages, \
                f"line {n}: latency {latency}, expected STAGES = {dut.stages}"
        else:
            assert latency >= dut.stages, f"line {n}: latency {latency} < STAGES"
        if beat.expected is not None and data != beat.expected:
            lanes = [(i, (beat.data >> (i * w)) & ((1 << w) - 1),
                      (data >> (i * w)) & ((1 << w) - 1),
                      (beat.expected >> (i * w)) & ((1 << w) - 1))
                     for i in range(dut.lanes)]
            bad = [lane for lane in lanes if lane[2] != lane[3]]
            pytest.fail(f"line {n} ({beat.config}): first bad lanes "
                        f"(index, input, got, expected): {bad[:4]}")


# -- golden-model matrix -----------------------------------------------------

@pytest.mark.parametrize("line_bits,workers,stages", [
    (256, 4, 2), (256, 8, 5), (256, 16, 4),
])
def test_every_lane_value_mode_format_gate(line_bits, workers, stages):
    rng = random.Random(line_bits * workers + stages)
    beats = matrix_beats(line_bits, workers, rng,
                         config_matrix(workers, line_bits // workers, rng))
    if workers == 16:
        assert len(beats) * line_bits // 16 >= 4096
    dut = Datapath(line_bits=line_bits, workers=workers, stages=stages)
    results = simulate(dut, beats)
    assert len(results) == len(beats)
    check_results(dut, results, exact_latency=True)


def test_paper_profile():
    """A reduced build returns what the golden model gives for the
    configuration the profile hard-wires (``Profile.effective``); its core
    applies any PATTERN mask, as every profile's does."""
    w, line_bits = 8, 128
    profile = PROFILES["paper"]
    rng = random.Random(7)
    beats = matrix_beats(line_bits, w, rng, config_matrix(w, line_bits // w, rng), profile)
    dut = Datapath(line_bits=line_bits, workers=w, stages=3, profile="paper")
    check_results(dut, simulate(dut, beats), exact_latency=True)


def random_config(rng, w, lanes):
    """A random configuration; the mask half the time from random P, K and
    phase, half the time random."""
    p = rng.randint(1, 15)
    mask = pattern_mask(lanes, p, rng.randint(0, p), rng.randint(0, p - 1)) \
        if rng.random() < 0.5 else rng.getrandbits(lanes)
    return Config(rng.choice(list(Mode)), rng.choice(list(Format)),
                  rng.choice(list(GateKind)), mask, rng.randint(0, w))


def random_beats(rng, line_bits, w, n):
    beats = []
    for i in range(n):
        cfg = random_config(rng, w, line_bits // w)
        data = rng.getrandbits(line_bits)
        beats.append(Beat(data, rng.getrandbits(16), cfg,
                          golden_lines([data], line_bits, w, cfg)[0]))
    return beats


# -- latency, throughput and stalls -----------------------------------------

@pytest.mark.parametrize("stages", range(1, 9))
def test_latency_and_throughput(stages):
    """Output ready held high, a line offered in every cycle: each line leaves
    exactly STAGES cycles after it went in, one per cycle."""
    rng = random.Random(stages)
    beats = random_beats(rng, 64, 8, 40)
    dut = Datapath(line_bits=64, workers=8, stages=stages)
    check_results(dut, simulate(dut, beats), exact_latency=True)


@pytest.mark.parametrize("stages,workers", [(1, 4), (3, 16), (5, 8), (8, 4)])
@pytest.mark.parametrize("valid_prob,ready_prob", [(0.5, 1.0), (1.0, 0.4), (0.7, 0.6)])
def test_gaps_and_backpressure(stages, workers, valid_prob, ready_prob):
    rng = random.Random(stages * 100 + workers)
    beats = random_beats(rng, 64, workers, 120)
    dut = Datapath(line_bits=64, workers=workers, stages=stages)
    results = simulate(dut, beats, seed=stages, valid_prob=valid_prob,
                       ready_prob=ready_prob)
    check_results(dut, results, exact_latency=ready_prob == 1.0)


@pytest.mark.parametrize("stages", [3, 5])
def test_wide_line_backpressure(stages):
    """512 bits: 32 groups, so the per-line controls reach the groups through
    the spread tree, and each (stage, group) pair has its own clock enable
    and valid chain; all must move together under gaps and stalls."""
    rng = random.Random(512 + stages)
    beats = random_beats(rng, 512, 8, 60)
    dut = Datapath(line_bits=512, workers=8, stages=stages)
    results = simulate(dut, beats, seed=stages, valid_prob=0.7, ready_prob=0.5)
    check_results(dut, results, exact_latency=False)


def test_not_ready_in_reset():
    """A line offered while ``rst`` is high is not taken (it would be
    lost); from the first cycle with ``rst`` low, the input is ready."""
    dut = Datapath(line_bits=64, workers=8, stages=3)
    top = Module()
    top.domains.sync = sync = ClockDomain("sync")
    top.submodules.dut = dut
    seen = []

    async def bench(ctx):
        ctx.set(dut.o_stream.ready, 1)
        ctx.set(dut.i_stream.valid, 1)
        for rst in (1, 1, 0, 0):
            ctx.set(sync.rst, rst)
            seen.append((rst, ctx.get(dut.i_stream.ready)))
            await ctx.tick()

    run_testbenches(top, bench)
    assert seen == [(1, 0), (1, 0), (0, 1), (0, 1)]


# -- out-of-range fields -----------------------------------------------------

def out_of_range_configs(w, lanes):
    """Field values outside contract section 2 (format 3, T > W), each in a
    transforming mode; every mask is in range."""
    every, some = (1 << lanes) - 1, pattern_mask(lanes, 3, 2, 1)
    bad = []
    for mode in (Mode.GBINARY, Mode.GTERNARY):
        bad += [
            Config(mode, 3, GateKind.PATTERN, some, 0),
            Config(mode, 3, GateKind.PATTERN, 0, 0),
            Config(mode, 3, GateKind.MARGIN, every, 2),
            Config(mode, 3, GateKind.MARGIN, some, 31),
            Config(mode, Format.MARGIN, GateKind.MARGIN, some, w + 1),
            Config(mode, Format.COUNT, GateKind.MARGIN, every, 31),
            Config(mode, Format.SIGN, GateKind.PATTERN, 0, 31),
            Config(mode, Format.COUNT, GateKind.PATTERN, some, w + 1),
        ]
    return bad


@pytest.mark.parametrize("stages", [1, 4])
def test_out_of_range_fields_disturb_nothing(stages):
    """Lines with out-of-range fields come out (in order, with their tags)
    and leave the lines before and after them right.  In IDENTITY and
    BYPASS the fields are ignored, so those lines pass unchanged."""
    w, line_bits = 8, 64
    lanes = line_bits // w
    rng = random.Random(stages)
    beats = []
    for bad in out_of_range_configs(w, lanes):
        for cfg in (random_config(rng, w, lanes), bad, random_config(rng, w, lanes)):
            data = rng.getrandbits(line_bits)
            exp = golden_lines([data], line_bits, w, cfg)[0] if cfg is not bad else None
            beats.append(Beat(data, len(beats), cfg, exp))
        for mode in (Mode.IDENTITY, Mode.BYPASS):
            data = rng.getrandbits(line_bits)
            ignored = Config(mode, *list(vars(bad).values())[1:])
            beats.append(Beat(data, len(beats), ignored, data))
    dut = Datapath(line_bits=line_bits, workers=w, stages=stages)
    check_results(dut, simulate(dut, beats), exact_latency=True)
    results = simulate(dut, beats, seed=3, valid_prob=0.6, ready_prob=0.5)
    check_results(dut, results, exact_latency=False)


# -- elaboration-time parameters ----------------------------------------------

@pytest.mark.parametrize("kwargs,exc,quoted", [
    ({"line_bits": 100}, ValueError, "100"),
    ({"line_bits": 2048}, ValueError, "2048"),
    ({"line_bits": "512"}, TypeError, "'512'"),
    ({"workers": 5}, ValueError, "5"),
    ({"workers": 32}, ValueError, "32"),
    ({"workers": 8.0}, TypeError, "8.0"),
    ({"stages": 0}, ValueError, "0"),
    ({"stages": 9}, ValueError, "9"),
    ({"stages": True}, TypeError, "True"),
    ({"profile": "tiny"}, ValueError, "tiny"),
])
def test_bad_parameters(kwargs, exc, quoted):
    with pytest.raises(exc, match=quoted) as info:
        Datapath(**kwargs)
    name = next(iter(kwargs))
    assert name.replace("_", "").upper() in str(info.value).replace("_", "").upper()
