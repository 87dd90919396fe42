"""Differential test: the exported top ``neuron_fabric`` against the
transaction-level model :class:`neuron_fabric.host.device.Device`
(run by tests/hdl/top/test_device_rtl.py).

One seeded random stream goes to both.  It alternates

* control operations: valid and invalid CFG writes to DEFAULT_CFG and the
  regions (all modes, formats and gates), region BASE/LIMIT words, STATUS
  writes (RW1C), writes to read-only and unmapped offsets, all with random
  contiguous WSTRB, and reads of any offset; and
* batches of CXL.mem requests sent at once on both M2S channels: MemRd,
  MemRdData, MemInv, MemInvNT, MemSpecRd and unsupported Req opcodes;
  MemWr, MemWrPtl with random byte enables, poisoned and unsupported RwD;
  some batches with AXI read and write errors injected for chosen lines.

A batch is drained (every response taken) before the next control
operation, so each request sees exactly the control state that the model
sees (contract 4.3: a control write applies to requests accepted after its
response).  Within a batch a line that is written is neither read nor
written again, so the result does not depend on the order in which the top
serves the two channels.  Checked: the same DRS/NDR responses by tag
(channel, opcode, data, poison), no response to MemSpecRd, the same control
read values and ``ok`` flags, STATUS and every counter (LO and HI) after each
batch, and the same memory at the end.  ``devload`` is not compared (the
model is untimed).

With ``cover`` the random batches follow a directed phase, so that a
short run (the configuration sweep, ``sim/configs.py``) reads through
every view the build has: for each read mode, and for G-Binary and
G-Ternary each layout and operand, region 0 (DEFAULT_CFG without regions)
takes a random valid configuration of that kind over every line the
traffic uses, and a batch of reads follows (the first with read errors
injected).

Parameters (the runner's ``params``, :func:`~neuron_fabric.sim.toolchain.bench_params`):
the TopParams fields, ``seed``, ``batches``, ``cover``.
"""

import itertools
import logging
import random
from dataclasses import dataclass

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster

from neuron_fabric.host.device import Device, Response
from neuron_fabric.contract.facts import (CXL_ADDR_BITS, profile_named, Format, GateKind, Layout, Mode,
                                          Operand, ReqOpcode, RwdOpcode)
from neuron_fabric.contract.regmap import COUNTERS, RegisterMap, cfg_encode, count_total_max

from neuron_fabric.sim.tb_top import (DrsBus, DrsSink, FaultyAxiRam, NdrBus, NdrSink, ReqBus, ReqSource,
                                      ReqTransaction, RwdBus, RwdSource, RwdTransaction, pauses, top_params)
from neuron_fabric.sim.toolchain import bench_params

OKAY = 0
#: Lines the traffic uses: a pool at the bottom of memory and one near the
#: top of the 4 GiB AXI memory model, so region windows span both words.
POOL_LINES = 64
HIGH_LINE_BYTE = 1 << 31
READS = (ReqOpcode.MEM_RD, ReqOpcode.MEM_RD_DATA)
WINDOW_WORDS = ("BASE_LO", "BASE_HI", "LIMIT_LO", "LIMIT_HI")
#: Req opcodes no row of contract 4.2 names.
UNSUPPORTED_REQ = [op for op in range(16) if op not in set(ReqOpcode)]
UNSUPPORTED_RWD = [op for op in range(16) if op not in set(RwdOpcode)]


def _u(value):
    """Unsigned value of a sampled signal (1-bit signals give a ``Logic``)."""
    return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)


@dataclass(frozen=True)
class Request:
    """One M2S request of a batch (``data``/``be``/``poison`` for RwD only)."""
    channel: str
    opcode: int
    addr: int
    tag: int
    data: bytes = None
    be: int = 0
    poison: int = 0


