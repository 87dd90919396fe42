"""Conformance of the top to contract section 4.2 under random traffic: every
accepted request answered exactly once whatever the backpressure, memory
holding what was written, reads transformed (4.3), STATUS and the counters
(4.4).

Written from the contract only (see :mod:`neuron_fabric.sim.conformance`).
"""

from cocotb.triggers import RisingEdge

from neuron_fabric.sim.conformance.top_bench import (CsrModel, conformance_test, expect_ndr_cmp,
                                                     is_memdata, merge_bytes, rand_line, report,
                                                     run, setup)
from neuron_fabric.sim.conformance.top_contract import (CNT_ERRORS, CNT_WRITES, REQ_MEMINV,
                                                        REQ_MEMINVNT, REQ_MEMRD, REQ_MEMRDDATA,
                                                        REQ_MEMSPECRD, RWD_MEMWR, RWD_MEMWRPTL,
                                                        ST_POISON_DROP, ST_RD_ERR, ST_UNSUPPORTED,
                                                        ST_WR_ERR, cfg)


class _Traffic:
    """What a random-traffic test tracks: the requests issued and not yet
    answered (by tag), the lines with reads (count) or a write in flight, the
    bench's memory model and what the checks found."""

    def __init__(self, top, requests, model):
        self.top, self.requests, self.model = top, requests, model
        self.outstanding = {}
        self.busy_r, self.busy_w = {}, set()
        self.errs = []
        self.issued = 0

    def more(self, idle):
        """Whether a source offers a request this cycle: requests are left
        and the ``idle`` draw says so."""
        return self.issued < self.requests and self.top.rng.random() >= idle

    def issue(self, item, line=None, read=False):
        """Count ``item`` as issued and awaiting its one response; mark its line busy."""
        if line is not None and read:
            self.busy_r[line] = self.busy_r.get(line, 0) + 1
        elif line is not None:
            self.busy_w.add(line)
        self.issued += 1
        self.outstanding[item["tag"]] = item
        return item

    def answered(self, rsp):
        """The request ``rsp`` answers (None, and an error, when there is none)."""
        item = self.outstanding.pop(rsp["tag"], None)
        if item is None:
            self.errs.append(f"response {rsp} with unknown or already answered tag")
        return item

    async def run(self, req_source, rwd_source, on_resp, *, pause, cycles):
        """Drive requests from the two sources against a pausing memory and a
        throttled response side until all are issued and answered and both
        channels are idle, ``cycles`` have passed or more than ten errors
        have been seen."""
        top = self.top
        top.on_resp = on_resp
        top.ram.set_pause(top.rng, pause)
        top.p_drs_ready, top.p_ndr_ready = 0.6, 0.6
        top.req_source, top.rwd_source = req_source, rwd_source
        for _ in range(cycles):
            if self.issued >= self.requests and not self.outstanding \
                    and top.req_cur is None and top.rwd_cur is None:
                break
            await RisingEdge(top.dut.clk)
            if len(self.errs) > 10:
                break
        top.req_source = top.rwd_source = None

    async def settle(self, quiet):
        """Every request answered as it should; then, with nothing paused, the
        memory holds what the model says."""
        top = self.top
        report(self.errs, 10)
        assert not self.outstanding, f"{len(self.outstanding)} requests never answered: " \
            f"{[(hex(t), i['kind'], i['op']) for t, i in list(self.outstanding.items())[:5]]}"
        top.ram.set_pause(top.rng, 0)
        top.p_drs_ready = top.p_ndr_ready = 1.0
        await top.quiet(quiet)
        report([f"line {a:#x}: memory {top.ram.line(a):#x}, model {v:#x}"
                for a, v in self.model.items() if top.ram.line(a) != v], 10)


