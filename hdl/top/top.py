"""The top ``neuron_fabric``: CXL.mem channels, AXI4 master, region table,
control registers and the datapath core (contract section 4), composed from
one block per file::

    M2S Req -> RequestPipeline (request.py) -> ReadIssue (read_issue.py) -> AXI AR
                                                  \\-> Req completions --\\
    M2S RwD -> WritePath (write_path.py) -> AXI AW/W                     |
                    \\-> dropped completions -----------------------------+
    AXI B   -> NdrArbiter (ndr_arbiter.py) <-- in-flight entry -------------------+-> S2M NDR
    AXI R   -> ReadPath (read_path.py) <-- in-flight entry
                 -> datapath core or bypass -> DRS arbiter -> S2M DRS
    AXI4-Lite -> ControlRegisters (csr.py) -> configuration -> RequestPipeline
    InFlightTable (inflight.py): IDs, entries, occupancy, devload (a read's place
        is reserved at accept; RequestPipeline takes its ID and fills its entry)

Every block that takes a stream from outside admits by credit: its
``ready`` is a register, high only while everything it has admitted fits
in the queue behind it, so no pipeline stalls and every ``ready`` and
``valid`` the top drives comes from a register.  Events for STATUS and
the counters go to the control registers one bit per event, registered
there before any logic (``csr.ERROR_EVENTS``).
"""

from amaranth import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect

from neuron_fabric.contract.facts import CXL_ADDR_BITS, profile_named, TopParams
from neuron_fabric.contract.regmap import HIERARCHY_CFG_FIELDS
from neuron_fabric.hdl.top.bus import AXI4LiteSignature, AXI4Signature, BURST_INCR, cxl_channels
from neuron_fabric.hdl.top.cfg import has_view
from neuron_fabric.hdl.top.csr import ERROR_EVENTS, ControlRegisters
from neuron_fabric.hdl.datapath import Datapath
from neuron_fabric.hdl.hierarchy.unit import HierarchyUnit
from neuron_fabric.hdl.top.inflight import InFlightTable, devload_level
from neuron_fabric.hdl.top.read_issue import ReadIssue
from neuron_fabric.hdl.top.ndr_arbiter import NdrArbiter
from neuron_fabric.hdl.top.read_path import ReadPath
from neuron_fabric.hdl.top.request import ReadEntryLayout, RequestPipeline
from neuron_fabric.hdl.top.view_pack import read_lookup_cycles
from neuron_fabric.hdl.top.write_path import WritePath

__all__ = ["Top", "devload_level"]


