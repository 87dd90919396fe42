"""Plumbing of the top's conformance benches (contract section 4), written
from the contract only.

Parameters: ``line_bits``, ``workers``, ``stages``, ``regions``,
``max_outstanding``, ``seed``, ``random_requests`` and ``hierarchy`` of the
runner's ``params`` (``toolchain.bench_params``), read into :data:`run` when
each test starts (:data:`conformance_test`).

* backing memory: cocotbext-axi ``AxiRam`` on ``m_axi_`` (sparse, with
  per-line read/write error injection answering SLVERR), :class:`ConfRam`;
* control port: ``AxiLiteMaster`` on ``s_axil_`` (reads) and raw channel
  sends through it for writes with an explicit WSTRB;
* CXL channels: one hand-written cycle loop of :class:`TopConformanceBench`
  drives M2S Req / RwD after each falling edge and samples every handshake
  (CXL and AXI) in the read-only phase before the next rising edge, so each
  beat gets its edge number;
* :class:`CsrModel`, the bench's own copy of the configuration registers,
  and the checks every section repeats (a response's channel and opcode,
  STATUS, COUNTER 5).
"""

import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiResp
from cocotbext.axi.axi_ram import AxiRamRead, AxiRamWrite
from cocotbext.axi.memory import Memory

from neuron_fabric.sim.conformance.common import line_ref, spec_test
from neuron_fabric.sim.conformance.top_contract import (AMASK, CFG_DEFAULT_RESET, CFG_RW_MASK, CNT_ERRORS,
                                                        CNT_HI, CNT_LO, DEFAULT_CFG, DRS_MEMDATA, NDR_CMP,
                                                        R_BASE_HI, R_BASE_LO, R_CFG, R_LIMIT_HI,
                                                        R_LIMIT_LO, REQ_MEMRD, RWD_MEMWR, ST_BAD_CSR, STATUS,
                                                        cfg_fields)


class RunParams:
    """This run's parameters and what follows from them (contract section 1),
    under the contract's names."""

    LINE_BITS = W = STAGES = REGIONS = MAX_OUT = SEED = RANDOM_REQUESTS = HIERARCHY = None
    LB = E = LMASK = ALIGN = None

    def configure(self, params):
        """Take the runner's ``params`` (defaults: a small top)."""
        self.LINE_BITS, self.W = params.get("line_bits", 64), params.get("workers", 4)
        self.STAGES, self.REGIONS = params.get("stages", 2), params.get("regions", 3)
        self.MAX_OUT, self.SEED = params.get("max_outstanding", 8), params.get("seed", 1)
        self.RANDOM_REQUESTS = params.get("random_requests", 400)
        # contract section 5: whether the build implements the hierarchy
        # extension (without it, its CFG values are rejected)
        self.HIERARCHY = params.get("hierarchy", False)
        self.LB = self.LINE_BITS // 8
        self.E = self.LINE_BITS // self.W
        self.LMASK = (1 << self.LINE_BITS) - 1
        self.ALIGN = AMASK & ~(self.LB - 1)


#: The run's parameters, set when each test starts.
run = RunParams()

#: ``cocotb.test`` of a conformance test of the top: :data:`run` set first.
conformance_test = spec_test(run.configure)


class ConfRam(Memory):
    """AxiRam with per-line SLVERR injection and a log of the AXI writes."""

    def __init__(self, bus, clock, reset):
        super().__init__(2 ** 52)
        self.bad_read = set()
        self.bad_write = set()
        self.write_log = []
        outer = self

        class _W(AxiRamWrite):
            async def _write(self, address, data):
                if (address & run.ALIGN) in outer.bad_write:
                    raise IOError("injected write error")
                outer.write_log.append((address, bytes(data)))
                self.write(address % self.size, data)

        class _R(AxiRamRead):
            async def _read(self, address, length):
                if (address & run.ALIGN) in outer.bad_read:
                    raise IOError("injected read error")
                return self.read(address % self.size, length)

        self.write_if = _W(bus.write, clock, reset, True, mem=self.mem)
        self.read_if = _R(bus.read, clock, reset, True, mem=self.mem)

    def set_pause(self, rng, p):
        def gen():
            while True:
                yield rng.random() < p
        for ch in (self.write_if.aw_channel, self.write_if.w_channel, self.write_if.b_channel,
                   self.read_if.ar_channel, self.read_if.r_channel):
            ch.set_pause_generator(gen() if p > 0 else None)

    def line(self, addr):
        return int.from_bytes(self.read(addr & run.ALIGN, run.LB), "little")

    def set_line(self, addr, value):
        self.write(addr & run.ALIGN, (value & run.LMASK).to_bytes(run.LB, "little"))


