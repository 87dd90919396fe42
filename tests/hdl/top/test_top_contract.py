"""Points of the contract checked on the whole top in the Amaranth
simulator (64-bit lines, W 4, STAGES 1, REGIONS 1, MAX_OUTSTANDING 4,
full profile), each against the contract's text or a hand-worked value:

- the counter a read counts in is its mode's, whatever its layout and
  operand (contract 4.4);
- count-operand and worker-major reads take exactly STAGES cycles more
  than BYPASS reads, like element-major signs (contract 4.3);
- the MARGIN gate's threshold over a count operand at its limit, T = 31
  (contract 5.1);
- the control-write bound counts rising edges from the one at which the
  slave takes the later of the write's address and data to the one at
  which BVALID rises (contract 4.3): 12 at most, reached with a request
  accepted every cycle, and 13 counted in cycles from the handshake's to
  BVALID's.
"""

import collections

import pytest

from neuron_fabric.contract.facts import Format, GateKind, Layout, Mode, Operand, ReqOpcode, TopParams
from neuron_fabric.contract.regmap import RegisterMap, cfg_encode
from neuron_fabric.hdl.top.csr import control_write_bound
from neuron_fabric.hdl.top.request import idle_after
from neuron_fabric.hdl.top.top import Top
from neuron_fabric.host import golden
from neuron_fabric.sim.amaranth_sim import run_testbenches
from neuron_fabric.sim.latency import measure

SMALL = dict(line_bits=64, workers=4, stages=1, regions=1, max_outstanding=4, profile="full")
#: Cycles left after a control write before the next read (more than the
#: request pipeline's quiet cycles after it).
SETTLE = 40
OKAY = 0b00


