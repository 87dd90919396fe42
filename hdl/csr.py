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

from neuron_fabric.host.regmap import (ADDR_BITS, CFG_ENABLE, CFG_FIELDS, CXL_ADDR_BITS, DATA_BITS,
                                       RegisterMap, STATUS_BITS)
from .bus import AXI4LiteSignature, OKAY, SLVERR
from .counter import SplitCounter

__all__ = ["CfgWordLayout", "CfgLayout", "RegionLayout", "ConfigSignature", "EventSignature",
           "ControlRegisters"]

#: The 32-bit CFG word (contract 4.4), from the register map's field list.
CfgWordLayout = data.FlexibleLayout(DATA_BITS, {
    f.name: data.Field(unsigned(f.width), f.lsb) for f in CFG_FIELDS + (CFG_ENABLE,)})

#: One read configuration as the request pipeline carries it (no enable).
CfgLayout = data.StructLayout({f.name: f.width for f in CFG_FIELDS})

_ADDR_KINDS = ("base_lo", "base_hi", "limit_lo", "limit_hi")
#: Registers OR-ed together in the first level of the read multiplexer.
_READ_GROUP = 8


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
        counters = [SplitCounter(name=f"counter{j}") for j in range(6)]
        for j, counter in enumerate(counters):
            m.submodules[f"counter{j}"] = counter
        self._outputs(m, store)
        bad_event, clear = self._write(m, regs, store)
        self._read(m, regs, store, status, counters)

        ev = self.events
        set_q = Signal(4)
        inc_q = Signal(5)
        err_q = Signal(3)
        m.d.sync += [set_q.eq(ev.status_set), inc_q.eq(ev.count_inc), err_q.eq(ev.error_count)]
        m.d.sync += status.eq((status & ~clear) | Cat(set_q, bad_event))
        for j in range(5):
            m.d.comb += counters[j].inc.eq(inc_q[j])
        m.d.comb += counters[5].inc.eq(err_q + bad_event)
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
        """Registered one-hot select of the register at ``addr`` (word address)."""
        sel = [Signal(name=f"{name}_{reg.name.lower()}") for reg in self._map.registers]
        m.d.sync += [s.eq(addr == reg.offset >> 2) for s, reg in zip(sel, self._map.registers)]
        return sel

    def _write(self, m, regs, store):
        bus = self.bus
        aw_full, w_full, bvalid = Signal(), Signal(), Signal()
        aw_addr = Signal(ADDR_BITS - 2)
        w_data = Signal(DATA_BITS, reset_less=True)
        w_strb = Signal(DATA_BITS // 8)
        bresp = Signal(2)
        # One flip-flop per step: decode, fetch the old CFG fields, check, wait, commit.
        decode, fetch, check, wait, commit = (Signal(name=f"csr_w_{n}") for n in
                                              ("decode", "fetch", "check", "wait", "commit"))
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
        start = held & ~(decode | fetch | check | wait | commit)
        go = self.config.idle & ~bvalid
        sel = self._decode(m, aw_addr, "wsel")
        m.d.comb += self.config.hold.eq(held)
        m.d.sync += [decode.eq(start), fetch.eq(decode), check.eq(fetch),
                     wait.eq((check | wait) & held & ~go),
                     commit.eq((check | wait) & held & go)]

        # fetch: the old CFG fields of the selected register, and what kind it is
        cfg_sel = [(s, store[r.name]) for s, r in zip(sel, regs) if r.kind == "cfg"]
        old = Signal(DATA_BITS)
        is_cfg, writable = Signal(), Signal()
        m.d.sync += [
            old.eq(_one_hot_or(cfg_sel)),
            is_cfg.eq(_any(s for s, _ in cfg_sel)),
            writable.eq(_any(s for s, r in zip(sel, regs)
                             if r.kind == "cfg" or r.kind == "status" or r.kind in _ADDR_KINDS)),
        ]
        # check: contract 4.4 on the value the write would produce
        byte_mask = Cat(w_strb[i].replicate(8) for i in range(DATA_BITS // 8))
        merged = data.View(CfgWordLayout, (old & ~byte_mask) | (w_data & byte_mask))
        bad = Signal()
        with m.If(fetch):
            m.d.sync += bad.eq(~writable | (is_cfg & cfg_invalid(merged, self._params.workers)))

        clear = Signal(len(STATUS_BITS))
        with m.If(commit):
            m.d.sync += [aw_full.eq(0), w_full.eq(0), bvalid.eq(1),
                         bresp.eq(_resp(bad))]
            for s, reg in zip(sel, regs):
                if reg.kind == "status":
                    with m.If(s):
                        m.d.comb += clear.eq((w_data & byte_mask)[:len(STATUS_BITS)])
                elif reg.kind == "cfg" or reg.kind in _ADDR_KINDS:
                    self._store_bytes(m, store[reg.name], reg.writable_mask, s & ~bad,
                                      w_data, w_strb)
        bad_event = Signal()
        m.d.comb += bad_event.eq(commit & bad)
        return bad_event, clear

    @staticmethod
    def _store_bytes(m, reg, writable, en, w_data, w_strb):
        for b in range(DATA_BITS // 8):
            with m.If(en & w_strb[b]):
                m.d.sync += reg[8 * b:8 * b + 8].eq((w_data & writable)[8 * b:8 * b + 8])

    def _read(self, m, regs, store, status, counters):
        bus = self.bus
        busy, gather, finish, rvalid = Signal(), Signal(), Signal(), Signal()
        ar_addr = Signal(ADDR_BITS - 2)
        rdata = Signal(DATA_BITS)
        rresp = Signal(2)
        m.d.comb += [bus.arready.eq(~busy), bus.rvalid.eq(rvalid), bus.rdata.eq(rdata),
                     bus.rresp.eq(rresp)]
        decoded = Signal()
        with m.If(bus.arvalid & ~busy):
            m.d.sync += [busy.eq(1), ar_addr.eq(bus.araddr[2:])]
        m.d.sync += [decoded.eq(bus.arvalid & ~busy), gather.eq(decoded), finish.eq(gather)]
        sel = self._decode(m, ar_addr, "rsel")

        snapshots = [Signal(DATA_BITS, name=f"counter{j}_hi_snap") for j in range(6)]
        sources = []
        for s, reg in zip(sel, regs):
            if reg.kind == "const":
                value = Const(reg.value, DATA_BITS)
            elif reg.kind == "status":
                value = status
            elif reg.kind == "counter_lo":
                value = counters[reg.index].lo
                with m.If(gather & s):
                    m.d.sync += snapshots[reg.index].eq(counters[reg.index].hi_now)
            elif reg.kind == "counter_hi":
                value = snapshots[reg.index]
            else:
                value = store[reg.name]
            sources.append((s, value))
        groups = [sources[i:i + _READ_GROUP] for i in range(0, len(sources), _READ_GROUP)]
        partial = [Signal(DATA_BITS, name=f"csr_rd_part{i}") for i in range(len(groups))]
        hit = Signal()
        m.d.sync += [q.eq(_one_hot_or(g)) for q, g in zip(partial, groups)]
        m.d.sync += hit.eq(_any(s for s, _ in sources))
        with m.If(finish & busy & ~rvalid):
            m.d.sync += [rvalid.eq(1), rdata.eq(_one_hot_or([(None, q) for q in partial])),
                         rresp.eq(_resp(~hit))]
        with m.If(rvalid & bus.rready):
            m.d.sync += [rvalid.eq(0), busy.eq(0)]


def _resp(error):
    """SLVERR when ``error``, else OKAY."""
    assert OKAY == 0b00 and SLVERR == 0b10
    return Cat(Const(0, 1), error)


def _any(bits):
    bits = list(bits)
    return Cat(*bits).any() if bits else Const(0, 1)


def _one_hot_or(pairs):
    """OR of ``value`` over ``(select, value)`` pairs (selects one-hot)."""
    out = Const(0, DATA_BITS)
    for s, value in pairs:
        out = out | (value if s is None else value & s.replicate(DATA_BITS))
    return out
