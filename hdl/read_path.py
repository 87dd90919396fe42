"""The read response path: AXI R -> in-flight entry -> datapath core or the
bypass route -> DRS arbiter -> S2M DRS.

Stages::

    R0  the R beat (registered without a clock enable); the entry's lookup
    R1  the entry: BYPASS reads and read errors go to the bypass queue,
        the others into the core with the entry's configuration and mask
    core output -> core queue
    DRS: round robin between the core queue and the bypass queue

``r_ready`` is a register, high while every beat accepted and not yet sent
on DRS fits in either queue; so the core's output is never refused (the
core runs with ``out_ready`` high and never stalls) and no clock enable
sits on the wide registers before the queues.  The queues are
:class:`.queue.CreditQueue`: written every cycle at a registered address,
read at a registered address straight from their memories.  The round
robin chooses a cycle ahead which queue DRS shows, and holds it while DRS
waits; each slice of the DRS data is chosen by its own copy of that
register (:func:`.queue.select_copies`), so the wide data sees only
registered addresses and selects.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import DRS_MEMDATA, Mode
from .bus import DrsLayout, OKAY
from .credit import credit_ready
from .inflight import response_members
from .queue import CreditQueue, select_copies
from .request import ReadCfgLayout, ReadEntryLayout

__all__ = ["ReadPath", "CoreInLayout", "CoreOutLayout"]

#: Memories each of the two queues is cut into (each with its own addresses).
QUEUE_SLICES = 8

#: Copies of the register that chooses DRS's queue, each for a slice of DRS.
SELECT_COPIES = 4


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
        """Beats between ``r_ready`` and DRS: the core's STAGES, the
        registers around it, and one round trip of the credit."""
        return self._params.stages + 8

    def elaborate(self, platform):
        m = Module()
        p = self._params
        depth = self.depth
        coreq = m.submodules.core_queue = CreditQueue(CoreOutLayout(p).size, depth,
                                                      slices=QUEUE_SLICES)
        bypq = m.submodules.bypass_queue = CreditQueue(_BypassLayout(p).size, depth,
                                                       slices=QUEUE_SLICES)
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
        """DRS, round robin between the two queues, chosen a cycle ahead."""
        p = self._params
        valid, show_core, last_core = Signal(), Signal(), Signal()
        ready = self.drs.ready
        nxt = _choice(valid, show_core, last_core, (coreq.r_rdy, coreq.more),
                      (bypq.r_rdy, bypq.more), ready)
        core = data.View(CoreOutLayout(p), coreq.r_data)
        # the core's line as a bypass entry: its line and tag, no poison
        from_core = Cat(core.data, core.tag, Const(0, 1))
        chosen = Signal(_BypassLayout(p))
        cuts = [_BypassLayout(p).size * k // SELECT_COPIES for k in range(SELECT_COPIES + 1)]
        copies = select_copies(m, nxt[1], SELECT_COPIES)
        for (lo, hi), show in zip(zip(cuts, cuts[1:]), copies):
            m.d.comb += chosen.as_value()[lo:hi].eq(Mux(show, from_core[lo:hi],
                                                        bypq.r_data[lo:hi]))
        take = valid & ready
        m.d.comb += [
            coreq.r_en.eq(take & show_core), bypq.r_en.eq(take & ~show_core),
            self.drs.valid.eq(valid),
            self.drs.payload.data.eq(chosen.data), self.drs.payload.tag.eq(chosen.tag),
            self.drs.payload.poison.eq(chosen.poison),
            self.drs.payload.opcode.eq(DRS_MEMDATA),
            self.drs.payload.devload.eq(self.devload),
        ]
        m.d.sync += [valid.eq(nxt[0]), show_core.eq(nxt[1]), last_core.eq(nxt[2])]
        return m


def _choice(valid, show_core, last_core, core, bypass, ready):
    """The round robin: ``valid``, ``show_core`` and ``last_core`` of the
    next cycle from this cycle's and DRS's ``ready``; ``core`` and ``bypass``
    are each queue's ``(r_rdy, more)``.  It chooses from what is in the
    queues now: a line written this cycle waits a cycle more, so the choice
    sees only registers and DRS's ready."""
    take, hold = valid & ready, valid & ~ready
    stays_core = Mux(take & show_core, core[1], core[0])
    stays_bypass = Mux(take & ~show_core, bypass[1], bypass[0])
    pick_core = stays_core & (~stays_bypass | ~last_core)
    pick_bypass = stays_bypass & ~pick_core
    return (hold | pick_core | pick_bypass, Mux(hold, show_core, pick_core),
            Mux(hold | ~(pick_core | pick_bypass), last_core, pick_core))
