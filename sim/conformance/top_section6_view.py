"""Conformance of the top to contract section 6, the packed result view.

A build tells whether it has the view in CAPS2 bit 5 (section 4.4).  On a
build without it the tests check what section 6.1 says of such a build
(the offsets are unmapped, a read's AR is one beat); on a build with it,
the registers (6.1), the reads of a view over sign lines of both layouts
(6.2: the view line against the section 2 reference of each source line,
gated as line ``k`` of a region whose BASE is SOURCE), the burst and its
errors (6.3) and the refused writes (6.4).

Written from the contract only (see :mod:`neuron_fabric.sim.conformance`).
"""

from cocotbext.axi import AxiResp

from neuron_fabric.sim.conformance.common import FMT_SIGN, lane_ref
from neuron_fabric.sim.conformance.top_bench import (conformance_test, expect_refused, report, run,
                                                     setup)
from neuron_fabric.sim.conformance.top_contract import (CAPS2, CAPS2_PACKED_VIEW, CNT_ERRORS, R_BASE_HI,
                                                        R_BASE_LO, R_CFG, R_LIMIT_HI, R_LIMIT_LO,
                                                        ST_RD_ERR, VIEW_OFFSETS, cfg)

# section 6.1 (deliberate clean-room copy: the offsets of region r's view words)
def R_VIEW(r): return R_CFG(r) + VIEW_OFFSETS[0]
def R_SOURCE_LO(r): return R_CFG(r) + VIEW_OFFSETS[1]
def R_SOURCE_HI(r): return R_CFG(r) + VIEW_OFFSETS[2]


#: Where the bench's view and its source window are (SOURCE 4 KiB-aligned).
VIEW_BASE, SOURCE = 0x20_0000, 0x4_3000


async def _has_view(top):
    caps2, _ = await top.rd(CAPS2)
    return bool(caps2 & CAPS2_PACKED_VIEW)


def _beats():
    """B for sign lines (section 6.2): (LINE_BITS / 2) / E = W / 2."""
    return run.W // 2


def _element_major(line, layout):
    """A sign line as section 2 lays it out (section 5.2: worker-major bit
    k*E + j is element-major bit j*W + k)."""
    if not layout:
        return line
    out = 0
    for k in range(run.W):
        for j in range(run.E):
            out |= ((line >> (k * run.E + j)) & 1) << (j * run.W + k)
    return out


def view_line_ref(sources, j, mode, kind, period, keep, thresh, layout):
    """View line ``j`` (section 6.2) from its B source lines: element
    ``t = b*E + i`` of the view is sgn(a') of lane i of source line
    ``k = j*B + b``, whose phase is ``(k * E) mod P``, at bits [2t, 2t+2)."""
    out = 0
    for b, line in enumerate(sources):
        k = j * _beats() + b
        line = _element_major(line, layout)
        for i in range(run.E):
            lane = (line >> (i * run.W)) & ((1 << run.W) - 1)
            s = lane_ref(lane, i, run.W, mode, FMT_SIGN, kind, period, keep, thresh,
                         (k * run.E) % period)
            out |= (s & 3) << (2 * (b * run.E + i))
    return out


@conformance_test
async def view_registers_and_refusals(dut):
    top = await setup(dut, 60)
    errs = []
    r = run.REGIONS - 1
    if not await _has_view(top):
        # section 6.1: without the feature the offsets are unmapped
        for addr in (R_VIEW(r), R_SOURCE_LO(r), R_SOURCE_HI(r)):
            v, resp = await top.rd(addr)
            if resp != AxiResp.SLVERR or v:
                errs.append(f"{addr:#05x} without the view: RRESP {resp}, data {v:#x}")
        report(errs)
        return
    # 6.1: reset 0; SOURCE keeps bits [31:12] and [51:32]; VIEW bit 0
    for addr in (R_VIEW(r), R_SOURCE_LO(r), R_SOURCE_HI(r)):
        v, resp = await top.rd(addr)
        if resp != AxiResp.OKAY or v:
            errs.append(f"{addr:#05x} after reset: RRESP {resp}, data {v:#x}, expected 0")
    for addr, want in ((R_SOURCE_LO(r), 0xFFFF_F000), (R_SOURCE_HI(r), 0x000F_FFFF),
                       (R_VIEW(r), 0)):
        resp = await top.wr(addr, 0xFFFF_FFFF) if addr != R_VIEW(r) else AxiResp.OKAY
        v, _ = await top.rd(addr)
        if resp != AxiResp.OKAY or v != want:
            errs.append(f"{addr:#05x}: BRESP {resp}, reads {v:#x}, expected {want:#x}")
    # 6.4: VIEW.packed under BYPASS refused; CFG to BYPASS/IDENTITY of a view refused
    await expect_refused(top, errs, R_VIEW(r), 1, "VIEW set under BYPASS", keeps=0)
    await top.wr_ok(R_CFG(r), cfg(mode=3, kind=0, period=3, keep=2))
    await top.wr_ok(R_VIEW(r), 0xFFFF_FFFF)
    if (await top.rd(R_VIEW(r)))[0] != 1:
        errs.append("VIEW does not read 1 after a write of ones under G-Ternary")
    for mode in (0, 1):
        await expect_refused(top, errs, R_CFG(r), cfg(mode=mode), f"CFG mode {mode} of a view",
                             keeps=cfg(mode=3, kind=0, period=3, keep=2))
    # every format is taken by a view (6.4)
    for fmt in (0, 1, 2):
        if await top.wr(R_CFG(r), cfg(mode=2, fmt=fmt)) != AxiResp.OKAY:
            errs.append(f"a view refused G-Binary with format {fmt}")
    await top.wr_ok(R_VIEW(r), 0)
    await top.wr_ok(R_CFG(r), cfg(mode=0))
    if await top.counter(CNT_ERRORS) != 3:
        errs.append(f"COUNTER 5 = {await top.counter(CNT_ERRORS)} after 3 refused writes")
    report(errs)


