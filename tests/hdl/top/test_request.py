"""The request pipeline (Amaranth simulator), against the region rule and
phase of contract 4.3 written out in Python and the golden model's gate
pattern: each read's in-flight entry and class, the hold/idle handshake,
a change of the region table under hold with requests offered at once
after it, and the whole top with a memory that answers each address the
cycle after it (the entry is filled before its data can return)."""

import random

from neuron_fabric.hdl.top.request import AR_LEAD, Kind, RequestPipeline, credit_windows
from neuron_fabric.host import golden
from neuron_fabric.contract.facts import Mode, ReqOpcode, TopParams
from neuron_fabric.sim.amaranth_sim import run_testbenches

SMALL = TopParams(line_bits=64, workers=4, stages=2, regions=2, max_outstanding=4)
OPCODES = {ReqOpcode.MEM_RD: Kind.READ, ReqOpcode.MEM_INV: Kind.CMP,
           ReqOpcode.MEM_SPEC_RD: Kind.DROP, 0b0111: Kind.UNSUPPORTED}
DEFAULT = dict(mode=Mode.BYPASS, format=0, gate_kind=0, period=3, keep=2, threshold=0)


def _region_rule(addr, regions, default):
    """contract 4.3 in Python: (cfg fields, base) of line address ``addr``."""
    for cfg, base, limit in regions:
        if cfg["enable"] and base <= addr < limit:
            return cfg, base
    return default, 0


async def _configure(ctx, dut, default, regions):
    """Change the configuration as the control registers do: hold, wait
    for idle, write, release."""
    ctx.set(dut.config.hold, 1)
    await ctx.tick().until(dut.config.idle)
    for name, value in default.items():
        ctx.set(dut.config.default[name], value)
    for r, (cfg, base, limit) in enumerate(regions):
        region = dut.config.regions[r]
        for name, value in cfg.items():
            ctx.set(region.enable if name == "enable" else region.cfg[name], value)
        ctx.set(region.base, base)
        ctx.set(region.limit, limit)
    await ctx.tick()
    ctx.set(dut.config.hold, 0)


def _bench(dut, epochs, rng, ready_rate=0.6):
    """Testbenches offering, for each ``(default, regions, requests)`` of
    ``epochs``, the configuration then the requests; checking each one's
    class, address, ID and (for reads) in-flight entry against the
    configuration it was accepted under.  Read issue is modelled by two
    queues whose heads leave at ``ready_rate`` (reported on ``left``);
    neither ever holds more than its credit window."""
    p = dut._params
    fills, accepted = [], []

    async def producer(ctx):
        ctx.set(dut.reserve.room, 1)             # the in-flight table always has room here
        for epoch, (default, regions, sent) in enumerate(epochs):
            await _configure(ctx, dut, default, regions)
            for opcode, line, tag in sent:
                ctx.set(dut.req.payload.opcode, opcode)
                ctx.set(dut.req.payload.addr, line << p.offset_bits)
                ctx.set(dut.req.payload.tag, tag)
                ctx.set(dut.req.valid, 1)
                await ctx.tick().until(dut.req.ready)
                accepted.append(epoch)
            ctx.set(dut.req.valid, 0)

    async def table(ctx):
        """The in-flight table's read side: IDs in order, entries as filled."""
        next_id = 0
        ctx.set(dut.alloc.id, next_id)
        async for _, _, take, fill, fill_id, entry in ctx.tick().sample(
                dut.alloc.take, dut.alloc.fill, dut.alloc.fill_id, dut.alloc.entry):
            if fill:
                fills.append((fill_id, entry))
            if take:
                next_id += 1
                ctx.set(dut.alloc.id, next_id % (1 << p.id_bits))

    windows = credit_windows(p)
    queued = {"read": 0, "cmp": 0}

    async def issue(ctx):
        """Read issue's queues: each head leaves at ``ready_rate``."""
        while True:
            leave = {k: n > 0 and rng.random() < ready_rate for k, n in queued.items()}
            ctx.set(dut.left.read, leave["read"])
            ctx.set(dut.left.cmp, leave["cmp"])
            await ctx.tick()
            for k, gone in leave.items():
                queued[k] -= gone

    async def consumer(ctx):
        reads = []
        everything = [(e, req) for e, (_, _, sent) in enumerate(epochs) for req in sent]
        for epoch, (opcode, line, tag) in everything:
            while True:
                _, _, valid, payload = await ctx.tick().sample(dut.out.valid, dut.out.payload)
                if valid:
                    break
            kind = {Kind.READ: "read", Kind.CMP: "cmp", Kind.UNSUPPORTED: "cmp"}.get(
                payload.kind)
            if kind:
                queued[kind] += 1
                assert queued[kind] <= windows[kind], (kind, queued)
            assert payload.tag == tag and payload.kind == OPCODES[opcode]
            if payload.kind != Kind.READ:
                continue
            assert payload.addr == line
            assert payload.id == len(reads) % (1 << p.id_bits)
            reads.append((epoch, line, tag, payload.mode))
        await ctx.tick().repeat(AR_LEAD + 2)
        assert len(fills) == len(reads)
        for n, (epoch, line, tag, mode) in enumerate(reads):
            default, regions, _ = epochs[epoch]
            fill_id, entry = fills[n]
            assert fill_id == n % (1 << p.id_bits)
            cfg, base = _region_rule(line, regions, default)
            assert entry.tag == tag and mode == cfg["mode"]
            assert (entry.cfg.mode, entry.cfg.format, entry.cfg.gate_kind,
                    entry.cfg.threshold) == (cfg["mode"], cfg["format"], cfg["gate_kind"],
                                             cfg["threshold"])
            phase = ((line - base) * p.lanes) % cfg["period"]
            want = golden.gate_pattern(p.lanes, cfg["period"], cfg["keep"], phase)
            assert entry.mask == sum(int(b) << i for i, b in enumerate(want)), (line, cfg)

    return producer, consumer, [table, issue]


