"""Conformance of the top to contract section 4.2: every M2S Req and RwD
opcode, AXI error responses, read after write, and ``devload``.

Written from the contract only (see :mod:`neuron_fabric.sim.conformance`).
"""

from neuron_fabric.sim.conformance.top_bench import (CsrModel, conformance_test, expect_error_count,
                                                     expect_ndr_cmp, expect_status, is_memdata,
                                                     merge_bytes, rand_line, report, run, setup)
from neuron_fabric.sim.conformance.top_contract import (CNT_WRITES, REQ_MEMINV, REQ_MEMINVNT,
                                                        REQ_MEMRD, REQ_MEMRDDATA, REQ_MEMSPECRD,
                                                        RWD_MEMWR, RWD_MEMWRPTL, ST_POISON_DROP,
                                                        ST_RD_ERR, ST_UNSUPPORTED, ST_WR_ERR, cfg)


@conformance_test
async def req_opcodes(dut):
    """Every M2S Req row of contract 4.2, and the AXI read request shape."""
    top = await setup(dut, 6)
    rng = top.rng
    errs = []
    addrs = [0x1000 + run.LB * k for k in range(8)]
    for a in addrs:
        top.ram.set_line(a, rand_line(rng))
    # MemRd / MemRdData: DRS MemData, same tag, stored bytes (DEFAULT_CFG is BYPASS)
    for op in (REQ_MEMRD, REQ_MEMRDDATA):
        for a in addrs[:4]:
            off = rng.randrange(run.LB)  # low address bits are ignored
            n_ar = len(top.ar)
            item, rsp = await top.read_line(a + off, op)
            exp = top.ram.line(a)
            if not is_memdata(rsp) or rsp["data"] != exp:
                errs.append(f"op {op:#x} addr {a + off:#x}: response {rsp}, expected DRS MemData "
                            f"data {exp:#x}")
            ars = top.ar[n_ar:]
            if len(ars) != 1 or ars[0]["addr"] != a or ars[0]["len"] != 0 or \
                    (1 << ars[0]["size"]) != run.LB:
                errs.append(f"op {op:#x} addr {a + off:#x}: AXI AR {ars}, expected one beat at {a:#x}")
    await top.quiet()
    await expect_status(top, errs, 0, "reads", clear=False)
    # MemInv / MemInvNT: NDR Cmp, memory untouched, no STATUS bit
    for op in (REQ_MEMINV, REQ_MEMINVNT):
        n_aw, n_log = len(top.aw), len(top.ram.write_log)
        item, rsp = await top.read_line(addrs[5], op)
        expect_ndr_cmp(errs, rsp, f"op {op:#x}")
        await top.quiet()
        if len(top.aw) != n_aw or len(top.ram.write_log) != n_log:
            errs.append(f"op {op:#x}: memory written")
        await expect_status(top, errs, 0, f"op {op:#x}", clear=False)
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
    await expect_status(top, errs, 0, "MemSpecRd", clear=False)
    # anything else: NDR Cmp, memory untouched, UNSUPPORTED
    others = [op for op in range(16) if op not in
              (REQ_MEMINV, REQ_MEMRD, REQ_MEMRDDATA, REQ_MEMSPECRD, REQ_MEMINVNT)]
    for op in others:
        n_aw = len(top.aw)
        item, rsp = await top.read_line(addrs[7], op)
        await top.quiet(10)
        expect_ndr_cmp(errs, rsp, f"unsupported op {op:#x}")
        if len(top.responses(item["tag"])) != 1:
            errs.append(f"unsupported op {op:#x}: {len(top.responses(item['tag']))} responses")
        if len(top.aw) != n_aw:
            errs.append(f"unsupported op {op:#x}: memory written")
        await expect_status(top, errs, ST_UNSUPPORTED, f"unsupported op {op:#x}")
    await expect_error_count(top, errs, len(others), "unsupported requests")
    report(errs)


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
    addrs = [0x2000 + run.LB * k for k in range(6)]
    for a in addrs:
        top.ram.set_line(a, rand_line(rng))
    # MemWr: all bytes whatever be
    for k, be in enumerate((0, (1 << run.LB) - 1, rng.randrange(1 << run.LB))):
        a = addrs[k]
        data = rand_line(rng)
        nb = len(top.b)
        item, rsp = await top.write_line(a + rng.randrange(run.LB), data, be=be, op=RWD_MEMWR)
        got = top.ram.line(a)
        expect_ndr_cmp(errs, rsp, "MemWr")
        if got != data:
            errs.append(f"MemWr be={be:#x}: memory {got:#x}, expected {data:#x}")
        bs = top.b[nb:]
        if not bs or rsp["edge"] <= bs[0]["edge"]:
            errs.append(f"MemWr: NDR at edge {rsp['edge']} not after the AXI B {bs}")
        if top.aw and top.aw[-1]["addr"] != a:
            errs.append(f"MemWr: AXI AW address {top.aw[-1]['addr']:#x}, expected {a:#x}")
    # MemWrPtl: only be bytes
    for k, be in enumerate((0x1, (1 << run.LB) - 2, rng.randrange(1, 1 << run.LB), 0)):
        a = addrs[3 + (k % 3)]
        old = top.ram.line(a)
        data = rand_line(rng)
        nb = len(top.b)
        item, rsp = await top.write_line(a, data, be=be, op=RWD_MEMWRPTL)
        exp = merge_bytes(old, data, be)
        got = top.ram.line(a)
        expect_ndr_cmp(errs, rsp, "MemWrPtl")
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
    await expect_status(top, errs, 0, "good writes", clear=False)
    # poison: nothing written, NDR Cmp, POISON_DROP
    for op in (RWD_MEMWR, RWD_MEMWRPTL):
        await _expect_dropped(top, errs, addrs[0], ST_POISON_DROP, f"poisoned op {op:#x}",
                              be=(1 << run.LB) - 1, op=op, poison=1)
    # other opcodes: nothing written, NDR Cmp, UNSUPPORTED
    others = [op for op in range(16) if op not in (RWD_MEMWR, RWD_MEMWRPTL)]
    for op in others:
        await _expect_dropped(top, errs, addrs[1], ST_UNSUPPORTED, f"RwD op {op:#x}", op=op)
    await expect_error_count(top, errs, 2 + len(others), "error events")
    report(errs)