async def _program_view(top, r, v):
    await top.wr_ok(R_CFG(r), v & ~(1 << 31))
    await top.wr_ok(R_SOURCE_LO(r), SOURCE & 0xFFFF_FFFF)
    await top.wr_ok(R_SOURCE_HI(r), SOURCE >> 32)
    await top.wr_ok(R_VIEW(r), 1)
    for reg, value in ((R_BASE_LO(r), VIEW_BASE), (R_BASE_HI(r), 0),
                       (R_LIMIT_LO(r), VIEW_BASE + 8 * run.LB), (R_LIMIT_HI(r), 0)):
        await top.wr_ok(reg, value)
    await top.wr_ok(R_CFG(r), v | 1 << 31)


@conformance_test
async def view_reads_and_bursts(dut):
    top = await setup(dut, 61)
    rng, errs = top.rng, []
    if not await _has_view(top):
        # 6.3: a read that is no view's is one beat (ARLEN 0)
        for k in range(4):
            top.ram.set_line(SOURCE + k * run.LB, rng.getrandbits(run.LINE_BITS))
            await top.read_line(SOURCE + k * run.LB)
        if any(a["len"] for a in top.ar):
            errs.append(f"ARLEN {[a['len'] for a in top.ar]} without the view")
        report(errs)
        return
    beats, lb = _beats(), run.LB
    n_errors = 0
    cases = [(mode, kind, layout) for mode in (2, 3) for kind in (0, 1) for layout in (0, 1)
             if not (mode == 2 and kind) and (run.HIERARCHY or not layout)]
    for n, (mode, kind, layout) in enumerate(cases):
        period = rng.randrange(1, 16)
        keep, thresh = rng.randrange(period + 1), rng.randrange(run.W + 1)
        await _program_view(top, 0, cfg(mode=mode, fmt=rng.randrange(3), kind=kind,
                                        period=period, keep=keep, thresh=thresh, layout=layout))
        lines = [rng.getrandbits(run.LINE_BITS) for _ in range(8 * beats)]
        for k, line in enumerate(lines):
            top.ram.set_line(SOURCE + k * lb, line)
        failed = SOURCE + (rng.randrange(8 * beats) * lb) if n % 2 else None
        if failed is not None:
            top.ram.bad_read.add(failed)
        for j in rng.sample(range(8), 4):
            first_ar = len(top.ar)
            item, rsp = await top.read_line(VIEW_BASE + j * lb + rng.randrange(lb))
            ars = top.ar[first_ar:]
            want_addr = SOURCE + j * beats * lb
            if [(a["addr"], a["len"]) for a in ars] != [(want_addr, beats - 1)]:
                errs.append(f"view line {j}: AR {[(hex(a['addr']), a['len']) for a in ars]}, "
                            f"expected one burst at {want_addr:#x}, ARLEN {beats - 1}")
            sources = [SOURCE + (j * beats + b) * lb for b in range(beats)]
            poison = int(failed in sources)
            n_errors += poison
            if rsp["ch"] != "drs" or rsp["poison"] != poison:
                errs.append(f"view line {j}: {rsp['ch']} poison {rsp.get('poison')}, "
                            f"expected DRS poison {poison}")
            elif not poison:
                want = view_line_ref([top.ram.line(a) for a in sources], j, mode, kind,
                                     period, keep, thresh, layout)
                if rsp["data"] != want:
                    errs.append(f"view line {j} (mode {mode}, gate {kind}, P {period}, "
                                f"K {keep}, T {thresh}, layout {layout}): {rsp['data']:#x}, "
                                f"expected {want:#x}")
        top.ram.bad_read.clear()
    st = await top.status()
    if bool(st & ST_RD_ERR) != bool(n_errors):
        errs.append(f"STATUS {st:#x} after {n_errors} failed beats")
    if await top.counter(CNT_ERRORS) != n_errors:
        errs.append(f"COUNTER 5 = {await top.counter(CNT_ERRORS)} after {n_errors} failed beats")
    report(errs)