class TopConformanceBench:
    """The top under test: clock, memory, control port and the CXL cycle loop."""

    def __init__(self, dut, seed):
        self.dut = dut
        self.rng = random.Random(seed)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.ram = ConfRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.edge = 0
        self.req_q, self.rwd_q = deque(), deque()
        self.req_cur = self.rwd_cur = None
        self.req_source = self.rwd_source = None  # optional generators (random test)
        self.p_gap = 0.0
        self.p_drs_ready = self.p_ndr_ready = 1.0
        self.req_acc, self.rwd_acc = [], []   # (edge, item)
        self.drs, self.ndr = [], []           # dicts
        self.ar, self.aw, self.wbeats, self.b, self.r = [], [], [], [], []
        self.devload_log = []                 # (edge, drs_devload, ndr_devload)
        self.axil_b_edges = []
        self.on_resp = None
        self._tag = self.rng.randrange(1 << 16)

    def tag(self):
        self._tag = (self._tag + 1) & 0xFFFF
        return self._tag

    # -------------------------------------------------------------- cycles --
    async def _loop(self):
        d = self.dut
        while True:
            await FallingEdge(d.clk)
            if self.req_cur is None:
                if self.req_q and "gate" in self.req_q[0]:
                    if self.req_q[0]["gate"]():
                        self.req_cur = self.req_q.popleft()
                elif self.req_q and self.rng.random() >= self.p_gap:
                    self.req_cur = self.req_q.popleft()
                elif self.req_source is not None:
                    self.req_cur = self.req_source()
            if self.rwd_cur is None:
                if self.rwd_q and self.rng.random() >= self.p_gap:
                    self.rwd_cur = self.rwd_q.popleft()
                elif self.rwd_source is not None:
                    self.rwd_cur = self.rwd_source()
            q = self.req_cur
            d.m2s_req_valid.value = 1 if q else 0
            if q:
                d.m2s_req_opcode.value = q["op"]
                d.m2s_req_addr.value = q["addr"]
                d.m2s_req_tag.value = q["tag"]
            q = self.rwd_cur
            d.m2s_rwd_valid.value = 1 if q else 0
            if q:
                d.m2s_rwd_opcode.value = q["op"]
                d.m2s_rwd_addr.value = q["addr"]
                d.m2s_rwd_tag.value = q["tag"]
                d.m2s_rwd_data.value = q["data"]
                d.m2s_rwd_be.value = q["be"]
                d.m2s_rwd_poison.value = q["poison"]
            drs_ready = 1 if self.rng.random() < self.p_drs_ready else 0
            ndr_ready = 1 if self.rng.random() < self.p_ndr_ready else 0
            d.s2m_drs_ready.value = drs_ready
            d.s2m_ndr_ready.value = ndr_ready
            await ReadOnly()
            self.edge += 1
            e = self.edge
            if self.req_cur is not None and int(d.m2s_req_ready.value):
                self.req_acc.append((e, self.req_cur))
                self.req_cur["edge"] = e
                self.req_cur = None
            if self.rwd_cur is not None and int(d.m2s_rwd_ready.value):
                self.rwd_acc.append((e, self.rwd_cur))
                self.rwd_cur["edge"] = e
                self.rwd_cur = None
            self.devload_log.append((e, d.s2m_drs_devload.value.to_unsigned(),
                                     d.s2m_ndr_devload.value.to_unsigned()))
            if drs_ready and int(d.s2m_drs_valid.value):
                rsp = dict(ch="drs", edge=e, op=d.s2m_drs_opcode.value.to_unsigned(),
                           tag=d.s2m_drs_tag.value.to_unsigned(),
                           data=d.s2m_drs_data.value.to_unsigned(),
                           poison=int(d.s2m_drs_poison.value))
                self.drs.append(rsp)
                if self.on_resp:
                    self.on_resp(rsp)
            if ndr_ready and int(d.s2m_ndr_valid.value):
                rsp = dict(ch="ndr", edge=e, op=d.s2m_ndr_opcode.value.to_unsigned(),
                           tag=d.s2m_ndr_tag.value.to_unsigned())
                self.ndr.append(rsp)
                if self.on_resp:
                    self.on_resp(rsp)
            if int(d.s_axil_bvalid.value) and int(d.s_axil_bready.value):
                self.axil_b_edges.append(e)
            if int(d.m_axi_arvalid.value) and int(d.m_axi_arready.value):
                self.ar.append(dict(edge=e, addr=d.m_axi_araddr.value.to_unsigned(),
                                    len=d.m_axi_arlen.value.to_unsigned(),
                                    size=d.m_axi_arsize.value.to_unsigned()))
            if int(d.m_axi_awvalid.value) and int(d.m_axi_awready.value):
                self.aw.append(dict(edge=e, addr=d.m_axi_awaddr.value.to_unsigned(),
                                    len=d.m_axi_awlen.value.to_unsigned(),
                                    size=d.m_axi_awsize.value.to_unsigned()))
            if int(d.m_axi_wvalid.value) and int(d.m_axi_wready.value):
                self.wbeats.append(dict(edge=e, strb=d.m_axi_wstrb.value.to_unsigned()))
            if int(d.m_axi_bvalid.value) and int(d.m_axi_bready.value):
                self.b.append(dict(edge=e, resp=d.m_axi_bresp.value.to_unsigned()))
            if int(d.m_axi_rvalid.value) and int(d.m_axi_rready.value):
                self.r.append(dict(edge=e, resp=d.m_axi_rresp.value.to_unsigned()))

    async def start(self):
        d = self.dut
        for s in ("m2s_req_valid", "m2s_rwd_valid", "m2s_req_opcode", "m2s_req_addr",
                  "m2s_req_tag", "m2s_rwd_opcode", "m2s_rwd_addr", "m2s_rwd_tag",
                  "m2s_rwd_data", "m2s_rwd_be", "m2s_rwd_poison", "s2m_drs_ready",
                  "s2m_ndr_ready"):
            getattr(d, s).value = 0
        d.rst.value = 1
        for _ in range(4):
            await RisingEdge(d.clk)
        await FallingEdge(d.clk)
        d.rst.value = 0
        cocotb.start_soon(self._loop())
        for _ in range(3):
            await RisingEdge(d.clk)

    async def cycles(self, n):
        for _ in range(n):
            await RisingEdge(self.dut.clk)

    # ----------------------------------------------------------------- CSR --
    async def rd(self, addr):
        r = await self.axil.read(addr, 4)
        return int.from_bytes(r.data, "little"), int(r.resp)

    async def wr(self, addr, value, strb=0xF):
        """Raw AXI4-Lite write with explicit WSTRB; returns BRESP."""
        wi = self.axil.write_if
        aw = wi.aw_channel._transaction_obj()
        aw.awaddr = addr
        aw.awprot = 0
        w = wi.w_channel._transaction_obj()
        w.wdata = value & 0xFFFFFFFF
        w.wstrb = strb
        await wi.aw_channel.send(aw)
        await wi.w_channel.send(w)
        b = await wi.b_channel.recv()
        return int(b.bresp)

    async def wr_ok(self, addr, value):
        resp = await self.wr(addr, value)
        assert resp == AxiResp.OKAY, f"write {value:#x} to {addr:#05x}: BRESP {resp}"

    async def counter(self, j):
        lo, r1 = await self.rd(CNT_LO(j))
        hi, r2 = await self.rd(CNT_HI(j))
        assert r1 == r2 == 0, f"counter {j} read resp {r1}/{r2}"
        return lo | hi << 32

    async def counters(self):
        return [await self.counter(j) for j in range(6)]

    async def status(self):
        v, r = await self.rd(STATUS)
        assert r == 0
        return v

    async def clear_status(self):
        await self.wr_ok(STATUS, 0x1F)
        assert await self.status() == 0, "STATUS not cleared by writing ones"

    # ---------------------------------------------------------------- CXL --
    def req(self, op, addr, tag=None, gate=None):
        item = dict(kind="req", op=op, addr=addr & AMASK, tag=self.tag() if tag is None else tag)
        if gate is not None:
            item["gate"] = gate
        self.req_q.append(item)
        return item

    def rwd(self, op, addr, data, be=None, poison=0, tag=None):
        item = dict(kind="rwd", op=op, addr=addr & AMASK, data=data & run.LMASK,
                    be=((1 << run.LB) - 1) if be is None else be, poison=poison,
                    tag=self.tag() if tag is None else tag)
        self.rwd_q.append(item)
        return item

    def responses(self, tag):
        return [r for r in self.drs + self.ndr if r["tag"] == tag]

    async def wait_resp(self, items, limit=3000):
        for _ in range(limit):
            if all(self.responses(i["tag"]) for i in items):
                return [self.responses(i["tag"])[0] for i in items]
            await RisingEdge(self.dut.clk)
        missing = [f"{i['kind']} op {i['op']:#x} tag {i['tag']:#x}" for i in items
                   if not self.responses(i["tag"])]
        raise AssertionError(f"no response after {limit} cycles for: {missing}")

    async def quiet(self, n=20):
        """Let everything drain: no new request, responses keep flowing."""
        for _ in range(n):
            await RisingEdge(self.dut.clk)

    async def read_line(self, addr, op=REQ_MEMRD):
        item = self.req(op, addr)
        (rsp,) = await self.wait_resp([item])
        return item, rsp

    async def write_line(self, addr, data, be=None, op=RWD_MEMWR, poison=0):
        item = self.rwd(op, addr, data, be=be, poison=poison)
        (rsp,) = await self.wait_resp([item])
        return item, rsp


