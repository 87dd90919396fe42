"""Conformance of the top to contract section 4.4: the control registers'
reset values, read/write and WSTRB, bad input on the control port, STATUS
(RW1C) and the counters.

Written from the contract only (see :mod:`neuron_fabric.sim.conformance`).
"""

from cocotbext.axi import AxiResp

from neuron_fabric.sim.conformance.top_bench import (CsrModel, conformance_test, expect_error_count,
                                                     expect_refused, rand_line, report, run, setup)
from neuron_fabric.sim.conformance.top_contract import (CAPS0, CAPS1, CAPS2, CAPS2_HIERARCHY,
                                                        CAPS2_PACKED_VIEW, VIEW_OFFSETS,
                                                        CAPS2_PROFILE_SHIFT, PROFILE_FULL,
                                                        PROFILE_PAPER, CFG_DEFAULT_RESET, CNT_ERRORS,
                                                        CNT_HI, CNT_LO, CNT_WRITES, DEFAULT_CFG, ID,
                                                        REQ_MEMRD, REQ_MEMRDDATA, RWD_MEMWR,
                                                        RWD_MEMWRPTL, R_BASE_HI, R_BASE_LO, R_CFG,
                                                        R_LIMIT_HI, R_LIMIT_LO, STATUS, ST_BAD_CSR,
                                                        ST_POISON_DROP, ST_RD_ERR, ST_UNSUPPORTED,
                                                        ST_WR_ERR, VERSION, cfg, cfg_valid)


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
    await expect(CAPS0, run.LINE_BITS | run.W << 16 | run.STAGES << 24, "CAPS0")
    await expect(CAPS1, run.REGIONS | run.MAX_OUT << 8, "CAPS1")
    # the benches build the full profile with the hierarchy extension, and
    # the paper profile without it
    await expect(CAPS2, (CAPS2_HIERARCHY if run.HIERARCHY else 0) |
                 (PROFILE_FULL if run.HIERARCHY else PROFILE_PAPER) << CAPS2_PROFILE_SHIFT,
                 "CAPS2", mask=CAPS2_HIERARCHY | 0xFF << CAPS2_PROFILE_SHIFT)
    await expect(DEFAULT_CFG, CFG_DEFAULT_RESET, "DEFAULT_CFG")
    await expect(STATUS, 0, "STATUS")
    for j in range(6):
        await expect(CNT_LO(j), 0, f"COUNTER {j} LO")
        await expect(CNT_HI(j), 0, f"COUNTER {j} HI")
    for r in range(run.REGIONS):
        await expect(R_CFG(r), 0, f"REGION {r} CFG enable", mask=1 << 31)
        for f, name in ((R_BASE_LO, "BASE_LO"), (R_BASE_HI, "BASE_HI"),
                        (R_LIMIT_LO, "LIMIT_LO"), (R_LIMIT_HI, "LIMIT_HI")):
            await expect(f(r), 0, f"REGION {r} {name}")
    report(errs)


