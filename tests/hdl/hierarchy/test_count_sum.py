"""The exact count-sum unit of the hierarchy extension
(``hdl/hierarchy/count_sum.py``) in the Amaranth simulator, against the
golden model's ``transform_counts`` (contract section 5.3): random count
lines of both operands and layouts, every mode, format and gate kind, lines
in order under random output backpressure, and each lane's ``select`` high
exactly for a G-Binary or G-Ternary read of a count line."""

import random

import numpy as np
import pytest
from amaranth import Shape

from neuron_fabric.contract.facts import Format, GateKind, Layout, Mode, Operand, count_geometry
from neuron_fabric.contract.regmap import count_total_max
from neuron_fabric.hdl.hierarchy.count_sum import CountOutLayout, CountSum, HierarchyInputLayout
from neuron_fabric.host import golden
from neuron_fabric.sim.amaranth_sim import run_testbenches


def test_layouts():
    # the core's payload (contract section 3) and section 5.1's CFG fields
    widths = {name: Shape.cast(f.shape).width
              for name, f in HierarchyInputLayout(line_bits=128, lanes=16)}
    assert widths == {"line": 128, "gate_mask": 16, "tag": 16, "mode": 2, "format": 2,
                      "gate_kind": 1, "gate_threshold": 5, "layout": 1, "operand": 2,
                      "total": 10}
    # a select bit per 32-bit count lane
    assert {name: Shape.cast(f.shape).width for name, f in CountOutLayout(line_bits=128)} == \
        {"line": 128, "select": 4}


def _random_line(rng, line_bits):
    """(payload fields, expected line or None, expected select)."""
    lanes = line_bits // 32
    operand = rng.choice([Operand.COUNTS4, Operand.COUNTS8, Operand.COUNTS8, Operand.SIGNS])
    mode = rng.choice([Mode.GBINARY, Mode.GTERNARY, Mode.GTERNARY, Mode.IDENTITY])
    fields = dict(mode=mode, format=rng.choice(list(Format)), gate_kind=rng.choice(list(GateKind)),
                  layout=rng.choice(list(Layout)), operand=operand,
                  gate_mask=rng.getrandbits(line_bits // 8), tag=rng.getrandbits(16))
    if operand == Operand.SIGNS:
        fields.update(line=rng.getrandbits(line_bits), total=0,
                      gate_threshold=rng.randint(0, 8))
        return fields, None, 0
    bits, contributors = count_geometry(operand)
    used = rng.randint(1, contributors)
    top = (1 << bits) - 1
    counts = np.array([[rng.choice([0, top, rng.randint(0, top)]) for _ in range(lanes)]
                       for _ in range(used)])
    most = int(counts.sum(axis=0).max())
    total = rng.choice([max(1, most), rng.randint(max(1, most), count_total_max(operand))])
    threshold = rng.randint(0, min(total, 31))
    line = golden.encode_counts(counts, line_bits, operand, fields["layout"])
    fields.update(line=golden.lines_to_ints(line)[0], total=total, gate_threshold=threshold)
    if mode < Mode.GBINARY:
        return fields, None, 0
    kept = np.array([[fields["gate_mask"] >> j & 1 for j in range(lanes)]], dtype=bool)
    out = golden.transform_counts(line, operand, total, mode, fields["format"],
                                  fields["gate_kind"], threshold=threshold, gate_mask=kept,
                                  layout=fields["layout"])
    return fields, golden.lines_to_ints(out)[0], (1 << lanes) - 1


@pytest.mark.parametrize("line_bits, stages, p_ready", [(128, 2, 1.0), (128, 5, 0.6),
                                                         (64, 1, 0.8)])
def test_count_sum_against_golden(line_bits, stages, p_ready):
    dut = CountSum(line_bits=line_bits, workers=8, stages=stages)
    rng = random.Random(line_bits * stages)
    lines = [_random_line(rng, line_bits) for _ in range(120)]
    received = []

    async def source(ctx):
        for fields, _, _ in lines:
            for name, value in fields.items():
                ctx.set(dut.i_stream.payload[name], value)
            ctx.set(dut.i_stream.valid, 1)
            await ctx.tick().until(dut.i_stream.ready)
            ctx.set(dut.i_stream.valid, 0)
            if rng.random() < 0.2:
                await ctx.tick()

    async def sink(ctx):
        while len(received) < len(lines):
            ready = int(rng.random() < p_ready)
            ctx.set(dut.o_stream.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(dut.o_stream.valid,
                                                           dut.o_stream.payload)
            if valid and ready:
                received.append((payload.line, payload.select))

    run_testbenches(dut, sink, background=[source])
    for k, ((fields, want, select), (got, got_select)) in enumerate(zip(lines, received)):
        assert got_select == select, (k, fields)
        if want is not None:
            assert got == want, (k, fields)


def test_latency_is_stages_with_the_output_ready():
    stages = 3
    dut = CountSum(line_bits=64, workers=8, stages=stages)

    async def bench(ctx):
        ctx.set(dut.o_stream.ready, 1)
        await ctx.tick()                    # (ready rises after the first edge)
        ctx.set(dut.i_stream.payload.operand, Operand.COUNTS8)
        ctx.set(dut.i_stream.payload.mode, Mode.GBINARY)
        ctx.set(dut.i_stream.payload.total, 4)
        ctx.set(dut.i_stream.valid, 1)
        _, _, ready = await ctx.tick().sample(dut.i_stream.ready)
        assert ready
        ctx.set(dut.i_stream.valid, 0)
        for edge in range(1, stages + 1):
            assert ctx.get(dut.o_stream.valid) == int(edge == stages), edge
            await ctx.tick()

    run_testbenches(dut, bench)
