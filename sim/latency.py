"""``make latency``: the top's own latencies in cycles, one transaction at a
time, in the Amaranth simulator.

Every channel the top drives is always ready and the memory answers the
cycle after each address (AR -> R, AW and W -> B), so what is counted is
the top's own pipeline.  Figures (the table in docs/top.md, Latency and
rate): from the edge at which a request is accepted to the edge at which
its response is taken (MemWr -> NDR, BYPASS read -> DRS, G-Binary read ->
DRS), and from the edge at which AWVALID and WVALID are first offered
together, with nothing in flight, to the edge at which BVALID is taken
(control write).  ``measure``'s ``reads`` adds reads of other
configurations (DEFAULT_CFG written before each).

    python -m neuron_fabric.sim.latency [--profile full] [--line-bits 512]
"""

import sys

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import (DEFAULTS, PROFILES, Mode, Operand, ReqOpcode, RwdOpcode,
                                          TopParams, view_beats)
from neuron_fabric.contract.regmap import RegisterMap, cfg_encode
from neuron_fabric.hdl.top.top import Top
from neuron_fabric.sim.amaranth_sim import run_testbenches

__all__ = ["measure"]

#: Cycles the bench lets pass after a control write before the next read,
#: more than the request pipeline's quiet cycles after it.
SETTLE = 40


class _LatencyBench:
    """The bench's moves on the top ``dut`` through the simulator's ``ctx``:
    the memory behind ``m_axi`` answering the cycle after each address, a
    request offered, a read, a control write, each counting cycles."""

    def __init__(self, ctx, dut):
        self.ctx, self.dut = ctx, dut
        self.axi, self.axil = dut.m_axi, dut.s_axil
        self.beats = []             # the R beats owed: their IDs, a burst's in order

    async def start(self):
        """Every channel the top drives always ready; five cycles out of reset."""
        ctx, dut, axi, axil = self.ctx, self.dut, self.axi, self.axil
        for ready in (dut.s2m_drs.ready, dut.s2m_ndr.ready, axi.arready, axi.awready,
                      axi.wready, axil.bready, axil.rready):
            ctx.set(ready, 1)
        await ctx.tick().repeat(5)

    async def memory_cycle(self):
        """One edge, the memory answering the cycle after each address, a
        burst's beats (a packed view's read) on consecutive cycles."""
        ctx, axi = self.ctx, self.axi
        ar, arid, arlen = ctx.get(axi.arvalid), ctx.get(axi.arid), ctx.get(axi.arlen)
        aw, awid = ctx.get(axi.awvalid), ctx.get(axi.awid)
        taken = ctx.get(axi.rvalid) and ctx.get(axi.rready)
        await ctx.tick()
        if taken:
            self.beats.pop(0)
        if ar:
            self.beats += [(arid, k == arlen) for k in range(arlen + 1)]
        ctx.set(axi.rvalid, bool(self.beats))
        if self.beats:
            rid, last = self.beats[0]
            ctx.set(axi.rid, rid), ctx.set(axi.rdata, 0x0F0F0F0F), ctx.set(axi.rlast, last)
        ctx.set(axi.bvalid, aw or (ctx.get(axi.bvalid) and not ctx.get(axi.bready)))
        if aw:
            ctx.set(axi.bid, awid)

    async def until_taken(self, stream):
        n = 0
        while not self.ctx.get(stream.valid):
            await self.memory_cycle()
            n += 1
        return n

    async def offer(self, stream, **fields):
        ctx = self.ctx
        for name, value in fields.items():
            ctx.set(getattr(stream.payload, name), value)
        ctx.set(stream.valid, 1)
        await ctx.tick().until(stream.ready)
        ctx.set(stream.valid, 0)

    async def read(self, tag, addr=None):
        ctx, dut = self.ctx, self.dut
        await self.offer(dut.m2s_req, opcode=ReqOpcode.MEM_RD,
                         addr=64 * tag if addr is None else addr, tag=tag)
        n = await self.until_taken(dut.s2m_drs)
        word = ctx.get(dut.s2m_drs.payload.data) & 0xFFFFFFFF
        await self.memory_cycle()
        self.beats.clear()
        ctx.set(self.axi.rvalid, 0)
        return n, word

    async def read_rate(self, addrs):
        """Cycles per DRS of reads of ``addrs`` offered back to back, from the
        first DRS taken to the last (every channel ready)."""
        ctx, dut = self.ctx, self.dut
        req, drs = dut.m2s_req, dut.s2m_drs
        pending, edges, cycle = list(addrs), [], 0
        ctx.set(req.payload.opcode, ReqOpcode.MEM_RD)
        while len(edges) < len(addrs):
            if pending:
                ctx.set(req.payload.addr, pending[0]), ctx.set(req.payload.tag, len(pending))
            ctx.set(req.valid, bool(pending))
            accepted = bool(pending) and ctx.get(req.ready)
            if ctx.get(drs.valid):
                edges.append(cycle)
            await self.memory_cycle()
            cycle += 1
            if accepted:
                pending.pop(0)
        ctx.set(req.valid, 0)
        return (edges[-1] - edges[0]) / (len(edges) - 1)

    async def control_write(self, offset, value):
        ctx, axil = self.ctx, self.axil
        ctx.set(axil.awaddr, offset), ctx.set(axil.wdata, value), ctx.set(axil.wstrb, 0xF)
        ctx.set(axil.awvalid, 1), ctx.set(axil.wvalid, 1)
        n = 0
        while True:
            await ctx.tick()
            n += 1
            if ctx.get(axil.awready):
                ctx.set(axil.awvalid, 0)
            if ctx.get(axil.wready):
                ctx.set(axil.wvalid, 0)
            if ctx.get(axil.bvalid):
                break
        if ctx.get(axil.bresp):
            raise ValueError(f"the control port refused CFG {value:#010x}")
        await ctx.tick()
        return n