@conformance_test
async def random_mixed_traffic(dut):
    """A few hundred random requests, random backpressure everywhere, checked against
    the bench's memory model and reference transform."""
    top = await setup(dut, 14)
    rng = top.rng
    csr = CsrModel()
    n = run.RANDOM_REQUESTS
    lines = [0xA000 + run.LB * k for k in range(12)] + [0xB000 + run.LB * k for k in range(8)] \
        + [(1 << 33) + run.LB * k for k in range(4)]
    await csr.set_region(top, 0, cfg(mode=3, fmt=rng.randrange(3), kind=0, period=5, keep=3,
                                     enable=1), 0xA000 + 2 * run.LB, 0xA000 + 10 * run.LB)
    await csr.set_region(top, 1, cfg(mode=3, fmt=1, kind=1, thresh=2, period=1, keep=0,
                                     enable=1), 0xB000, 0xC000)
    await csr.set_default(top, cfg(mode=2, fmt=2))
    model = {}
    for a in lines:
        model[a] = rand_line(rng)
        top.ram.set_line(a, model[a])
    t = _Traffic(top, n, model)
    counts = [0] * 6

    def pick_line(for_write):
        for _ in range(4):
            a = rng.choice(lines)
            if a not in t.busy_w and not (for_write and t.busy_r.get(a)):
                return a
        return None

    def req_source():
        if not t.more(0.3):
            return None
        if rng.random() < 0.08:
            return t.issue(dict(kind="req", op=rng.choice((REQ_MEMINV, REQ_MEMINVNT)),
                                addr=rng.choice(lines) + rng.randrange(run.LB), tag=top.tag()))
        a = pick_line(False)
        if a is None:
            return None
        item = dict(kind="req", op=rng.choice((REQ_MEMRD, REQ_MEMRDDATA)),
                    addr=a + rng.randrange(run.LB), tag=top.tag(), line=a)
        item["exp"], mode = csr.expect(a, model[a])
        counts[mode] += 1
        return t.issue(item, a, read=True)

    def rwd_source():
        if not t.more(0.4):
            return None
        a = pick_line(True)
        if a is None:
            return None
        op = rng.choice((RWD_MEMWR, RWD_MEMWRPTL))
        counts[CNT_WRITES] += 1
        return t.issue(dict(kind="rwd", op=op, addr=a + rng.randrange(run.LB), tag=top.tag(),
                            data=rand_line(rng), be=rng.randrange(1, 1 << run.LB), poison=0,
                            line=a), a)

    def on_resp(rsp):
        item = t.answered(rsp)
        if item is None:
            return
        if item["kind"] == "req" and item["op"] in (REQ_MEMRD, REQ_MEMRDDATA):
            t.busy_r[item["line"]] -= 1
            if not is_memdata(rsp) or rsp["data"] != item["exp"]:
                t.errs.append(f"read {item['addr']:#x} tag {item['tag']:#x}: {rsp}, expected "
                              f"data {item['exp']:#x}")
        elif item["kind"] == "req":
            expect_ndr_cmp(t.errs, rsp, f"MemInv tag {item['tag']:#x}")
        else:
            a = item["line"]
            t.busy_w.discard(a)
            full = (1 << run.LB) - 1 if item["op"] == RWD_MEMWR else item["be"]
            model[a] = merge_bytes(model[a], item["data"], full)
            expect_ndr_cmp(t.errs, rsp, f"write tag {item['tag']:#x}")

    await t.run(req_source, rwd_source, on_resp, pause=0.3, cycles=40 * n)
    await t.settle(20)
    got = await top.counters()
    assert got[:5] == counts[:5] and got[5] == 0, f"counters {got}, expected {counts[:5]} + [0]"
    assert await top.status() == 0


