"""The read response path: AXI R -> in-flight entry -> datapath core or the
bypass route -> DRS arbiter -> S2M DRS.

Stages::

    R0  the R beat (registered without a clock enable); the entry's lookup
    R1  the entry: BYPASS reads and read errors go to the bypass queue,
        the others into the core with the entry's configuration and mask
    core output -> core queue
    DRS register: round robin between the core queue and the bypass queue

``r_ready`` is a register, high while every beat accepted and not yet sent
on DRS fits in either queue; so the core's output is never refused (the
core runs with ``out_ready`` high and never stalls) and no clock enable
sits on the wide registers before the queues.
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import DRS_MEMDATA, Mode
from .bus import DrsLayout, OKAY
from .credit import credit_ready
from .inflight import response_members
from .request import ReadCfgLayout, ReadEntryLayout

__all__ = ["ReadPath", "CoreInLayout", "CoreOutLayout"]


def CoreInLayout(params):
    """A line and its controls, as the datapath core takes them."""
    return data.StructLayout({"data": params.line_bits, "tag": 16, "cfg": ReadCfgLayout(params),
                              "mask": params.lanes})


def CoreOutLayout(params):
    return data.StructLayout({"data": params.line_bits, "tag": 16})


def _BypassLayout(params):
    return data.StructLayout({"data": params.line_bits, "tag": 16, "poison": 1})


class ReadPath(wiring.Component):
    """Turns AXI read data into DRS responses.

    Parameters
    ----------
    params : TopParams

    Members
    -------
    r_id, r_data, r_resp, r_valid, r_ready, lookup, devload, rd_err :
        :func:`.inflight.response_members` of the R channel.
    to_core : Out(stream.Signature(CoreInLayout(params)))
        ``ready`` is not used: the core is always ready after reset when its
        output is (contract section 3), and its output always is.
    from_core : In(stream.Signature(CoreOutLayout(params)))
    drs : Out(stream.Signature(DrsLayout(line_bits)))
    """

    def __init__(self, params):
        self._params = params
        super().__init__({
            **response_members(params, "r", ReadEntryLayout(params), "rd_err",
                               data_bits=params.line_bits),
            "to_core": Out(stream.Signature(CoreInLayout(params))),
            "from_core": In(stream.Signature(CoreOutLayout(params))),
            "drs": Out(stream.Signature(DrsLayout(params.line_bits))),
        })

    @property
    def depth(self):
        """Beats between ``r_ready`` and the DRS register: the core's STAGES,
        the registers around it, and one round trip of the credit."""
        return self._params.stages + 8

    def elaborate(self, platform):
        m = Module()
        p = self._params
        depth = self.depth
        coreq = m.submodules.core_queue = SyncFIFOBuffered(width=CoreOutLayout(p).size,
                                                           depth=depth)
        bypq = m.submodules.bypass_queue = SyncFIFOBuffered(width=_BypassLayout(p).size,
                                                            depth=depth)
        drs_take = self.drs.valid & self.drs.ready
        m.d.comb += self.r_ready.eq(credit_ready(m, depth, self.r_valid, drs_take))

        r0_valid, r0_err = Signal(), Signal()
        r0_id = Signal(p.id_bits)
        r0_data = Signal(p.line_bits, reset_less=True)
        m.d.sync += [r0_valid.eq(self.r_valid & self.r_ready), r0_id.eq(self.r_id),
                     r0_data.eq(self.r_data), r0_err.eq(self.r_resp != OKAY)]
        m.d.comb += [self.lookup.valid.eq(r0_valid), self.lookup.id.eq(r0_id),
                     self.rd_err.eq(r0_valid & r0_err)]

        r1_valid, r1_err = Signal(), Signal()
        r1_data = Signal(p.line_bits, reset_less=True)
        m.d.sync += [r1_valid.eq(r0_valid), r1_err.eq(r0_err), r1_data.eq(r0_data)]
        entry = self.lookup.entry
        bypass = (entry.cfg.mode == Mode.BYPASS) | r1_err
        m.d.comb += [
            self.to_core.valid.eq(r1_valid & ~bypass),
            self.to_core.payload.data.eq(r1_data),
            self.to_core.payload.tag.eq(entry.tag),
            self.to_core.payload.cfg.eq(entry.cfg),
            self.to_core.payload.mask.eq(entry.mask),
            self.from_core.ready.eq(1),
            coreq.w_en.eq(self.from_core.valid),
            coreq.w_data.eq(self.from_core.payload),
            bypq.w_en.eq(r1_valid & bypass),
            bypq.w_data.eq(Cat(r1_data, entry.tag, r1_err)),
        ]
        self._arbiter(m, coreq, bypq)
        return m

    def _arbiter(self, m, coreq, bypq):
        """The DRS register, loaded round robin from the two queues."""
        p = self._params
        valid = Signal()
        payload = Signal(DrsLayout(p.line_bits), reset_less=True)
        last_core = Signal()
        load = ~valid | self.drs.ready
        pick_core = coreq.r_rdy & (~bypq.r_rdy | ~last_core)
        pick_bypass = bypq.r_rdy & ~pick_core
        core = data.View(CoreOutLayout(p), coreq.r_data)
        bypass = data.View(_BypassLayout(p), bypq.r_data)
        m.d.comb += [coreq.r_en.eq(load & pick_core), bypq.r_en.eq(load & pick_bypass),
                     self.drs.valid.eq(valid), self.drs.payload.eq(payload),
                     self.drs.payload.opcode.eq(DRS_MEMDATA),
                     self.drs.payload.devload.eq(self.devload)]
        with m.If(load):
            m.d.sync += valid.eq(pick_core | pick_bypass)
            with m.If(pick_core):
                m.d.sync += [payload.data.eq(core.data), payload.tag.eq(core.tag),
                             payload.poison.eq(0), last_core.eq(1)]
            with m.Elif(pick_bypass):
                m.d.sync += [payload.data.eq(bypass.data), payload.tag.eq(bypass.tag),
                             payload.poison.eq(bypass.poison), last_core.eq(0)]
        return m