@conformance_test
async def csr_rw_wstrb_reserved(dut):
    top = await setup(dut, 2)
    errs = []
    # full-word writes, reserved bits and the DEFAULT_CFG enable bit read 0
    v = cfg(mode=3, fmt=1, kind=1, period=9, keep=4, thresh=run.W)
    # contract v2.1: bits [7:5] and [30:21] became fields (section 5); no
    # CFG bit below the enable bit is reserved any more
    junk = 0
    for addr, val, exp in ((DEFAULT_CFG, v | junk | 1 << 31, v),
                           (DEFAULT_CFG, cfg(period=1, keep=1), cfg(period=1, keep=1)),
                           (R_CFG(0), v | junk | 1 << 31, v | 1 << 31),
                           (R_CFG(run.REGIONS - 1), v | junk, v),
                           (R_BASE_LO(0), 0x12345678 & run.ALIGN, 0x12345678 & run.ALIGN),
                           (R_BASE_HI(0), 0xFFFFFFFF, 0x000FFFFF),
                           (R_LIMIT_LO(run.REGIONS - 1), 0xFFFFFFFF & run.ALIGN, 0xFFFFFFFF & run.ALIGN),
                           (R_LIMIT_HI(run.REGIONS - 1), 0xABCDE123, 0x000DE123)):
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
    resp = await top.wr(DEFAULT_CFG, 0xFF00FF0F | (run.W << 16), strb=0b0100)
    exp = (exp & ~0xFF0000) | (run.W << 16)
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
    await top.wr_ok(R_BASE_LO(0), 0x11223340 & run.ALIGN)
    resp = await top.wr(R_BASE_LO(0), 0xAABBCCDD, strb=0b0100)
    got, _ = await top.rd(R_BASE_LO(0))
    if resp != 0 or got != (0x11BB3340 & run.ALIGN):
        errs.append(f"WSTRB 0100 on BASE_LO: BRESP {resp}, read {got:#010x}, expected {0x11BB3340 & run.ALIGN:#010x}")
    # a zero WSTRB changes nothing
    before, _ = await top.rd(DEFAULT_CFG)
    resp = await top.wr(DEFAULT_CFG, 0x0, strb=0)
    got, _ = await top.rd(DEFAULT_CFG)
    if got != before:
        errs.append(f"WSTRB 0000 changed DEFAULT_CFG {before:#x} -> {got:#x}")
    assert await top.status() == 0, "STATUS set by valid writes"
    report(errs)


@conformance_test
async def csr_bad_cfg_writes(dut):
    top = await setup(dut, 3)
    errs = []
    good = cfg(mode=3, fmt=1, kind=0, period=6, keep=4, thresh=2)
    bad_values = {
        "format 3": cfg(mode=3, fmt=3, period=6, keep=4),
        "P=0": cfg(mode=3, fmt=0, period=0, keep=0),
        "K>P": cfg(mode=3, fmt=0, period=4, keep=5),
        "T>W": cfg(mode=3, fmt=0, kind=1, period=6, keep=4, thresh=run.W + 1),
        "T=31": cfg(mode=2, fmt=0, kind=1, period=6, keep=4, thresh=31),
        "K=15>P=14": cfg(mode=1, period=14, keep=15),
        # contract section 5 (v2.1)
        "operand 3": cfg(mode=2, operand=3, total=8),
        "SIGNS with total 1": cfg(mode=2, total=1),
    }
    # the limits themselves are fine: K = P, T = W, P = 15 (and with the
    # extension: the largest totals, T = total, a worker-major layout)
    limits = [cfg(period=5, keep=5), cfg(kind=1, thresh=run.W), cfg(period=15, keep=0)]
    if run.HIERARCHY:
        bad_values.update({
            "COUNTS4 with total 0": cfg(mode=2, operand=1, total=0),
            "COUNTS4 with total 121": cfg(mode=2, operand=1, total=121),
            "COUNTS8 with total 1021": cfg(mode=2, operand=2, total=1021),
            "COUNTS8 with T > total": cfg(mode=3, kind=1, operand=2, total=5, thresh=6),
            "worker-major SIGNS with T > W": cfg(mode=3, kind=1, layout=1, thresh=run.W + 1),
        })
        limits += [cfg(mode=2, operand=1, total=120, layout=1),
                   cfg(mode=3, kind=1, operand=2, total=1020, thresh=31),
                   cfg(mode=3, kind=1, operand=2, total=7, thresh=7)]
    else:
        bad_values["layout 1 without hierarchy"] = cfg(mode=2, layout=1)
        bad_values["COUNTS4 without hierarchy"] = cfg(mode=2, operand=1, total=8)
    assert not any(cfg_valid(v, run.W, run.HIERARCHY) for v in bad_values.values())
    assert all(cfg_valid(v, run.W, run.HIERARCHY) for v in limits)
    n_bad = 0
    for reg, en in ((DEFAULT_CFG, 0), (R_CFG(0), 1 << 31), (R_CFG(run.REGIONS - 1), 0)):
        await top.wr_ok(reg, good | en)
        for what, v in bad_values.items():
            await expect_refused(top, errs, reg, v | en, f"{reg:#05x} {what}", keeps=good | en)
            n_bad += 1
        for v in limits:
            resp = await top.wr(reg, v | en)
            got, _ = await top.rd(reg)
            if resp != 0 or got != v | en:
                errs.append(f"{reg:#05x} valid {v:#x}: BRESP {resp}, read {got:#x}")
        await top.wr_ok(reg, good | en)
        # a byte write checked on the value it would produce: K=5 > P=3 via byte 1
        old = cfg(period=3, keep=2) | en
        await top.wr_ok(reg, old)
        await expect_refused(top, errs, reg, 0x00005300, f"{reg:#05x} byte write K=5>P=3",
                             keeps=old, strb=0b0010)
        # format 3 via byte 0 only
        await expect_refused(top, errs, reg, 0x0000000C, f"{reg:#05x} byte write format 3",
                             keeps=old, strb=0b0001)
        n_bad += 2
    await expect_error_count(top, errs, n_bad, "rejected CFG writes")
    report(errs)


