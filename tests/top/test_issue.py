"""Amaranth-simulator test of read issue against an independent oracle:
random classified requests under random AR and completion backpressure;
every read's AR beat leaves once, in order, with its ID and line address;
every MemInv/unsupported tag completes once, in order; MemSpecRd leaves
nothing; the read and unsupported events count what happened; nothing is
taken while a queue's room would be exceeded (one request a cycle when
nothing pushes back)."""

import random

from neuron_fabric.hdl.issue import ReadIssue
from neuron_fabric.hdl.request import Kind
from neuron_fabric.host.facts import TopParams
from neuron_fabric.sim.amaranth_sim import run_testbenches

SMALL = TopParams(line_bits=64, workers=4, stages=2, regions=2, max_outstanding=4)


def _run(sent, ar_ready_p, cmp_ready_p, seed):
    p = SMALL
    dut = ReadIssue(p)
    rng = random.Random(seed)
    reads = [s for s in sent if s["kind"] == Kind.READ]
    cmps = [s for s in sent if s["kind"] in (Kind.CMP, Kind.UNSUPPORTED)]
    got = {"ar": [], "cmp": [], "reads": [0] * 4, "unsupported": 0, "cycles": 0}

    async def producer(ctx):
        for s in sent:
            for name in ("kind", "tag", "addr", "id", "mode"):
                ctx.set(getattr(dut.requests.payload, name), s[name])
            ctx.set(dut.requests.valid, 1)
            await ctx.tick().until(dut.requests.ready)
        ctx.set(dut.requests.valid, 0)

    async def memory(ctx):
        while len(got["ar"]) < len(reads):
            ctx.set(dut.ar_ready, rng.random() < ar_ready_p)
            _, _, valid, ready, rid, addr = await ctx.tick().sample(
                dut.ar_valid, dut.ar_ready, dut.ar_id, dut.ar_addr)
            got["cycles"] += 1
            if valid and ready:
                got["ar"].append((rid, addr))

    async def completions(ctx):
        while len(got["cmp"]) < len(cmps):
            ctx.set(dut.completions.ready, rng.random() < cmp_ready_p)
            _, _, valid, ready, tag = await ctx.tick().sample(
                dut.completions.valid, dut.completions.ready, dut.completions.payload)
            if valid and ready:
                got["cmp"].append(tag)

    async def events(ctx):
        # the event outputs, sampled every cycle until the traffic is done
        # and a few cycles more
        quiet = 0
        while quiet < 20:
            _, _, ev, unsup = await ctx.tick().sample(dut.reads, dut.unsupported)
            for mode in range(4):
                got["reads"][mode] += ev >> mode & 1
            got["unsupported"] += unsup
            done = len(got["ar"]) == len(reads) and len(got["cmp"]) == len(cmps)
            quiet = quiet + 1 if done else 0

    run_testbenches(dut, producer, memory, completions, events)
    assert got["ar"] == [(s["id"], s["addr"]) for s in reads]
    assert got["cmp"] == [s["tag"] for s in cmps]
    assert got["reads"] == [sum(s["mode"] == m for s in reads) for m in range(4)]
    assert got["unsupported"] == sum(s["kind"] == Kind.UNSUPPORTED for s in sent)
    return got


def _requests(n, seed):
    p = SMALL
    rng = random.Random(seed)
    return [{"kind": rng.choice([Kind.READ, Kind.READ, Kind.CMP, Kind.UNSUPPORTED, Kind.DROP]),
             "tag": rng.getrandbits(16), "addr": rng.getrandbits(52 - p.offset_bits),
             "id": rng.getrandbits(p.id_bits), "mode": rng.getrandbits(2)} for _ in range(n)]


def test_issue_under_backpressure():
    _run(_requests(300, 1), ar_ready_p=0.4, cmp_ready_p=0.5, seed=2)


def test_issue_one_request_a_cycle_without_backpressure():
    """With AR and the completions always ready, 200 reads take about 200
    cycles (the queues' credit windows cover their round trips)."""
    sent = [dict(s, kind=Kind.READ) for s in _requests(200, 3)]
    got = _run(sent, ar_ready_p=1.0, cmp_ready_p=1.0, seed=4)
    assert got["cycles"] <= len(sent) + 8
