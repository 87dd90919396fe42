"""The top ``neuron_fabric``: CXL.mem channels, AXI4 master, region table,
control registers and the datapath core (SPEC section 4).

Structure
---------
::

    M2S Req -> S1 accept -> S2 region match -> S3 select config
            -> S4 line index -> S5..S7 gate phase (and the pattern table)
            -> S8 gate mask -> tail
               tail: read   -> read ID, in-flight table entry, AR queue
                     MemInv -> NDR queue (Req)
    M2S RwD -> W1 accept -> write ID, AW/W queue   |  dropped -> NDR queue (RwD)
    AXI R   -> R1 (+ table entry) -> BYPASS or error: DRS arbiter
                                  -> otherwise: datapath -> DRS arbiter -> DRS queue
    AXI B   -> B1 (+ table entry) -> NDR arbiter (with both NDR queues) -> NDR queue

Every output channel leaves from a queue or register, and every ``ready``
the block drives depends on registers only.  The request pipeline S1..S8
moves under one enable (``en = tail empty or tail leaving``).

The datapath core takes the PATTERN gate as a mask of one bit per lane
(SPEC v2 section 3).  The request pipeline computes it from the region's P
and K and the line's phase (:mod:`.phase`): the table ``(u mod P) < K``
beside the phase in S7, each lane's bit selected by the phase in S8.  The
read's in-flight table entry holds the mask, so when the line returns from
memory the core's inputs come straight from the entry.  Without the
``gate_pattern_programmable`` feature (the paper profile) the table is the
constant of the fixed 2-of-3 gate (P = 3, K = 2) and the phase (formed with
the register's P) selects from it.

Reads and writes have separate ID spaces (AXI numbers them separately) of
MAX_OUTSTANDING IDs each; one occupancy counter keeps reads + writes in
flight at or below MAX_OUTSTANDING and drives ``devload``.  An entry is in
flight from the cycle its AR/AW is queued until its R/B beat is accepted.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .csr import AXIL_PORTS, CfgLayout, ControlRegisters, OKAY
from .datapath import Datapath
from .inflight import IdPool
from neuron_fabric.host.facts import Mode
from .phase import gate_mask, leaves, pattern_table, phase_lookup, reduce, MODULI
from neuron_fabric.host.facts import (CXL_ADDR_BITS, DRS_MEMDATA, NDR_CMP, PROFILES, TOP_MODULE,
                                      ReqOpcode, RwdOpcode, TopParams)

__all__ = ["Top", "devload_level"]


# What the tail of the request pipeline does with a request.
_KIND_READ, _KIND_CMP, _KIND_UNSUPPORTED, _KIND_DROP = range(4)

#: The fixed PATTERN gate of a build without ``gate_pattern_programmable``
#: (the paper's 2-of-3 gate): P, K.
_FIXED_PATTERN = (3, 2)

#: CFG fields a read needs when its line returns (the datapath's inputs
#: but for the mask, which replaces P, K and the phase).
_READ_CFG_FIELDS = ("mode", "format", "gate_kind", "threshold")


def devload_level(in_flight, max_outstanding):
    """``devload`` for ``in_flight`` table entries (SPEC 4.2, thresholds of
    this implementation): 0 light below 1/4 full, 1 optimal from 1/4,
    2 moderate from 3/4, 3 severe when full."""
    if in_flight >= max_outstanding:
        return 3
    if 4 * in_flight >= 3 * max_outstanding:
        return 2
    if 4 * in_flight >= max_outstanding:
        return 1
    return 0


def _cxl_ports(line_bits):
    lb = line_bits // 8
    return {
        "m2s_req_valid": In(1), "m2s_req_ready": Out(1), "m2s_req_opcode": In(4),
        "m2s_req_addr": In(CXL_ADDR_BITS), "m2s_req_tag": In(16),
        "m2s_rwd_valid": In(1), "m2s_rwd_ready": Out(1), "m2s_rwd_opcode": In(4),
        "m2s_rwd_addr": In(CXL_ADDR_BITS), "m2s_rwd_tag": In(16),
        "m2s_rwd_data": In(line_bits), "m2s_rwd_be": In(lb), "m2s_rwd_poison": In(1),
        "s2m_drs_valid": Out(1), "s2m_drs_ready": In(1), "s2m_drs_opcode": Out(3),
        "s2m_drs_tag": Out(16), "s2m_drs_data": Out(line_bits), "s2m_drs_poison": Out(1),
        "s2m_drs_devload": Out(2),
        "s2m_ndr_valid": Out(1), "s2m_ndr_ready": In(1), "s2m_ndr_opcode": Out(3),
        "s2m_ndr_tag": Out(16), "s2m_ndr_devload": Out(2),
    }


def _axi_ports(line_bits, id_bits):
    lb = line_bits // 8
    return {
        "m_axi_awid": Out(id_bits), "m_axi_awaddr": Out(CXL_ADDR_BITS), "m_axi_awlen": Out(8),
        "m_axi_awsize": Out(3), "m_axi_awburst": Out(2), "m_axi_awvalid": Out(1),
        "m_axi_awready": In(1),
        "m_axi_wdata": Out(line_bits), "m_axi_wstrb": Out(lb), "m_axi_wlast": Out(1),
        "m_axi_wvalid": Out(1), "m_axi_wready": In(1),
        "m_axi_bid": In(id_bits), "m_axi_bresp": In(2), "m_axi_bvalid": In(1),
        "m_axi_bready": Out(1),
        "m_axi_arid": Out(id_bits), "m_axi_araddr": Out(CXL_ADDR_BITS), "m_axi_arlen": Out(8),
        "m_axi_arsize": Out(3), "m_axi_arburst": Out(2), "m_axi_arvalid": Out(1),
        "m_axi_arready": In(1),
        "m_axi_rid": In(id_bits), "m_axi_rdata": In(line_bits), "m_axi_rresp": In(2),
        "m_axi_rlast": In(1), "m_axi_rvalid": In(1), "m_axi_rready": Out(1),
    }


class _Pipe:
    """Registers of a pipeline that moves under one enable."""

    def __init__(self, m, en):
        self._m = m
        self._en = en

    def stage(self, name, valid, sigs):
        """Register ``valid`` (with reset) and ``sigs`` (reset-less) under ``en``."""
        m = self._m
        valid_q = Signal(name=f"{name}_valid")
        regs = {}
        with m.If(self._en):
            m.d.sync += valid_q.eq(valid)
            for key, value in sigs.items():
                value = value.as_value() if hasattr(value, "as_value") else value
                reg = Signal(len(value), name=f"{name}_{key}", reset_less=True)
                m.d.sync += reg.eq(value)
                regs[key] = reg
        return valid_q, regs


class Top(wiring.Component):
    """The CXL.mem top ``neuron_fabric`` (SPEC section 4).

    Parameters
    ----------
    line_bits, workers, stages, regions, max_outstanding : int
        SPEC section 1.
    profile : str
        Datapath feature profile (``"full"`` implements all of SPEC section 2).

    Members
    -------
    The ports of SPEC 4.1, flat names; AXI ID width is
    ``TopParams.id_bits`` = ceil(log2(MAX_OUTSTANDING)).

    Raises
    ------
    TypeError, ValueError
        For a parameter outside SPEC section 1 (the message quotes it).
    """

    def __init__(self, *, line_bits=512, workers=8, stages=5, regions=8,
                 max_outstanding=32, profile="full"):
        self._params = TopParams(line_bits=line_bits, workers=workers, stages=stages,
                                 regions=regions, max_outstanding=max_outstanding,
                                 profile=profile)
        ports = _cxl_ports(line_bits)
        ports.update(_axi_ports(line_bits, self._params.id_bits))
        for name, direction, width in AXIL_PORTS:
            ports[name] = In(width) if direction == "in" else Out(width)
        super().__init__(ports)

    @property
    def params(self):
        return self._params

    def elaborate(self, platform):
        m = Module()
        p = self._params
        n = p.max_outstanding
        idw = p.id_bits
        ob = p.offset_bits
        addr_bits = CXL_ADDR_BITS - ob

        csr = m.submodules.csr = ControlRegisters(p)
        for name, direction, _ in AXIL_PORTS:
            if direction == "in":
                m.d.comb += getattr(csr, name).eq(getattr(self, name))
            else:
                m.d.comb += getattr(self, name).eq(getattr(csr, name))

        dp = m.submodules.datapath = Datapath(line_bits=p.line_bits, workers=p.workers,
                                              stages=p.stages, profile=p.profile)
        rpool = m.submodules.read_ids = IdPool(size=n, id_bits=idw)
        wpool = m.submodules.write_ids = IdPool(size=n, id_bits=idw)

        entry_layout = data.StructLayout({
            "tag": 16, **{name: CfgLayout[name].shape for name in _READ_CFG_FIELDS},
            "mask": p.lanes})
        rtab = m.submodules.read_table = Memory(shape=entry_layout, depth=n, init=[])
        wtab = m.submodules.write_table = Memory(shape=16, depth=n, init=[])
        rtab_w, rtab_r = rtab.write_port(), rtab.read_port(domain="sync")
        wtab_w, wtab_r = wtab.write_port(), wtab.read_port(domain="sync")

        arq = m.submodules.ar_queue = SyncFIFOBuffered(width=idw + addr_bits, depth=3)
        awq = m.submodules.aw_queue = SyncFIFOBuffered(
            width=idw + addr_bits + p.line_bits + p.line_bytes, depth=3)
        req_cmp = m.submodules.req_cmp_queue = SyncFIFO(width=16, depth=2)
        rwd_cmp = m.submodules.rwd_cmp_queue = SyncFIFO(width=16, depth=2)
        drsq = m.submodules.drs_queue = SyncFIFOBuffered(width=p.line_bits + 17, depth=3)
        ndrq = m.submodules.ndr_queue = SyncFIFOBuffered(width=16, depth=3)

        # -- occupancy ---------------------------------------------------------
        in_flight = Signal(range(n + 1))
        r_alloc, w_alloc, r_free, w_free = Signal(), Signal(), Signal(), Signal()
        r_want, w_want = Signal(), Signal()
        cap_r, cap_w = Signal(), Signal()
        m.d.comb += [
            cap_r.eq(in_flight < n),
            cap_w.eq(Mux(r_want, in_flight < n - 1, in_flight < n)),
        ]
        in_flight_next = Signal.like(in_flight)
        m.d.comb += in_flight_next.eq(in_flight + r_alloc + w_alloc - r_free - w_free)
        m.d.sync += in_flight.eq(in_flight_next)
        devload = Signal(2)
        m.d.sync += devload.eq(
            Mux(in_flight_next >= n, 3,
                Mux(4 * in_flight_next >= 3 * n, 2,
                    Mux(4 * in_flight_next >= n, 1, 0))))
        m.d.comb += [self.s2m_drs_devload.eq(devload), self.s2m_ndr_devload.eq(devload)]

        # -- request pipeline S1..S8 -------------------------------------------
        en = Signal()
        pipe = _Pipe(m, en)
        m.d.comb += self.m2s_req_ready.eq(en & ~csr.write_pending)
        s1_valid, s1 = pipe.stage("s1", self.m2s_req_valid & self.m2s_req_ready, {
            "opcode": self.m2s_req_opcode, "addr": self.m2s_req_addr[ob:],
            "tag": self.m2s_req_tag})

        kind = Signal(2)
        with m.Switch(s1["opcode"]):
            with m.Case(ReqOpcode.MEM_RD, ReqOpcode.MEM_RD_DATA):
                m.d.comb += kind.eq(_KIND_READ)
            with m.Case(ReqOpcode.MEM_INV, ReqOpcode.MEM_INV_NT):
                m.d.comb += kind.eq(_KIND_CMP)
            with m.Case(ReqOpcode.MEM_SPEC_RD):
                m.d.comb += kind.eq(_KIND_DROP)
            with m.Default():
                m.d.comb += kind.eq(_KIND_UNSUPPORTED)
        match = [csr.regions[r].enable & (csr.regions[r].base <= s1["addr"]) &
                 (s1["addr"] < csr.regions[r].limit) for r in range(p.regions)]
        s2_valid, s2 = pipe.stage("s2", s1_valid, {
            "kind": kind, "addr": s1["addr"], "tag": s1["tag"],
            "match": Cat(*match) if match else Const(0, 1)})

        cfg = Signal(CfgLayout)
        base = Signal(addr_bits)
        m.d.comb += [cfg.eq(csr.default_cfg), base.eq(0)]
        for r in reversed(range(p.regions)):
            with m.If(s2["match"][r]):
                m.d.comb += [cfg.eq(csr.regions[r].cfg), base.eq(csr.regions[r].base)]
        m.d.comb += csr.write_go.eq(~s1_valid & ~s2_valid)
        keep = {"kind": s2["kind"], "addr": s2["addr"], "tag": s2["tag"]}
        s3_valid, s3 = pipe.stage("s3", s2_valid, {**keep, "cfg": cfg, "base": base})

        def passing(s):
            return {k: s[k] for k in ("kind", "addr", "tag", "cfg")}

        line_index = Signal(addr_bits)
        m.d.comb += line_index.eq(s3["addr"] - s3["base"])
        s4_valid, s4 = pipe.stage("s4", s3_valid, {**passing(s3), "index": line_index})

        parts = leaves(m, s4["index"])
        s5_valid, s5 = pipe.stage("s5", s4_valid, {
            **passing(s4), "low": s4["index"][:3],
            **{f"r{q}_{i}": v for q in MODULI for i, v in enumerate(parts[q])}})

        def residues_of(s):
            return {q: [s[k] for k in sorted((k for k in s if k.startswith(f"r{q}_")),
                                             key=lambda k: int(k.split("_")[1]))]
                    for q in MODULI}

        res = {q: reduce(vals, q, levels=2) for q, vals in residues_of(s5).items()}
        s6_valid, s6 = pipe.stage("s6", s5_valid, {
            **passing(s5), "low": s5["low"],
            **{f"r{q}_{i}": v for q in MODULI for i, v in enumerate(res[q])}})

        final = {q: reduce(vals, q)[0] for q, vals in residues_of(s6).items()}
        s6_cfg = data.View(CfgLayout, s6["cfg"])
        phase = phase_lookup(m, s6["low"], final, s6_cfg.period, p.lanes)
        if PROFILES[p.profile].has("gate_pattern_programmable"):
            s7_valid, s7 = pipe.stage("s7", s6_valid, {
                **passing(s6), "phase": phase,
                "table": pattern_table(s6_cfg.period, s6_cfg.keep, p.lanes)})
            table = s7["table"]
        else:
            s7_valid, s7 = pipe.stage("s7", s6_valid, {**passing(s6), "phase": phase})
            table = pattern_table(*_FIXED_PATTERN, p.lanes)
        tail_valid, tail = pipe.stage("s8", s7_valid, {
            **passing(s7), "mask": gate_mask(table, s7["phase"], p.lanes)})
        tail_cfg = data.View(CfgLayout, tail["cfg"])

        # -- tail: issue reads, queue completions --------------------------------
        is_read = tail["kind"] == _KIND_READ
        is_cmp = (tail["kind"] == _KIND_CMP) | (tail["kind"] == _KIND_UNSUPPORTED)
        tail_leave = Signal()
        m.d.comb += [
            r_want.eq(tail_valid & is_read & rpool.alloc_ok & arq.w_rdy),
            tail_leave.eq(Mux(is_read, r_want & cap_r,
                              Mux(is_cmp, req_cmp.w_rdy, 1))),
            en.eq(~tail_valid | tail_leave),
            r_alloc.eq(tail_valid & is_read & tail_leave),
            rpool.alloc.eq(r_alloc),
            rtab_w.en.eq(r_alloc),
            rtab_w.addr.eq(rpool.alloc_id),
            rtab_w.data.tag.eq(tail["tag"]),
            *(getattr(rtab_w.data, name).eq(getattr(tail_cfg, name)) for name in _READ_CFG_FIELDS),
            rtab_w.data.mask.eq(tail["mask"]),
            arq.w_en.eq(r_alloc),
            arq.w_data.eq(Cat(rpool.alloc_id, tail["addr"])),
            req_cmp.w_en.eq(tail_valid & is_cmp),
            req_cmp.w_data.eq(tail["tag"]),
        ]
        unsupported_req = tail_valid & (tail["kind"] == _KIND_UNSUPPORTED) & req_cmp.w_rdy
        count_inc = [r_alloc & (tail_cfg.mode == mode) for mode in Mode]

        # -- AR channel -------------------------------------------------------------
        m.d.comb += [
            self.m_axi_arvalid.eq(arq.r_rdy),
            self.m_axi_arid.eq(arq.r_data[:idw]),
            self.m_axi_araddr.eq(arq.r_data[idw:] << ob),
            self.m_axi_arlen.eq(0),
            self.m_axi_arsize.eq(ob),
            self.m_axi_arburst.eq(1),
            arq.r_en.eq(self.m_axi_arready),
        ]

        # -- RwD: W1 accept, AW/W issue --------------------------------------------
        w1_valid = Signal()
        w1 = {k: Signal(len(getattr(self, f"m2s_rwd_{k}")), name=f"w1_{k}", reset_less=True)
              for k in ("opcode", "addr", "tag", "data", "be", "poison")}
        w1_leave = Signal()
        m.d.comb += self.m2s_rwd_ready.eq(~w1_valid | w1_leave)
        with m.If(self.m2s_rwd_ready):
            m.d.sync += w1_valid.eq(self.m2s_rwd_valid)
            m.d.sync += [w1[k].eq(getattr(self, f"m2s_rwd_{k}")) for k in w1]
        w1_good = ~w1["poison"] & ((w1["opcode"] == RwdOpcode.MEM_WR) |
                                   (w1["opcode"] == RwdOpcode.MEM_WR_PTL))
        strb = Mux(w1["opcode"] == RwdOpcode.MEM_WR, Const((1 << p.line_bytes) - 1, p.line_bytes), w1["be"])
        m.d.comb += [
            w_want.eq(w1_valid & w1_good & wpool.alloc_ok & awq.w_rdy),
            w1_leave.eq(Mux(w1_good, w_want & cap_w, rwd_cmp.w_rdy)),
            w_alloc.eq(w1_valid & w1_good & w1_leave),
            wpool.alloc.eq(w_alloc),
            wtab_w.en.eq(w_alloc),
            wtab_w.addr.eq(wpool.alloc_id),
            wtab_w.data.eq(w1["tag"]),
            awq.w_en.eq(w_alloc),
            awq.w_data.eq(Cat(wpool.alloc_id, w1["addr"][ob:], w1["data"], strb)),
            rwd_cmp.w_en.eq(w1_valid & ~w1_good),
            rwd_cmp.w_data.eq(w1["tag"]),
        ]
        dropped = w1_valid & ~w1_good & rwd_cmp.w_rdy
        poison_drop = dropped & w1["poison"]
        unsupported_rwd = dropped & ~w1["poison"]

        aw_done, w_done = Signal(), Signal()
        aw_fire = self.m_axi_awvalid & self.m_axi_awready
        w_fire = self.m_axi_wvalid & self.m_axi_wready
        finish = awq.r_rdy & (aw_done | aw_fire) & (w_done | w_fire)
        head = awq.r_data
        m.d.comb += [
            self.m_axi_awvalid.eq(awq.r_rdy & ~aw_done),
            self.m_axi_awid.eq(head[:idw]),
            self.m_axi_awaddr.eq(head[idw:idw + addr_bits] << ob),
            self.m_axi_awlen.eq(0),
            self.m_axi_awsize.eq(ob),
            self.m_axi_awburst.eq(1),
            self.m_axi_wvalid.eq(awq.r_rdy & ~w_done),
            self.m_axi_wdata.eq(head[idw + addr_bits:idw + addr_bits + p.line_bits]),
            self.m_axi_wstrb.eq(head[idw + addr_bits + p.line_bits:]),
            self.m_axi_wlast.eq(1),
            awq.r_en.eq(finish),
        ]
        with m.If(finish):
            m.d.sync += [aw_done.eq(0), w_done.eq(0)]
        with m.Else():
            with m.If(aw_fire):
                m.d.sync += aw_done.eq(1)
            with m.If(w_fire):
                m.d.sync += w_done.eq(1)

        # -- R: R1, then BYPASS/error straight to DRS, the rest via the datapath ----
        r1_valid = Signal()
        r1_data = Signal(p.line_bits, reset_less=True)
        r1_err = Signal()
        r1_leave = Signal()
        m.d.comb += [
            self.m_axi_rready.eq(~r1_valid | r1_leave),
            rtab_r.addr.eq(self.m_axi_rid),
            rtab_r.en.eq(self.m_axi_rready),
            r_free.eq(self.m_axi_rvalid & self.m_axi_rready),
            rpool.free.eq(r_free),
            rpool.free_id.eq(self.m_axi_rid),
        ]
        with m.If(self.m_axi_rready):
            m.d.sync += [r1_valid.eq(self.m_axi_rvalid), r1_data.eq(self.m_axi_rdata),
                         r1_err.eq(self.m_axi_rresp != OKAY)]
        rd_err = r_free & (self.m_axi_rresp != OKAY)
        entry = rtab_r.data
        r1_bypass = (entry.mode == Mode.BYPASS) | r1_err
        m.d.comb += [
            dp.in_valid.eq(r1_valid & ~r1_bypass),
            dp.in_data.eq(r1_data),
            dp.in_tag.eq(entry.tag),
            dp.in_mode.eq(entry.mode),
            dp.in_format.eq(entry.format),
            dp.in_gate_kind.eq(entry.gate_kind),
            dp.in_gate_mask.eq(entry.mask),
            dp.in_gate_threshold.eq(entry.threshold),
        ]

        # DRS arbiter: round robin between the bypass route and the datapath.
        last_dp = Signal()
        bp_req = r1_valid & r1_bypass
        pick_dp = Signal()
        pick_bp = Signal()
        m.d.comb += [
            pick_dp.eq(dp.out_valid & (~bp_req | ~last_dp)),
            pick_bp.eq(bp_req & ~pick_dp),
            dp.out_ready.eq(drsq.w_rdy & pick_dp),
            r1_leave.eq(Mux(r1_bypass, drsq.w_rdy & pick_bp, dp.in_ready)),
            drsq.w_en.eq(pick_dp | pick_bp),
            drsq.w_data.eq(Mux(pick_dp, Cat(dp.out_data, dp.out_tag, Const(0, 1)),
                               Cat(r1_data, entry.tag, r1_err))),
        ]
        with m.If(drsq.w_rdy & (pick_dp | pick_bp)):
            m.d.sync += last_dp.eq(pick_dp)
        m.d.comb += [
            self.s2m_drs_valid.eq(drsq.r_rdy),
            self.s2m_drs_opcode.eq(DRS_MEMDATA),
            self.s2m_drs_data.eq(drsq.r_data[:p.line_bits]),
            self.s2m_drs_tag.eq(drsq.r_data[p.line_bits:p.line_bits + 16]),
            self.s2m_drs_poison.eq(drsq.r_data[-1]),
            drsq.r_en.eq(self.s2m_drs_ready),
        ]

        # -- B: B1, then the NDR arbiter ---------------------------------------------
        b1_valid = Signal()
        b1_leave = Signal()
        m.d.comb += [
            self.m_axi_bready.eq(~b1_valid | b1_leave),
            wtab_r.addr.eq(self.m_axi_bid),
            wtab_r.en.eq(self.m_axi_bready),
            w_free.eq(self.m_axi_bvalid & self.m_axi_bready),
            wpool.free.eq(w_free),
            wpool.free_id.eq(self.m_axi_bid),
        ]
        with m.If(self.m_axi_bready):
            m.d.sync += b1_valid.eq(self.m_axi_bvalid)
        wr_err = w_free & (self.m_axi_bresp != OKAY)

        # Round robin over (Req completions, RwD completions, B completions).
        sources = [(req_cmp.r_rdy, req_cmp.r_data), (rwd_cmp.r_rdy, rwd_cmp.r_data),
                   (b1_valid, wtab_r.data)]
        first = Signal(range(3))        # source with the highest priority
        grant = [Signal(name=f"ndr_grant{i}") for i in range(3)]
        for start in range(3):
            with m.If(first == start):
                taken = Const(0, 1)
                for k in range(3):
                    i = (start + k) % 3
                    m.d.comb += grant[i].eq(sources[i][0] & ~taken)
                    taken = taken | sources[i][0]
        ndr_tag = Signal(16)
        for i in range(3):
            with m.If(grant[i]):
                m.d.comb += ndr_tag.eq(sources[i][1])
                with m.If(ndrq.w_rdy):
                    m.d.sync += first.eq((i + 1) % 3)
        m.d.comb += [
            ndrq.w_en.eq(grant[0] | grant[1] | grant[2]),
            ndrq.w_data.eq(ndr_tag),
            req_cmp.r_en.eq(grant[0] & ndrq.w_rdy),
            rwd_cmp.r_en.eq(grant[1] & ndrq.w_rdy),
            b1_leave.eq(grant[2] & ndrq.w_rdy),
            self.s2m_ndr_valid.eq(ndrq.r_rdy),
            self.s2m_ndr_opcode.eq(NDR_CMP),
            self.s2m_ndr_tag.eq(ndrq.r_data),
            ndrq.r_en.eq(self.s2m_ndr_ready),
        ]

        # -- events for STATUS and the counters ------------------------------------
        m.d.comb += [
            csr.status_set.eq(Cat(unsupported_req | unsupported_rwd, rd_err, wr_err, poison_drop)),
            csr.error_count.eq(unsupported_req + unsupported_rwd + rd_err + wr_err + poison_drop),
            csr.count_inc.eq(Cat(*count_inc, w_alloc)),
        ]
        return m