@conformance_test
async def csr_ro_and_unmapped(dut):
    top = await setup(dut, 4)
    errs = []
    n_bad = 0
    ro = [ID, VERSION, CAPS0, CAPS1, CAPS2] + [CNT_LO(j) for j in range(6)] + [CNT_HI(j) for j in range(6)]
    for addr in ro:
        # counter 5 counts the rejected write itself
        counting = addr in (CNT_LO(CNT_ERRORS), CNT_HI(CNT_ERRORS))
        before = None if counting else (await top.rd(addr))[0]
        await expect_refused(top, errs, addr, 0xFFFFFFFF, f"RO {addr:#05x}", keeps=before)
        n_bad += 1
    # contract 6.1: a build without the packed view (CAPS2 bit 5) leaves the
    # view's offsets of every region unmapped (with it they are registers,
    # top_section6_view)
    caps2, _ = await top.rd(CAPS2)
    views = [] if caps2 & CAPS2_PACKED_VIEW else \
        [R_CFG(r) + k for r in range(run.REGIONS) for k in VIEW_OFFSETS]
    unmapped = [0x01C, 0x040, 0x07C, CNT_LO(6), CNT_HI(6), 0x0FC, *views,
                R_CFG(run.REGIONS), R_BASE_LO(run.REGIONS), R_LIMIT_HI(run.REGIONS),
                0x100 + 0x20 * 16 - 4, 0x400, 0x800, 0xFFC]
    unmapped = sorted({a for a in unmapped if a < 0x1000})
    snapshot = {}
    for addr in [DEFAULT_CFG] + [f(r) for r in range(run.REGIONS) for f in
                                 (R_CFG, R_BASE_LO, R_BASE_HI, R_LIMIT_LO, R_LIMIT_HI)]:
        snapshot[addr] = (await top.rd(addr))[0]
    for addr in unmapped:
        v, r = await top.rd(addr)
        if r != AxiResp.SLVERR or v != 0:
            errs.append(f"unmapped read {addr:#05x}: RRESP {r}, data {v:#x} (expected SLVERR, 0)")
        await expect_refused(top, errs, addr, 0xFFFFFFFF, f"unmapped write {addr:#05x}")
        n_bad += 1
    for addr, v in snapshot.items():
        now = (await top.rd(addr))[0]
        if now != v:
            errs.append(f"{addr:#05x} changed {v:#x} -> {now:#x} by RO/unmapped writes")
    await expect_error_count(top, errs, n_bad, "rejected writes")
    report(errs)


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
    report(errs)


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
    items = [top.rwd(RWD_MEMWR, a + run.LB, rand_line(rng)) for _ in range(3)]
    items += [top.rwd(RWD_MEMWRPTL, a + run.LB, rand_line(rng), be=0x3) for _ in range(2)]
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
    report(errs)
