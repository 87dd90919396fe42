"""The hierarchy extension in hardware (contract section 5): the CFG check
of the control registers, and the wrapper of ``hdl/hierarchy.py`` (the
worker-major permutation, the core and the count-sum unit) against the
golden model."""

import itertools
import random

import numpy as np
import pytest
from amaranth import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from neuron_fabric.hdl.csr import CfgWordLayout, cfg_invalid
from neuron_fabric.hdl.hierarchy import Hierarchy
from neuron_fabric.host import golden
from neuron_fabric.host.facts import (COUNT_LANE_BITS, PROFILES, Format, GateKind, Layout, Mode,
                                      Operand)
from neuron_fabric.host.regmap import cfg_check, cfg_encode, count_total_max

HIERARCHY = ("hierarchy",)


class _CfgCheck(wiring.Component):
    """:func:`cfg_invalid` of a CFG word."""
    word: In(32)
    bad: Out(1)

    def __init__(self, workers, features):
        self._workers, self._features = workers, features
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.bad.eq(cfg_invalid(data.View(CfgWordLayout, self.word),
                                            self._workers, self._features))
        return m


def _rtl_rejects(values, workers, features):
    dut = _CfgCheck(workers, features)
    out = []

    async def bench(ctx):
        for v in values:
            ctx.set(dut.word, v)
            out.append(bool(ctx.get(dut.bad)))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    return out


def _cfg(operand=Operand.SIGNS, total=0, threshold=0, layout=Layout.ELEMENT_MAJOR, **kw):
    return cfg_encode(Mode.GTERNARY, Format.MARGIN, threshold=threshold, layout=layout,
                      operand=operand, total=total, **kw)


#: (CFG word, rejected by a build with the hierarchy feature, rejected without),
#: worked from contract section 5 by hand, W = 8.
HAND = [
    (_cfg(), False, False),
    (_cfg(threshold=8), False, False),
    (_cfg(threshold=9), True, True),                                   # T > W
    (_cfg(total=1), True, True),                                       # SIGNS, total != 0
    (_cfg(layout=Layout.WORKER_MAJOR), False, True),
    (_cfg(Operand.COUNTS4, total=120), False, True),
    (_cfg(Operand.COUNTS4, total=121), True, True),                    # > 8 * 15
    (_cfg(Operand.COUNTS4, total=0), True, True),
    (_cfg(Operand.COUNTS8, total=1020, threshold=31), False, True),    # T > W is fine here
    (_cfg(Operand.COUNTS8, total=1021), True, True),                   # > 4 * 255
    (_cfg(Operand.COUNTS8, total=30, threshold=31), True, True),       # T > total
    (_cfg(Operand.COUNTS8, total=31, threshold=31, layout=1), False, True),
    (_cfg(3, total=8), True, True),                                    # operand 3
    (_cfg(Operand.COUNTS4, total=8, period=0, keep=0), True, True),    # P = 0
]


@pytest.mark.parametrize("features", [(), HIERARCHY])
def test_cfg_check_hand_worked(features):
    index = 1 if features else 2
    want = [row[index] for row in HAND]
    values = [row[0] for row in HAND]
    assert [cfg_check(v, 8, features) is not None for v in values] == want
    assert _rtl_rejects(values, 8, features) == want


@pytest.mark.parametrize("workers", [4, 8, 16])
@pytest.mark.parametrize("features", [(), HIERARCHY])
def test_cfg_invalid_matches_cfg_check(workers, features):
    """The RTL check and the register map's check agree on every combination
    of the fields' boundary values."""
    values = [cfg_encode(Mode.GBINARY, fmt, 0, period, keep, threshold, layout=layout,
                         operand=operand, total=total)
              for fmt, operand, layout, total, threshold, (period, keep) in itertools.product(
                  range(4), range(4), range(2), (0, 1, 7, 8, 120, 121, 1020, 1021, 1023),
                  (0, workers, workers + 1, 31), ((3, 2), (0, 0), (4, 5), (15, 15)))]
    want = [cfg_check(v, workers, features) is not None for v in values]
    assert _rtl_rejects(values, workers, features) == want


# -- the wrapper: permutation, core and count unit (Amaranth simulator) ----------

def _random_line_config(rng, workers, lanes, count_lanes):
    """Fields of one line: every operand and layout, mode, format and gate;
    ``total`` and T mostly in range for the operand, sometimes not."""
    operand = rng.choice([Operand.SIGNS, Operand.COUNTS4, Operand.COUNTS8])
    if operand == Operand.SIGNS:
        total, threshold = 0, rng.randint(0, workers)
    else:
        total = rng.randint(1, count_total_max(operand))
        threshold = rng.randint(0, min(total, 31))
    cfg = dict(mode=rng.choice(list(Mode)), format=rng.choice(list(Format)),
               gate_kind=rng.choice(list(GateKind)), gate_threshold=threshold,
               layout=rng.choice(list(Layout)), operand=operand, total=total,
               gate_mask=rng.getrandbits(lanes))
    if rng.random() < 0.05:
        field, value = rng.choice([("format", 3), ("gate_threshold", 31), ("total", 0),
                                   ("operand", 3)])
        cfg[field] = value
    return cfg


def _in_range(cfg, workers):
    """The line's fields are a CFG value a hierarchy build accepts."""
    value = cfg_encode(cfg["mode"], cfg["format"], cfg["gate_kind"],
                       threshold=cfg["gate_threshold"], layout=cfg["layout"],
                       operand=cfg["operand"], total=cfg["total"])
    return cfg_check(value, workers, HIERARCHY) is None