class _TopDriver:
    """Drives the top one rising edge at a time from a testbench: every S2M
    channel and AXI ready high, a memory answering the cycle after each
    address from ``memory`` (byte address -> line), each AXI write answered
    OKAY the cycle after both its beats; ``flood``, an M2S Req opcode or
    None, offers a request of it in every cycle.  ``edge`` counts the
    rising edges stepped; ``accepted`` holds those at which a request was
    accepted, ``lite_log`` each cycle's control-port write signals as a
    checker sampling them sees them (cycle, AW handshake, W handshake,
    BVALID); cycle n ends at edge n + 1."""

    def __init__(self, ctx, dut, memory=None):
        self.ctx, self.dut = ctx, dut
        self.memory = memory if memory is not None else {}
        self.rmap = RegisterMap(dut.params)
        self.edge = 0
        self.requests = collections.deque()
        self.flood = None
        self.accepted = []
        self.lite_log = []
        self.drs = {}
        self._tag = 0x100
        self._r, self._aw, self._w, self._b = (collections.deque() for _ in range(4))
        axi, lite = dut.m_axi, dut.s_axil
        for ready in (dut.s2m_drs.ready, dut.s2m_ndr.ready, axi.arready, axi.awready,
                      axi.wready, lite.bready, lite.rready):
            ctx.set(ready, 1)

    def _offer(self):
        ctx, req = self.ctx, self.dut.m2s_req
        if not self.requests and self.flood is not None:
            self._tag += 1
            self.requests.append((self.flood, 8 * (self._tag % 32), self._tag))
        ctx.set(req.valid, bool(self.requests))
        if self.requests:
            opcode, addr, tag = self.requests[0]
            ctx.set(req.payload.opcode, opcode), ctx.set(req.payload.addr, addr)
            ctx.set(req.payload.tag, tag)

    async def step(self):
        """One rising edge, and what it hands over on every channel."""
        ctx, dut, axi = self.ctx, self.dut, self.dut.m_axi
        self._offer()
        if ctx.get(dut.m2s_req.valid) and ctx.get(dut.m2s_req.ready):
            self.requests.popleft()
            self.accepted.append(self.edge + 1)
        if ctx.get(dut.s2m_drs.valid):
            self.drs[ctx.get(dut.s2m_drs.payload.tag)] = ctx.get(dut.s2m_drs.payload.data)
        if ctx.get(axi.arvalid):
            self._r.append((ctx.get(axi.arid), self.memory.get(ctx.get(axi.araddr), 0)))
        if ctx.get(axi.awvalid):
            self._aw.append(ctx.get(axi.awid))
        if ctx.get(axi.wvalid):
            self._w.append(None)
        lite = dut.s_axil
        self.lite_log.append((self.edge, ctx.get(lite.awvalid) and ctx.get(lite.awready),
                              ctx.get(lite.wvalid) and ctx.get(lite.wready),
                              ctx.get(lite.bvalid)))
        r_taken = ctx.get(axi.rvalid) and ctx.get(axi.rready)
        b_taken = ctx.get(axi.bvalid) and ctx.get(axi.bready)
        await ctx.tick()
        self.edge += 1
        if r_taken:
            self._r.popleft()
        if b_taken:
            self._b.popleft()
        while self._aw and self._w:
            self._b.append(self._aw.popleft())
            self._w.popleft()
        ctx.set(axi.rvalid, bool(self._r))
        if self._r:
            ctx.set(axi.rid, self._r[0][0]), ctx.set(axi.rdata, self._r[0][1])
            ctx.set(axi.rlast, 1)
        ctx.set(axi.bvalid, bool(self._b))
        if self._b:
            ctx.set(axi.bid, self._b[0])

    async def steps(self, n):
        for _ in range(n):
            await self.step()

    async def write(self, offset, value):
        """A control write; returns ``(bresp, a, b)``: ``a`` the edge at which
        the slave took the later of the address and the data, ``b`` the edge
        at which BVALID rose (both numbered by ``edge``)."""
        ctx, lite = self.ctx, self.dut.s_axil
        ctx.set(lite.bready, 0)
        ctx.set(lite.awaddr, offset), ctx.set(lite.wdata, value), ctx.set(lite.wstrb, 0xF)
        ctx.set(lite.awvalid, 1), ctx.set(lite.wvalid, 1)
        a = None
        while a is None:
            aw = ctx.get(lite.awvalid) and ctx.get(lite.awready)
            w = ctx.get(lite.wvalid) and ctx.get(lite.wready)
            await self.step()
            if aw:
                ctx.set(lite.awvalid, 0)
            if w:
                ctx.set(lite.wvalid, 0)
            if not ctx.get(lite.awvalid) and not ctx.get(lite.wvalid):
                a = self.edge
        while not ctx.get(lite.bvalid):
            await self.step()
        b, bresp = self.edge, ctx.get(lite.bresp)
        ctx.set(lite.bready, 1)
        await self.step()
        return bresp, a, b

    async def read_csr(self, offset):
        ctx, lite = self.ctx, self.dut.s_axil
        ctx.set(lite.araddr, offset), ctx.set(lite.arvalid, 1)
        while not ctx.get(lite.arready):
            await self.step()
        await self.step()
        ctx.set(lite.arvalid, 0)
        while not ctx.get(lite.rvalid):
            await self.step()
        data, resp = ctx.get(lite.rdata), ctx.get(lite.rresp)
        await self.step()
        return data, resp

    async def set_default(self, cfg):
        bresp, _, _ = await self.write(self.rmap["DEFAULT_CFG"].offset, cfg)
        assert bresp == OKAY, hex(cfg)
        await self.steps(SETTLE)

    async def read_line(self, addr, tag):
        self.requests.append((ReqOpcode.MEM_RD, addr, tag))
        while tag not in self.drs:
            await self.step()
        return self.drs.pop(tag)

    async def counter(self, j):
        lo, resp_lo = await self.read_csr(self.rmap[f"COUNTER{j}_LO"].offset)
        hi, resp_hi = await self.read_csr(self.rmap[f"COUNTER{j}_HI"].offset)
        assert resp_lo == resp_hi == OKAY
        return hi << 32 | lo


def _run(bench, **params):
    dut = Top(**{**SMALL, **params})

    async def testbench(ctx):
        await bench(_TopDriver(ctx, dut))

    run_testbenches(dut, testbench)


