"""Amaranth-simulator tests of the write path against independent oracles:
every good write issued in order with the ID it took, every dropped one
completed, the events counted, one write a cycle."""

import random

from neuron_fabric.hdl.top.write_path import ISSUE_DEPTH, WritePath
from neuron_fabric.contract.facts import RwdOpcode, TopParams
from neuron_fabric.sim.amaranth_sim import run_testbenches

SMALL = TopParams(line_bits=64, workers=4, stages=2, regions=2, max_outstanding=4)


def test_write_path_issues_good_writes_and_drops_the_rest():
    p = SMALL
    dut = WritePath(p)
    rng = random.Random(4)
    sent = [(rng.choice([RwdOpcode.MEM_WR, RwdOpcode.MEM_WR_PTL, 0b0101]),
             rng.random() < 0.2, tag, rng.getrandbits(64), rng.getrandbits(8))
            for tag in range(40)]
    good = [s for s in sent if not s[1] and s[0] != 0b0101]
    dropped = [s for s in sent if s not in good]

    async def producer(ctx):
        ctx.set(dut.alloc.ok, 1)
        for opcode, poison, tag, line, be in sent:
            ctx.set(dut.rwd.payload.opcode, opcode), ctx.set(dut.rwd.payload.poison, poison)
            ctx.set(dut.rwd.payload.tag, tag), ctx.set(dut.rwd.payload.data, line)
            ctx.set(dut.rwd.payload.be, be), ctx.set(dut.rwd.payload.addr, tag << 3)
            ctx.set(dut.rwd.valid, 1)
            await ctx.tick().until(dut.rwd.ready)
        ctx.set(dut.rwd.valid, 0)

    async def memory(ctx):
        seen = []
        while len(seen) < len(good):
            ctx.set(dut.aw_ready, rng.random() < 0.5)
            ctx.set(dut.w_ready, rng.random() < 0.5)
            _, _, awv, awr, addr, wv, wr, line, strb = await ctx.tick().sample(
                dut.aw_valid, dut.aw_ready, dut.aw_addr, dut.w_valid, dut.w_ready,
                dut.w_data, dut.w_strb)
            if wv and wr:
                seen.append((line, strb))
        assert seen == [(g[3], 0xFF if g[0] == RwdOpcode.MEM_WR else g[4]) for g in good]

    async def completions(ctx):
        got = []
        ctx.set(dut.completions.ready, 1)
        while len(got) < len(dropped):
            _, _, valid, tag = await ctx.tick().sample(dut.completions.valid,
                                                        dut.completions.payload)
            if valid:
                got.append(tag)
        assert got == [d[2] for d in dropped]

    run_testbenches(dut, producer, memory, completions)


def test_write_path_takes_ids_in_order_and_sends_each_beat_once():
    """Random IDs offered by a table that is often not ready, random AW, W and
    completion backpressure: each good write takes one ID with its tag as
    the entry, in acceptance order; AW carries that ID and the write's line
    address, W its line and strobes, both in acceptance order; each dropped
    write's tag completes once, in order; the events count what happened."""
    p = SMALL
    dut = WritePath(p)
    rng = random.Random(9)
    sent = [(rng.choice([RwdOpcode.MEM_WR, RwdOpcode.MEM_WR_PTL, 0b0101]),
             rng.random() < 0.15, tag, rng.getrandbits(64), rng.getrandbits(8),
             rng.getrandbits(46)) for tag in range(150)]
    good = [s for s in sent if not s[1] and s[0] != 0b0101]
    dropped = [s for s in sent if s not in good]
    taken, aws, ws, cmps, events = [], [], [], [], {"poison": 0, "unsupported": 0, "writes": 0}

    async def producer(ctx):
        for opcode, poison, tag, line, be, addr in sent:
            ctx.set(dut.rwd.payload.opcode, opcode), ctx.set(dut.rwd.payload.poison, poison)
            ctx.set(dut.rwd.payload.tag, tag), ctx.set(dut.rwd.payload.data, line)
            ctx.set(dut.rwd.payload.be, be)
            ctx.set(dut.rwd.payload.addr, addr << p.offset_bits | rng.getrandbits(p.offset_bits))
            ctx.set(dut.rwd.valid, 1)
            await ctx.tick().until(dut.rwd.ready)
            ctx.set(dut.rwd.valid, 0)
            for _ in range(rng.choice([0, 0, 0, 1, 3])):
                await ctx.tick()

    async def table_and_memory(ctx):
        next_id = 0
        while len(aws) < len(good) or len(ws) < len(good) or len(cmps) < len(dropped):
            ctx.set(dut.alloc.ok, rng.random() < 0.6)
            ctx.set(dut.alloc.id, next_id)
            ctx.set(dut.aw_ready, rng.random() < 0.5), ctx.set(dut.w_ready, rng.random() < 0.5)
            ctx.set(dut.completions.ready, rng.random() < 0.5)
            _, _, take, ok, entry, awv, awr, aw_id, aw_addr, wv, wr, line, strb, cv, cr, tag, \
                pd, un, wr_ev = await ctx.tick().sample(
                    dut.alloc.take, dut.alloc.ok, dut.alloc.entry, dut.aw_valid, dut.aw_ready,
                    dut.aw_id, dut.aw_addr, dut.w_valid, dut.w_ready, dut.w_data, dut.w_strb,
                    dut.completions.valid, dut.completions.ready, dut.completions.payload,
                    dut.poison_drop, dut.unsupported, dut.writes)
            if take:
                assert ok, "an ID taken without ok"
                taken.append((entry, next_id))
                next_id = (next_id + 1) % (1 << p.id_bits)
            if awv and awr:
                aws.append((aw_id, aw_addr))
            if wv and wr:
                ws.append((line, strb))
            if cv and cr:
                cmps.append(tag)
            events["poison"] += pd
            events["unsupported"] += un
            events["writes"] += wr_ev

    run_testbenches(dut, producer, table_and_memory)
    assert [t for t, _ in taken] == [g[2] for g in good]
    assert aws == [(i, g[5]) for (_, i), g in zip(taken, good)]
    assert ws == [(g[3], 0xFF if g[0] == RwdOpcode.MEM_WR else g[4]) for g in good]
    assert cmps == [d[2] for d in dropped]
    assert events == {"poison": sum(1 for d in dropped if d[1]),
                      "unsupported": sum(1 for d in dropped if not d[1]),
                      "writes": len(good)}