@conformance_test
async def random_mixed_with_errors(dut):
    """Random traffic including MemSpecRd, MemInv, unsupported opcodes, poisoned writes
    and AXI read/write errors: one response per request, STATUS and COUNTER 5."""
    top = await setup(dut, 16)
    rng = top.rng
    csr = CsrModel()
    good = [0xE000 + run.LB * k for k in range(8)]
    bad_rd = [0xF000 + run.LB * k for k in range(2)]
    bad_wr = [0xF800 + run.LB * k for k in range(2)]
    for a in good + bad_rd:
        top.ram.set_line(a, rand_line(rng))
    t = _Traffic(top, run.RANDOM_REQUESTS // 2, {a: top.ram.line(a) for a in good})
    top.ram.bad_read.update(bad_rd)
    top.ram.bad_write.update(bad_wr)
    await csr.set_default(top, cfg(mode=rng.choice((1, 3)), fmt=1, kind=0, period=3, keep=2))
    events = dict(unsupported=0, rd_err=0, wr_err=0, poison=0)
    spec = {}
    source = _ErrorSources(t, csr, good, bad_rd, bad_wr, events, spec)

    def on_resp(rsp):
        if spec.pop(rsp["tag"], None) is not None:
            return  # MemSpecRd: a response is not required; at most one tolerated
        item = t.answered(rsp)
        if item is None:
            return
        if item["kind"] == "req" and item["op"] in (REQ_MEMRD, REQ_MEMRDDATA):
            if not is_memdata(rsp, item["poison"]):
                t.errs.append(f"read {item}: {rsp}")
            elif not item["poison"]:
                t.busy_r[item["line"]] -= 1
                if rsp["data"] != item["exp"]:
                    t.errs.append(f"read {item['addr']:#x}: {rsp['data']:#x}, "
                                  f"expected {item['exp']:#x}")
        else:
            expect_ndr_cmp(t.errs, rsp, f"{item['kind']} op {item['op']:#x} "
                                        f"poison {item.get('poison')}")
            if item.get("line") is not None and item["kind"] == "rwd":
                t.busy_w.discard(item["line"])
                t.model[item["line"]] = item["data"]

    await t.run(source.req, source.rwd, on_resp, pause=0.25, cycles=60 * t.requests)
    await t.settle(40)
    st = await top.status()
    exp_st = ((ST_UNSUPPORTED if events["unsupported"] else 0) | (ST_RD_ERR if events["rd_err"] else 0)
              | (ST_WR_ERR if events["wr_err"] else 0) | (ST_POISON_DROP if events["poison"] else 0))
    assert st == exp_st, f"STATUS {st:#x}, expected {exp_st:#x} ({events})"
    n = await top.counter(CNT_ERRORS)
    assert n == sum(events.values()), f"COUNTER 5 = {n}, expected {sum(events.values())} ({events})"


class _ErrorSources:
    """The two request sources of :func:`random_mixed_with_errors`: good reads
    and writes among MemSpecRd (``spec``), MemInv, unsupported opcodes,
    poisoned writes and lines whose AXI read or write fails, each error
    counted in ``events``."""

    UNSUPPORTED_REQ = [op for op in range(16) if op not in (0, 1, 2, 8, 9)]
    UNSUPPORTED_RWD = [op for op in range(16) if op not in (1, 2)]

    def __init__(self, traffic, csr, good, bad_rd, bad_wr, events, spec):
        self.t, self.csr = traffic, csr
        self.good, self.bad_rd, self.bad_wr = good, bad_rd, bad_wr
        self.events, self.spec = events, spec

    def req(self):
        t, rng = self.t, self.t.top.rng
        if not t.more(0.3):
            return None
        r = rng.random()
        tag = t.top.tag()
        if r < 0.1:
            item = dict(kind="req", op=REQ_MEMSPECRD, addr=rng.choice(self.good), tag=tag)
            self.spec[tag] = item
            t.issued += 1
            return item
        if r < 0.2:
            self.events["unsupported"] += 1
            return t.issue(dict(kind="req", op=rng.choice(self.UNSUPPORTED_REQ),
                                addr=rng.choice(self.good), tag=tag))
        if r < 0.3:
            self.events["rd_err"] += 1
            return t.issue(dict(kind="req", op=rng.choice((REQ_MEMRD, REQ_MEMRDDATA)),
                                addr=rng.choice(self.bad_rd), tag=tag, poison=1))
        if r < 0.4:
            return t.issue(dict(kind="req", op=rng.choice((REQ_MEMINV, REQ_MEMINVNT)),
                                addr=rng.choice(self.good), tag=tag))
        a = rng.choice(self.good)
        if a in t.busy_w:
            return None
        return t.issue(dict(kind="req", op=REQ_MEMRD, addr=a, tag=tag, line=a,
                            exp=self.csr.expect(a, t.model[a])[0], poison=0), a, read=True)

    def rwd(self):
        t, rng = self.t, self.t.top.rng
        if not t.more(0.4):
            return None
        r = rng.random()
        tag = t.top.tag()
        item = dict(kind="rwd", op=RWD_MEMWR, tag=tag, data=rand_line(rng),
                    be=(1 << run.LB) - 1, poison=0)
        if r < 0.15:
            item.update(op=rng.choice((RWD_MEMWR, RWD_MEMWRPTL)), addr=rng.choice(self.good),
                        poison=1)
            self.events["poison"] += 1
        elif r < 0.3:
            item.update(op=rng.choice(self.UNSUPPORTED_RWD), addr=rng.choice(self.good))
            self.events["unsupported"] += 1
        elif r < 0.45:
            item.update(addr=rng.choice(self.bad_wr))
            self.events["wr_err"] += 1
        else:
            a = rng.choice(self.good)
            if a in t.busy_w or t.busy_r.get(a):
                return None
            item.update(addr=a, line=a)
            return t.issue(item, a)
        return t.issue(item)
