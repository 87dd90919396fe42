"""Shared pytest helpers of the datapath's tests."""

import itertools
import random

import numpy as np
import pytest
from amaranth import Cat, Const, Module, Signal

from neuron_fabric.contract.facts import Format, GateKind, Mode
from neuron_fabric.hdl.datapath.pipeline import Geometry, Pipeline
from neuron_fabric.hdl.datapath.ports import InputLayout, LineIn
from neuron_fabric.host import golden
from neuron_fabric.sim.amaranth_sim import run_testbenches


def _check_step_set(make_steps, profile, *, line_bits, workers, group_bits, skid, seed=0):
    """Run the four steps of ``make_steps(geometry, wire)`` (a step set)
    between the input payload and one register (a one-stage pipeline),
    over every mode, format and gate kind of contract section 2 (format 3
    left out) and thresholds at the edges (0, 1, around W/2, W), one line a
    cycle, against
    ``golden.transform`` with the features ``profile`` hard-wires away."""
    lanes = line_bits // workers
    m = Module()
    payload = Signal(InputLayout(line_bits=line_bits, lanes=lanes))
    pipe = Pipeline(m, stages=1, in_valid=Const(1), out_ready=Const(1), skid=skid)
    geometry = Geometry(line_bits, workers, group_bits)
    out = pipe.run(LineIn.from_payload(payload, geometry), make_steps(geometry, pipe.wire).steps, 1)
    data, tag = Signal(line_bits), Signal(16)
    m.d.comb += [data.eq(Cat(*out.data)), tag.eq(out.tag)]

    rng = random.Random(seed)
    # lines holding every lane value in turn, then random ones
    values = itertools.cycle(range(1 << workers))
    counted = [sum(next(values) << (workers * i) for i in range(lanes))
               for _ in range(min(64, max(1, (1 << workers) // lanes)))]
    cases = []
    for k, (mode, fmt, kind, threshold) in enumerate(itertools.product(
            Mode, (Format.COUNT, Format.MARGIN, Format.SIGN), GateKind,
            sorted({0, 1, workers // 2 - 1, workers // 2, workers // 2 + 1, workers}))):
        line = counted[k % len(counted)] if k % 3 else rng.getrandbits(line_bits)
        cases.append(dict(line=line, gate_mask=rng.getrandbits(lanes), tag=rng.getrandbits(16),
                          mode=mode, format=fmt, gate_kind=kind, gate_threshold=threshold))

    def expected(case):
        fmt, kind, _, _ = profile.effective(case["format"], case["gate_kind"], 3, 2)
        mask = np.array([case["gate_mask"] >> i & 1 for i in range(lanes)], dtype=bool)
        lines = golden.lines_from_ints([case["line"]], line_bits)
        return golden.lines_to_ints(golden.transform(
            lines, workers, case["mode"], fmt, kind, threshold=case["gate_threshold"],
            gate_mask=mask))[0]

    async def bench(ctx):
        for case in cases:
            for name, value in case.items():
                ctx.set(payload[name], value)
            await ctx.tick()
            assert (ctx.get(data), ctx.get(tag)) == (expected(case), case["tag"]), case

    run_testbenches(m, bench)
    return len(cases)


@pytest.fixture(scope="session")
def check_step_set():
    """``check_step_set(make_steps, profile, *, line_bits, workers,
    group_bits, skid)``: runs a step set against the golden model (see
    :func:`_check_step_set`); returns the number of lines checked."""
    return _check_step_set
