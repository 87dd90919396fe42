"""The valid chains of the datapath's pipeline (``hdl/datapath/chains.py``):
a chain and data registers under its enable (behind the skid: stage 0
always loads, and the skid register holds the last stage's line) in the
Amaranth simulator, against contract section 3's handshake: lines leave in
the order they came, none lost or repeated, whatever ``in_valid`` and
``out_ready`` do; with ``out_ready`` high the input is ready every cycle
and a line accepted at edge t leaves at edge t + STAGES."""

import random

import pytest
from amaranth import Module, Signal

from neuron_fabric.hdl.datapath.chains import plain_chain, skid_chain, skid_register
from neuron_fabric.sim.amaranth_sim import run_testbenches


def _harness(kind, stages):
    m = Module()
    in_valid, out_ready, data = Signal(), Signal(), Signal(8)

    def wire(value):
        sig = Signal(len(value))
        m.d.comb += sig.eq(value)
        return sig

    if kind == "skid":
        chain = skid_chain(m, "c", stages=stages, in_valid=in_valid, out_ready=out_ready,
                           wire=wire)
    else:
        chain = plain_chain(m, "c", stages=stages, in_valid=in_valid, out_ready=out_ready)
    value = data
    for k in range(stages):
        reg = Signal(8, name=f"data{k}")
        if kind == "skid" and k == 0:
            m.d.sync += reg.eq(value)
        else:
            with m.If(chain.enable):
                m.d.sync += reg.eq(value)
        value = reg
    if kind == "skid":
        value = skid_register(m, wire, value, "skid", chain.room)
    # (in_ready holds the reset: through a signal for the testbench)
    ports = {"in_ready": wire(chain.in_ready), "out_valid": wire(chain.out_valid)}
    return m, in_valid, out_ready, data, ports, value


@pytest.mark.parametrize("kind", ["plain", "skid"])
@pytest.mark.parametrize("stages", [1, 2, 5])
@pytest.mark.parametrize("p_valid, p_ready", [(0.5, 1.0), (1.0, 0.4), (0.7, 0.6)])
def test_lines_leave_in_order_once(kind, stages, p_valid, p_ready):
    m, in_valid, out_ready, data, chain, out = _harness(kind, stages)
    rng = random.Random(stages)
    sent, got = [], []

    async def bench(ctx):
        nxt = 0
        for _ in range(300):
            v, r = int(rng.random() < p_valid), int(rng.random() < p_ready)
            ctx.set(in_valid, v)
            ctx.set(data, nxt % 256)
            ctx.set(out_ready, r)
            _, _, in_ready, out_valid, value = await ctx.tick().sample(
                chain["in_ready"], chain["out_valid"], out)
            if v and in_ready:
                sent.append(nxt % 256)
                nxt += 1
            if out_valid and r:
                got.append(value)
        ctx.set(in_valid, 0)
        ctx.set(out_ready, 1)
        for _ in range(stages + 2):
            _, _, out_valid, value = await ctx.tick().sample(chain["out_valid"], out)
            if out_valid:
                got.append(value)

    run_testbenches(m, bench)
    assert len(sent) > 50 and got == sent


@pytest.mark.parametrize("kind", ["plain", "skid"])
@pytest.mark.parametrize("stages", [1, 3, 8])
def test_ready_every_cycle_and_latency_stages(kind, stages):
    m, in_valid, out_ready, data, chain, out = _harness(kind, stages)
    rng = random.Random(stages)
    offered = [(rng.getrandbits(1), rng.getrandbits(8)) for _ in range(60)]

    async def bench(ctx):
        ctx.set(out_ready, 1)
        await ctx.tick()
        accepted_at, left_at = {}, {}
        for edge, (v, d) in enumerate(offered + [(0, 0)] * (stages + 1)):
            ctx.set(in_valid, v)
            ctx.set(data, d)
            _, _, in_ready, out_valid, value = await ctx.tick().sample(
                chain["in_ready"], chain["out_valid"], out)
            assert in_ready, edge
            if v:
                accepted_at[edge] = d
            if out_valid:
                left_at[edge] = value
        assert left_at == {t + stages: d for t, d in accepted_at.items()}

    run_testbenches(m, bench)
