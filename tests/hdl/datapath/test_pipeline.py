"""The pipeline builder of the datapath core (``hdl/datapath/pipeline.py``):
the register placement and geometry against their docstrings, and a
:class:`Pipeline` running a small step set of its own (a per-line field, a
per-line control spread to every group, group vectors, a gated output) in
the Amaranth simulator against the same steps in Python: lines leave in
order, each transformed as the steps say, under random valid and ready,
and ``stages`` cycles after they enter with the output ready."""

import random
from dataclasses import dataclass

import pytest
from amaranth import Cat, Module, Signal

from neuron_fabric.hdl.datapath.pipeline import (PLACEMENT, SPREAD_FANOUT, Copies, Gated,
                                                 Geometry, Groups, Pipeline)
from neuron_fabric.sim.amaranth_sim import run_testbenches


def test_placement():
    """STAGES registers in all; the output register always present; past
    five stages the extra ones on boundary 0."""
    assert sorted(PLACEMENT) == list(range(1, 9))
    for stages, counts in PLACEMENT.items():
        assert len(counts) == 5 and sum(counts) == stages and counts[4] == 1
        if stages >= 5:
            assert counts[1:] == (1, 1, 1, 1) and counts[0] == stages - 4


@pytest.mark.parametrize("line_bits, workers, group_bits, groups, lanes, count_bits, half_bit", [
    (512, 8, 32, 16, 4, 4, 2), (64, 4, 16, 4, 4, 3, 1), (1024, 16, 32, 32, 2, 5, 3)])
def test_geometry_hand_worked(line_bits, workers, group_bits, groups, lanes, count_bits,
                              half_bit):
    """A count 0..W takes bit_length(W) bits; W/2 = 1 << half_bit."""
    geo = Geometry(line_bits, workers, group_bits)
    assert (geo.groups, geo.group_lanes, geo.count_bits, geo.half_bit) == \
        (groups, lanes, count_bits, half_bit)
    assert Geometry.field(Signal(12), 2, 4).shape().width == 4


def test_gated_checks_its_conditions():
    with pytest.raises(ValueError, match="2 conditions for 3 bits"):
        Gated(Signal(3), (None, None), 0)
    assert len(Gated(Signal(3), (None,) * 3, 0)) == 3


@dataclass(frozen=True)
class _Bundle:
    tag: object
    ctl: Copies
    data: Groups


GROUP_BITS = 4


def _steps():
    """A: data ^ ctl; B: as it is; C: data + 1; D: bits 0 and 1 forced to 1
    where ctl's bit 3 is high (a gated vector)."""
    def a(b):
        return _Bundle(b.tag, b.ctl, Groups(d ^ c for d, c in zip(b.data, b.ctl)))

    def same(b):
        return b

    def c(b):
        return _Bundle(b.tag, b.ctl, Groups((d + 1)[:GROUP_BITS] for d in b.data))

    def d(b):
        return _Bundle(b.tag, b.ctl, Groups(Gated(v, (k[3], k[3], None, None), 0b0011)
                                            for v, k in zip(b.data, b.ctl)))
    return a, same, c, d


def _model(data, ctl, groups):
    out = 0
    for g in range(groups):
        v = ((data >> (GROUP_BITS * g) & 0xF) ^ ctl) + 1 & 0xF
        out |= (v | (3 if ctl & 8 else 0)) << (GROUP_BITS * g)
    return out


def _build(stages, skid, groups):
    m = Module()
    in_valid, out_ready = Signal(), Signal()
    tag, ctl, data = Signal(8), Signal(4), Signal(GROUP_BITS * groups)
    pipe = Pipeline(m, stages=stages, in_valid=in_valid, out_ready=out_ready, skid=skid)
    line = _Bundle(tag, Copies.spread(ctl, groups),
                   Groups(data[GROUP_BITS * g:GROUP_BITS * (g + 1)] for g in range(groups)))
    out = pipe.run(line, _steps(), stages)
    ports = {"in_ready": Signal(), "out_valid": Signal(), "tag": Signal(8),
             "data": Signal(len(data))}
    m.d.comb += [ports["in_ready"].eq(pipe.in_ready), ports["out_valid"].eq(pipe.out_valid),
                 ports["tag"].eq(out.tag), ports["data"].eq(Cat(*out.data))]
    return m, (in_valid, out_ready, tag, ctl, data), ports


@pytest.mark.parametrize("skid", [True, False])
@pytest.mark.parametrize("stages, groups", [(1, 3), (3, SPREAD_FANOUT + 3), (5, 2), (8, 4)])
def test_pipeline_runs_the_steps_in_order(stages, groups, skid):
    m, (in_valid, out_ready, tag, ctl, data), ports = _build(stages, skid, groups)
    rng = random.Random(stages * groups)
    sent, got = [], []

    async def bench(ctx):
        n = 0
        for t in range(250):
            v, r = int(rng.random() < 0.7), int(t < 40 or rng.random() < 0.6)
            line = (n % 256, rng.getrandbits(4), rng.getrandbits(len(data)))
            ctx.set(in_valid, v)
            ctx.set(out_ready, r)
            for s, x in zip((tag, ctl, data), line):
                ctx.set(s, x)
            _, _, in_ready, out_valid, otag, odata = await ctx.tick().sample(
                ports["in_ready"], ports["out_valid"], ports["tag"], ports["data"])
            if v and in_ready:
                sent.append((line[0], _model(line[2], line[1], groups)))
                n += 1
            if out_valid and r:
                got.append((otag, odata))
        ctx.set(in_valid, 0)
        ctx.set(out_ready, 1)
        for _ in range(stages + 2):
            _, _, out_valid, otag, odata = await ctx.tick().sample(
                ports["out_valid"], ports["tag"], ports["data"])
            if out_valid:
                got.append((otag, odata))

    run_testbenches(m, bench)
    assert len(sent) > 60 and got == sent


@pytest.mark.parametrize("skid", [True, False])
def test_latency_is_stages(skid):
    stages, groups = 4, 2
    m, (in_valid, out_ready, tag, ctl, data), ports = _build(stages, skid, groups)

    async def bench(ctx):
        ctx.set(out_ready, 1)
        await ctx.tick()
        ctx.set(tag, 0x5A)
        ctx.set(in_valid, 1)
        _, _, ready = await ctx.tick().sample(ports["in_ready"])
        assert ready
        ctx.set(in_valid, 0)
        # accepted at edge t, it leaves at edge t + stages
        for edge in range(1, stages + 1):
            assert ctx.get(ports["out_valid"]) == int(edge == stages), edge
            if edge == stages:
                assert ctx.get(ports["tag"]) == 0x5A
            await ctx.tick()

    run_testbenches(m, bench)
