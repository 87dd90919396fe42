"""AXI4-Lite control registers of the top (SPEC section 4.4).

The decode is generated from :class:`neuron_fabric.host.regmap.RegisterMap`: each
register's ``kind`` selects its behaviour, its fields give the bits that hold
state.  Nothing about offsets or bit positions is written here.
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.regmap import ADDR_BITS, CFG_FIELDS, CXL_ADDR_BITS, DATA_BITS, RegisterMap, STATUS_BITS

__all__ = ["AXIL_PORTS", "CfgLayout", "RegionLayout", "ControlRegisters", "OKAY", "SLVERR"]

OKAY = 0b00
SLVERR = 0b10

#: AXI4-Lite slave ports (name, direction seen from the slave, width).
AXIL_PORTS = (
    ("s_axil_awaddr", "in", ADDR_BITS), ("s_axil_awprot", "in", 3),
    ("s_axil_awvalid", "in", 1), ("s_axil_awready", "out", 1),
    ("s_axil_wdata", "in", DATA_BITS), ("s_axil_wstrb", "in", DATA_BITS // 8),
    ("s_axil_wvalid", "in", 1), ("s_axil_wready", "out", 1),
    ("s_axil_bresp", "out", 2), ("s_axil_bvalid", "out", 1), ("s_axil_bready", "in", 1),
    ("s_axil_araddr", "in", ADDR_BITS), ("s_axil_arprot", "in", 3),
    ("s_axil_arvalid", "in", 1), ("s_axil_arready", "out", 1),
    ("s_axil_rdata", "out", DATA_BITS), ("s_axil_rresp", "out", 2),
    ("s_axil_rvalid", "out", 1), ("s_axil_rready", "in", 1),
)

#: One read configuration as the datapath needs it (CFG layout less ``enable``).
CfgLayout = data.StructLayout({f.name: f.width for f in CFG_FIELDS})


_ADDR_KINDS = ("base_lo", "base_hi", "limit_lo", "limit_hi")


def RegionLayout(addr_bits):
    """A region: its configuration, enable bit and line-aligned window."""
    return data.StructLayout({"cfg": CfgLayout, "enable": 1,
                              "base": addr_bits, "limit": addr_bits})


class ControlRegisters(wiring.Component):
    """AXI4-Lite slave holding DEFAULT_CFG, STATUS, counters and the region table.

    One read and one write are handled at a time.  A write is performed only
    while ``write_go`` is high; ``write_pending`` asks for it, so that the
    request path can stop accepting requests and drain the stages that read
    the configuration (then "a write applies to requests accepted after its
    BVALID" holds exactly).

    Parameters
    ----------
    params : TopParams

    Members
    -------
    s_axil_* :
        The AXI4-Lite slave port (see :data:`AXIL_PORTS`).
    default_cfg : CfgLayout, out
    regions : ArrayLayout(RegionLayout, REGIONS), out
        Region table; base and limit are line addresses (byte address >>
        log2(LINE_BYTES)).
    status_set : In(4)
        STATUS bits 0..3 to set this cycle.
    error_count : In(3)
        Events this cycle that set a STATUS bit (BAD_CSR is added here).
    count_inc : In(5)
        Counters 0..4 to increment this cycle.
    write_pending : Out(1)
    write_go : In(1)
    """

    def __init__(self, params):
        self._params = params
        self._map = RegisterMap(params)
        self._addr_bits = CXL_ADDR_BITS - params.offset_bits
        ports = {}
        for name, direction, width in AXIL_PORTS:
            ports[name] = In(width) if direction == "in" else Out(width)
        ports.update({
            "default_cfg": Out(CfgLayout),
            "status_set": In(4),
            "error_count": In(3),
            "count_inc": In(5),
            "write_pending": Out(1),
            "write_go": In(1),
        })
        if params.regions:
            ports["regions"] = Out(data.ArrayLayout(RegionLayout(self._addr_bits), params.regions))
        super().__init__(ports)

    @property
    def register_map(self):
        return self._map

    def elaborate(self, platform):
        m = Module()
        p = self._params
        rmap = self._map

        # -- state --------------------------------------------------------------
        cfg_regs = {}       # register name -> Signal(32) holding its CFG bits
        addr_regs = {}      # register name -> Signal(32) holding an address word
        status = Signal(len(STATUS_BITS))
        counters = [Signal(64, name=f"counter{j}") for j in range(6)]
        snapshots = [Signal(32, name=f"counter{j}_hi_snap") for j in range(6)]
        for reg in rmap.registers:
            if reg.kind == "cfg":
                cfg_regs[reg.name] = Signal(32, name=reg.name.lower(), init=reg.reset)
            elif reg.kind in _ADDR_KINDS:
                addr_regs[reg.name] = Signal(32, name=reg.name.lower())

        def cfg_view(sig):
            return {f.name: sig[f.lsb:f.lsb + f.width] for f in CFG_FIELDS}

        for name, value in cfg_view(cfg_regs["DEFAULT_CFG"]).items():
            m.d.comb += self.default_cfg[name].eq(value)
        ob = p.offset_bits
        for r in range(p.regions):
            cfg = cfg_regs[f"REGION{r}_CFG"]
            region = self.regions[r]
            for name, value in cfg_view(cfg).items():
                m.d.comb += region.cfg[name].eq(value)
            m.d.comb += [
                region.enable.eq(cfg[31]),
                region.base.eq(Cat(addr_regs[f"REGION{r}_BASE_LO"],
                                   addr_regs[f"REGION{r}_BASE_HI"][:20])[ob:]),
                region.limit.eq(Cat(addr_regs[f"REGION{r}_LIMIT_LO"],
                                    addr_regs[f"REGION{r}_LIMIT_HI"][:20])[ob:]),
            ]

        # -- write channel --------------------------------------------------------
        aw_full = Signal()
        aw_addr = Signal(ADDR_BITS)
        w_full = Signal()
        w_data = Signal(DATA_BITS, reset_less=True)
        w_strb = Signal(DATA_BITS // 8)
        bvalid = Signal()
        bresp = Signal(2)
        m.d.comb += [
            self.s_axil_awready.eq(~aw_full),
            self.s_axil_wready.eq(~w_full),
            self.s_axil_bvalid.eq(bvalid),
            self.s_axil_bresp.eq(bresp),
            self.write_pending.eq(aw_full & w_full & ~bvalid),
        ]
        with m.If(self.s_axil_awvalid & ~aw_full):
            m.d.sync += [aw_full.eq(1), aw_addr.eq(self.s_axil_awaddr)]
        with m.If(self.s_axil_wvalid & ~w_full):
            m.d.sync += [w_full.eq(1), w_data.eq(self.s_axil_wdata), w_strb.eq(self.s_axil_wstrb)]
        with m.If(bvalid & self.s_axil_bready):
            m.d.sync += bvalid.eq(0)

        byte_mask = Cat(w_strb[i].replicate(8) for i in range(DATA_BITS // 8))
        commit = Signal()
        bad = Signal()
        clear = Signal(len(STATUS_BITS))
        m.d.comb += commit.eq(self.write_pending & self.write_go)

        w = p.workers
        with m.If(commit):
            m.d.sync += [aw_full.eq(0), w_full.eq(0), bvalid.eq(1),
                         bresp.eq(OKAY)]
            with m.Switch(aw_addr[2:]):
                for reg in rmap.registers:
                    with m.Case(reg.offset >> 2):
                        if reg.kind == "cfg":
                            old = cfg_regs[reg.name]
                            new = Signal(32, name=f"{reg.name.lower()}_new")
                            m.d.comb += new.eq(((old & ~byte_mask) | (w_data & byte_mask))
                                               & reg.writable_mask)
                            f = cfg_view(new)
                            invalid = ((f["format"] == 3) | (f["period"] == 0) |
                                       (f["keep"] > f["period"]) | (f["threshold"] > w))
                            with m.If(invalid):
                                m.d.comb += bad.eq(1)
                            with m.Else():
                                m.d.sync += old.eq(new)
                        elif reg.kind == "status":
                            m.d.comb += clear.eq((w_data & byte_mask)[:len(STATUS_BITS)])
                        elif reg.kind in _ADDR_KINDS:
                            old = addr_regs[reg.name]
                            m.d.sync += old.eq(((old & ~byte_mask) | (w_data & byte_mask))
                                               & reg.writable_mask)
                        else:
                            m.d.comb += bad.eq(1)
                with m.Default():
                    m.d.comb += bad.eq(1)
            with m.If(bad):
                m.d.sync += bresp.eq(SLVERR)

        # -- status and counters -------------------------------------------------
        m.d.sync += status.eq((status & ~clear) | Cat(self.status_set, bad))
        for j in range(5):
            with m.If(self.count_inc[j]):
                m.d.sync += counters[j].eq(counters[j] + 1)
        m.d.sync += counters[5].eq(counters[5] + self.error_count + bad)

        # -- read channel --------------------------------------------------------
        rvalid = Signal()
        rdata = Signal(DATA_BITS)
        rresp = Signal(2)
        m.d.comb += [
            self.s_axil_arready.eq(~rvalid),
            self.s_axil_rvalid.eq(rvalid),
            self.s_axil_rdata.eq(rdata),
            self.s_axil_rresp.eq(rresp),
        ]
        with m.If(rvalid & self.s_axil_rready):
            m.d.sync += rvalid.eq(0)
        with m.If(self.s_axil_arvalid & ~rvalid):
            m.d.sync += [rvalid.eq(1), rresp.eq(OKAY), rdata.eq(0)]
            with m.Switch(self.s_axil_araddr[2:]):
                for reg in rmap.registers:
                    with m.Case(reg.offset >> 2):
                        m.d.sync += rdata.eq(self._read_value(m, reg, cfg_regs, addr_regs,
                                                              status, counters, snapshots))
                with m.Default():
                    m.d.sync += rresp.eq(SLVERR)
        return m

    def _read_value(self, m, reg, cfg_regs, addr_regs, status, counters, snapshots):
        if reg.kind == "const":
            return Const(reg.value, 32)
        if reg.kind == "cfg":
            return cfg_regs[reg.name]
        if reg.kind == "status":
            return status
        if reg.kind == "counter_lo":
            m.d.sync += snapshots[reg.index].eq(counters[reg.index][32:])
            return counters[reg.index][:32]
        if reg.kind == "counter_hi":
            return snapshots[reg.index]
        return addr_regs[reg.name]
