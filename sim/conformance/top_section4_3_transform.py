"""Conformance of the top to contract section 4.3: region selection, the
phase, the configuration fixed at accept, CSR writes applying after BVALID,
and the STAGES cycles a low-bit read takes more than BYPASS.

Written from the contract only (see :mod:`neuron_fabric.sim.conformance`).
"""

from cocotb.triggers import RisingEdge

from neuron_fabric.sim.conformance.top_bench import (CsrModel, conformance_test, rand_line, report,
                                                     run, setup)
from neuron_fabric.sim.conformance.top_contract import (DEFAULT_CFG, REQ_MEMRD, REQ_MEMRDDATA,
                                                        R_CFG, cfg)


@conformance_test
async def region_selection_and_phase(dut):
    top = await setup(dut, 10)
    rng = top.rng
    csr = CsrModel()
    errs = []
    assert run.REGIONS >= 2, "this test needs two regions"
    # region 0 and 1 overlap; region 0 wins where both match; region 2 (if any) disabled
    b0, l0 = 0x10000, 0x10000 + 20 * run.LB
    b1, l1 = 0x10000 + 12 * run.LB, 0x10000 + 40 * run.LB
    await csr.set_region(top, 1, cfg(mode=3, fmt=0, kind=0, period=7, keep=3, enable=1),
                         b1 + 3, l1 + 5)   # low bits ignored
    await csr.set_region(top, 0, cfg(mode=3, fmt=1, kind=0, period=5, keep=2, enable=1),
                         b0, l0)
    if run.REGIONS > 2:
        await csr.set_region(top, 2, cfg(mode=2, fmt=2, enable=0), 0, 1 << 40)
    # region above 4 GiB (BASE_HI / LIMIT_HI), with MARGIN gate
    hi_base = (0x5 << 32) | 0x100 * run.LB
    r_hi = run.REGIONS - 1
    if r_hi > 1:
        await csr.set_region(top, r_hi, cfg(mode=3, fmt=2, kind=1, thresh=2, period=3,
                                            keep=1, enable=1), hi_base, hi_base + 9 * run.LB)
    elif run.REGIONS > 2:
        # an enabled empty window (BASE == LIMIT) matches nothing
        await csr.set_region(top, 2, cfg(mode=1, enable=1), b0 + 2 * run.LB, b0 + 2 * run.LB)
    await csr.set_default(top, cfg(mode=2, fmt=0))
    lines = set()
    for k in range(-3, 44):
        lines.add(0x10000 + k * run.LB)
    for k in (-1, 0, 1, 8, 9):
        lines.add(hi_base + k * run.LB)
    for a in (0, run.LB, (1 << 52) - run.LB):
        lines.add(a)
    all_ones_lane = sum(((1 << run.W) - 1) << (i * run.W) for i in range(run.E))
    for a in sorted(lines):
        # mixes lanes of every popcount; all-ones for some lines to read phases directly
        top.ram.set_line(a, all_ones_lane if (a // run.LB) % 3 == 0 else rand_line(rng))
    for a in sorted(lines):
        off = rng.randrange(run.LB)
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
    for a in (b0, b1, b1 + run.LB, l0 - run.LB):
        item, rsp = await top.read_line(a)
        exp, _ = csr.expect(a, top.ram.line(a))
        if rsp["data"] != exp:
            errs.append(f"after disabling region 0: addr {a:#x} data {rsp['data']:#x}, expected {exp:#x}")
    report(errs)


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
        assert set(lat[mode]) == {lat[0][0] + run.STAGES}, (
            f"mode {mode} latency {lat[mode]} vs BYPASS {lat[0][0]}: expected +{run.STAGES}")


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
                         a_reg, a_reg + run.LB)
    steps = [(DEFAULT_CFG, a_def, cfg(mode=2, fmt=1)),
             (DEFAULT_CFG, a_def, cfg(mode=0)),
             (DEFAULT_CFG, a_def, cfg(mode=3, fmt=2, kind=1, thresh=run.W)),
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
    report(errs)


@conformance_test
async def phase_large_addresses(dut):
    """phase = (line_index * E) mod P for large line indices (DEFAULT_CFG: BASE = 0; a
    region with a large window), several periods including non-powers of two."""
    top = await setup(dut, 17)
    rng = top.rng
    csr = CsrModel()
    errs = []
    all_ones = sum(((1 << run.W) - 1) << (i * run.W) for i in range(run.E))
    addrs = sorted({rng.getrandbits(52) & run.ALIGN for _ in range(12)} |
                   {(1 << 52) - run.LB, (1 << 32) - run.LB, 1 << 32, (1 << 40) + 7 * run.LB})
    rbase = (0x3 << 36) + 5 * run.LB
    rlimit = (1 << 52) - 3 * run.LB
    raddrs = sorted({rbase, rbase + run.LB, rlimit - run.LB} |
                    {(rng.randrange(rbase, rlimit)) & run.ALIGN for _ in range(8)})
    for a in addrs + raddrs:
        top.ram.set_line(a, all_ones if rng.random() < 0.5 else rand_line(rng))
    for period, keep in ((13, 6), (7, 3), (11, 10), (15, 7), (6, 1), (9, 4)):
        await csr.set_default(top, cfg(mode=3, fmt=0, kind=0, period=period, keep=keep))
        if run.REGIONS:
            await csr.set_region(top, 0, cfg(mode=3, fmt=1, kind=0, period=period, keep=keep,
                                             enable=1), rbase, rlimit)
        for a in addrs + (raddrs if run.REGIONS else []):
            item, rsp = await top.read_line(a)
            exp, _ = csr.expect(a, top.ram.line(a))
            if rsp["data"] != exp:
                v, base = csr.select(a)
                errs.append(f"P={period} K={keep} addr {a:#x} (line_index {(a - base) // run.LB:#x}): "
                            f"{rsp['data']:#x}, expected {exp:#x}")
            if len(errs) > 8:
                break
    report(errs)


@conformance_test
async def config_captured_at_accept(dut):
    """Reads held in flight (AXI R stalled, DRS not ready) keep the configuration of the
    moment they were accepted, whatever CSR writes follow."""
    top = await setup(dut, 18)
    rng = top.rng
    csr = CsrModel()
    errs = []
    a0 = 0x12000
    lines = [a0 + run.LB * k for k in range(6)]
    for a in lines:
        top.ram.set_line(a, rand_line(rng))
    if run.REGIONS:
        await csr.set_region(top, 0, cfg(mode=3, fmt=2, kind=1, thresh=1, enable=1),
                             a0 + 3 * run.LB, a0 + 6 * run.LB)
    hold = [True]

    def stall():
        while True:
            yield hold[0]
    top.ram.read_if.r_channel.set_pause_generator(stall())
    top.p_drs_ready = 0.0
    configs = [cfg(mode=2, fmt=1), cfg(mode=3, fmt=0, kind=0, period=5, keep=2), cfg(mode=0)]
    # Each batch is `per` reads and one more; all of them must fit in the in-flight
    # table, since no more than MAX_OUTSTANDING reads are accepted with R stalled.
    per = max(1, min(2, run.MAX_OUT // len(configs) - 1))
    items = []
    for k, v in enumerate(configs):
        await csr.set_default(top, v)
        if run.REGIONS and k == 1:
            # move region 0's window and change its configuration too
            await csr.set_region(top, 0, cfg(mode=1, enable=1), a0, a0 + 2 * run.LB)
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
    report(errs)
