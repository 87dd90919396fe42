"""AXI4-Lite control registers of the top (contract section 4.4).

The decode is generated from :class:`neuron_fabric.host.regmap.RegisterMap`:
each register's ``kind`` selects its behaviour, its fields give the bits
that hold state; the CFG word's layout is built from ``CFG_FIELDS``.
Nothing about offsets or bit positions is written here.

Both channels are pipelined so that no path crosses more than a few LUTs:
an address is decoded into a registered one-hot select, a read value is
gathered by a two-level OR of registered partial results, and a write
goes decode -> fetch the old CFG fields -> check -> commit, one step per
cycle.  A write asks the request pipeline to hold new requests
(``config.hold``) as soon as it is captured and commits once the pipeline
reports that no accepted request is still reading the configuration
(``config.idle``); BVALID rises the cycle after.  The request pipeline
never stalls, so the wait is bounded (docs/top.md).
"""

from amaranth import Cat, Const, Module, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import PROFILES
from neuron_fabric.host.regmap import (ADDR_BITS, CFG_ENABLE, CFG_FIELDS, COUNTERS, CXL_ADDR_BITS,
                                       DATA_BITS, RegisterMap, STATUS_BITS)
from .bus import AXI4LiteSignature, OKAY, SLVERR
from .counter import CarryResolve, DigitCounter

__all__ = ["CfgWordLayout", "CfgLayout", "RegionLayout", "ConfigSignature", "EventSignature",
           "ControlRegisters"]

#: The 32-bit CFG word (contract 4.4), from the register map's field list.
CfgWordLayout = data.FlexibleLayout(DATA_BITS, {
    f.name: data.Field(unsigned(f.width), f.lsb) for f in CFG_FIELDS + (CFG_ENABLE,)})

#: One read configuration as the request pipeline carries it (no enable).
CfgLayout = data.StructLayout({f.name: f.width for f in CFG_FIELDS})

_ADDR_KINDS = ("base_lo", "base_hi", "limit_lo", "limit_hi")


def RegionLayout(addr_bits):
    """A region: its configuration, enable bit and line-aligned window."""
    return data.StructLayout({"cfg": CfgLayout, "enable": 1,
                              "base": addr_bits, "limit": addr_bits})


def ConfigSignature(params):
    """What the registers hand the request pipeline (seen from the registers).

    ``hold`` asks the pipeline to accept no new request; ``idle`` answers
    that none it accepted still reads the configuration."""
    members = {"default": Out(CfgLayout), "hold": Out(1), "idle": In(1)}
    if params.regions:
        addr_bits = CXL_ADDR_BITS - params.offset_bits
        members["regions"] = Out(data.ArrayLayout(RegionLayout(addr_bits), params.regions))
    return wiring.Signature(members)


def EventSignature():
    """Events the top reports to STATUS and the counters (seen from the source):
    STATUS bits 0..3 to set, the number of events setting a STATUS bit, and
    counters 0..4 to increment."""
    return wiring.Signature({"status_set": Out(4), "error_count": Out(3), "count_inc": Out(5)})