class DeviceTB:
    """The top and the model side by side: bus models, the model, and the
    comparison of every response, control access and the memory."""

    def __init__(self, dut, params, seed):
        self.dut = dut
        self.params = params
        self.rng = random.Random(seed)
        self.map = RegisterMap(params)
        # the bus models log every reset and every injected error
        logging.getLogger(f"cocotb.{dut._name}").setLevel(logging.ERROR)
        self.dev = Device(params)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.req = ReqSource(ReqBus.from_prefix(dut, "m2s_req"), dut.clk, dut.rst)
        self.rwd = RwdSource(RwdBus.from_prefix(dut, "m2s_rwd"), dut.clk, dut.rst)
        self.drs = DrsSink(DrsBus.from_prefix(dut, "s2m_drs"), dut.clk, dut.rst)
        self.ndr = NdrSink(NdrBus.from_prefix(dut, "s2m_ndr"), dut.clk, dut.rst)
        self.ram = FaultyAxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst,
                                size=2**32, depth=8)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.lines = [*range(POOL_LINES),
                      *range(HIGH_LINE_BYTE // params.line_bytes,
                             HIGH_LINE_BYTE // params.line_bytes + POOL_LINES // 2)]
        self.seen = {"poison": 0, "responses": 0, "control": 0}
        self.reads = {}     # (mode, layout, operand) -> reads sent under it

    async def reset(self):
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 4)
        self.dut.rst.value = 0
        await ClockCycles(self.dut.clk, 2)

    def set_pauses(self, probability):
        """Idle cycles and backpressure on every channel with ``probability``."""
        chans = [self.req, self.rwd, self.drs, self.ndr, *self.ram.channels()]
        for ch in chans:
            ch.set_pause_generator(pauses(probability, random.Random(self.rng.random())))

    # -- control port ----------------------------------------------------------------

    async def control_write(self, offset, value, strb):
        """The same write (contiguous ``strb``) on both; their ``ok`` must agree."""
        lo = (strb & -strb).bit_length() - 1
        n = bin(strb).count("1")
        data = value.to_bytes(4, "little")[lo:lo + n]
        resp = await self.axil.write(offset + lo, data)
        rtl_ok = int(resp.resp) == OKAY
        ok = await self.dev.write(offset, value, strb)
        assert rtl_ok == ok, (f"write {value:#010x} strb {strb:#06b} to {offset:#05x}: "
                              f"RTL ok={rtl_ok}, model ok={ok}")
        self.seen["control"] += 1

    async def control_read(self, offset):
        resp = await self.axil.read(offset, 4)
        rtl = (int.from_bytes(resp.data, "little"), int(resp.resp) == OKAY)
        model = await self.dev.read(offset)
        assert rtl == model, f"read {offset:#05x}: RTL {rtl}, model {model}"
        self.seen["control"] += 1
        return model[0]

    async def check_status_and_counters(self):
        await self.control_read(self.map["STATUS"].offset)
        for j in range(len(COUNTERS)):
            await self.control_read(self.map[f"COUNTER{j}_LO"].offset)
            await self.control_read(self.map[f"COUNTER{j}_HI"].offset)

    # -- CXL.mem -----------------------------------------------------------------------

    async def batch(self, requests, read_faults=(), write_faults=()):
        """Send ``requests`` to both, with the memory failing the given lines;
        compare every response."""
        for faults in (self.ram.faults, self.dev.faults):
            faults.read_lines.update(read_faults)
            faults.write_lines.update(write_faults)
        expected = {}
        for r in requests:
            if r.channel == "req":
                if r.opcode in READS:
                    cfg, _ = self.dev.read_config(r.addr)
                    kind = (Mode(cfg["mode"]).name, Layout(cfg["layout"]).name,
                            Operand(cfg["operand"]).name)
                    self.reads[kind] = self.reads.get(kind, 0) + 1
                self.req.send_nowait(ReqTransaction(opcode=r.opcode, addr=r.addr, tag=r.tag))
                resp = self.dev.m2s_req(r.opcode, r.addr, r.tag)
            else:
                self.rwd.send_nowait(RwdTransaction(
                    opcode=r.opcode, addr=r.addr, tag=r.tag, data=int.from_bytes(r.data, "little"),
                    be=r.be, poison=r.poison))
                resp = self.dev.m2s_rwd(r.opcode, r.addr, r.tag, r.data, r.be, r.poison)
            if resp is not None:
                expected[resp.tag] = resp
        got = await self._responses(len(expected))
        for faults in (self.ram.faults, self.dev.faults):
            faults.read_lines.clear()
            faults.write_lines.clear()
        assert set(got) == set(expected), (
            f"tags answered only by the RTL: {sorted(set(got) - set(expected))[:8]}, "
            f"only by the model: {sorted(set(expected) - set(got))[:8]}")
        by_tag = {r.tag: r for r in requests}
        for tag, want in expected.items():
            assert got[tag] == want, f"{by_tag[tag]}: RTL {got[tag]}, model {want}"
        self.seen["responses"] += len(got)
        self.seen["poison"] += sum(r.poison for r in got.values())

    async def _responses(self, count, limit=50_000):
        """Every response of the batch, by tag, once ``count`` have come and a
        few idle cycles show no more."""
        for _ in range(limit // 8):
            if self.drs.count() + self.ndr.count() >= count and \
                    self.req.empty() and self.rwd.empty():
                break
            await ClockCycles(self.dut.clk, 8)
        else:
            raise AssertionError(f"{self.drs.count() + self.ndr.count()} of {count} responses "
                                 f"after {limit} cycles")
        await ClockCycles(self.dut.clk, 24)
        got = {}
        for channel, sink in (("drs", self.drs), ("ndr", self.ndr)):
            while not sink.empty():
                t = sink.recv_nowait()
                tag = _u(t.tag)
                assert tag not in got, f"tag {tag:#x} answered twice"
                data = _u(t.data).to_bytes(self.params.line_bytes, "little") \
                    if channel == "drs" else None
                got[tag] = Response(channel, _u(t.opcode), tag, data,
                                    bool(_u(t.poison)) if channel == "drs" else False)
        return got

    def check_memory(self):
        """Every line the traffic used holds the same bytes in both."""
        lb = self.params.line_bytes
        for line in self.lines:
            rtl = self.ram.read(line * lb, lb)
            model = self.dev.peek(line * lb, 1).tobytes()
            assert rtl == model, f"line {line:#x}: RTL {rtl.hex()}, model {model.hex()}"


# -- the random stream ---------------------------------------------------------------------

class Stream:
    """The seeded random control operations and request batches."""

    def __init__(self, tb):
        self.tb = tb
        self.rng = tb.rng
        self.p = tb.params
        self.rmap = tb.map
        self.unmapped = [o for o in range(0, 0x1000, 4) if self.rmap.at(o) is None]
        # valid configurations take every (mode, format, gate, layout,
        # operand) the build implements in turn
        hierarchy = profile_named(self.p.profile).has("hierarchy")
        kinds = list(itertools.product(Mode, Format, GateKind,
                                       Layout if hierarchy else [Layout.ELEMENT_MAJOR],
                                       Operand if hierarchy else [Operand.SIGNS]))
        self.rng.shuffle(kinds)
        # first, one transform of each (layout, operand), so that short runs
        # read every view of the line through the transform
        first = {}
        for k in kinds:
            if k[0] in (Mode.GBINARY, Mode.GTERNARY):
                first.setdefault(k[3:], k)
        kinds = list(first.values()) + [k for k in kinds if k not in first.values()]
        self._kinds = itertools.cycle(kinds)

    def _strb(self):
        if self.rng.random() < 0.5:
            return 0xF
        lo = self.rng.randrange(4)
        return ((1 << self.rng.randrange(1, 5 - lo)) - 1) << lo

    def views(self):
        """The (layout, operand) pairs the build reads through a transform."""
        hierarchy = profile_named(self.p.profile).has("hierarchy")
        return list(itertools.product(Layout if hierarchy else [Layout.ELEMENT_MAJOR],
                                      Operand if hierarchy else [Operand.SIGNS]))

    def cfg(self, valid=True, kind=None, enable=None):
        """A CFG word: valid (all modes, formats, gates, layouts and operands the
        build has), or one contract 4.4 or section 5 rejects.  ``kind``
        ``(mode, layout, operand)`` chooses those fields (the rest random),
        ``enable`` the enable bit."""
        rng = self.rng
        period = rng.randrange(1, 16)
        mode, fmt, gate_kind, layout, operand = next(self._kinds)
        if kind is not None:
            mode, layout, operand = kind
        # a count operand: total up to N * (2^b - 1), T up to total (contract 5.1)
        top = count_total_max(operand) if operand != Operand.SIGNS else 0
        total = rng.choice([1, top, rng.randrange(1, top)]) if top else 0
        fields = dict(mode=mode, format=fmt, gate_kind=gate_kind, period=period,
                      keep=rng.randrange(period + 1),
                      threshold=rng.randrange(min(31, total or self.p.workers) + 1),
                      layout=layout, operand=operand, total=total,
                      enable=int(rng.random() < 0.85) if enable is None else enable)
        if not valid:
            # operand 3 and a SIGNS total != 0: contract section 5 (v2.1)
            bad = rng.choice(["format", "period", "keep", "threshold", "operand", "total"])
            limit = total or self.p.workers         # T's largest valid value
            if bad == "threshold" and limit >= 31:
                bad = "format"                      # no 5-bit T exceeds it
            fields[bad] = {"format": 3, "period": 0, "keep": min(15, period + 1),
                           "threshold": rng.randrange(limit + 1, 32) if limit < 31 else 0,
                           "operand": 3,
                           "total": (rng.randrange(1, 1024) if operand == Operand.SIGNS else
                                     rng.choice([0, rng.randrange(count_total_max(operand) + 1,
                                                                  1024)]))}[bad]
            if bad == "keep" and period == 15:
                fields["period"], fields["keep"] = 14, 15
        # Contract v2.1 gave the formerly reserved bits [7:5] and [30:21] to
        # layout, operand and total (section 5): no random bits there any more.
        return cfg_encode(**fields)

    def window_word(self, name):
        """A BASE/LIMIT word: mostly inside the pools, sometimes anything."""
        rng = self.rng
        lb = self.p.line_bytes
        if rng.random() < 0.1:
            return rng.getrandbits(32)
        if name.endswith("_HI"):
            return rng.choice([0, 0, 0, 1, rng.getrandbits(20)])
        line = rng.choice(self.tb.lines) + (0 if name.startswith("BASE") else rng.randrange(1, 40))
        return (line * lb + rng.randrange(lb)) & 0xFFFF_FFFF

    async def region(self, r):
        """Program region ``r`` completely (CFG last, valid)."""
        for word in WINDOW_WORDS:
            await self.tb.control_write(self.rmap[f"REGION{r}_{word}"].offset,
                                        self.window_word(word), 0xF)
        await self.tb.control_write(self.rmap[f"REGION{r}_CFG"].offset, self.cfg(), 0xF)

    async def cover(self):
        """The directed phase (see the module docstring)."""
        tb, lb = self.tb, self.p.line_bytes
        kinds = [(mode, Layout.ELEMENT_MAJOR, Operand.SIGNS)
                 for mode in (Mode.BYPASS, Mode.IDENTITY)]
        kinds += [(mode, *view) for mode in (Mode.GBINARY, Mode.GTERNARY)
                  for view in self.views()]
        for n, kind in enumerate(kinds):
            cfg = self.cfg(kind=kind, enable=1)
            if self.p.regions:          # region 0 over every line (the first match wins)
                window = {"BASE_LO": 0, "BASE_HI": 0,
                          "LIMIT_LO": ((max(tb.lines) + 1) * lb) & 0xFFFF_FFFF,
                          "LIMIT_HI": ((max(tb.lines) + 1) * lb) >> 32}
                for word, value in window.items():
                    await tb.control_write(self.rmap[f"REGION0_{word}"].offset, value, 0xF)
                await tb.control_write(self.rmap["REGION0_CFG"].offset, cfg, 0xF)
            else:
                await tb.control_write(self.rmap["DEFAULT_CFG"].offset, cfg, 0xF)
            lines = self.rng.sample(tb.lines, 8)
            batch = [Request("req", self.rng.choice(READS), line * lb + self.rng.randrange(lb),
                             tag) for tag, line in zip(self.rng.sample(range(1 << 16), 8), lines)]
            await tb.batch(batch, read_faults=lines[:2] if n == 0 else ())
            await tb.check_status_and_counters()

    async def reconfigure(self):
        """A new valid configuration for DEFAULT_CFG or a whole region."""
        r = self.rng.randrange(-1, self.p.regions)
        if r < 0:
            await self.tb.control_write(self.rmap["DEFAULT_CFG"].offset, self.cfg(), 0xF)
        else:
            await self.region(r)

    async def control_op(self):
        rng = self.rng
        tb = self.tb
        regions = [f"REGION{r}" for r in range(self.p.regions)]
        roll = rng.random()
        if roll < 0.25:
            name = rng.choice(["DEFAULT_CFG"] + [f"{r}_CFG" for r in regions])
            await tb.control_write(self.rmap[name].offset, self.cfg(rng.random() < 0.7),
                                   self._strb())
        elif roll < 0.4 and regions:
            word = rng.choice(WINDOW_WORDS)
            await tb.control_write(self.rmap[f"{rng.choice(regions)}_{word}"].offset,
                                   self.window_word(word), self._strb())
        elif roll < 0.6:
            await tb.control_write(self.rmap["STATUS"].offset, rng.getrandbits(32), self._strb())
            await tb.control_read(self.rmap["STATUS"].offset)    # what RW1C left
        elif roll < 0.7:
            read_only = [reg.offset for reg in self.rmap.registers if reg.access == "RO"]
            offset = rng.choice(read_only + self.unmapped)
            await tb.control_write(offset, rng.getrandbits(32), self._strb())
        else:
            offsets = [reg.offset for reg in self.rmap.registers]
            await tb.control_read(rng.choice(offsets + rng.sample(self.unmapped, 4)))

    def requests(self, size):
        """A batch whose responses do not depend on the order the top serves it."""
        rng = self.rng
        lb = self.p.line_bytes
        written, read = set(), set()
        batch = []
        for tag in rng.sample(range(1 << 16), size):
            line = rng.choice(self.tb.lines)
            addr = line * lb + rng.randrange(lb)
            anywhere = rng.getrandbits(CXL_ADDR_BITS)
            roll = rng.random()
            if roll < 0.4 and line not in written:
                read.add(line)
                op = rng.choice(READS)
                batch.append(Request("req", op, addr, tag))
            elif roll < 0.7 and line not in written | read:
                written.add(line)
                op = rng.choice(list(RwdOpcode))
                be = rng.choice([0, (1 << lb) - 1, rng.getrandbits(lb), rng.getrandbits(lb)])
                batch.append(Request("rwd", op, addr, tag, rng.randbytes(lb), be))
            elif roll < 0.8:
                op = rng.choice([rng.choice(UNSUPPORTED_RWD), *RwdOpcode])
                poison = int(op in set(RwdOpcode) or rng.random() < 0.5)
                batch.append(Request("rwd", op, anywhere, tag, rng.randbytes(lb),
                                     rng.getrandbits(lb), poison))
            else:
                op = rng.choice([ReqOpcode.MEM_INV, ReqOpcode.MEM_INV_NT, ReqOpcode.MEM_SPEC_RD,
                                 *rng.sample(UNSUPPORTED_REQ, 2)])
                batch.append(Request("req", op, anywhere, tag))
        return batch

    def faults(self, batch):
        """Lines whose reads or writes the memory fails during ``batch`` (in
        about a third of the batches): two of the lines it reads, two it writes."""
        if self.rng.random() < 0.65:
            return (), ()
        lb = self.p.line_bytes
        reads = {r.addr // lb for r in batch if r.channel == "req" and r.opcode in READS}
        # The memory model checks for a fault only when a byte is written, so
        # a MemWrPtl with no byte enabled never fails there.
        writes = {r.addr // lb for r in batch
                  if r.channel == "rwd" and r.opcode in set(RwdOpcode) and not r.poison
                  and (r.be or r.opcode == RwdOpcode.MEM_WR)}
        return tuple(self.rng.sample(sorted(lines), min(2, len(lines)))
                     for lines in (reads, writes))


@cocotb.test()
async def test_device_model_matches_rtl(dut):
    params, bench = top_params(), bench_params()
    seed, batches = bench.get("seed", 1), bench.get("batches", 40)
    cover = bench.get("cover", False)
    tb = DeviceTB(dut, params, seed)
    stream = Stream(tb)
    await tb.reset()
    tb.set_pauses(0.2)
    # initial contents through MemWr on both, then every region programmed
    lb = params.line_bytes
    fill = np.random.default_rng(seed).integers(0, 256, (len(tb.lines), lb), dtype=np.uint8)
    await tb.batch([Request("rwd", RwdOpcode.MEM_WR, line * lb, tag, fill[tag].tobytes(), 0)
                    for tag, line in enumerate(tb.lines)])
    for r in range(params.regions):
        await stream.region(r)
    await tb.control_write(tb.map["DEFAULT_CFG"].offset, stream.cfg(), 0xF)
    if cover:
        await stream.cover()
    for _ in range(batches):
        await stream.reconfigure()
        for _ in range(stream.rng.randrange(8)):
            await stream.control_op()
        batch = stream.requests(stream.rng.randrange(8, 48))
        await tb.batch(batch, *stream.faults(batch))
        await tb.check_status_and_counters()
    tb.check_memory()
    counts = {name: await tb.control_read(tb.map[f"COUNTER{j}_LO"].offset)
              for j, name in enumerate(COUNTERS)}
    cocotb.log.info("differential: %s, counters %s", tb.seen, counts)
    print(f"NF_DEVICE_DIFF {tb.seen} {counts} {tb.reads}")
    assert all(counts[name] for name in COUNTERS[:4]), f"a read mode never ran: {counts}"
    assert tb.seen["poison"], "no read error was injected"
    if profile_named(params.profile).has("hierarchy"):
        # every layout and every operand read through a transform (contract
        # section 5; tests/hdl/top/test_hierarchy_rtl.py reads each pair)
        transformed = {x for mode, *view in tb.reads if mode in ("GBINARY", "GTERNARY")
                       for x in view}
        missing = {x.name for x in (*Layout, *Operand)} - transformed
        assert not missing, f"never read through a transform: {missing}"