def measure(reads=None, **params):
    """``{name: cycles}`` for the top of ``params`` (``Top``'s keywords; see
    the module docstring), and the G-Binary read's first DRS word (a check
    that the read went through the core).  ``reads`` (``{name: CFG word}``)
    adds, for each, the cycles of a read with DEFAULT_CFG set to that word
    (after the G-Binary read, each with its own tag)."""

    dut = Top(**params)
    rmap = RegisterMap(dut.params)
    res = {}

    async def bench(ctx):
        b = _LatencyBench(ctx, dut)
        await b.start()
        await b.offer(dut.m2s_rwd, opcode=RwdOpcode.MEM_WR, addr=0x1000, tag=7, data=1)
        res["MemWr -> NDR"] = await b.until_taken(dut.s2m_ndr)
        await b.memory_cycle()
        ctx.set(dut.m_axi.bvalid, 0)
        res["BYPASS read -> DRS"], _ = await b.read(1)
        res["control write, AW/W -> BVALID"] = await b.control_write(
            rmap["DEFAULT_CFG"].offset, cfg_encode(Mode.GBINARY))
        await ctx.tick().repeat(SETTLE)
        res["G-Binary read -> DRS"], res["gbinary_word"] = await b.read(2)
        for tag, (name, cfg) in enumerate((reads or {}).items(), start=3):
            await b.control_write(rmap["DEFAULT_CFG"].offset, cfg)
            await ctx.tick().repeat(SETTLE)
            res[name], _ = await b.read(tag)
        if "REGION0_VIEW" in rmap:
            await _packed_view(ctx, b, rmap, dut.params, res)

    run_testbenches(dut, bench)
    return res


#: Where the bench's packed view (region 0) and its source window are.
VIEW_BASE, VIEW_SOURCE = 0x100_0000, 0x200_0000


async def _packed_view(ctx, b, rmap, params, res):
    """A packed view's read (contract section 6, G-Binary over SIGNS: a burst
    of B = W/2 beats) and the rate of such reads back to back: the R
    channel's one beat a cycle bounds it at a response every B cycles."""
    lb = params.line_bytes
    words = {"CFG": cfg_encode(Mode.GBINARY), "SOURCE_LO": VIEW_SOURCE, "VIEW": 1,
             "BASE_LO": VIEW_BASE, "LIMIT_LO": VIEW_BASE + (1 << 20),
             "CFG ": cfg_encode(Mode.GBINARY, enable=1)}
    for word, value in words.items():
        await b.control_write(rmap[f"REGION0_{word.strip()}"].offset, value)
    await ctx.tick().repeat(SETTLE)
    beats = view_beats(params.line_bits, params.workers, Operand.SIGNS)
    res[f"packed view read (B = {beats}) -> DRS"], _ = await b.read(0, VIEW_BASE)
    res["packed view reads back to back, cycles per DRS"] = await b.read_rate(
        [VIEW_BASE + k * lb for k in range(3 * params.max_outstanding)])


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.sim.latency", parameters=True,
                        description=__doc__.splitlines()[0])
    ap.add_argument("--profile", choices=sorted(PROFILES), default="full")
    ap.add_argument("--line-bits", type=int, default=DEFAULTS["line_bits"])
    args = ap.parse_args(argv)
    try:
        params = TopParams(line_bits=args.line_bits, profile=args.profile)
    except ValueError as e:
        ap.error(str(e))
    res = measure(line_bits=args.line_bits, profile=args.profile)
    print(f"top, {args.profile} profile, LINE_BITS {args.line_bits}, STAGES {params.stages}: "
          "cycles, one transaction at a time, memory answering the cycle after")
    for name, cycles in res.items():
        if name != "gbinary_word":
            print(f"  {name:48s} {cycles:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
