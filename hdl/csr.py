"""AXI4-Lite control registers of the top (contract section 4.4).

The decode is generated from :class:`neuron_fabric.host.regmap.RegisterMap`:
each register's ``kind`` selects its behaviour, its fields give the bits
that hold state; the CFG word's layout and check are in ``cfg.py``.
Nothing about offsets or bit positions is written here.

Both channels are pipelined so that no path crosses more than a few LUTs
(the registered one-hot multiplexers of ``gather.py``): an address is
decoded into a registered one-hot select, a read value is gathered by
levels of registered partial ORs, and a write goes predecode -> decode and
fetch the old CFG fields -> merge -> check (two steps) -> commit, one step
per cycle.  A write asks the request pipeline to hold new requests
(``config.hold``) as soon as it is captured and commits once the pipeline
reports that no accepted request is still reading the configuration
(``config.idle``); BVALID rises the cycle after.  The request pipeline
never stalls, so the wait is bounded (docs/top.md).
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import PROFILES
from neuron_fabric.host.regmap import ADDR_BITS, COUNTERS, DATA_BITS, RegisterMap, STATUS_BITS
from .bus import AXI4LiteSignature, OKAY, SLVERR
from .cfg import (CfgLayout, CfgWordLayout, ConfigSignature, RegionLayout, cfg_invalid,
                  cfg_terms, cfg_verdict, drive_config)
from .counter import CarryResolve, DigitCounter
from .gather import LATER_GROUP, and_all, gather, groups, or_all, tree

# The CFG layouts and check are imported from here by other blocks and tests.
__all__ = ["CfgWordLayout", "CfgLayout", "RegionLayout", "ConfigSignature", "EventSignature",
           "ControlRegisters", "cfg_invalid"]

_ADDR_KINDS = ("base_lo", "base_hi", "limit_lo", "limit_hi")


def EventSignature():
    """Events the top reports to STATUS and the counters (seen from the source):
    STATUS bits 0..3 to set, the number of events setting a STATUS bit, and
    counters 0..4 to increment."""
    return wiring.Signature({"status_set": Out(4), "error_count": Out(3), "count_inc": Out(5)})


class ControlRegisters(wiring.Component):
    """AXI4-Lite slave holding DEFAULT_CFG, STATUS, counters and the region table.

    One read and one write are handled at a time.

    Parameters
    ----------
    params : TopParams

    Members
    -------
    bus : In(AXI4LiteSignature(addr_width=12, data_width=32))
    config : Out(ConfigSignature(params))
        DEFAULT_CFG and the region table (base and limit as line addresses),
        and the hold/idle handshake with the request pipeline.
    events : In(EventSignature())
    """

    def __init__(self, params):
        self._params = params
        self._map = RegisterMap(params)
        super().__init__({
            "bus": In(AXI4LiteSignature(addr_width=ADDR_BITS, data_width=DATA_BITS)),
            "config": Out(ConfigSignature(params)),
            "events": In(EventSignature()),
        })

    @property
    def register_map(self):
        return self._map

    def elaborate(self, platform):
        m = Module()
        regs = self._map.registers
        store = {reg.name: Signal(DATA_BITS, name=reg.name.lower(), init=reg.reset)
                 for reg in regs if reg.kind == "cfg" or reg.kind in _ADDR_KINDS}
        status = Signal(len(STATUS_BITS))
        counters = [DigitCounter(digit=_DIGIT, name=f"counter{j}") for j in range(len(COUNTERS))]
        for j, counter in enumerate(counters):
            m.submodules[f"counter{j}"] = counter
        drive_config(m, self.config, store, self._params)
        bad_event, clear = self._write(m, regs, store)
        self._read(m, regs, store, status, counters)

        ev = self.events
        set_q = Signal(4)
        inc_q = Signal(5)
        err_q = Signal(3)
        m.d.sync += [set_q.eq(ev.status_set), inc_q.eq(ev.count_inc),
                     err_q.eq(ev.error_count + bad_event)]
        m.d.sync += status.eq((status & ~clear) | Cat(set_q, bad_event))
        for j in range(5):
            m.d.comb += counters[j].inc.eq(inc_q[j])
        m.d.comb += counters[5].inc.eq(err_q)
        return m

    def _decode(self, m, addr, name):
        """One-hot select of the register at ``addr`` (a word address), valid
        two cycles after ``addr``: the low bits and the rest each decoded into
        a registered one-hot, then their AND, registered.  Also returns
        ``{CFG register name: select}`` valid one cycle after ``addr`` (the
        one-hot of the high bits)."""
        words = [reg.offset >> 2 for reg in self._map.registers]
        parts = []
        for key, bits in ((lambda w: w >> _LOW_BITS, addr[_LOW_BITS:]),
                          (lambda w: w & ((1 << _LOW_BITS) - 1), addr[:_LOW_BITS])):
            hot = {v: Signal(name=f"{name}_{'hi' if not parts else 'lo'}{v}")
                   for v in sorted({key(w) for w in words})}
            m.d.sync += [q.eq(bits == v) for v, q in hot.items()]
            parts.append((key, hot))
        sel = [Signal(name=f"{name}_{reg.name.lower()}") for reg in self._map.registers]
        m.d.sync += [s.eq(and_all(hot[key(w)] for key, hot in parts)) for s, w in zip(sel, words)]
        # A CFG register is the only one of its high bits (a region's words,
        # the first words), so its old value can be fetched from that
        # one-hot alone, a cycle before ``sel``.
        key, hot = parts[0]
        cfgs = [(reg, key(w)) for reg, w in zip(self._map.registers, words) if reg.kind == "cfg"]
        if len({v for _, v in cfgs}) != len(cfgs):
            raise ValueError("two CFG registers share their high address bits")
        return sel, {reg.name: hot[v] for reg, v in cfgs}

    def _write(self, m, regs, store):
        bus = self.bus
        aw_full, w_full, bvalid = Signal(), Signal(), Signal()
        aw_addr = Signal(ADDR_BITS - 2)
        w_data = Signal(DATA_BITS, reset_less=True)
        w_strb = Signal(DATA_BITS // 8)
        bresp = Signal(2)
        # One flip-flop per step: predecode the address, decode it and fetch
        # the old CFG fields, merge the written bytes, check in two steps
        # (the rules' terms, then their verdict, high until the request
        # pipeline is idle), and commit (registers written, BVALID set).
        steps = [Signal(name=f"csr_w_{n}")
                 for n in ("predecode", "fetch", "merge", "terms", "check", "commit")]
        predecode, fetch, merge, terms, check, commit = steps
        m.d.comb += [
            bus.awready.eq(~aw_full), bus.wready.eq(~w_full),
            bus.bvalid.eq(bvalid), bus.bresp.eq(bresp),
        ]
        with m.If(bus.awvalid & ~aw_full):
            m.d.sync += [aw_full.eq(1), aw_addr.eq(bus.awaddr[2:])]
        with m.If(bus.wvalid & ~w_full):
            m.d.sync += [w_full.eq(1), w_data.eq(bus.wdata), w_strb.eq(bus.wstrb)]
        with m.If(bvalid & bus.bready):
            m.d.sync += bvalid.eq(0)

        held = aw_full & w_full
        # a write starts once the previous one is done and its response taken
        start = held & ~bvalid & ~Cat(*steps).any()
        go = check & self.config.idle
        sel, cfg_hot = self._decode(m, aw_addr, "wsel")
        m.d.comb += self.config.hold.eq(held)
        # (aw_full and w_full stay set from predecode to commit)
        m.d.sync += [predecode.eq(start), fetch.eq(predecode), merge.eq(fetch), terms.eq(merge),
                     check.eq((terms | (check & ~self.config.idle)) & held & ~bvalid),
                     commit.eq(go)]

        # fetch, beside the decode: the old value of the CFG register that
        # shares the address's high bits (partial ORs, registered; ORed in
        # the merge)
        writable = [(s, r) for s, r in zip(sel, regs)
                    if r.kind == "cfg" or r.kind == "status" or r.kind in _ADDR_KINDS]
        cfg_old = gather(m, [(cfg_hot[r.name], store[r.name]) for r in regs if r.kind == "cfg"],
                          "csr_w_old")
        # merge: whether it is a CFG register and which group of writable
        # registers holds it (partial ORs, registered)
        is_cfg = gather(m, [(s, Const(1, 1)) for s, r in zip(sel, regs) if r.kind == "cfg"],
                         "csr_w_is_cfg", LATER_GROUP)
        group_sel = gather(m, [(s, Const(1, 1)) for s, _ in writable], "csr_w_group")
        any_group = gather(m, [(None, q) for q in group_sel], "csr_w_groups", LATER_GROUP)
        byte_mask = Cat(w_strb[i].replicate(8) for i in range(DATA_BITS // 8))
        # the bytes each register would take, registered
        wen = {r.name: Signal(len(w_strb), name=f"csr_w_en_{r.name.lower()}")
               for _, r in writable}
        m.d.sync += [wen[r.name].eq(w_strb & s.replicate(len(w_strb))) for s, r in writable]
        status_sel = next(s for s, r in writable if r.kind == "status")
        clear_q = Signal(len(STATUS_BITS))
        m.d.sync += clear_q.eq((w_data & byte_mask & status_sel.replicate(DATA_BITS))
                               [:len(STATUS_BITS)])
        # merge: the value the write would produce
        merged = Signal(CfgWordLayout)
        m.d.sync += merged.eq((or_all(cfg_old) & ~byte_mask) | (w_data & byte_mask))
        # check: contract 4.4 on that value, each rule's term registered, then
        # their verdict (a register that is not writable has no group
        # enable, so only the response sees ``writable_q``)
        rules = cfg_terms(merged, self._params.workers, PROFILES[self._params.profile].features)
        rules_q = {k: Signal(name=f"csr_w_rule_{k}") for k in rules}
        cfg_q, writable_q, bad = Signal(), Signal(), Signal()
        m.d.sync += [*(q.eq(rules[k]) for k, q in rules_q.items()), cfg_q.eq(or_all(is_cfg)),
                     writable_q.eq(or_all(any_group)), bad.eq(cfg_q & cfg_verdict(rules_q))]
        refused = bad | ~writable_q

        # commit: one registered write enable per group of registers, so that
        # no single net enables every byte of the region table
        applies = [Signal(name=f"csr_w_apply{g}") for g in range(len(group_sel))]
        m.d.sync += [a.eq(go & ~bad & q) for a, q in zip(applies, group_sel)]
        with m.If(commit):
            m.d.sync += [aw_full.eq(0), w_full.eq(0), bvalid.eq(1), bresp.eq(_resp(refused))]
        clear = Signal(len(STATUS_BITS))
        for en, group in zip(applies, groups(writable)):
            for s, reg in group:
                if reg.kind == "status":
                    m.d.comb += clear.eq(clear_q & en.replicate(len(clear)))
                else:
                    self._store_bytes(m, store[reg.name], reg.writable_mask, en, w_data,
                                      wen[reg.name])
        bad_event = Signal()
        m.d.sync += bad_event.eq(go & refused)
        return bad_event, clear

    @staticmethod
    def _store_bytes(m, reg, writable, en, w_data, bytes_en):
        for b in range(DATA_BITS // 8):
            with m.If(en & bytes_en[b]):
                m.d.sync += reg[8 * b:8 * b + 8].eq((w_data & writable)[8 * b:8 * b + 8])

    def _read(self, m, regs, store, status, counters):
        bus = self.bus
        busy, rvalid = Signal(), Signal()
        ar_addr = Signal(ADDR_BITS - 2)
        rdata = Signal(DATA_BITS)
        rresp = Signal(2)
        m.d.comb += [bus.arready.eq(~busy), bus.rvalid.eq(rvalid), bus.rdata.eq(rdata),
                     bus.rresp.eq(rresp)]
        with m.If(bus.arvalid & ~busy):
            m.d.sync += [busy.eq(1), ar_addr.eq(bus.araddr[2:])]
        resolve = CarryResolve(digit=_DIGIT)
        m.submodules.counter_resolve = resolve
        lo_steps = DATA_BITS // len(resolve.state[0].digit) - 1
        # stage[k] is high k + 1 cycles after the AR handshake: ar_addr in
        # stage 0, the one-hot select from _SEL, the counter's state from
        # _SEL + 2, settled[k] from _SEL + 2 + k; the register data's OR tree
        # ends as LO settles.
        stage = Signal(_SEL + 2 + resolve.steps)
        levels = 2 + lo_steps
        m.d.sync += stage.eq(Cat(bus.arvalid & ~busy, stage[:-1]))
        sel, _ = self._decode(m, ar_addr, "rsel")

        # Counters: the selected counter's state, captured in one cycle, then
        # settled a digit per cycle; LO when bits [31:0] are final, the HI
        # snapshot once all are (before the next read can look at it).
        lo_sel = [(s, r.index) for s, r in zip(sel, regs) if r.kind == "counter_lo"]
        state = gather(m, [(s, counters[j].state.as_value()) for s, j in lo_sel],
                        "csr_rd_count")
        m.d.sync += resolve.state.eq(or_all(state))
        snapshots = [Signal(DATA_BITS, name=f"counter{j}_hi_snap") for j in range(len(counters))]
        for s, j in lo_sel:
            take = Signal(name=f"counter{j}_hi_take")
            m.d.sync += take.eq(stage[_SEL + 1 + resolve.steps] & s)
            with m.If(take):
                m.d.sync += snapshots[j].eq(resolve.settled[resolve.steps][DATA_BITS:])
        lo_hit = tree(m, [(s, Const(1, 1)) for s, _ in lo_sel], "csr_rd_lo", levels - 1)

        sources = []
        for s, reg in zip(sel, regs):
            if reg.kind == "const":
                sources.append((s, Const(reg.value, DATA_BITS)))
            elif reg.kind == "status":
                sources.append((s, status))
            elif reg.kind == "counter_hi":
                sources.append((s, snapshots[reg.index]))
            elif reg.kind != "counter_lo":
                sources.append((s, store[reg.name]))
        partial = tree(m, sources, "csr_rd_part", levels)
        hit = tree(m, [(s, Const(1, 1)) for s, _ in sources + lo_sel], "csr_rd_hit", levels)
        load = Signal()
        m.d.sync += load.eq(stage[_SEL + levels - 1] & busy & ~rvalid)
        lo_value = resolve.settled[lo_steps][:DATA_BITS] & or_all(lo_hit).replicate(DATA_BITS)
        with m.If(load):
            m.d.sync += [rvalid.eq(1), rdata.eq(or_all(partial) | lo_value),
                         rresp.eq(_resp(~or_all(hit)))]
        with m.If(rvalid & bus.rready):
            m.d.sync += [rvalid.eq(0), busy.eq(0)]


#: Width of a counter digit: the longest carry chain of the counters.
_DIGIT = 8
#: Word-address bits decoded apart from the others (a region's eight words).
_LOW_BITS = 3
#: Read stage in which the one-hot select is valid (see ``_decode``).
_SEL = 2


def _resp(error):
    """SLVERR when ``error``, else OKAY."""
    assert OKAY == 0b00 and SLVERR == 0b10
    return Cat(Const(0, 1), error)