class CsrModel:
    """The bench's own copy of the configuration registers (contract 4.3/4.4)."""

    def __init__(self):
        self.default = CFG_DEFAULT_RESET
        self.regions = [[0, 0, 0] for _ in range(run.REGIONS)]  # cfg, base, limit

    async def set_default(self, top, v):
        await top.wr_ok(DEFAULT_CFG, v)
        self.default = v & CFG_RW_MASK

    async def set_region(self, top, r, v, base, limit):
        await top.wr_ok(R_CFG(r), v & ~(1 << 31))  # disabled while the window moves
        await top.wr_ok(R_BASE_LO(r), base & 0xFFFFFFFF)
        await top.wr_ok(R_BASE_HI(r), (base >> 32) & 0xFFFFF)
        await top.wr_ok(R_LIMIT_LO(r), limit & 0xFFFFFFFF)
        await top.wr_ok(R_LIMIT_HI(r), (limit >> 32) & 0xFFFFF)
        await top.wr_ok(R_CFG(r), v)
        self.regions[r] = [v, base & AMASK, limit & AMASK]

    def select(self, addr):
        a = addr & run.ALIGN
        for v, base, limit in self.regions:
            if v >> 31 and (base & run.ALIGN) <= a < (limit & run.ALIGN):
                return v, base & run.ALIGN
        return self.default, 0

    def expect(self, addr, data):
        v, base = self.select(addr)
        f = cfg_fields(v)
        line_index = ((addr & run.ALIGN) - base) // run.LB
        phase = (line_index * run.E) % f["period"]
        return line_ref(data, run.LINE_BITS, run.W, f["mode"], f["fmt"], f["kind"], f["period"],
                        f["keep"], f["thresh"], phase), f["mode"]