def _golden(line, cfg, workers=4, line_bits=64):
    """The golden response of a G-Binary or MARGIN-gated G-Ternary read of
    ``line`` (an int) under ``cfg``'s fields (no PATTERN gate: no phase)."""
    f = {k: int(v) for k, v in cfg.items()}
    lines = golden.lines_from_ints([line], line_bits)
    if f["mode"] in (Mode.BYPASS, Mode.IDENTITY):
        return line
    if f["operand"] == Operand.SIGNS:
        out = golden.transform(lines, workers, f["mode"], f["format"], f["gate_kind"],
                               threshold=f["threshold"], layout=f["layout"])
    else:
        out = golden.transform_counts(lines, f["operand"], f["total"], f["mode"], f["format"],
                                      f["gate_kind"], threshold=f["threshold"],
                                      layout=f["layout"])
    return golden.lines_to_ints(out)[0]


#: Read configurations of every layout and operand: (layout, operand, total, T).
SHAPES = [(Layout.WORKER_MAJOR, Operand.SIGNS, 0, 3),
          (Layout.ELEMENT_MAJOR, Operand.COUNTS4, 100, 7),
          (Layout.WORKER_MAJOR, Operand.COUNTS4, 64, 31),
          (Layout.ELEMENT_MAJOR, Operand.COUNTS8, 700, 20),
          (Layout.WORKER_MAJOR, Operand.COUNTS8, 9, 9)]


def test_reads_count_by_mode_whatever_layout_and_operand():
    """Contract 4.4: counter m (0..3) counts the reads of mode m; a read of
    partial counts or of worker-major signs is counted by its mode like
    any other.  Mode m reads m + 1 lines in each shape, so a read counted
    in another mode's counter changes two counts; every response is the
    golden model's (the configuration was the one written)."""
    line = 0x8421_7F3C_0F5A_E196
    reads = collections.Counter()

    async def bench(t):
        t.memory[0x40] = line
        tag = 0
        for (layout, operand, total, threshold), mode in \
                [(s, m) for s in SHAPES for m in Mode]:
            cfg = dict(mode=mode, format=Format.MARGIN, gate_kind=GateKind.MARGIN,
                       threshold=threshold, layout=layout, operand=operand, total=total)
            await t.set_default(cfg_encode(**cfg))
            for _ in range(mode + 1):
                tag += 1
                assert await t.read_line(0x40, tag) == _golden(line, cfg), (cfg, tag)
                reads[mode] += 1
        counts = [await t.counter(j) for j in range(6)]
        assert counts == [reads[m] for m in Mode] + [0, 0]
        assert counts[:4] == [len(SHAPES) * (m + 1) for m in Mode]

    _run(bench)


def test_margin_threshold_at_its_limit_over_64_contributions():
    """Contract 5.1: T is 5 bits, so over a count operand the strictest
    MARGIN gate is T = 31.  With total 64, a = 2c - 64 is even, so T = 31
    keeps exactly the elements with |a| >= 32: worked by hand for
    c = 48, 47, 16, 17 (a = 32, 30, -32, -30): kept, gated (c' = 32,
    a' = 0), kept, gated."""
    # row k: contributor k's counts of the four elements (48, 47, 16, 17)
    counts = [[15, 15, 15, 15], [15, 15, 1, 2], [15, 15, 0, 0], [3, 2, 0, 0]]
    lines = golden.lines_to_ints(golden.encode_counts(counts, 64, Operand.COUNTS4))
    cfg = dict(mode=Mode.GTERNARY, gate_kind=GateKind.MARGIN, threshold=31,
               operand=Operand.COUNTS4, total=64)
    m32 = 0xFFFF_FFFF

    async def bench(t):
        t.memory.update({0x80: lines[0], 0x88: lines[1]})
        got = {}
        for fmt in (Format.COUNT, Format.MARGIN):
            await t.set_default(cfg_encode(format=fmt, **cfg))
            got[fmt] = [await t.read_line(0x80, 10 + fmt), await t.read_line(0x88, 20 + fmt)]
        assert got[Format.COUNT] == [48 | 32 << 32, 16 | 32 << 32]
        assert got[Format.MARGIN] == [32, (-32 & m32)]

    _run(bench)


