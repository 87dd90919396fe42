"""The NDR arbiter and the ID free list against models (Amaranth simulator):
every tag answered once and in its source's order, one NDR per cycle while
the sources are busy, a strict turn among busy sources; every ID handed
out once, and an ID given back handed out again from the next cycle on."""

import random

import pytest
from neuron_fabric.sim.amaranth_sim import run_testbenches

from neuron_fabric.hdl.inflight import IdPool
from neuron_fabric.hdl.ndr import NdrArbiter
from neuron_fabric.host.facts import TopParams

SMALL = TopParams(line_bits=64, workers=4, stages=2, regions=2, max_outstanding=4)


@pytest.mark.parametrize("p_ready, p_offer, busy", [
    (1.0, 1.0, "req rwd b"), (0.6, 0.7, "req rwd b"), (1.0, 0.3, "req rwd b"),
    (1.0, 1.0, "req"), (1.0, 1.0, "rwd"), (1.0, 1.0, "b"), (0.5, 1.0, "rwd b")])
def test_ndr_arbiter_against_a_model(p_ready, p_offer, busy):
    """The sources named in ``busy`` (the two completion streams, holding
    ``valid`` until ``ready`` as a registered queue output does, and B beats
    whose entry the table returns the next cycle), NDR's ready at random:
    each source's tags come out once each, in its order.  With the sources
    always offering and NDR always ready, one NDR is taken every cycle (one
    source alone or all three), and with all three each run of three
    consecutive NDRs serves all three (round robin, none starved)."""
    dut = NdrArbiter(SMALL)
    rng = random.Random(int(p_ready * 10 + p_offer * 100) + len(busy))
    busy = busy.split()
    count = 60
    tags = {"req": list(range(0, count)), "rwd": list(range(100, 100 + count)),
            "b": list(range(1000, 1000 + count))}
    tags = {name: items if name in busy else [] for name, items in tags.items()}
    got = []

    def feeder(port, items):
        async def bench(ctx):
            for tag in items:
                while rng.random() >= p_offer:
                    await ctx.tick()
                ctx.set(port.payload, tag)
                ctx.set(port.valid, 1)
                await ctx.tick().until(port.ready)
                ctx.set(port.valid, 0)
        return bench

    async def beats(ctx):
        for i in range(len(tags["b"])):
            while rng.random() >= p_offer:
                await ctx.tick()
            ctx.set(dut.b_id, i % 4), ctx.set(dut.b_resp, 0), ctx.set(dut.b_valid, 1)
            await ctx.tick().until(dut.b_ready)
            ctx.set(dut.b_valid, 0)

    async def table(ctx):
        # the entry of the n-th lookup, the cycle after it: the n-th write's tag
        looked = 0
        async for _, _, valid in ctx.tick().sample(dut.lookup.valid):
            if valid:
                ctx.set(dut.lookup.entry, tags["b"][looked])
                looked += 1

    async def sink(ctx):
        cycle = 0
        while len(got) < len(busy) * count and cycle < 40 * count:
            ctx.set(dut.ndr.ready, rng.random() < p_ready)
            _, _, valid, ready, tag = await ctx.tick().sample(dut.ndr.valid, dut.ndr.ready,
                                                               dut.ndr.payload.tag)
            if valid and ready:
                got.append((cycle, tag))
            cycle += 1

    run_testbenches(dut, feeder(dut.req_cmp, tags["req"]), feeder(dut.rwd_cmp, tags["rwd"]), beats, sink,
         background=[table])
    out = [tag for _, tag in got]
    assert sorted(out) == sorted(tags["req"] + tags["rwd"] + tags["b"])
    for name, items in tags.items():
        assert [t for t in out if t in set(items)] == items, name
    if p_ready == 1.0 and p_offer == 1.0:
        source = ["req" if t < 100 else "rwd" if t < 1000 else "b" for t in out]
        cycles = [c for c, _ in got]
        # the middle, where every source named is busy
        middle = slice(count // 2, (len(busy) - 1) * count + count // 2 + 20)
        assert all(b - a == 1 for a, b in zip(cycles[middle], cycles[middle][1:])), cycles
        if len(busy) == 3:
            run = source[middle]
            assert all(len(set(run[k:k + 3])) == 3 for k in range(len(run) - 2)), run


@pytest.mark.parametrize("size", [1, 2, 3, 32])
def test_id_pool_gives_back_at_once(size):
    """Random takes and gives, several in flight each cycle: no ID is
    handed out twice, and whenever an ID is free (given back at least a
    cycle before) ``alloc_ok`` is high."""
    dut = IdPool(size=size, id_bits=max(1, (size - 1).bit_length()))
    rng = random.Random(size)

    async def bench(ctx):
        await ctx.tick()                # the ID register is loaded a cycle after reset
        held, free = set(), set(range(size))
        for _ in range(3000):
            assert ctx.get(dut.alloc_ok) == bool(free), (held, free)
            take = bool(free) and rng.random() < 0.7
            if take:
                got = ctx.get(dut.alloc_id)
                assert got in free, (got, free)
            give = bool(held) and rng.random() < 0.6
            if give:
                back = rng.choice(sorted(held))
                ctx.set(dut.free_id, back)
            ctx.set(dut.alloc, take), ctx.set(dut.free, give)
            await ctx.tick()
            if take:
                free.discard(got)
                held.add(got)
            if give:
                held.discard(back)
                free.add(back)
        ctx.set(dut.alloc, 0), ctx.set(dut.free, 0)

    run_testbenches(dut, bench)