async def setup(dut, k):
    top = TopConformanceBench(dut, run.SEED * 100 + k)
    await top.start()
    return top


def rand_line(rng):
    return rng.getrandbits(run.LINE_BITS)


# -- the checks the sections repeat ------------------------------------------------
# Each appends what it finds to ``errs``, so that a test reports every
# departure at once.

def is_ndr_cmp(rsp):
    """An NDR Cmp (contract 4.2)."""
    return rsp["ch"] == "ndr" and rsp["op"] == NDR_CMP


def is_memdata(rsp, poison=0):
    """A DRS MemData whose poison bit is ``poison`` (contract 4.2)."""
    return rsp["ch"] == "drs" and rsp["op"] == DRS_MEMDATA and rsp["poison"] == poison


def expect_ndr_cmp(errs, rsp, what):
    if not is_ndr_cmp(rsp):
        errs.append(f"{what}: response {rsp}, expected NDR Cmp")


async def expect_status(top, errs, want, what, *, clear=True):
    """STATUS must read ``want``; then (``clear``) clear it by writing ones."""
    st = await top.status()
    if st != want:
        errs.append(f"{what}: STATUS {st:#x}, expected {want:#x}")
    if clear:
        await top.clear_status()


async def expect_error_count(top, errs, n, what):
    """COUNTER 5 must have counted ``n`` error events (contract 4.4)."""
    cnt = await top.counter(CNT_ERRORS)
    if cnt != n:
        errs.append(f"COUNTER 5 = {cnt} after {n} {what}")


def report(errs, most=None):
    """The test's verdict: no departure found (the first ``most`` listed)."""
    assert not errs, "\n".join(errs[:most])


async def expect_refused(top, errs, addr, value, what, *, keeps=None, strb=0xF):
    """A control write contract 4.4 refuses: answered SLVERR, the register
    still reads ``keeps`` (when given), STATUS.BAD_CSR set; then STATUS is
    cleared."""
    resp = await top.wr(addr, value, strb)
    got = None if keeps is None else (await top.rd(addr))[0]
    st = await top.status()
    if resp != AxiResp.SLVERR:
        errs.append(f"{what}: BRESP {resp}, expected SLVERR")
    if keeps is not None and got != keeps:
        errs.append(f"{what}: register {got:#010x}, expected old {keeps:#010x}")
    if not st & ST_BAD_CSR:
        errs.append(f"{what}: STATUS {st:#x} without BAD_CSR")
    await top.clear_status()


def merge_bytes(old, data, be):
    """Line ``old`` with the bytes whose ``be`` bit is 1 taken from ``data``
    (a MemWrPtl, contract 4.2)."""
    out = 0
    for i in range(run.LB):
        out |= (data if (be >> i) & 1 else old) & (0xFF << (8 * i))
    return out