class Top(wiring.Component):
    """The CXL.mem top ``neuron_fabric`` (contract section 4).

    Parameters
    ----------
    line_bits, workers, stages, regions, max_outstanding : int
        contract section 1.
    profile : str
        Datapath feature profile (``"full"`` implements all of contract section 2).

    Members
    -------
    m2s_req, m2s_rwd : In(stream.Signature(...))
    s2m_drs, s2m_ndr : Out(stream.Signature(...))
        The CXL.mem channels (:func:`.bus.cxl_channels`).
    m_axi : Out(AXI4Signature(addr_width=52, data_width=LINE_BITS, id_width=...))
        ID width ``TopParams.id_bits`` = ceil(log2(MAX_OUTSTANDING)).
    s_axil : In(AXI4LiteSignature(addr_width=12, data_width=32))

    Raises
    ------
    TypeError, ValueError
        For a parameter outside contract section 1 (the message quotes it).
    """

    def __init__(self, *, line_bits=512, workers=8, stages=5, regions=8,
                 max_outstanding=32, profile="full"):
        self._params = TopParams(line_bits=line_bits, workers=workers, stages=stages,
                                 regions=regions, max_outstanding=max_outstanding,
                                 profile=profile)
        p = self._params
        super().__init__({
            **cxl_channels(line_bits),
            "m_axi": Out(AXI4Signature(addr_width=CXL_ADDR_BITS, data_width=line_bits,
                                       id_width=p.id_bits)),
            "s_axil": In(AXI4LiteSignature(addr_width=12, data_width=32)),
        })

    @property
    def params(self):
        return self._params

    def elaborate(self, platform):
        m = Module()
        p = self._params
        csr = m.submodules.csr = ControlRegisters(p)
        request = m.submodules.request = RequestPipeline(p)
        issue = m.submodules.issue = ReadIssue(p)
        write = m.submodules.write = WritePath(p)
        read = m.submodules.read = ReadPath(p)
        ndr = m.submodules.ndr = NdrArbiter(p)
        table = m.submodules.in_flight = InFlightTable(p, read_entry=ReadEntryLayout(p),
                                                       write_entry=16,
                                                       read_cycles=read_lookup_cycles(p),
                                                       read_retire=has_view(p))
        # With the hierarchy extension the core sits inside its wrapper
        # (contract section 5), which has the core's streams and latency.
        hierarchy = profile_named(p.profile).has("hierarchy")
        dims = dict(line_bits=p.line_bits, workers=p.workers, stages=p.stages, profile=p.profile)
        core = m.submodules.datapath = \
            HierarchyUnit(**dims, permute_copies=True, limits_in=hasattr(read, "limits")) \
            if hierarchy else Datapath(**dims, keep_copies=True)
        if hierarchy:
            m.d.comb += core.permute.eq(read.permute)
        if hasattr(read, "limits"):
            m.d.comb += core.limits.eq(read.limits)

        connect(m, wiring.flipped(self.s_axil), csr.bus)
        connect(m, wiring.flipped(self.m2s_req), request.req)
        connect(m, wiring.flipped(self.m2s_rwd), write.rwd)
        connect(m, wiring.flipped(self.s2m_drs), read.drs)
        connect(m, wiring.flipped(self.s2m_ndr), ndr.ndr)
        connect(m, csr.config, request.config)
        connect(m, request.out, issue.requests)
        connect(m, request.reserve, table.read_reserve)
        connect(m, request.alloc, table.read_alloc)
        connect(m, write.alloc, table.write_alloc)
        connect(m, read.lookup, table.read_lookup)
        connect(m, ndr.lookup, table.write_lookup)
        connect(m, issue.completions, ndr.req_cmp)
        connect(m, write.completions, ndr.rwd_cmp)
        m.d.comb += [read.devload.eq(table.devload), ndr.devload.eq(table.devload),
                     request.left.read.eq(issue.read_left), request.left.cmp.eq(ndr.req_left)]
        self._axi(m, issue, write, read, ndr)
        self._core(m, read, core)

        sources = {"req_unsupported": issue.unsupported, "rwd_unsupported": write.unsupported,
                   "rd_err": read.rd_err, "wr_err": ndr.wr_err, "poison_drop": write.poison_drop}
        m.d.comb += [csr.events.errors.eq(Cat(*(sources[name] for name, _ in ERROR_EVENTS))),
                     csr.events.count_inc.eq(Cat(issue.reads, write.writes))]
        return m

    def _axi(self, m, issue, write, read, ndr):
        """The AXI4 master: one beat per line (a packed view's read a burst of
        them), line addresses made byte addresses."""
        axi, ob = self.m_axi, self._params.offset_bits
        m.d.comb += [
            axi.arid.eq(issue.ar_id), axi.araddr.eq(issue.ar_addr << ob), axi.arlen.eq(issue.ar_len),
            axi.arsize.eq(ob), axi.arburst.eq(BURST_INCR), axi.arvalid.eq(issue.ar_valid),
            issue.ar_ready.eq(axi.arready),
            axi.awid.eq(write.aw_id), axi.awaddr.eq(write.aw_addr << ob), axi.awlen.eq(0),
            axi.awsize.eq(ob), axi.awburst.eq(BURST_INCR), axi.awvalid.eq(write.aw_valid),
            write.aw_ready.eq(axi.awready),
            axi.wdata.eq(write.w_data), axi.wstrb.eq(write.w_strb), axi.wlast.eq(1),
            axi.wvalid.eq(write.w_valid), write.w_ready.eq(axi.wready),
            ndr.b_id.eq(axi.bid), ndr.b_resp.eq(axi.bresp), ndr.b_valid.eq(axi.bvalid),
            axi.bready.eq(ndr.b_ready),
            read.r_id.eq(axi.rid), read.r_data.eq(axi.rdata), read.r_resp.eq(axi.rresp),
            read.r_valid.eq(axi.rvalid), axi.rready.eq(read.r_ready),
        ]

    @staticmethod
    def _core(m, read, core):
        """The datapath core between the read path's two streams."""
        line = read.to_core.payload
        fields = {"data": line.data, "tag": line.tag, "mode": line.cfg.mode,
                  "format": line.cfg.format, "gate_kind": line.cfg.gate_kind,
                  "gate_mask": line.mask, "gate_threshold": line.cfg.threshold,
                  **{name: line.cfg[name] for name, _ in line.cfg.shape()
                     if name in HIERARCHY_CFG_FIELDS}}
        if hasattr(core, "i_stream"):
            core_in, core_out = core.i_stream, core.o_stream
            m.d.comb += [core_in.payload.line.eq(fields.pop("data")),
                         *(core_in.payload[k].eq(v) for k, v in fields.items()),
                         read.from_core.payload.data.eq(core_out.payload.line),
                         read.from_core.payload.tag.eq(core_out.payload.tag)]
            valid_in, ready_in = core_in.valid, core_in.ready
            valid_out, ready_out = core_out.valid, core_out.ready
        else:
            # The core's flat ports (before its stream interface).
            m.d.comb += [getattr(core, f"in_{k}").eq(v) for k, v in fields.items()]
            m.d.comb += [read.from_core.payload.data.eq(core.out_data),
                         read.from_core.payload.tag.eq(core.out_tag)]
            valid_in, ready_in = core.in_valid, core.in_ready
            valid_out, ready_out = core.out_valid, core.out_ready
        m.d.comb += [valid_in.eq(read.to_core.valid), read.to_core.ready.eq(ready_in),
                     read.from_core.valid.eq(valid_out), ready_out.eq(read.from_core.ready)]
