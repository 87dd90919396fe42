"""Amaranth-simulator test of read issue against an independent oracle:
random classified requests under random AR backpressure, each read sent
while the reads sent and not yet reported ``read_left`` are fewer than
the request pipeline's credit window for them (the promise the pipeline
keeps); every read's AR beat leaves once, in order, with its ID and line
address; every MemInv/unsupported tag is handed on once, in order;
MemSpecRd leaves nothing; the read and unsupported events count what
happened.  And the request pipeline, read issue and the NDR arbiter
together accept a request every cycle when nothing pushes back."""

import random

from amaranth import Module
from amaranth.lib import wiring

from neuron_fabric.hdl.top.read_issue import ReadIssue
from neuron_fabric.hdl.top.ndr_arbiter import NdrArbiter
from neuron_fabric.hdl.top.request import Kind, RequestPipeline, credit_windows
from neuron_fabric.contract.facts import ReqOpcode, TopParams
from neuron_fabric.sim.amaranth_sim import run_testbenches

SMALL = TopParams(line_bits=64, workers=4, stages=2, regions=2, max_outstanding=4)


def _run(sent, ar_ready_p, seed):
    p = SMALL
    dut = ReadIssue(p)
    rng = random.Random(seed)
    reads = [s for s in sent if s["kind"] == Kind.READ]
    cmps = [s for s in sent if s["kind"] in (Kind.CMP, Kind.UNSUPPORTED)]
    got = {"ar": [], "cmp": [], "reads": [0] * 4, "unsupported": 0, "cycles": 0}
    window = credit_windows(p)["read"]

    async def producer(ctx):
        # each read sent while the window has room, counting the leaves
        # ``read_left`` reports (at random gaps, so the window fills)
        held, pending = 0, list(sent)
        while pending:
            s = pending[0]
            go = (s["kind"] != Kind.READ or held < window) and rng.random() < 0.8
            for name in ("kind", "tag", "addr", "id", "mode"):
                ctx.set(getattr(dut.requests.payload, name), s[name])
            ctx.set(dut.requests.valid, go)
            _, _, left = await ctx.tick().sample(dut.read_left)
            held -= left
            assert held >= 0
            if go:
                pending.pop(0)
                held += s["kind"] == Kind.READ
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
            _, _, valid, tag = await ctx.tick().sample(dut.completions.valid,
                                                       dut.completions.payload)
            if valid:
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
    _run(_requests(300, 1), ar_ready_p=0.4, seed=2)


class _Front(wiring.Component):
    """The request pipeline, read issue and the NDR arbiter joined as in
    the top."""

    def __init__(self, params):
        self.request, self.issue = RequestPipeline(params), ReadIssue(params)
        self.ndr = NdrArbiter(params)
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        m.submodules.request, m.submodules.issue = self.request, self.issue
        m.submodules.ndr = self.ndr
        wiring.connect(m, self.request.out, self.issue.requests)
        wiring.connect(m, self.issue.completions, self.ndr.req_cmp)
        m.d.comb += [self.request.left.read.eq(self.issue.read_left),
                     self.request.left.cmp.eq(self.ndr.req_left)]
        return m


def test_request_and_issue_accept_a_request_every_cycle():
    """With AR, the completions and the in-flight table always ready and a
    request offered every cycle (reads, MemInv and unsupported mixed), one
    is accepted every cycle (and the completions answered one a cycle):
    the credit windows cover the round trip from the accept to the leave
    counted back."""
    p = SMALL
    dut = _Front(p)
    request, issue = dut.request, dut.issue
    # reads alone, completions alone (each fills its own window), then mixed
    mixed = [ReqOpcode.MEM_RD, ReqOpcode.MEM_INV, 0b0111, ReqOpcode.MEM_SPEC_RD]
    phases = [[ReqOpcode.MEM_RD], [ReqOpcode.MEM_INV], [0b0111], mixed]
    cycles, counts = 400, {"accepted": 0}

    async def bench(ctx):
        rng = random.Random(7)
        ctx.set(request.reserve.room, 1)
        ctx.set(issue.ar_ready, 1)
        ctx.set(dut.ndr.ndr.ready, 1)
        ctx.set(request.req.valid, 1)
        for cycle in range(cycles):
            ctx.set(request.req.payload.opcode, rng.choice(phases[cycle * len(phases) // cycles]))
            ctx.set(request.req.payload.tag, cycle)
            _, _, ready = await ctx.tick().sample(request.req.ready)
            counts["accepted"] += ready

    run_testbenches(dut, bench)
    # (req.ready rises the cycle after reset)
    assert counts["accepted"] >= cycles - 1, counts