def cfg_invalid(cfg, workers, features=()):
    """The rule of contract 4.4 and section 5 for a CFG value, as logic
    (``host.regmap.cfg_check`` in Python, with the same ``features``).

    Without the ``hierarchy`` feature, layout and operand must be 0 (and so
    total must be 0): a build never accepts a value it does not implement."""
    from neuron_fabric.host.facts import Operand
    from neuron_fabric.host.regmap import count_total_max
    signs = cfg.operand == Operand.SIGNS
    bad = ((cfg.format == 3) | (cfg.period == 0) | (cfg.keep > cfg.period) |
           (cfg.operand == 3) | (signs & ((cfg.total != 0) | (cfg.threshold > workers))))
    if "hierarchy" not in features:
        return bad | (cfg.layout != 0) | (cfg.operand != 0)
    too_many = Const(0)
    for operand in (Operand.COUNTS4, Operand.COUNTS8):
        too_many = too_many | ((cfg.operand == operand) &
                               (cfg.total > count_total_max(operand)))
    return bad | (~signs & ((cfg.total == 0) | too_many | (cfg.threshold > cfg.total)))


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
        self._outputs(m, store)
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

    def _outputs(self, m, store):
        p = self._params
        default = data.View(CfgWordLayout, store["DEFAULT_CFG"])
        m.d.comb += [self.config.default[f.name].eq(default[f.name]) for f in CFG_FIELDS]
        ob = p.offset_bits
        for r in range(p.regions):
            word = data.View(CfgWordLayout, store[f"REGION{r}_CFG"])
            region = self.config.regions[r]
            m.d.comb += [region.cfg[f.name].eq(word[f.name]) for f in CFG_FIELDS]
            m.d.comb += [
                region.enable.eq(word.enable),
                region.base.eq(Cat(store[f"REGION{r}_BASE_LO"],
                                   store[f"REGION{r}_BASE_HI"][:CXL_ADDR_BITS - 32])[ob:]),
                region.limit.eq(Cat(store[f"REGION{r}_LIMIT_LO"],
                                    store[f"REGION{r}_LIMIT_HI"][:CXL_ADDR_BITS - 32])[ob:]),
            ]

    def _decode(self, m, addr, name):
        """One-hot select of the register at ``addr`` (a word address), valid
        two cycles after ``addr``: the low bits and the rest each decoded into
        a registered one-hot, then their AND, registered."""
        words = [reg.offset >> 2 for reg in self._map.registers]
        parts = []
        for key, bits in ((lambda w: w >> _LOW_BITS, addr[_LOW_BITS:]),
                          (lambda w: w & ((1 << _LOW_BITS) - 1), addr[:_LOW_BITS])):
            hot = {v: Signal(name=f"{name}_{'hi' if not parts else 'lo'}{v}")
                   for v in sorted({key(w) for w in words})}
            m.d.sync += [q.eq(bits == v) for v, q in hot.items()]
            parts.append((key, hot))
        sel = [Signal(name=f"{name}_{reg.name.lower()}") for reg in self._map.registers]
        m.d.sync += [s.eq(_and(hot[key(w)] for key, hot in parts)) for s, w in zip(sel, words)]
        return sel

    def _write(self, m, regs, store):
        bus = self.bus
        aw_full, w_full, bvalid = Signal(), Signal(), Signal()
        aw_addr = Signal(ADDR_BITS - 2)
        w_data = Signal(DATA_BITS, reset_less=True)
        w_strb = Signal(DATA_BITS // 8)
        bresp = Signal(2)
        # One flip-flop per step: predecode and decode the address, fetch the
        # old CFG fields, merge the written bytes, check (high until the
        # request pipeline is idle), and commit (registers written, BVALID
        # set).
        steps = [Signal(name=f"csr_w_{n}")
                 for n in ("predecode", "decode", "fetch", "merge", "check", "commit")]
        predecode, decode, fetch, merge, check, commit = steps
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
        sel = self._decode(m, aw_addr, "wsel")
        m.d.comb += self.config.hold.eq(held)
        # (aw_full and w_full stay set from predecode to commit)
        m.d.sync += [predecode.eq(start), decode.eq(predecode), fetch.eq(decode),
                     merge.eq(fetch), check.eq((merge | (check & ~self.config.idle)) & held & ~bvalid),
                     commit.eq(go)]

        # fetch: the old CFG fields of the selected register, whether it is a
        # CFG register, and which group of writable registers holds it
        # (partial ORs, registered; ORed in the next step)
        writable = [(s, r) for s, r in zip(sel, regs)
                    if r.kind == "cfg" or r.kind == "status" or r.kind in _ADDR_KINDS]
        cfg_old = _gather(m, [(s, store[r.name]) for s, r in zip(sel, regs) if r.kind == "cfg"],
                          "csr_w_old")
        is_cfg = _gather(m, [(s, Const(1, 1)) for s, r in zip(sel, regs) if r.kind == "cfg"],
                         "csr_w_is_cfg", _LATER_GROUP)
        group_sel = _gather(m, [(s, Const(1, 1)) for s, _ in writable], "csr_w_group")
        any_group = _gather(m, [(None, q) for q in group_sel], "csr_w_groups", _LATER_GROUP)
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
        cfg_q, writable_q = Signal(), Signal()
        m.d.sync += [merged.eq((_or(cfg_old) & ~byte_mask) | (w_data & byte_mask)),
                     cfg_q.eq(_or(is_cfg)), writable_q.eq(_or(any_group))]
        # check: contract 4.4 on that value (a register that is not writable
        # has no group enable, so only the response sees ``writable_q``)
        bad = Signal()
        m.d.sync += bad.eq(cfg_q & cfg_invalid(merged, self._params.workers,
                                                PROFILES[self._params.profile].features))
        refused = bad | ~writable_q

        # commit: one registered write enable per group of registers, so that
        # no single net enables every byte of the region table
        applies = [Signal(name=f"csr_w_apply{g}") for g in range(len(group_sel))]
        m.d.sync += [a.eq(go & ~bad & q) for a, q in zip(applies, group_sel)]
        with m.If(commit):
            m.d.sync += [aw_full.eq(0), w_full.eq(0), bvalid.eq(1), bresp.eq(_resp(refused))]
        clear = Signal(len(STATUS_BITS))
        for en, group in zip(applies, _groups(writable)):
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
        sel = self._decode(m, ar_addr, "rsel")

        # Counters: the selected counter's state, captured in one cycle, then
        # settled a digit per cycle; LO when bits [31:0] are final, the HI
        # snapshot once all are (before the next read can look at it).
        lo_sel = [(s, r.index) for s, r in zip(sel, regs) if r.kind == "counter_lo"]
        state = _gather(m, [(s, counters[j].state.as_value()) for s, j in lo_sel],
                        "csr_rd_count")
        m.d.sync += resolve.state.eq(_or(state))
        snapshots = [Signal(DATA_BITS, name=f"counter{j}_hi_snap") for j in range(len(counters))]
        for s, j in lo_sel:
            take = Signal(name=f"counter{j}_hi_take")
            m.d.sync += take.eq(stage[_SEL + 1 + resolve.steps] & s)
            with m.If(take):
                m.d.sync += snapshots[j].eq(resolve.settled[resolve.steps][DATA_BITS:])
        lo_hit = _tree(m, [(s, Const(1, 1)) for s, _ in lo_sel], "csr_rd_lo", levels - 1)

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
        partial = _tree(m, sources, "csr_rd_part", levels)
        hit = _tree(m, [(s, Const(1, 1)) for s, _ in sources + lo_sel], "csr_rd_hit", levels)
        load = Signal()
        m.d.sync += load.eq(stage[_SEL + levels - 1] & busy & ~rvalid)
        lo_value = resolve.settled[lo_steps][:DATA_BITS]
        with m.If(load):
            m.d.sync += [rvalid.eq(1),
                         rdata.eq(_or(partial) | (lo_value & _or(lo_hit).replicate(DATA_BITS))),
                         rresp.eq(_resp(~_or(hit)))]
        with m.If(rvalid & bus.rready):
            m.d.sync += [rvalid.eq(0), busy.eq(0)]


#: Width of a counter digit: the longest carry chain of the counters.
_DIGIT = 8
#: Word-address bits decoded apart from the others (a region's eight words).
_LOW_BITS = 3
#: Read stage in which the one-hot select is valid (see ``_decode``).
_SEL = 2
#: Pairs AND-ORed together in the first registered level of a one-hot
#: multiplexer (one LUT4), and partial results ORed in each later level.
_GROUP = 2
_LATER_GROUP = 4


def _groups(items, group=_GROUP):
    return [items[i:i + group] for i in range(0, len(items), group)]


def _gather(m, pairs, name, group=_GROUP):
    """A registered level of a one-hot multiplexer: the OR of ``value &
    select`` over each :func:`_groups` of ``(select, value)`` pairs (``None``
    selects always); :func:`_or` of the result (one cycle later) is the
    selected value."""
    width = max((len(v) for _, v in pairs), default=1)
    out = [Signal(width, name=f"{name}{i}") for i in range(len(_groups(pairs, group)))]
    m.d.sync += [q.eq(_one_hot_or(g, width)) for q, g in zip(out, _groups(pairs, group))]
    return out


def _tree(m, pairs, name, levels):
    """``levels`` registered levels of a one-hot multiplexer (:func:`_gather`
    first, then ORs of :data:`_LATER_GROUP` partial results); :func:`_or` of
    the result is the selected value, ``levels`` cycles after the selects."""
    out = _gather(m, pairs, f"{name}_l1")
    for level in range(2, levels + 1):
        out = _gather(m, [(None, q) for q in out], f"{name}_l{level}", _LATER_GROUP)
    return out


def _and(bits):
    out = Const(1, 1)
    for b in bits:
        out = out & b
    return out


def _resp(error):
    """SLVERR when ``error``, else OKAY."""
    assert OKAY == 0b00 and SLVERR == 0b10
    return Cat(Const(0, 1), error)


def _or(values):
    """OR of ``values`` (0 when there are none)."""
    out = Const(0, 1)
    for v in values:
        out = out | v
    return out


def _one_hot_or(pairs, width=DATA_BITS):
    """OR of ``value`` over ``(select, value)`` pairs (selects one-hot)."""
    out = Const(0, width)
    for s, value in pairs:
        out = out | (value if s is None else value & s.replicate(width))
    return out
