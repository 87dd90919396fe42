"""Conformance bench of the ``neuron_fabric`` top against contract section 4.

Written from the contract only.  Parameters: ``line_bits``, ``workers``,
``stages``, ``regions``, ``max_outstanding``, ``seed``, ``random_requests``
of the runner's ``params`` (``toolchain.bench_params``), set by
``_configure`` when each test starts.

* backing memory: cocotbext-axi ``AxiRam`` on ``m_axi_`` (sparse, with
  per-line read/write error injection answering SLVERR);
* control port: ``AxiLiteMaster`` on ``s_axil_`` (reads) and raw channel
  sends through it for writes with an explicit WSTRB;
* CXL channels: one hand-written cycle loop drives M2S Req / RwD after each
  falling edge and samples every handshake (CXL and AXI) in the read-only
  phase before the next rising edge, so each beat gets its edge number.
"""

import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiResp
from cocotbext.axi.axi_ram import AxiRamRead, AxiRamWrite
from cocotbext.axi.memory import Memory

from neuron_fabric.sim.conformance_common import line_ref, port_mismatches, spec_test

AMASK = (1 << 52) - 1
# The run's parameters and what follows from them: set by _configure.
LINE_BITS = W = STAGES = REGIONS = MAX_OUT = SEED = RANDOM_REQUESTS = HIERARCHY = None
LB = E = LMASK = ALIGN = None


def _configure(params):
    global LINE_BITS, W, STAGES, REGIONS, MAX_OUT, SEED, RANDOM_REQUESTS, LB, E, LMASK, ALIGN
    global HIERARCHY
    LINE_BITS, W = params.get("line_bits", 64), params.get("workers", 4)
    STAGES, REGIONS = params.get("stages", 2), params.get("regions", 3)
    MAX_OUT, SEED = params.get("max_outstanding", 8), params.get("seed", 1)
    RANDOM_REQUESTS = params.get("random_requests", 400)
    # contract section 5: whether the build implements the hierarchy
    # extension (without it, its CFG values are rejected)
    HIERARCHY = params.get("hierarchy", False)
    LB = LINE_BITS // 8
    E = LINE_BITS // W
    LMASK = (1 << LINE_BITS) - 1
    ALIGN = AMASK & ~(LB - 1)


conformance_test = spec_test(_configure)

# contract 4.4 register map (deliberate clean-room copy: written from the contract,
# independent of contract/regmap.py; do not share)
ID, VERSION, CAPS0, CAPS1, DEFAULT_CFG, STATUS = 0x000, 0x004, 0x008, 0x00C, 0x010, 0x014
def CNT_LO(j): return 0x080 + 8 * j
def CNT_HI(j): return 0x084 + 8 * j
def R_CFG(r): return 0x100 + 0x20 * r
def R_BASE_LO(r): return 0x104 + 0x20 * r
def R_BASE_HI(r): return 0x108 + 0x20 * r
def R_LIMIT_LO(r): return 0x10C + 0x20 * r
def R_LIMIT_HI(r): return 0x110 + 0x20 * r

ST_UNSUPPORTED, ST_RD_ERR, ST_WR_ERR, ST_POISON_DROP, ST_BAD_CSR = 1, 2, 4, 8, 16
CNT_BYPASS, CNT_IDENTITY, CNT_GBINARY, CNT_GTERNARY, CNT_WRITES, CNT_ERRORS = range(6)

# contract 4.2 opcodes (deliberate clean-room copy, independent of contract/facts.py)
REQ_MEMINV, REQ_MEMRD, REQ_MEMRDDATA, REQ_MEMSPECRD, REQ_MEMINVNT = 0b0000, 0b0001, 0b0010, 0b1000, 0b1001
RWD_MEMWR, RWD_MEMWRPTL = 0b0001, 0b0010
DRS_MEMDATA, NDR_CMP = 0b000, 0b000

# contract 4.4 CFG word and its validity rule (deliberate clean-room copy,
# independent of contract/regmap.py's cfg_encode / cfg_check)
CFG_DEFAULT_RESET = (3 << 8) | (2 << 12)  # BYPASS, COUNT, PATTERN, P=3, K=2, T=0


def cfg(mode=0, fmt=0, kind=0, period=3, keep=2, thresh=0, enable=0, layout=0, operand=0,
        total=0):
    return (mode | fmt << 2 | kind << 4 | layout << 5 | operand << 6 | period << 8
            | keep << 12 | thresh << 16 | total << 21 | enable << 31)


def cfg_fields(v):
    return dict(mode=v & 3, fmt=(v >> 2) & 3, kind=(v >> 4) & 1, layout=(v >> 5) & 1,
                operand=(v >> 6) & 3, period=(v >> 8) & 15, keep=(v >> 12) & 15,
                thresh=(v >> 16) & 31, total=(v >> 21) & 1023)


def cfg_valid(v):
    f = cfg_fields(v)
    if f["fmt"] == 3 or f["period"] == 0 or f["keep"] > f["period"] or f["operand"] == 3:
        return False
    if not HIERARCHY and (f["layout"] or f["operand"]):
        return False
    if f["operand"] == 0:                   # SIGNS
        return f["total"] == 0 and f["thresh"] <= W
    limit = {1: 8 * 15, 2: 4 * 255}[f["operand"]]   # N * (2^b - 1)
    return 1 <= f["total"] <= limit and f["thresh"] <= f["total"]


# mode, format, kind, layout, operand, P, K, T, total (contract v2.1: every
# CFG bit but 31 is a field)
CFG_RW_MASK = 0x7FFFFFFF


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
                if (address & ALIGN) in outer.bad_write:
                    raise IOError("injected write error")
                outer.write_log.append((address, bytes(data)))
                self.write(address % self.size, data)

        class _R(AxiRamRead):
            async def _read(self, address, length):
                if (address & ALIGN) in outer.bad_read:
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
        return int.from_bytes(self.read(addr & ALIGN, LB), "little")

    def set_line(self, addr, value):
        self.write(addr & ALIGN, (value & LMASK).to_bytes(LB, "little"))