def expected_line(data, line_bits, workers, cfg, profile):
    """The golden response to one line (an int), or None where the contract
    leaves it open (a field out of range in a transforming mode)."""
    if cfg["mode"] in (Mode.BYPASS, Mode.IDENTITY):
        return data
    if not _in_range(cfg, workers):
        return None
    fmt, kind, _, _ = profile.effective(cfg["format"], cfg["gate_kind"], 3, 2)
    lines = golden.lines_from_ints([data], line_bits)
    if cfg["operand"] == Operand.SIGNS:
        lanes = line_bits // workers
        mask = np.array([(cfg["gate_mask"] >> i) & 1 for i in range(lanes)], dtype=bool)
        out = golden.transform(lines, workers, cfg["mode"], fmt, kind,
                               threshold=cfg["gate_threshold"], gate_mask=mask,
                               layout=cfg["layout"])
    else:
        lanes = line_bits // COUNT_LANE_BITS
        mask = np.array([(cfg["gate_mask"] >> i) & 1 for i in range(lanes)], dtype=bool)
        out = golden.transform_counts(lines, cfg["operand"], cfg["total"], cfg["mode"], fmt,
                                      kind, threshold=cfg["gate_threshold"], gate_mask=mask,
                                      layout=cfg["layout"])
    return golden.lines_to_ints(out)[0]


def _tie_lane0(beat, line_bits, rng):
    """Set ``total`` to twice the count of lane 0 (a = 0 there) when the
    operand allows it, so that SIGN and the MARGIN gate see a tie."""
    lines = golden.lines_from_ints([beat["line"]], line_bits)
    counts = golden.transform_counts(lines, beat["operand"], 1, Mode.GBINARY,
                                     layout=beat["layout"])
    total = 2 * int(golden.decode_counts(counts, Format.COUNT)[0])
    if 1 <= total <= count_total_max(beat["operand"]):
        beat["total"], beat["gate_threshold"] = total, rng.randint(0, min(total, 31))


def run_wrapper(line_bits, workers, stages, profile, n_lines, idle, backpressure, seed):
    """Random lines through :class:`Hierarchy` under ``in_valid`` gaps and
    ``out_ready`` backpressure; return the mismatches (empty when every line
    came out once, in order, with its tag and golden data, and exactly
    STAGES edges after it went in when nothing stalled)."""
    rng = random.Random(seed)
    dut = Hierarchy(line_bits=line_bits, workers=workers, stages=stages, profile=profile)
    lanes = line_bits // workers
    beats = [dict(_random_line_config(rng, workers, lanes, line_bits // COUNT_LANE_BITS),
                  line=rng.getrandbits(line_bits), tag=n)
             for n in range(n_lines)]
    for beat in beats:
        if beat["operand"] in (Operand.COUNTS4, Operand.COUNTS8) and rng.random() < 0.3:
            _tie_lane0(beat, line_bits, rng)
    errors, accepted, left = [], [], []

    async def bench(ctx):
        sent = cycle = 0
        while len(left) < n_lines and cycle < 50 * (n_lines + stages + 10):
            valid = sent < n_lines and rng.random() >= idle
            ready = rng.random() >= backpressure
            ctx.set(dut.i_stream.valid, valid)
            ctx.set(dut.o_stream.ready, ready)
            if valid:
                for name, value in beats[sent].items():
                    ctx.set(dut.i_stream.payload[name], value)
            if valid and ctx.get(dut.i_stream.ready):
                accepted.append(cycle)
                sent += 1
            if ready and ctx.get(dut.o_stream.valid):
                left.append((cycle, ctx.get(dut.o_stream.payload.tag),
                             ctx.get(dut.o_stream.payload.line)))
            await ctx.tick()
            cycle += 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    prof = PROFILES[profile]
    if len(left) != n_lines:
        errors.append(f"{len(left)} of {n_lines} lines came out")
    for n, (cycle, tag, data) in enumerate(left):
        beat = beats[n]
        want = expected_line(beat["line"], line_bits, workers, beat, prof)
        if tag != beat["tag"]:
            errors.append(f"line {n}: tag {tag}, expected {beat['tag']}")
        elif want is not None and data != want:
            errors.append(f"line {n} {beat}: {data:#x}, expected {want:#x}")
        if not idle and not backpressure and cycle - accepted[n] != stages:
            errors.append(f"line {n}: latency {cycle - accepted[n]}, STAGES {stages}")
    return errors


@pytest.mark.parametrize("line_bits,workers,stages,profile,idle,backpressure", [
    *((*params, *stalls) for params in [(64, 4, 1, "full"), (64, 8, 3, "full"),
                                        (128, 16, 5, "full"), (64, 8, 5, "paper")]
      for stalls in [(0.0, 0.0), (0.3, 0.4)]),
    (512, 8, 5, "full", 0.2, 0.2),
    pytest.param(256, 8, 8, "full", 0.0, 0.0, marks=pytest.mark.slow),
])
def test_wrapper_against_golden(line_bits, workers, stages, profile, idle, backpressure):
    """Every operand, layout, mode, format and gate: each line out once, in
    order, with its golden response (exactly STAGES edges later without
    stalls)."""
    n_lines = 30 if line_bits >= 256 else 100
    errors = run_wrapper(line_bits, workers, stages, profile, n_lines, idle, backpressure,
                         seed=line_bits + stages)
    assert not errors, "\n".join(errors[:5])