def _requests(rng, lines, tags):
    return [(rng.choice(list(OPCODES)), rng.choice(lines) + rng.randrange(4), tag)
            for tag in tags]


def test_request_pipeline_captures_region_and_mask():
    dut = RequestPipeline(SMALL)
    rng = random.Random(2)
    regions = [(dict(mode=Mode.GTERNARY, format=1, gate_kind=0, period=5, keep=3,
                     threshold=2, enable=1), 100, 200),
               (dict(mode=Mode.GBINARY, format=2, gate_kind=1, period=7, keep=7,
                     threshold=4, enable=1), 150, 1 << 40)]
    sent = _requests(rng, [5, 120, 160, 199, 200, 1 << 41], range(60))
    producer, consumer, tables = _bench(dut, [(DEFAULT, regions, sent)], rng)
    run_testbenches(dut, producer, consumer, background=tables)


def test_request_pipeline_keeps_within_its_credit():
    """Reads, then completions, offered every cycle while read issue's
    queues drain slowly: neither queue ever holds more than its window
    (the bench asserts it), and nothing is lost."""
    dut = RequestPipeline(SMALL)
    rng = random.Random(3)
    sent = [(ReqOpcode.MEM_RD, 5, t) for t in range(80)] + \
           [(rng.choice([ReqOpcode.MEM_INV, 0b0111]), 9, 80 + t) for t in range(80)]
    producer, consumer, tables = _bench(dut, [(DEFAULT, [], sent)], rng, ready_rate=0.15)
    run_testbenches(dut, producer, consumer, background=tables)


def test_request_pipeline_region_change_under_hold():
    """A new region table (BASE, LIMIT, P and K of both regions, and the
    default's P) written under hold, and requests offered from the cycle
    hold falls: each read gets the configuration, phase and mask of the
    table in force when it was accepted, including the residues of the new
    BASE, which follow it a number of cycles later (``region_residues.py``)."""
    p = SMALL
    dut = RequestPipeline(p)
    rng = random.Random(5)
    epochs = []
    for e in range(4):
        bases = sorted(rng.getrandbits(rng.choice([8, 20, 40])) for _ in range(2))
        regions = [(dict(mode=Mode.GTERNARY, format=0, gate_kind=0,
                         period=(period := rng.randrange(1, 16)),
                         keep=rng.randrange(period + 1), threshold=0, enable=1),
                    base, base + rng.randrange(1, 300)) for base in bases]
        default = dict(DEFAULT, period=rng.randrange(1, 16))
        default["keep"] = rng.randrange(default["period"] + 1)
        lines = [regions[0][1], regions[0][1] + 7, regions[1][1], regions[1][2] - 1, 3]
        sent = [(ReqOpcode.MEM_RD, rng.choice(lines) + rng.randrange(3), 40 * e + t)
                for t in range(40)]
        epochs.append((default, regions, sent))
    producer, consumer, tables = _bench(dut, epochs, rng, ready_rate=1.0)
    run_testbenches(dut, producer, consumer, background=tables)