def test_write_path_takes_a_write_every_cycle():
    """With the table, AW and W always ready and a write offered in every
    cycle, the W beats leave in every cycle."""
    dut = WritePath(SMALL)
    beats = []

    async def producer(ctx):
        ctx.set(dut.alloc.ok, 1), ctx.set(dut.aw_ready, 1), ctx.set(dut.w_ready, 1)
        ctx.set(dut.rwd.payload.opcode, RwdOpcode.MEM_WR), ctx.set(dut.rwd.valid, 1)
        for tag in range(80):
            ctx.set(dut.rwd.payload.tag, tag)
            ctx.set(dut.rwd.payload.data, tag)
            await ctx.tick().until(dut.rwd.ready)
        ctx.set(dut.rwd.valid, 0)
        for _ in range(20):
            await ctx.tick()

    async def memory(ctx):
        cycle = 0
        async for _, _, valid, line in ctx.tick().sample(dut.w_valid, dut.w_data):
            cycle += 1
            if valid:
                beats.append((cycle, line))

    run_testbenches(dut, producer, background=[memory])
    assert [line for _, line in beats] == list(range(80))
    assert [c - beats[0][0] for c, _ in beats] == list(range(80))


def test_write_path_holds_at_most_issue_depth_ids_under_long_stalls():
    """Writes offered in every cycle while AW or W stalls for stretches of
    up to 30 cycles: the IDs taken whose AW (or W) has not left never
    exceed ISSUE_DEPTH (the queue of IDs holds that many), and AW and W
    still carry every write once, in order."""
    dut = WritePath(SMALL)
    rng = random.Random(12)
    lines = [rng.getrandbits(64) for _ in range(120)]
    taken, aws, ws, most = [], [], [], [0, 0]

    async def producer(ctx):
        ctx.set(dut.rwd.payload.opcode, RwdOpcode.MEM_WR), ctx.set(dut.rwd.valid, 1)
        for tag, line in enumerate(lines):
            ctx.set(dut.rwd.payload.tag, tag), ctx.set(dut.rwd.payload.data, line)
            await ctx.tick().until(dut.rwd.ready)
        ctx.set(dut.rwd.valid, 0)

    async def table_and_memory(ctx):
        next_id, stall = 0, [0, 0]
        ctx.set(dut.alloc.ok, 1)
        for _ in range(3000):
            if len(aws) == len(ws) == len(lines):
                break
            for k in range(2):          # AW, W: stretches held low, else ready
                if stall[k] == 0 and rng.random() < 0.1:
                    stall[k] = rng.randint(5, 30)
                stall[k] = max(0, stall[k] - 1)
            ctx.set(dut.aw_ready, stall[0] == 0), ctx.set(dut.w_ready, stall[1] == 0)
            ctx.set(dut.alloc.id, next_id)
            _, _, take, awv, awr, aw_id, wv, wr, line = await ctx.tick().sample(
                dut.alloc.take, dut.aw_valid, dut.aw_ready, dut.aw_id, dut.w_valid,
                dut.w_ready, dut.w_data)
            if take:
                taken.append(next_id)
                next_id = (next_id + 1) % (1 << SMALL.id_bits)
            if awv and awr:
                aws.append(aw_id)
            if wv and wr:
                ws.append(line)
            most[0] = max(most[0], len(taken) - len(aws))
            most[1] = max(most[1], len(taken) - len(ws))

    run_testbenches(dut, producer, table_and_memory)
    assert aws == taken and ws == lines, f"{len(aws)} AW, {len(ws)} W of {len(lines)}"
    assert max(most) <= ISSUE_DEPTH, most
    assert min(most) >= ISSUE_DEPTH - 1, f"the stalls never filled the queue: {most}"