@pytest.mark.slow
def test_count_and_worker_major_reads_take_stages_more():
    """Contract 4.3: with nothing stalling, a G-Binary or G-Ternary read of
    any layout and operand takes exactly STAGES cycles more than a BYPASS
    read, and a BYPASS read of any of them none more (``make latency``'s
    bench, STAGES 3)."""
    reads = {}
    for layout, operand, total, threshold in SHAPES:
        for mode in (Mode.BYPASS, Mode.GBINARY, Mode.GTERNARY):
            reads[(mode, layout, operand)] = cfg_encode(
                mode, Format.SIGN, GateKind.MARGIN, threshold=threshold, layout=layout,
                operand=operand, total=total)
    res = measure(reads=reads, **{**SMALL, "stages": 3})
    bypass = res["BYPASS read -> DRS"]
    assert res["G-Binary read -> DRS"] == bypass + 3
    for (mode, layout, operand), cycles in ((k, v) for k, v in res.items() if k in reads):
        assert cycles == bypass + (0 if mode == Mode.BYPASS else 3), (mode, layout, operand)


def test_control_write_bound_counts_from_the_accept_edge():
    """Contract 4.3: BVALID rises at most control_write_bound (12) edges
    after the edge at which the slave takes the later of the address and
    the data.  With a request accepted every cycle when the write arrives,
    the request pipeline is idle as late as it can be and the bound is met
    exactly (a MemInv offered every cycle, one accepted at the edge after
    the write's): 12 edges, so 13 cycles from the one in which the handshake's
    VALID and READY are high to the first with BVALID high.  With nothing
    in flight, fewer.  A write taken while the previous response is still
    pending counts from the edge at which that response is taken."""
    params = TopParams(**SMALL)
    bound = control_write_bound(idle_after(params))
    assert bound == 12
    offset = RegisterMap(params)["DEFAULT_CFG"].offset
    figures = {}

    async def bench(t):
        await t.steps(5)
        bresp, a, b = await t.write(offset, cfg_encode(Mode.GBINARY))
        assert bresp == OKAY
        figures["idle"] = b - a
        # (MemInv: answered by the top itself, so admitted every cycle)
        t.flood = ReqOpcode.MEM_INV
        await t.steps(60)
        first = len(t.lite_log)
        bresp, a, b = await t.write(offset, cfg_encode(Mode.BYPASS))
        assert bresp == OKAY
        figures["flood"] = b - a
        # the checker's count: from the cycle of the later handshake to the
        # first cycle with BVALID high
        log = t.lite_log[first:]
        later = max(next(c for c, aw, _, _ in log if aw), next(c for c, _, w, _ in log if w))
        figures["flood, cycles"] = next(c for c, _, _, bv in log if bv) - later
        # a request accepted at the edge after the write's (the last the
        # pipeline admits before it holds), none then until BVALID
        assert a + 1 in t.accepted
        assert not [e for e in t.accepted if a + 1 < e <= b]
        t.flood = None
        await t.steps(60)
        # a first write whose response waits for BREADY, and a second taken
        # meanwhile: the second's count starts at the edge the first's B is taken
        ctx, lite = t.ctx, t.dut.s_axil
        ctx.set(lite.bready, 0)
        for value in (cfg_encode(Mode.IDENTITY), cfg_encode(Mode.GTERNARY)):
            ctx.set(lite.awaddr, offset), ctx.set(lite.wdata, value), ctx.set(lite.wstrb, 0xF)
            ctx.set(lite.awvalid, 1), ctx.set(lite.wvalid, 1)
            while ctx.get(lite.awvalid) or ctx.get(lite.wvalid):
                aw = ctx.get(lite.awready)
                w = ctx.get(lite.wready)
                await t.step()
                if aw:
                    ctx.set(lite.awvalid, 0)
                if w:
                    ctx.set(lite.wvalid, 0)
            while not ctx.get(lite.bvalid):
                await t.step()
        await t.steps(20)
        assert ctx.get(lite.bvalid) and ctx.get(lite.bresp) == OKAY
        ctx.set(lite.bready, 1)
        await t.step()
        taken = t.edge
        ctx.set(lite.bready, 0)
        while not ctx.get(lite.bvalid):
            await t.step()
        figures["pending"] = t.edge - taken
        assert ctx.get(lite.bresp) == OKAY
        ctx.set(lite.bready, 1)
        await t.step()
        assert not ctx.get(lite.bvalid)

    _run(bench)
    assert figures["flood"] == bound, figures
    assert figures["flood, cycles"] == bound + 1 == 13, figures
    assert figures["idle"] < bound, figures
    assert figures["pending"] == figures["idle"], figures