def test_request_pipeline_hold_and_idle():
    """hold stops admission from the next cycle; idle follows once the last
    request accepted has passed the stages that read the configuration;
    admission resumes after hold falls."""
    dut = RequestPipeline(SMALL)

    async def bench(ctx):
        ctx.set(dut.reserve.room, 1)
        ctx.set(dut.req.valid, 1)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.req.ready) and not ctx.get(dut.config.idle)
        ctx.set(dut.config.hold, 1)
        for cycle in range(10):
            await ctx.tick()
            assert not ctx.get(dut.req.ready)
            if ctx.get(dut.config.idle):
                break
        # idle 9 edges after hold: one for req.ready to fall, then the last
        # request accepted passes the seven stages up to the one that chooses
        # its CFG: A, the chunk compares, two combines (a 49-bit line
        # address's 13 chunks to 4, then 1), the match, the first match and
        # its copies; then one for idle's own register
        assert cycle == 8, cycle
        ctx.set(dut.config.hold, 0)
        for _ in range(100):
            await ctx.tick()
            if ctx.get(dut.req.ready):
                break
        assert ctx.get(dut.req.ready)

    run_testbenches(dut, bench)


def test_read_entry_filled_before_its_data_returns():
    """The top with a memory that answers each AR the cycle after it (the
    earliest AXI allows) and reads back to back: every DRS carries its own
    tag and line, so no R beat looked up its in-flight entry before the
    request pipeline had filled it (the entry holds the tag and the
    configuration; AR_LEAD in request.py)."""
    from neuron_fabric.hdl.top.top import Top
    from neuron_fabric.contract.facts import ReqOpcode

    p = SMALL
    dut = Top(line_bits=p.line_bits, workers=p.workers, stages=p.stages, regions=p.regions,
              max_outstanding=p.max_outstanding)
    count = 40
    got = {}

    def line(addr):
        return (addr * 0x9E3779B97F4A7C15 + 1) % (1 << p.line_bits)

    async def memory(ctx):
        axi = dut.m_axi
        ctx.set(axi.arready, 1)
        pending = []
        async for _, _, ar, arid, araddr, rready in ctx.tick().sample(
                axi.arvalid, axi.arid, axi.araddr, axi.rready):
            if ctx.get(axi.rvalid) and rready:
                pending.pop(0)
            if ar:
                pending.append((arid, araddr))
            ctx.set(axi.rvalid, bool(pending))
            if pending:
                ctx.set(axi.rid, pending[0][0])
                ctx.set(axi.rdata, line(pending[0][1]))

    async def drs(ctx):
        ctx.set(dut.s2m_drs.ready, 1)
        async for _, _, valid, payload in ctx.tick().sample(dut.s2m_drs.valid,
                                                            dut.s2m_drs.payload):
            if valid:
                assert payload.tag not in got, payload.tag
                got[payload.tag] = payload.data

    async def bench(ctx):
        ctx.set(dut.m2s_req.payload.opcode, ReqOpcode.MEM_RD)
        for tag in range(1, count + 1):
            ctx.set(dut.m2s_req.payload.addr, tag << p.offset_bits)
            ctx.set(dut.m2s_req.payload.tag, tag)
            ctx.set(dut.m2s_req.valid, 1)
            await ctx.tick().until(dut.m2s_req.ready)
        ctx.set(dut.m2s_req.valid, 0)
        for _ in range(400):
            await ctx.tick()
            if len(got) == count:
                break

    run_testbenches(dut, bench, background=[memory, drs])
    assert got == {tag: line(tag << p.offset_bits) for tag in range(1, count + 1)}