class Top:
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
        item = dict(kind="rwd", op=op, addr=addr & AMASK, data=data & LMASK,
                    be=((1 << LB) - 1) if be is None else be, poison=poison,
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
        self.regions = [[0, 0, 0] for _ in range(REGIONS)]  # cfg, base, limit

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
        a = addr & ALIGN
        for v, base, limit in self.regions:
            if v >> 31 and (base & ALIGN) <= a < (limit & ALIGN):
                return v, base & ALIGN
        return self.default, 0

    def expect(self, addr, data):
        v, base = self.select(addr)
        f = cfg_fields(v)
        line_index = ((addr & ALIGN) - base) // LB
        phase = (line_index * E) % f["period"]
        return line_ref(data, LINE_BITS, W, f["mode"], f["fmt"], f["kind"], f["period"],
                        f["keep"], f["thresh"], phase), f["mode"]


async def setup(dut, k):
    top = Top(dut, SEED * 100 + k)
    await top.start()
    return top


def rand_line(rng):
    return rng.getrandbits(LINE_BITS)


# ================================================================== tests ==

def spec_ports():
    """contract section 4.1's ports and widths for this run's parameters."""
    return {
        "clk": 1, "rst": 1,
        "m2s_req_valid": 1, "m2s_req_ready": 1, "m2s_req_opcode": 4, "m2s_req_addr": 52,
        "m2s_req_tag": 16,
        "m2s_rwd_valid": 1, "m2s_rwd_ready": 1, "m2s_rwd_opcode": 4, "m2s_rwd_addr": 52,
        "m2s_rwd_tag": 16, "m2s_rwd_data": LINE_BITS, "m2s_rwd_be": LB, "m2s_rwd_poison": 1,
        "s2m_drs_valid": 1, "s2m_drs_ready": 1, "s2m_drs_opcode": 3, "s2m_drs_tag": 16,
        "s2m_drs_data": LINE_BITS, "s2m_drs_poison": 1, "s2m_drs_devload": 2,
        "s2m_ndr_valid": 1, "s2m_ndr_ready": 1, "s2m_ndr_opcode": 3, "s2m_ndr_tag": 16,
        "s2m_ndr_devload": 2,
        "m_axi_awaddr": 52, "m_axi_awlen": 8, "m_axi_awsize": 3, "m_axi_awburst": 2,
        "m_axi_awvalid": 1, "m_axi_awready": 1, "m_axi_wdata": LINE_BITS, "m_axi_wstrb": LB,
        "m_axi_wlast": 1, "m_axi_wvalid": 1, "m_axi_wready": 1, "m_axi_bresp": 2,
        "m_axi_bvalid": 1, "m_axi_bready": 1, "m_axi_araddr": 52, "m_axi_arlen": 8,
        "m_axi_arsize": 3, "m_axi_arburst": 2, "m_axi_arvalid": 1, "m_axi_arready": 1,
        "m_axi_rdata": LINE_BITS, "m_axi_rresp": 2, "m_axi_rlast": 1, "m_axi_rvalid": 1,
        "m_axi_rready": 1,
        "s_axil_awaddr": 12, "s_axil_awprot": 3, "s_axil_awvalid": 1, "s_axil_awready": 1,
        "s_axil_wdata": 32, "s_axil_wstrb": 4, "s_axil_wvalid": 1, "s_axil_wready": 1,
        "s_axil_bresp": 2, "s_axil_bvalid": 1, "s_axil_bready": 1, "s_axil_araddr": 12,
        "s_axil_arprot": 3, "s_axil_arvalid": 1, "s_axil_arready": 1, "s_axil_rdata": 32,
        "s_axil_rresp": 2, "s_axil_rvalid": 1, "s_axil_rready": 1,
    }


@conformance_test
async def ports_and_widths(dut):
    bad = port_mismatches(dut, spec_ports())
    for name in ("m_axi_awid", "m_axi_bid", "m_axi_arid", "m_axi_rid"):
        if getattr(dut, name, None) is None:
            bad.append(f"{name}: missing")
    assert not bad, "; ".join(bad)


@conformance_test
async def csr_reset_values(dut):
    top = await setup(dut, 1)
    errs = []

    async def expect(addr, value, what, mask=0xFFFFFFFF):
        v, r = await top.rd(addr)
        if r != 0:
            errs.append(f"{what} ({addr:#05x}): RRESP {r}")
        elif (v & mask) != value:
            errs.append(f"{what} ({addr:#05x}): {v:#010x}, expected {value:#010x} (mask {mask:#x})")

    await expect(ID, 0x4E464142, "ID")
    v, r = await top.rd(VERSION)
    if r != 0:
        errs.append(f"VERSION: RRESP {r}")
    await expect(CAPS0, LINE_BITS | W << 16 | STAGES << 24, "CAPS0")
    await expect(CAPS1, REGIONS | MAX_OUT << 8, "CAPS1")
    await expect(DEFAULT_CFG, CFG_DEFAULT_RESET, "DEFAULT_CFG")
    await expect(STATUS, 0, "STATUS")
    for j in range(6):
        await expect(CNT_LO(j), 0, f"COUNTER {j} LO")
        await expect(CNT_HI(j), 0, f"COUNTER {j} HI")
    for r in range(REGIONS):
        await expect(R_CFG(r), 0, f"REGION {r} CFG enable", mask=1 << 31)
        for f, name in ((R_BASE_LO, "BASE_LO"), (R_BASE_HI, "BASE_HI"),
                        (R_LIMIT_LO, "LIMIT_LO"), (R_LIMIT_HI, "LIMIT_HI")):
            await expect(f(r), 0, f"REGION {r} {name}")
    assert not errs, "\n".join(errs)


@conformance_test
async def csr_rw_wstrb_reserved(dut):
    top = await setup(dut, 2)
    errs = []
    # full-word writes, reserved bits and the DEFAULT_CFG enable bit read 0
    v = cfg(mode=3, fmt=1, kind=1, period=9, keep=4, thresh=W)
    # contract v2.1: bits [7:5] and [30:21] became fields (section 5); no
    # CFG bit below the enable bit is reserved any more
    junk = 0
    for addr, val, exp in ((DEFAULT_CFG, v | junk | 1 << 31, v),
                           (DEFAULT_CFG, cfg(period=1, keep=1), cfg(period=1, keep=1)),
                           (R_CFG(0), v | junk | 1 << 31, v | 1 << 31),
                           (R_CFG(REGIONS - 1), v | junk, v),
                           (R_BASE_LO(0), 0x12345678 & ALIGN, 0x12345678 & ALIGN),
                           (R_BASE_HI(0), 0xFFFFFFFF, 0x000FFFFF),
                           (R_LIMIT_LO(REGIONS - 1), 0xFFFFFFFF & ALIGN, 0xFFFFFFFF & ALIGN),
                           (R_LIMIT_HI(REGIONS - 1), 0xABCDE123, 0x000DE123)):
        resp = await top.wr(addr, val)
        got, r = await top.rd(addr)
        if resp != 0:
            errs.append(f"write {val:#x} to {addr:#05x}: BRESP {resp}")
        if got != exp:
            errs.append(f"{addr:#05x}: wrote {val:#010x}, read {got:#010x}, expected {exp:#010x}")
    # STATUS reserved bits read 0 (nothing set yet)
    st = await top.status()
    if st != 0:
        errs.append(f"STATUS {st:#x} after valid writes")
    # WSTRB per byte on DEFAULT_CFG: start from a known value
    await top.wr_ok(DEFAULT_CFG, cfg(mode=1, fmt=0, kind=0, period=3, keep=2, thresh=1))
    base = cfg(mode=1, fmt=0, kind=0, period=3, keep=2, thresh=1)
    # byte 1 only (P=5, K=3): garbage in the other bytes of WDATA is not used
    resp = await top.wr(DEFAULT_CFG, 0xFFFF35FF, strb=0b0010)
    exp = (base & ~0xFF00) | 0x3500
    got, _ = await top.rd(DEFAULT_CFG)
    if resp != 0 or got != exp:
        errs.append(f"WSTRB 0010: BRESP {resp}, read {got:#010x}, expected {exp:#010x}")
    # byte 2 only (T = W) while byte 0 in WDATA would be format 3
    resp = await top.wr(DEFAULT_CFG, 0xFF00FF0F | (W << 16), strb=0b0100)
    exp = (exp & ~0xFF0000) | (W << 16)
    got, _ = await top.rd(DEFAULT_CFG)
    if resp != 0 or got != exp:
        errs.append(f"WSTRB 0100: BRESP {resp}, read {got:#010x}, expected {exp:#010x}")
    # byte 0 only: mode 3, format 2, gate kind 1
    resp = await top.wr(DEFAULT_CFG, 0x00000000 | 0x1B, strb=0b0001)
    exp = (exp & ~0xFF) | 0x1B
    got, _ = await top.rd(DEFAULT_CFG)
    if resp != 0 or got != exp:
        errs.append(f"WSTRB 0001: BRESP {resp}, read {got:#010x}, expected {exp:#010x}")
    # byte 3 only of a region CFG: enable bit
    await top.wr_ok(R_CFG(0), cfg(mode=2))
    resp = await top.wr(R_CFG(0), 0x80000000, strb=0b1000)
    got, _ = await top.rd(R_CFG(0))
    if resp != 0 or got != cfg(mode=2) | 1 << 31:
        errs.append(f"WSTRB 1000 on REGION 0 CFG: BRESP {resp}, read {got:#010x}")
    # WSTRB on BASE_LO: only byte 2 changes
    await top.wr_ok(R_BASE_LO(0), 0x11223340 & ALIGN)
    resp = await top.wr(R_BASE_LO(0), 0xAABBCCDD, strb=0b0100)
    got, _ = await top.rd(R_BASE_LO(0))
    if resp != 0 or got != (0x11BB3340 & ALIGN):
        errs.append(f"WSTRB 0100 on BASE_LO: BRESP {resp}, read {got:#010x}, expected {0x11BB3340 & ALIGN:#010x}")
    # a zero WSTRB changes nothing
    before, _ = await top.rd(DEFAULT_CFG)
    resp = await top.wr(DEFAULT_CFG, 0x0, strb=0)
    got, _ = await top.rd(DEFAULT_CFG)
    if got != before:
        errs.append(f"WSTRB 0000 changed DEFAULT_CFG {before:#x} -> {got:#x}")
    assert await top.status() == 0, "STATUS set by valid writes"
    assert not errs, "\n".join(errs)


@conformance_test
async def csr_bad_cfg_writes(dut):
    top = await setup(dut, 3)
    errs = []
    good = cfg(mode=3, fmt=1, kind=0, period=6, keep=4, thresh=2)
    bad_values = {
        "format 3": cfg(mode=3, fmt=3, period=6, keep=4),
        "P=0": cfg(mode=3, fmt=0, period=0, keep=0),
        "K>P": cfg(mode=3, fmt=0, period=4, keep=5),
        "T>W": cfg(mode=3, fmt=0, kind=1, period=6, keep=4, thresh=W + 1),
        "T=31": cfg(mode=2, fmt=0, kind=1, period=6, keep=4, thresh=31),
        "K=15>P=14": cfg(mode=1, period=14, keep=15),
        # contract section 5 (v2.1)
        "operand 3": cfg(mode=2, operand=3, total=8),
        "SIGNS with total 1": cfg(mode=2, total=1),
    }
    # the limits themselves are fine: K = P, T = W, P = 15 (and with the
    # extension: the largest totals, T = total, a worker-major layout)
    limits = [cfg(period=5, keep=5), cfg(kind=1, thresh=W), cfg(period=15, keep=0)]
    if HIERARCHY:
        bad_values.update({
            "COUNTS4 with total 0": cfg(mode=2, operand=1, total=0),
            "COUNTS4 with total 121": cfg(mode=2, operand=1, total=121),
            "COUNTS8 with total 1021": cfg(mode=2, operand=2, total=1021),
            "COUNTS8 with T > total": cfg(mode=3, kind=1, operand=2, total=5, thresh=6),
            "worker-major SIGNS with T > W": cfg(mode=3, kind=1, layout=1, thresh=W + 1),
        })
        limits += [cfg(mode=2, operand=1, total=120, layout=1),
                   cfg(mode=3, kind=1, operand=2, total=1020, thresh=31),
                   cfg(mode=3, kind=1, operand=2, total=7, thresh=7)]
    else:
        bad_values["layout 1 without hierarchy"] = cfg(mode=2, layout=1)
        bad_values["COUNTS4 without hierarchy"] = cfg(mode=2, operand=1, total=8)
    assert not any(cfg_valid(v) for v in bad_values.values())
    assert all(cfg_valid(v) for v in limits)
    n_bad = 0
    for reg, en in ((DEFAULT_CFG, 0), (R_CFG(0), 1 << 31), (R_CFG(REGIONS - 1), 0)):
        await top.wr_ok(reg, good | en)
        for what, v in bad_values.items():
            resp = await top.wr(reg, v | en)
            n_bad += 1
            got, _ = await top.rd(reg)
            st = await top.status()
            if resp != AxiResp.SLVERR:
                errs.append(f"{reg:#05x} {what}: BRESP {resp}, expected SLVERR")
            if got != good | en:
                errs.append(f"{reg:#05x} {what}: register {got:#010x}, expected old {good | en:#010x}")
            if not st & ST_BAD_CSR:
                errs.append(f"{reg:#05x} {what}: STATUS {st:#x} without BAD_CSR")
            await top.clear_status()
        for v in limits:
            resp = await top.wr(reg, v | en)
            got, _ = await top.rd(reg)
            if resp != 0 or got != v | en:
                errs.append(f"{reg:#05x} valid {v:#x}: BRESP {resp}, read {got:#x}")
        await top.wr_ok(reg, good | en)
        # a byte write checked on the value it would produce: K=5 > P=3 via byte 1
        await top.wr_ok(reg, cfg(period=3, keep=2) | en)
        resp = await top.wr(reg, 0x00005300, strb=0b0010)
        n_bad += 1
        got, _ = await top.rd(reg)
        if resp != AxiResp.SLVERR or got != cfg(period=3, keep=2) | en:
            errs.append(f"{reg:#05x} byte write K=5>P=3: BRESP {resp}, read {got:#x}")
        # format 3 via byte 0 only
        resp = await top.wr(reg, 0x0000000C, strb=0b0001)
        n_bad += 1
        got, _ = await top.rd(reg)
        if resp != AxiResp.SLVERR or got != cfg(period=3, keep=2) | en:
            errs.append(f"{reg:#05x} byte write format 3: BRESP {resp}, read {got:#x}")
        if not (await top.status()) & ST_BAD_CSR:
            errs.append(f"{reg:#05x}: BAD_CSR not set by rejected byte writes")
        await top.clear_status()
    cnt = await top.counter(CNT_ERRORS)
    if cnt != n_bad:
        errs.append(f"COUNTER 5 = {cnt} after {n_bad} rejected CFG writes")
    assert not errs, "\n".join(errs)


@conformance_test
async def csr_ro_and_unmapped(dut):
    top = await setup(dut, 4)
    errs = []
    n_bad = 0
    ro = [ID, VERSION, CAPS0, CAPS1] + [CNT_LO(j) for j in range(6)] + [CNT_HI(j) for j in range(6)]
    for addr in ro:
        before, _ = await top.rd(addr)
        resp = await top.wr(addr, 0xFFFFFFFF)
        n_bad += 1
        after, _ = await top.rd(addr)
        st = await top.status()
        if resp != AxiResp.SLVERR:
            errs.append(f"RO {addr:#05x}: BRESP {resp}, expected SLVERR")
        if after != before and addr not in (CNT_LO(CNT_ERRORS), CNT_HI(CNT_ERRORS)):
            errs.append(f"RO {addr:#05x}: changed {before:#x} -> {after:#x}")
        if not st & ST_BAD_CSR:
            errs.append(f"RO {addr:#05x}: BAD_CSR not set")
        await top.clear_status()
    unmapped = [0x018, 0x01C, 0x040, 0x07C, CNT_LO(6), CNT_HI(6), 0x0FC,
                0x114, 0x118, 0x11C, R_CFG(REGIONS), R_BASE_LO(REGIONS), R_LIMIT_HI(REGIONS),
                0x100 + 0x20 * 16 - 4, 0x400, 0x800, 0xFFC]
    unmapped = sorted({a for a in unmapped if a < 0x1000})
    snapshot = {}
    for addr in [DEFAULT_CFG] + [f(r) for r in range(REGIONS) for f in
                                 (R_CFG, R_BASE_LO, R_BASE_HI, R_LIMIT_LO, R_LIMIT_HI)]:
        snapshot[addr] = (await top.rd(addr))[0]
    for addr in unmapped:
        v, r = await top.rd(addr)
        if r != AxiResp.SLVERR or v != 0:
            errs.append(f"unmapped read {addr:#05x}: RRESP {r}, data {v:#x} (expected SLVERR, 0)")
        resp = await top.wr(addr, 0xFFFFFFFF)
        n_bad += 1
        st = await top.status()
        if resp != AxiResp.SLVERR:
            errs.append(f"unmapped write {addr:#05x}: BRESP {resp}, expected SLVERR")
        if not st & ST_BAD_CSR:
            errs.append(f"unmapped write {addr:#05x}: BAD_CSR not set")
        await top.clear_status()
    for addr, v in snapshot.items():
        now = (await top.rd(addr))[0]
        if now != v:
            errs.append(f"{addr:#05x} changed {v:#x} -> {now:#x} by RO/unmapped writes")
    cnt = await top.counter(CNT_ERRORS)
    if cnt != n_bad:
        errs.append(f"COUNTER 5 = {cnt} after {n_bad} rejected writes")
    assert not errs, "\n".join(errs)


@conformance_test
async def csr_status_rw1c(dut):
    top = await setup(dut, 5)
    errs = []
    # set UNSUPPORTED (bit 0) with an unsupported M2S Req opcode, BAD_CSR with a bad write
    item = top.req(0b0011, 0x40)
    await top.wait_resp([item])
    await top.wr(ID, 0)
    st = await top.status()
    if st != ST_UNSUPPORTED | ST_BAD_CSR:
        errs.append(f"STATUS {st:#x}, expected {ST_UNSUPPORTED | ST_BAD_CSR:#x}")
    # writing zeros keeps bits; writing 1 to a clear bit does not set it
    await top.wr_ok(STATUS, 0)
    if await top.status() != st:
        errs.append("writing 0 to STATUS changed it")
    await top.wr_ok(STATUS, ST_RD_ERR | ST_WR_ERR | ST_POISON_DROP | 0xFFFFFFE0)
    if await top.status() != st:
        errs.append("writing 1 to clear/reserved STATUS bits changed it")
    await top.wr_ok(STATUS, ST_UNSUPPORTED)
    v = await top.status()
    if v != ST_BAD_CSR:
        errs.append(f"after clearing UNSUPPORTED: STATUS {v:#x}, expected {ST_BAD_CSR:#x}")
    # WSTRB 0 on STATUS clears nothing
    await top.wr(STATUS, 0xFF, strb=0)
    if await top.status() != ST_BAD_CSR:
        errs.append("STATUS write with WSTRB 0 cleared a bit")
    await top.wr_ok(STATUS, ST_BAD_CSR)
    v = await top.status()
    if v != 0:
        errs.append(f"after clearing BAD_CSR: STATUS {v:#x}")
    assert not errs, "\n".join(errs)


@conformance_test
async def req_opcodes(dut):
    """Every M2S Req row of contract 4.2, and the AXI read request shape."""
    top = await setup(dut, 6)
    rng = top.rng
    errs = []
    addrs = [0x1000 + LB * k for k in range(8)]
    for a in addrs:
        top.ram.set_line(a, rand_line(rng))
    # MemRd / MemRdData: DRS MemData, same tag, stored bytes (DEFAULT_CFG is BYPASS)
    for op in (REQ_MEMRD, REQ_MEMRDDATA):
        for a in addrs[:4]:
            off = rng.randrange(LB)  # low address bits are ignored
            n_ar = len(top.ar)
            item, rsp = await top.read_line(a + off, op)
            exp = top.ram.line(a)
            if rsp["ch"] != "drs" or rsp["op"] != DRS_MEMDATA or rsp["data"] != exp or rsp["poison"]:
                errs.append(f"op {op:#x} addr {a + off:#x}: response {rsp}, expected DRS MemData "
                            f"data {exp:#x}")
            ars = top.ar[n_ar:]
            if len(ars) != 1 or ars[0]["addr"] != a or ars[0]["len"] != 0 or \
                    (1 << ars[0]["size"]) != LB:
                errs.append(f"op {op:#x} addr {a + off:#x}: AXI AR {ars}, expected one beat at {a:#x}")
    await top.quiet()
    if await top.status() != 0:
        errs.append(f"STATUS {await top.status():#x} after reads")
    # MemInv / MemInvNT: NDR Cmp, memory untouched, no STATUS bit
    for op in (REQ_MEMINV, REQ_MEMINVNT):
        n_aw, n_log = len(top.aw), len(top.ram.write_log)
        item, rsp = await top.read_line(addrs[5], op)
        if rsp["ch"] != "ndr" or rsp["op"] != NDR_CMP:
            errs.append(f"op {op:#x}: response {rsp}, expected NDR Cmp")
        await top.quiet()
        if len(top.aw) != n_aw or len(top.ram.write_log) != n_log:
            errs.append(f"op {op:#x}: memory written")
        if await top.status() != 0:
            errs.append(f"op {op:#x}: STATUS {await top.status():#x}")
    # MemSpecRd: no response required, not counted as a read, no STATUS bit
    before = await top.counters()
    item = top.req(REQ_MEMSPECRD, addrs[6])
    await top.quiet(60)
    if item.get("edge") is None:
        errs.append("MemSpecRd not accepted")
    after = await top.counters()
    if after[:4] != before[:4]:
        errs.append(f"MemSpecRd counted as a read: counters {before[:4]} -> {after[:4]}")
    if len(top.responses(item["tag"])) > 1:
        errs.append("MemSpecRd answered more than once")
    if await top.status() != 0:
        errs.append(f"MemSpecRd: STATUS {await top.status():#x}")
    # anything else: NDR Cmp, memory untouched, UNSUPPORTED
    others = [op for op in range(16) if op not in
              (REQ_MEMINV, REQ_MEMRD, REQ_MEMRDDATA, REQ_MEMSPECRD, REQ_MEMINVNT)]
    for op in others:
        n_aw = len(top.aw)
        item, rsp = await top.read_line(addrs[7], op)
        await top.quiet(10)
        st = await top.status()
        if rsp["ch"] != "ndr" or rsp["op"] != NDR_CMP:
            errs.append(f"unsupported op {op:#x}: response {rsp}, expected NDR Cmp")
        if len(top.responses(item["tag"])) != 1:
            errs.append(f"unsupported op {op:#x}: {len(top.responses(item['tag']))} responses")
        if len(top.aw) != n_aw:
            errs.append(f"unsupported op {op:#x}: memory written")
        if not st & ST_UNSUPPORTED or st & ~ST_UNSUPPORTED:
            errs.append(f"unsupported op {op:#x}: STATUS {st:#x}, expected UNSUPPORTED only")
        await top.clear_status()
    cnt = await top.counters()
    if cnt[CNT_ERRORS] != len(others):
        errs.append(f"COUNTER 5 = {cnt[CNT_ERRORS]} after {len(others)} unsupported requests")
    assert not errs, "\n".join(errs)


@conformance_test
async def rwd_opcodes(dut):
    """Every M2S RwD row of contract 4.2; NDR after B; MemWrPtl byte enables; writes unchanged."""
    top = await setup(dut, 7)
    rng = top.rng
    csr = CsrModel()
    errs = []
    # a low-bit region over the lines written: writes must still be stored unchanged
    await csr.set_region(top, 0, cfg(mode=3, fmt=1, kind=0, period=3, keep=1, enable=1),
                         0x2000, 0x3000)
    addrs = [0x2000 + LB * k for k in range(6)]
    for a in addrs:
        top.ram.set_line(a, rand_line(rng))
    # MemWr: all bytes whatever be
    for k, be in enumerate((0, (1 << LB) - 1, rng.randrange(1 << LB))):
        a = addrs[k]
        data = rand_line(rng)
        nb = len(top.b)
        item, rsp = await top.write_line(a + rng.randrange(LB), data, be=be, op=RWD_MEMWR)
        got = top.ram.line(a)
        if rsp["ch"] != "ndr" or rsp["op"] != NDR_CMP:
            errs.append(f"MemWr: response {rsp}, expected NDR Cmp")
        if got != data:
            errs.append(f"MemWr be={be:#x}: memory {got:#x}, expected {data:#x}")
        bs = top.b[nb:]
        if not bs or rsp["edge"] <= bs[0]["edge"]:
            errs.append(f"MemWr: NDR at edge {rsp['edge']} not after the AXI B {bs}")
        if top.aw and top.aw[-1]["addr"] != a:
            errs.append(f"MemWr: AXI AW address {top.aw[-1]['addr']:#x}, expected {a:#x}")
    # MemWrPtl: only be bytes
    for k, be in enumerate((0x1, (1 << LB) - 2, rng.randrange(1, 1 << LB), 0)):
        a = addrs[3 + (k % 3)]
        old = top.ram.line(a)
        data = rand_line(rng)
        nb = len(top.b)
        item, rsp = await top.write_line(a, data, be=be, op=RWD_MEMWRPTL)
        exp = 0
        for i in range(LB):
            src = data if (be >> i) & 1 else old
            exp |= src & (0xFF << (8 * i))
        got = top.ram.line(a)
        if rsp["ch"] != "ndr" or rsp["op"] != NDR_CMP:
            errs.append(f"MemWrPtl: response {rsp}, expected NDR Cmp")
        if got != exp:
            errs.append(f"MemWrPtl be={be:#x}: memory {got:#x}, expected {exp:#x}")
        bs = top.b[nb:]
        if be and (not bs or rsp["edge"] <= bs[0]["edge"]):
            errs.append(f"MemWrPtl: NDR at edge {rsp['edge']} not after the AXI B {bs}")
        if k == 2:
            await top.quiet()
            cnt = await top.counter(CNT_WRITES)
            if cnt != 6:
                errs.append(f"COUNTER 4 = {cnt} after 6 writes")
    await top.quiet()
    if await top.status() != 0:
        errs.append(f"STATUS {await top.status():#x} after good writes")
    # poison: nothing written, NDR Cmp, POISON_DROP
    for op in (RWD_MEMWR, RWD_MEMWRPTL):
        a = addrs[0]
        old = top.ram.line(a)
        n_aw = len(top.aw)
        item, rsp = await top.write_line(a, ~old, be=(1 << LB) - 1, op=op, poison=1)
        await top.quiet(10)
        st = await top.status()
        if rsp["ch"] != "ndr" or rsp["op"] != NDR_CMP:
            errs.append(f"poisoned op {op:#x}: response {rsp}")
        if top.ram.line(a) != old or len(top.aw) != n_aw:
            errs.append(f"poisoned op {op:#x}: memory written")
        if st != ST_POISON_DROP:
            errs.append(f"poisoned op {op:#x}: STATUS {st:#x}, expected POISON_DROP only")
        await top.clear_status()
    # other opcodes: nothing written, NDR Cmp, UNSUPPORTED
    others = [op for op in range(16) if op not in (RWD_MEMWR, RWD_MEMWRPTL)]
    for op in others:
        a = addrs[1]
        old = top.ram.line(a)
        n_aw = len(top.aw)
        item, rsp = await top.write_line(a, ~old, op=op)
        await top.quiet(10)
        st = await top.status()
        if rsp["ch"] != "ndr" or rsp["op"] != NDR_CMP:
            errs.append(f"RwD op {op:#x}: response {rsp}")
        if top.ram.line(a) != old or len(top.aw) != n_aw:
            errs.append(f"RwD op {op:#x}: memory written")
        if st != ST_UNSUPPORTED:
            errs.append(f"RwD op {op:#x}: STATUS {st:#x}, expected UNSUPPORTED only")
        await top.clear_status()
    cnt = await top.counters()
    if cnt[CNT_ERRORS] != 2 + len(others):
        errs.append(f"COUNTER 5 = {cnt[CNT_ERRORS]} after {2 + len(others)} error events")
    assert not errs, "\n".join(errs)


@conformance_test
async def axi_error_responses(dut):
    """AXI RRESP != OKAY -> DRS poison + RD_ERR; BRESP != OKAY -> NDR Cmp + WR_ERR."""
    top = await setup(dut, 8)
    rng = top.rng
    csr = CsrModel()
    errs = []
    good, bad = 0x3000, 0x3000 + LB
    for a in (good, bad):
        top.ram.set_line(a, rand_line(rng))
    top.ram.bad_read.add(bad)
    top.ram.bad_write.add(bad)
    n_err = 0
    for mode in (0, 1, 3):  # BYPASS path and datapath path
        await csr.set_default(top, cfg(mode=mode, fmt=0, period=3, keep=2))
        item, rsp = await top.read_line(bad)
        n_err += 1
        st = await top.status()
        if rsp["ch"] != "drs" or not rsp["poison"] or rsp["op"] != DRS_MEMDATA:
            errs.append(f"mode {mode}: read with RRESP SLVERR answered {rsp}, expected DRS "
                        f"MemData with poison")
        if st != ST_RD_ERR:
            errs.append(f"mode {mode}: STATUS {st:#x} after RRESP SLVERR, expected RD_ERR only")
        await top.clear_status()
        item, rsp = await top.read_line(good)
        exp, _ = csr.expect(good, top.ram.line(good))
        if rsp["poison"] or rsp["data"] != exp:
            errs.append(f"mode {mode}: good read after an error: {rsp}, expected data {exp:#x}")
    for op in (RWD_MEMWR, RWD_MEMWRPTL):
        item, rsp = await top.write_line(bad, rand_line(rng), op=op)
        n_err += 1
        st = await top.status()
        if rsp["ch"] != "ndr" or rsp["op"] != NDR_CMP:
            errs.append(f"write with BRESP SLVERR answered {rsp}, expected NDR Cmp")
        if st != ST_WR_ERR:
            errs.append(f"STATUS {st:#x} after BRESP SLVERR, expected WR_ERR only")
        await top.clear_status()
    cnt = await top.counters()
    if cnt[CNT_ERRORS] != n_err:
        errs.append(f"COUNTER 5 = {cnt[CNT_ERRORS]} after {n_err} AXI errors")
    assert not errs, "\n".join(errs)


@conformance_test
async def counters_and_snapshot(dut):
    top = await setup(dut, 9)
    rng = top.rng
    csr = CsrModel()
    errs = []
    a = 0x4000
    top.ram.set_line(a, rand_line(rng))
    expect = [0] * 6
    plan = [(0, 3), (1, 2), (2, 4), (3, 5)]
    for mode, n in plan:
        await csr.set_default(top, cfg(mode=mode, fmt=2, kind=1, thresh=1))
        items = [top.req(rng.choice((REQ_MEMRD, REQ_MEMRDDATA)), a) for _ in range(n)]
        await top.wait_resp(items)
        expect[mode] += n
    items = [top.rwd(RWD_MEMWR, a + LB, rand_line(rng)) for _ in range(3)]
    items += [top.rwd(RWD_MEMWRPTL, a + LB, rand_line(rng), be=0x3) for _ in range(2)]
    await top.wait_resp(items)
    expect[CNT_WRITES] += 5
    for op in (0b0011, 0b0100):
        await top.wait_resp([top.req(op, a)])
        expect[CNT_ERRORS] += 1
    await top.wr(ID, 1)
    expect[CNT_ERRORS] += 1
    await top.quiet()
    got = await top.counters()
    if got != expect:
        errs.append(f"counters {got}, expected {expect}")
    # HI of a counter: reading LO then HI gives the 64-bit value; HI is 0 here
    for j in range(6):
        lo, _ = await top.rd(CNT_LO(j))
        hi, _ = await top.rd(CNT_HI(j))
        if hi != 0 or lo != expect[j]:
            errs.append(f"counter {j}: LO {lo} HI {hi}")
    # counting goes on while the LO/HI pair is read
    await csr.set_default(top, cfg(mode=0))
    lo0, _ = await top.rd(CNT_LO(0))
    items = [top.req(REQ_MEMRD, a) for _ in range(4)]
    await top.wait_resp(items)
    hi0, _ = await top.rd(CNT_HI(0))
    lo1, _ = await top.rd(CNT_LO(0))
    if lo0 != expect[0] or hi0 != 0 or lo1 != expect[0] + 4:
        errs.append(f"counter 0 LO/HI while counting: {lo0}, {hi0}, {lo1}")
    # counters clear on reset
    await top.cycles(2)
    assert not errs, "\n".join(errs)


@conformance_test
async def region_selection_and_phase(dut):
    top = await setup(dut, 10)
    rng = top.rng
    csr = CsrModel()
    errs = []
    assert REGIONS >= 2, "this test needs two regions"
    # region 0 and 1 overlap; region 0 wins where both match; region 2 (if any) disabled
    b0, l0 = 0x10000, 0x10000 + 20 * LB
    b1, l1 = 0x10000 + 12 * LB, 0x10000 + 40 * LB
    await csr.set_region(top, 1, cfg(mode=3, fmt=0, kind=0, period=7, keep=3, enable=1),
                         b1 + 3, l1 + 5)   # low bits ignored
    await csr.set_region(top, 0, cfg(mode=3, fmt=1, kind=0, period=5, keep=2, enable=1),
                         b0, l0)
    if REGIONS > 2:
        await csr.set_region(top, 2, cfg(mode=2, fmt=2, enable=0), 0, 1 << 40)
    # region above 4 GiB (BASE_HI / LIMIT_HI), with MARGIN gate
    hi_base = (0x5 << 32) | 0x100 * LB
    r_hi = REGIONS - 1
    if r_hi > 1:
        await csr.set_region(top, r_hi, cfg(mode=3, fmt=2, kind=1, thresh=2, period=3,
                                            keep=1, enable=1), hi_base, hi_base + 9 * LB)
    elif REGIONS > 2:
        # an enabled empty window (BASE == LIMIT) matches nothing
        await csr.set_region(top, 2, cfg(mode=1, enable=1), b0 + 2 * LB, b0 + 2 * LB)
    await csr.set_default(top, cfg(mode=2, fmt=0))
    lines = set()
    for k in range(-3, 44):
        lines.add(0x10000 + k * LB)
    for k in (-1, 0, 1, 8, 9):
        lines.add(hi_base + k * LB)
    for a in (0, LB, (1 << 52) - LB):
        lines.add(a)
    all_ones_lane = sum(((1 << W) - 1) << (i * W) for i in range(E))
    for a in sorted(lines):
        # mixes lanes of every popcount; all-ones for some lines to read phases directly
        top.ram.set_line(a, all_ones_lane if (a // LB) % 3 == 0 else rand_line(rng))
    for a in sorted(lines):
        off = rng.randrange(LB)
        item, rsp = await top.read_line(a + off, rng.choice((REQ_MEMRD, REQ_MEMRDDATA)))
        exp, mode = csr.expect(a, top.ram.line(a))
        if rsp.get("data") != exp or rsp["ch"] != "drs":
            v, base = csr.select(a)
            errs.append(f"addr {a + off:#x} (cfg {v:#x}, base {base:#x}): data "
                        f"{rsp.get('data', -1):#x}, expected {exp:#x}")
        if len(errs) > 10:
            break
    # disabling region 0 exposes region 1 underneath; a CSR write applies to
    # requests accepted after its BVALID
    await top.wr_ok(R_CFG(0), cfg(mode=3, fmt=1, kind=0, period=5, keep=2, enable=0))
    csr.regions[0][0] &= ~(1 << 31)
    for a in (b0, b1, b1 + LB, l0 - LB):
        item, rsp = await top.read_line(a)
        exp, _ = csr.expect(a, top.ram.line(a))
        if rsp["data"] != exp:
            errs.append(f"after disabling region 0: addr {a:#x} data {rsp['data']:#x}, expected {exp:#x}")
    assert not errs, "\n".join(errs)


@conformance_test
async def bypass_vs_lowbit_latency(dut):
    """Low-bit reads take exactly STAGES cycles more than BYPASS when nothing stalls."""
    top = await setup(dut, 11)
    rng = top.rng
    csr = CsrModel()
    a = 0x6000
    top.ram.set_line(a, rand_line(rng))
    lat = {}
    for mode in (0, 1, 2, 3, 0):
        await csr.set_default(top, cfg(mode=mode, fmt=1, kind=1, thresh=1))
        samples = []
        for _ in range(3):
            await top.quiet(5)
            item, rsp = await top.read_line(a)
            samples.append(rsp["edge"] - item["edge"])
            exp, _ = csr.expect(a, top.ram.line(a))
            assert rsp["data"] == exp, f"mode {mode}: data {rsp['data']:#x}, expected {exp:#x}"
        lat.setdefault(mode, []).extend(samples)
    assert len(set(lat[0])) == 1, f"BYPASS latency not constant: {lat[0]}"
    for mode in (1, 2, 3):
        assert set(lat[mode]) == {lat[0][0] + STAGES}, (
            f"mode {mode} latency {lat[mode]} vs BYPASS {lat[0][0]}: expected +{STAGES}")


@conformance_test
async def read_after_write(dut):
    """A read accepted after the NDR Cmp of a write to the same line sees that write."""
    top = await setup(dut, 12)
    rng = top.rng
    csr = CsrModel()
    errs = []
    top.ram.set_pause(rng, 0.4)
    top.p_drs_ready = 0.7
    await csr.set_default(top, cfg(mode=1))
    for k in range(30):
        a = 0x7000 + LB * rng.randrange(4)
        data = rand_line(rng)
        w = top.rwd(RWD_MEMWR, a, data)
        # the read waits for the write's NDR, then goes in at once
        await top.wait_resp([w])
        item, rsp = await top.read_line(a)
        if rsp["data"] != data:
            errs.append(f"write {k}: read after NDR gave {rsp['data']:#x}, expected {data:#x}")
    top.ram.set_pause(rng, 0)
    assert not errs, "\n".join(errs[:10])


@conformance_test
async def devload_idle(dut):
    top = await setup(dut, 13)
    await top.cycles(20)
    bad = [(e, d0, d1) for e, d0, d1 in top.devload_log if d0 or d1]
    assert not bad, f"devload non-zero with nothing in flight: {bad[:5]}"
    # the cycle a first request is presented and accepted, nothing is in flight yet
    item = top.req(REQ_MEMRD, 0x8000)
    await top.wait_resp([item])
    at = [(e, d0, d1) for e, d0, d1 in top.devload_log if e == item["edge"]]
    assert at and at[0][1] == 0 and at[0][2] == 0, (
        f"devload {at} in the cycle of the first request, with nothing in flight")
    await top.cycles(10)
    # some traffic, then idle again
    items = [top.req(REQ_MEMRD, 0x8000 + LB * k) for k in range(MAX_OUT * 2)]
    items += [top.rwd(RWD_MEMWR, 0x9000 + LB * k, k) for k in range(MAX_OUT)]
    top.p_drs_ready = top.p_ndr_ready = 0.3
    await top.wait_resp(items)
    top.p_drs_ready = top.p_ndr_ready = 1.0
    await top.cycles(10)
    mark = top.edge
    await top.cycles(20)
    bad = [(e, d0, d1) for e, d0, d1 in top.devload_log if e > mark and (d0 or d1)]
    assert not bad, f"devload non-zero after traffic drained: {bad[:5]}"
    peak = max(max(d0, d1) for _, d0, d1 in top.devload_log)
    assert peak > 0, "devload never rose above 0 under load (table never more than light?)"


async def _run_sources(dut, top, rng, on_resp, req_source, rwd_source, *, pause, done,
                       cycles, errs):
    """Drive requests from the two sources against a pausing memory and a
    throttled response side until ``done()`` and both channels are idle,
    ``cycles`` have passed or more than ten errors have been seen."""
    top.on_resp = on_resp
    top.ram.set_pause(rng, pause)
    top.p_drs_ready, top.p_ndr_ready = 0.6, 0.6
    top.req_source, top.rwd_source = req_source, rwd_source
    for _ in range(cycles):
        if done() and top.req_cur is None and top.rwd_cur is None:
            break
        await RisingEdge(dut.clk)
        if len(errs) > 10:
            break
    top.req_source = top.rwd_source = None


@conformance_test
async def random_mixed_traffic(dut):
    """A few hundred random requests, random backpressure everywhere, checked against
    the bench's memory model and reference transform."""
    top = await setup(dut, 14)
    rng = top.rng
    csr = CsrModel()
    N = RANDOM_REQUESTS
    lines = [0xA000 + LB * k for k in range(12)] + [0xB000 + LB * k for k in range(8)] \
        + [(1 << 33) + LB * k for k in range(4)]
    await csr.set_region(top, 0, cfg(mode=3, fmt=rng.randrange(3), kind=0, period=5, keep=3,
                                     enable=1), 0xA000 + 2 * LB, 0xA000 + 10 * LB)
    await csr.set_region(top, 1, cfg(mode=3, fmt=1, kind=1, thresh=2, period=1, keep=0,
                                     enable=1), 0xB000, 0xC000)
    await csr.set_default(top, cfg(mode=2, fmt=2))
    model = {}
    for a in lines:
        v = rand_line(rng)
        top.ram.set_line(a, v)
        model[a] = v
    outstanding = {}        # tag -> item
    busy_r, busy_w = {}, set()  # line -> n reads in flight; lines with a write in flight
    errs = []
    counts = [0] * 6
    issued = [0]

    def pick_line(for_write):
        for _ in range(4):
            a = rng.choice(lines)
            if a in busy_w:
                continue
            if for_write and busy_r.get(a):
                continue
            return a
        return None

    def req_source():
        if issued[0] >= N or rng.random() < 0.3:
            return None
        if rng.random() < 0.08:
            item = dict(kind="req", op=rng.choice((REQ_MEMINV, REQ_MEMINVNT)),
                        addr=rng.choice(lines) + rng.randrange(LB), tag=top.tag())
        else:
            a = pick_line(False)
            if a is None:
                return None
            item = dict(kind="req", op=rng.choice((REQ_MEMRD, REQ_MEMRDDATA)),
                        addr=a + rng.randrange(LB), tag=top.tag(), line=a)
            busy_r[a] = busy_r.get(a, 0) + 1
            item["exp"], mode = csr.expect(a, model[a])
            counts[mode] += 1
        issued[0] += 1
        outstanding[item["tag"]] = item
        return item

    def rwd_source():
        if issued[0] >= N or rng.random() < 0.4:
            return None
        a = pick_line(True)
        if a is None:
            return None
        op = rng.choice((RWD_MEMWR, RWD_MEMWRPTL))
        item = dict(kind="rwd", op=op, addr=a + rng.randrange(LB), tag=top.tag(),
                    data=rand_line(rng), be=rng.randrange(1, 1 << LB), poison=0, line=a)
        busy_w.add(a)
        counts[CNT_WRITES] += 1
        issued[0] += 1
        outstanding[item["tag"]] = item
        return item

    def on_resp(rsp):
        item = outstanding.pop(rsp["tag"], None)
        if item is None:
            errs.append(f"response {rsp} with unknown or already answered tag")
            return
        if item["kind"] == "req" and item["op"] in (REQ_MEMRD, REQ_MEMRDDATA):
            a = item["line"]
            busy_r[a] -= 1
            if rsp["ch"] != "drs" or rsp["op"] != DRS_MEMDATA or rsp["poison"] \
                    or rsp["data"] != item["exp"]:
                errs.append(f"read {item['addr']:#x} tag {item['tag']:#x}: {rsp}, expected "
                            f"data {item['exp']:#x}")
        elif item["kind"] == "req":
            if rsp["ch"] != "ndr" or rsp["op"] != NDR_CMP:
                errs.append(f"MemInv tag {item['tag']:#x}: {rsp}")
        else:
            a = item["line"]
            busy_w.discard(a)
            if item["op"] == RWD_MEMWR:
                model[a] = item["data"]
            else:
                new = 0
                for i in range(LB):
                    src = item["data"] if (item["be"] >> i) & 1 else model[a]
                    new |= src & (0xFF << (8 * i))
                model[a] = new
            if rsp["ch"] != "ndr" or rsp["op"] != NDR_CMP:
                errs.append(f"write tag {item['tag']:#x}: {rsp}")

    await _run_sources(dut, top, rng, on_resp, req_source, rwd_source, pause=0.3,
                       done=lambda: issued[0] >= N and not outstanding, cycles=40 * N,
                       errs=errs)
    assert not errs, "\n".join(errs[:10])
    assert not outstanding, f"{len(outstanding)} requests never answered: " \
        f"{[(hex(t), i['kind'], i['op']) for t, i in list(outstanding.items())[:5]]}"
    top.ram.set_pause(rng, 0)
    top.p_drs_ready = top.p_ndr_ready = 1.0
    await top.quiet(20)
    mem_errs = [f"line {a:#x}: memory {top.ram.line(a):#x}, model {v:#x}"
                for a, v in model.items() if top.ram.line(a) != v]
    assert not mem_errs, "\n".join(mem_errs[:10])
    got = await top.counters()
    assert got[:5] == counts[:5] and got[5] == 0, f"counters {got}, expected {counts[:5]} + [0]"
    assert await top.status() == 0


@conformance_test
async def csr_write_applies_after_bvalid(dut):
    """A request offered from the first edge after a CSR write's BVALID
    handshake, and so accepted at the first edge after it that the top is
    ready, already uses the new configuration (DEFAULT_CFG and a region
    CFG)."""
    top = await setup(dut, 15)
    rng = top.rng
    csr = CsrModel()
    errs = []
    a_def, a_reg = 0xC000, 0xD000
    for a in (a_def, a_reg):
        top.ram.set_line(a, rand_line(rng))
    await csr.set_region(top, 0, cfg(mode=3, fmt=1, kind=0, period=3, keep=1, enable=0),
                         a_reg, a_reg + LB)
    steps = [(DEFAULT_CFG, a_def, cfg(mode=2, fmt=1)),
             (DEFAULT_CFG, a_def, cfg(mode=0)),
             (DEFAULT_CFG, a_def, cfg(mode=3, fmt=2, kind=1, thresh=W)),
             (R_CFG(0), a_reg, cfg(mode=3, fmt=1, kind=0, period=3, keep=1, enable=1)),
             (R_CFG(0), a_reg, cfg(mode=2, fmt=0, enable=1)),
             (R_CFG(0), a_reg, cfg(mode=2, fmt=0, enable=0))]
    for reg, addr, value in steps:
        n_b = len(top.axil_b_edges)
        item = top.req(REQ_MEMRD, addr, gate=lambda n=n_b: len(top.axil_b_edges) > n)
        resp = await top.wr(reg, value)
        assert resp == 0
        if reg == DEFAULT_CFG:
            csr.default = value
        else:
            csr.regions[0][0] = value
        (rsp,) = await top.wait_resp([item])
        b_edge = top.axil_b_edges[n_b]
        exp, _ = csr.expect(addr, top.ram.line(addr))
        if item["edge"] <= b_edge:
            errs.append(f"bench: request accepted at edge {item['edge']}, before B at {b_edge}")
        elif rsp["data"] != exp:
            errs.append(f"{reg:#05x} <- {value:#x}: read accepted one edge after BVALID gave "
                        f"{rsp['data']:#x}, expected {exp:#x} (new configuration)")
    assert not errs, "\n".join(errs)


@conformance_test
async def random_mixed_with_errors(dut):
    """Random traffic including MemSpecRd, MemInv, unsupported opcodes, poisoned writes
    and AXI read/write errors: one response per request, STATUS and COUNTER 5."""
    top = await setup(dut, 16)
    rng = top.rng
    csr = CsrModel()
    N = RANDOM_REQUESTS // 2
    good = [0xE000 + LB * k for k in range(8)]
    bad_rd = [0xF000 + LB * k for k in range(2)]
    bad_wr = [0xF800 + LB * k for k in range(2)]
    for a in good + bad_rd:
        top.ram.set_line(a, rand_line(rng))
    model = {a: top.ram.line(a) for a in good}
    top.ram.bad_read.update(bad_rd)
    top.ram.bad_write.update(bad_wr)
    await csr.set_default(top, cfg(mode=rng.choice((1, 3)), fmt=1, kind=0, period=3, keep=2))
    outstanding, spec = {}, {}
    busy_r, busy_w = {}, set()
    errs = []
    events = dict(unsupported=0, rd_err=0, wr_err=0, poison=0)
    issued = [0]
    unsupported_req = [op for op in range(16) if op not in (0, 1, 2, 8, 9)]
    unsupported_rwd = [op for op in range(16) if op not in (1, 2)]

    def req_source():
        if issued[0] >= N or rng.random() < 0.3:
            return None
        r = rng.random()
        tag = top.tag()
        if r < 0.1:
            item = dict(kind="req", op=REQ_MEMSPECRD, addr=rng.choice(good), tag=tag)
            spec[tag] = item
            issued[0] += 1
            return item
        if r < 0.2:
            item = dict(kind="req", op=rng.choice(unsupported_req), addr=rng.choice(good), tag=tag)
            events["unsupported"] += 1
        elif r < 0.3:
            item = dict(kind="req", op=rng.choice((REQ_MEMRD, REQ_MEMRDDATA)),
                        addr=rng.choice(bad_rd), tag=tag, poison=1)
            events["rd_err"] += 1
        elif r < 0.4:
            item = dict(kind="req", op=rng.choice((REQ_MEMINV, REQ_MEMINVNT)),
                        addr=rng.choice(good), tag=tag)
        else:
            a = rng.choice(good)
            if a in busy_w:
                return None
            item = dict(kind="req", op=REQ_MEMRD, addr=a, tag=tag, line=a,
                        exp=csr.expect(a, model[a])[0], poison=0)
            busy_r[a] = busy_r.get(a, 0) + 1
        issued[0] += 1
        outstanding[tag] = item
        return item

    def rwd_source():
        if issued[0] >= N or rng.random() < 0.4:
            return None
        r = rng.random()
        tag = top.tag()
        data = rand_line(rng)
        if r < 0.15:
            item = dict(kind="rwd", op=rng.choice((RWD_MEMWR, RWD_MEMWRPTL)), addr=rng.choice(good),
                        tag=tag, data=data, be=(1 << LB) - 1, poison=1)
            events["poison"] += 1
        elif r < 0.3:
            item = dict(kind="rwd", op=rng.choice(unsupported_rwd), addr=rng.choice(good),
                        tag=tag, data=data, be=(1 << LB) - 1, poison=0)
            events["unsupported"] += 1
        elif r < 0.45:
            item = dict(kind="rwd", op=RWD_MEMWR, addr=rng.choice(bad_wr), tag=tag, data=data,
                        be=(1 << LB) - 1, poison=0)
            events["wr_err"] += 1
        else:
            a = rng.choice(good)
            if a in busy_w or busy_r.get(a):
                return None
            item = dict(kind="rwd", op=RWD_MEMWR, addr=a, tag=tag, data=data,
                        be=(1 << LB) - 1, poison=0, line=a)
            busy_w.add(a)
        issued[0] += 1
        outstanding[tag] = item
        return item

    def on_resp(rsp):
        if rsp["tag"] in spec:
            item = spec.pop(rsp["tag"])
            return  # MemSpecRd: a response is not required; at most one tolerated
        item = outstanding.pop(rsp["tag"], None)
        if item is None:
            errs.append(f"response {rsp} with unknown or already answered tag")
            return
        if item["kind"] == "req" and item["op"] in (REQ_MEMRD, REQ_MEMRDDATA):
            if rsp["ch"] != "drs" or rsp["op"] != DRS_MEMDATA or rsp["poison"] != item["poison"]:
                errs.append(f"read {item}: {rsp}")
            elif not item["poison"]:
                busy_r[item["line"]] -= 1
                if rsp["data"] != item["exp"]:
                    errs.append(f"read {item['addr']:#x}: {rsp['data']:#x}, expected {item['exp']:#x}")
        else:
            if rsp["ch"] != "ndr" or rsp["op"] != NDR_CMP:
                errs.append(f"{item['kind']} op {item['op']:#x} poison {item.get('poison')}: {rsp}")
            if item.get("line") is not None and item["kind"] == "rwd":
                busy_w.discard(item["line"])
                model[item["line"]] = item["data"]

    await _run_sources(dut, top, rng, on_resp, req_source, rwd_source, pause=0.25,
                       done=lambda: issued[0] >= N and not outstanding, cycles=60 * N,
                       errs=errs)
    assert not errs, "\n".join(errs[:10])
    assert not outstanding, f"{len(outstanding)} requests never answered"
    top.ram.set_pause(rng, 0)
    top.p_drs_ready = top.p_ndr_ready = 1.0
    await top.quiet(40)
    for a, v in model.items():
        assert top.ram.line(a) == v, f"line {a:#x}: memory {top.ram.line(a):#x}, model {v:#x}"
    st = await top.status()
    exp_st = ((ST_UNSUPPORTED if events["unsupported"] else 0) | (ST_RD_ERR if events["rd_err"] else 0)
              | (ST_WR_ERR if events["wr_err"] else 0) | (ST_POISON_DROP if events["poison"] else 0))
    assert st == exp_st, f"STATUS {st:#x}, expected {exp_st:#x} ({events})"
    n = await top.counter(CNT_ERRORS)
    assert n == sum(events.values()), f"COUNTER 5 = {n}, expected {sum(events.values())} ({events})"


@conformance_test
async def phase_large_addresses(dut):
    """phase = (line_index * E) mod P for large line indices (DEFAULT_CFG: BASE = 0; a
    region with a large window), several periods including non-powers of two."""
    top = await setup(dut, 17)
    rng = top.rng
    csr = CsrModel()
    errs = []
    all_ones = sum(((1 << W) - 1) << (i * W) for i in range(E))
    addrs = sorted({rng.getrandbits(52) & ALIGN for _ in range(12)} |
                   {(1 << 52) - LB, (1 << 32) - LB, 1 << 32, (1 << 40) + 7 * LB})
    rbase = (0x3 << 36) + 5 * LB
    rlimit = (1 << 52) - 3 * LB
    raddrs = sorted({rbase, rbase + LB, rlimit - LB} |
                    {(rng.randrange(rbase, rlimit)) & ALIGN for _ in range(8)})
    for a in addrs + raddrs:
        top.ram.set_line(a, all_ones if rng.random() < 0.5 else rand_line(rng))
    for period, keep in ((13, 6), (7, 3), (11, 10), (15, 7), (6, 1), (9, 4)):
        await csr.set_default(top, cfg(mode=3, fmt=0, kind=0, period=period, keep=keep))
        if REGIONS:
            await csr.set_region(top, 0, cfg(mode=3, fmt=1, kind=0, period=period, keep=keep,
                                             enable=1), rbase, rlimit)
        for a in addrs + (raddrs if REGIONS else []):
            item, rsp = await top.read_line(a)
            exp, _ = csr.expect(a, top.ram.line(a))
            if rsp["data"] != exp:
                v, base = csr.select(a)
                errs.append(f"P={period} K={keep} addr {a:#x} (line_index {(a - base) // LB:#x}): "
                            f"{rsp['data']:#x}, expected {exp:#x}")
            if len(errs) > 8:
                break
    assert not errs, "\n".join(errs)


@conformance_test
async def config_captured_at_accept(dut):
    """Reads held in flight (AXI R stalled, DRS not ready) keep the configuration of the
    moment they were accepted, whatever CSR writes follow."""
    top = await setup(dut, 18)
    rng = top.rng
    csr = CsrModel()
    errs = []
    a0 = 0x12000
    lines = [a0 + LB * k for k in range(6)]
    for a in lines:
        top.ram.set_line(a, rand_line(rng))
    if REGIONS:
        await csr.set_region(top, 0, cfg(mode=3, fmt=2, kind=1, thresh=1, enable=1),
                             a0 + 3 * LB, a0 + 6 * LB)
    hold = [True]

    def stall():
        while True:
            yield hold[0]
    top.ram.read_if.r_channel.set_pause_generator(stall())
    top.p_drs_ready = 0.0
    configs = [cfg(mode=2, fmt=1), cfg(mode=3, fmt=0, kind=0, period=5, keep=2), cfg(mode=0)]
    # Each batch is `per` reads and one more; all of them must fit in the in-flight
    # table, since no more than MAX_OUTSTANDING reads are accepted with R stalled.
    per = max(1, min(2, MAX_OUT // len(configs) - 1))
    items = []
    for k, v in enumerate(configs):
        await csr.set_default(top, v)
        if REGIONS and k == 1:
            # move region 0's window and change its configuration too
            await csr.set_region(top, 0, cfg(mode=1, enable=1), a0, a0 + 2 * LB)
        batch = [top.req(REQ_MEMRD, lines[(k * per + j) % len(lines)]) for j in range(per)]
        batch.append(top.req(REQ_MEMRD, lines[3 + k % 3]))
        for _ in range(200):
            if all("edge" in i for i in batch):
                break
            await RisingEdge(dut.clk)
        assert all("edge" in i for i in batch), "reads not accepted while R is stalled"
        for i in batch:
            i["exp"] = csr.expect(i["addr"], top.ram.line(i["addr"]))[0]
        items += batch
    await csr.set_default(top, cfg(mode=1))
    hold[0] = False
    top.p_drs_ready = 1.0
    rsps = await top.wait_resp(items)
    top.ram.read_if.r_channel.set_pause_generator(None)
    for i, r in zip(items, rsps):
        if r["data"] != i["exp"]:
            errs.append(f"read {i['addr']:#x} accepted at edge {i['edge']}: {r['data']:#x}, "
                        f"expected {i['exp']:#x}")
    assert not errs, "\n".join(errs)


@conformance_test
async def devload_full_table(dut):
    """With AXI R stalled, requests pile up: no more than MAX_OUTSTANDING AXI reads are
    outstanding, and once MAX_OUTSTANDING reads or more are accepted and unanswered the
    table is full and both devload outputs read 3 (severe); all are answered once R flows
    again, and devload returns to 0."""
    top = await setup(dut, 19)
    hold = [True]

    def stall():
        while True:
            yield hold[0]
    top.ram.read_if.r_channel.set_pause_generator(stall())
    items = [top.req(REQ_MEMRD, 0x13000 + LB * k) for k in range(2 * MAX_OUT + 4)]
    await top.cycles(100)
    n_acc = sum(1 for i in items if "edge" in i)
    last = top.devload_log[-1]
    top.dut._log.info("devload_full_table: %d reads accepted with R stalled, %d AXI reads "
                      "issued, devload %s", n_acc, len(top.ar), last[1:])
    assert len(top.ar) <= MAX_OUT, (
        f"{len(top.ar)} AXI reads outstanding with MAX_OUTSTANDING = {MAX_OUT}")
    assert n_acc >= 1
    if n_acc >= MAX_OUT:
        assert last[1] == 3 and last[2] == 3, (
            f"{n_acc} reads accepted and unanswered (MAX_OUTSTANDING {MAX_OUT}): devload "
            f"DRS {last[1]}, NDR {last[2]}, expected 3 (severe, full)")
    hold[0] = False
    await top.wait_resp(items)
    top.ram.read_if.r_channel.set_pause_generator(None)
    await top.cycles(10)
    mark = top.edge
    await top.cycles(10)
    bad = [(e, d0, d1) for e, d0, d1 in top.devload_log if e > mark and (d0 or d1)]
    assert not bad, f"devload non-zero after the table drained: {bad[:5]}"
    for i in items:
        assert len(top.responses(i["tag"])) == 1, f"tag {i['tag']:#x}: not exactly one response"