async def _expect_dropped(top, errs, a, status, what, **write):
    """A write to line ``a`` that must write nothing: NDR Cmp, memory
    untouched, STATUS ``status`` only (then cleared)."""
    old = top.ram.line(a)
    n_aw = len(top.aw)
    item, rsp = await top.write_line(a, ~old, **write)
    await top.quiet(10)
    expect_ndr_cmp(errs, rsp, what)
    if top.ram.line(a) != old or len(top.aw) != n_aw:
        errs.append(f"{what}: memory written")
    await expect_status(top, errs, status, what)


@conformance_test
async def axi_error_responses(dut):
    """AXI RRESP != OKAY -> DRS poison + RD_ERR; BRESP != OKAY -> NDR Cmp + WR_ERR."""
    top = await setup(dut, 8)
    rng = top.rng
    csr = CsrModel()
    errs = []
    good, bad = 0x3000, 0x3000 + run.LB
    for a in (good, bad):
        top.ram.set_line(a, rand_line(rng))
    top.ram.bad_read.add(bad)
    top.ram.bad_write.add(bad)
    n_err = 0
    for mode in (0, 1, 3):  # BYPASS path and datapath path
        await csr.set_default(top, cfg(mode=mode, fmt=0, period=3, keep=2))
        item, rsp = await top.read_line(bad)
        n_err += 1
        if not is_memdata(rsp, poison=1):
            errs.append(f"mode {mode}: read with RRESP SLVERR answered {rsp}, expected DRS "
                        f"MemData with poison")
        await expect_status(top, errs, ST_RD_ERR, f"mode {mode}: RRESP SLVERR")
        item, rsp = await top.read_line(good)
        exp, _ = csr.expect(good, top.ram.line(good))
        if rsp["poison"] or rsp["data"] != exp:
            errs.append(f"mode {mode}: good read after an error: {rsp}, expected data {exp:#x}")
    for op in (RWD_MEMWR, RWD_MEMWRPTL):
        item, rsp = await top.write_line(bad, rand_line(rng), op=op)
        n_err += 1
        expect_ndr_cmp(errs, rsp, f"op {op:#x} with BRESP SLVERR")
        await expect_status(top, errs, ST_WR_ERR, f"op {op:#x}: BRESP SLVERR")
    await expect_error_count(top, errs, n_err, "AXI errors")
    report(errs)


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
        a = 0x7000 + run.LB * rng.randrange(4)
        data = rand_line(rng)
        w = top.rwd(RWD_MEMWR, a, data)
        # the read waits for the write's NDR, then goes in at once
        await top.wait_resp([w])
        item, rsp = await top.read_line(a)
        if rsp["data"] != data:
            errs.append(f"write {k}: read after NDR gave {rsp['data']:#x}, expected {data:#x}")
    top.ram.set_pause(rng, 0)
    report(errs, 10)


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
    items = [top.req(REQ_MEMRD, 0x8000 + run.LB * k) for k in range(run.MAX_OUT * 2)]
    items += [top.rwd(RWD_MEMWR, 0x9000 + run.LB * k, k) for k in range(run.MAX_OUT)]
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
    items = [top.req(REQ_MEMRD, 0x13000 + run.LB * k) for k in range(2 * run.MAX_OUT + 4)]
    await top.cycles(100)
    n_acc = sum(1 for i in items if "edge" in i)
    last = top.devload_log[-1]
    top.dut._log.info("devload_full_table: %d reads accepted with R stalled, %d AXI reads "
                      "issued, devload %s", n_acc, len(top.ar), last[1:])
    assert len(top.ar) <= run.MAX_OUT, (
        f"{len(top.ar)} AXI reads outstanding with MAX_OUTSTANDING = {run.MAX_OUT}")
    assert n_acc >= 1
    if n_acc >= run.MAX_OUT:
        assert last[1] == 3 and last[2] == 3, (
            f"{n_acc} reads accepted and unanswered (MAX_OUTSTANDING {run.MAX_OUT}): devload "
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
