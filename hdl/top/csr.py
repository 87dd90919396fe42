"""AXI4-Lite control registers of the top (contract section 4.4).

The decode is generated from :class:`neuron_fabric.contract.regmap.RegisterMap`:
each register's ``kind`` selects its behaviour, its fields give the bits
that hold state; the CFG word's layout and check are in ``cfg.py``.
Nothing about offsets or bit positions is written here.

Every register is a function of at most four register bits or so (one or
two LUT4s), and every clock enable is a register or a LUT of one.  An
address is decoded as it is captured, into one-hots of its fields
(``gather.py``).  The write channel is in ``csr_write.py``.  A read: the
address's one-hots, its row's select, each register's select (four copies,
one a byte), then registered partial ORs; a counter LO read captures the
counter's state and resolves it (``counter.py``), and the HI snapshot is
taken from the same state.
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.regmap import ADDR_BITS, COUNTERS, DATA_BITS, RegisterMap, STATUS_BITS
from neuron_fabric.hdl.top.bus import AXI4LiteSignature
from neuron_fabric.hdl.top.cfg import (CfgLayout, CfgWordLayout, ConfigSignature, RegionLayout, cfg_invalid,
                                       drive_config)
from neuron_fabric.hdl.prims.counter import CarryResolve, DigitCounter, add_gates
from neuron_fabric.hdl.top.csr_write import control_write_bound, response, write_channel
from neuron_fabric.hdl.prims.gather import AddressDecode, and_all, gather, or_all, tree
from neuron_fabric.hdl.prims.queue import select_copies

# The CFG layouts and check are imported from here by other blocks and tests.
__all__ = ["ERROR_EVENTS",
           "CfgWordLayout", "CfgLayout", "RegionLayout", "ConfigSignature", "EventSignature",
           "ControlRegisters", "cfg_invalid", "control_write_bound"]

#: Registers that are plain stored words (each region's window, and its view's
#: VIEW and SOURCE words on a build with the packed view).
_WORD_KINDS = ("base_lo", "base_hi", "limit_lo", "limit_hi", "view", "source_lo", "source_hi")
_WRITABLE = ("cfg", "status") + _WORD_KINDS
_BYTES = DATA_BITS // 8
#: Read stage in which the selects are valid (stage 0: the captured
#: one-hots, 1: the row's select).
_SEL = 2


#: The error events the top reports, in the order of ``EventSignature``'s
#: ``errors``, each with the STATUS bit it sets (both unsupported opcodes
#: set ``unsupported``).
ERROR_EVENTS = (("req_unsupported", "unsupported"), ("rwd_unsupported", "unsupported"),
                ("rd_err", "rd_err"), ("wr_err", "wr_err"), ("poison_drop", "poison_drop"))


def EventSignature():
    """Events the top reports to STATUS and the counters (seen from the source),
    each a bit of its block for this cycle: the error events of
    :data:`ERROR_EVENTS` and counters 0..4 to increment."""
    return wiring.Signature({"errors": Out(len(ERROR_EVENTS)), "count_inc": Out(5)})


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
        #: The counters (:class:`DigitCounter`), counter j at index j.
        self.counters = [DigitCounter(name=f"counter{j}") for j in range(len(COUNTERS))]
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
                 for reg in regs if reg.kind == "cfg" or reg.kind in _WORD_KINDS}
        status = Signal(len(STATUS_BITS))
        counters = self.counters
        for j, counter in enumerate(counters):
            m.submodules[f"counter{j}"] = counter
        drive_config(m, self.config, store, self._params)
        bad_event, clear = write_channel(m, self.bus, self.config,
                                         [r for r in regs if r.kind in _WRITABLE], store,
                                         self._params)
        self._read(m, regs, store, status, counters)

        # Events are registered as they come, with no logic between the
        # blocks that report them and these registers; STATUS is set from
        # them, and counter 5 counts them a cycle later (their number) and
        # adds the refused writes a cycle after that (a sum of two registers).
        ev = self.events
        errors_q = Signal(len(ERROR_EVENTS), name="csr_errors_q")
        inc_q = Signal(5, name="csr_inc_q")
        err_q, err_inc = Signal(3, name="csr_err_q"), Signal(3, name="csr_err_inc")
        # each STATUS bit from the events that set it; bad_csr from the writes
        sets = Cat(*(bad_event if f.name == "bad_csr" else
                     or_all(errors_q[k] for k, (_, bit) in enumerate(ERROR_EVENTS)
                            if bit == f.name)
                     for f in sorted(STATUS_BITS, key=lambda f: f.lsb)))
        m.d.sync += [errors_q.eq(ev.errors), inc_q.eq(ev.count_inc),
                     err_q.eq(sum(errors_q)), err_inc.eq(add_gates(err_q, bad_event)[0])]
        m.d.sync += status.eq((status & ~clear) | sets)
        m.d.comb += [counters[j].inc.eq(inc_q[j]) for j in range(5)]
        m.d.comb += counters[5].inc.eq(err_inc)
        return m

    def _read(self, m, regs, store, status, counters):
        bus = self.bus
        busy, rvalid = Signal(name="csr_r_busy"), Signal(name="csr_r_valid")
        ar_open = Signal(init=1, name="csr_r_open")
        rdata, rresp = Signal(DATA_BITS, name="csr_r_data"), Signal(2, name="csr_r_resp")
        m.d.comb += [bus.arready.eq(~busy), bus.rvalid.eq(rvalid), bus.rdata.eq(rdata),
                     bus.rresp.eq(rresp)]
        nxt = (busy | bus.arvalid) & ~(rvalid & bus.rready)
        m.d.sync += [busy.eq(nxt), ar_open.eq(~nxt)]
        resolve = m.submodules.counter_resolve = CarryResolve(low_bits=DATA_BITS)
        # stage[k] is high k cycles after the AR handshake: the captured
        # one-hots in stage 0, the selects from _SEL, the counter's state
        # from cap, its low 32 bits from lo_at and its value from hi_at
        # (the HI snapshot written then); RVALID the cycle after lo_at.
        # With RREADY high and a new address at once, the next read's first
        # level samples its source from lo_at + 3 + _SEL on, which must be
        # after the snapshot is written.
        cap = _SEL + 2
        lo_at, hi_at = cap + resolve.low_steps, cap + resolve.steps
        assert lo_at + 3 + _SEL > hi_at
        stage = Signal(hi_at + 1)
        m.d.sync += stage.eq(Cat(bus.arvalid & ~busy, stage[:-1]))

        words = [r.offset >> 2 for r in regs]
        dec = AddressDecode(m, bus.araddr[2:], words, "csr_r_a", ar_open)
        sel = _selects(m, dec, words)
        snapshots = _counter_read(m, [(s, r.index) for s, r in zip(sel, regs)
                                      if r.kind == "counter_lo"],
                                  counters, resolve, stage[hi_at - 1])
        partial = []
        for b in range(_BYTES):
            by_row = {}
            for s, r, w in zip(sel, regs, words):
                if r.kind != "counter_lo":
                    value = _source(r, store, status, snapshots)[8 * b:8 * b + 8]
                    by_row.setdefault(dec.row_key(w), []).append((s[b], value))
            partial.append(tree(m, list(by_row.values()), f"csr_rd_b{b}", last=2))
        hit = tree(m, [(s[0], Const(1, 1)) for s in sel], "csr_rd_hit")
        load = Signal()
        m.d.sync += load.eq(stage[lo_at - 1] & busy & ~rvalid & ~load)
        with m.If(load):
            # (the state of no counter is captured but for a LO read)
            m.d.sync += [rvalid.eq(1),
                         rdata.eq(Cat(or_all(p) for p in partial) | resolve.low[:DATA_BITS]),
                         rresp.eq(response(~or_all(hit)))]
        with m.If(rvalid & bus.rready):
            m.d.sync += rvalid.eq(0)


def _selects(m, dec, words):
    """Each word's select, two cycles after ``dec``'s one-hots (its row's,
    then its own), in four copies (one a byte of the data it selects): two
    from one copy of the row's and the column's one-hots, two from another,
    so that no LUT drives two of them and each one-hot half as many."""
    keys = sorted({dec.row_key(w) for w in words})
    rows = [[Signal(name=f"csr_r_row{k}_{c}") for k in range(len(keys))] for c in "ab"]
    for k, key in enumerate(keys):
        row = and_all(dec.row(next(w for w in words if dec.row_key(w) == key)))
        m.d.sync += [rows[0][k].eq(row), rows[1][k].eq(~row)]
    out = []
    for w in words:
        k = keys.index(dec.row_key(w))
        out.append(select_copies(m, rows[0][k] & dec.column(w, 0), 2) +
                   select_copies(m, ~rows[1][k] & dec.column(w, 1), 2))
    return out


def _counter_read(m, lo_sel, counters, resolve, before_hi):
    """The selected counter's state (``lo_sel``: its LO register's select
    copies and its index), captured in two cycles into ``resolve`` (each
    copy selecting a slice of it); each counter's HI snapshot, written
    from the resolved value when ``before_hi`` was high a cycle earlier.
    Returns the snapshots."""
    width = len(counters[0].state.as_value())
    cuts = [width * k // (_BYTES - 1) for k in range(_BYTES)]
    state = [gather(m, [(s[k + 1], counters[j].state.as_value()[lo:hi]) for s, j in lo_sel],
                    f"csr_rd_count{k}_")
             for k, (lo, hi) in enumerate(zip(cuts, cuts[1:]))]
    m.d.sync += resolve.state.eq(Cat(or_all(part) for part in state))
    snapshots = [Signal(DATA_BITS, name=f"counter{j}_hi_snap") for j in range(len(counters))]
    for s, j in lo_sel:
        take = Signal(name=f"counter{j}_hi_take")
        m.d.sync += take.eq(before_hi & s[0])
        with m.If(take):
            m.d.sync += snapshots[j].eq(resolve.value[DATA_BITS:])
    return snapshots


def _source(reg, store, status, snapshots):
    """The value a read of ``reg`` returns (not a counter's LO)."""
    if reg.kind == "const":
        return Const(reg.value, DATA_BITS)
    if reg.kind == "status":
        return status
    if reg.kind == "counter_hi":
        return snapshots[reg.index]
    return store[reg.name]
