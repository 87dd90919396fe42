"""The read response path: AXI R -> in-flight entry -> datapath core or the
bypass route -> DRS arbiter -> S2M DRS.

Stages::

    R0  the R beat (registered without a clock enable); the entry's lookup
    R1  the entry (the table's registered read port): BYPASS reads and read
        errors take the bypass route, the others the core
    R2  the core's input, every field a register (so the route to the
        core, however far, is a hop from flip-flop to flip-flop), and the
        bypass line
    core (STAGES), then the core's line into the DRS arbiter's register;
    the bypass line into the arbiter's register at R3
    DRS: round robin between the core queue and the bypass queue
        (:class:`.drs_arbiter.DrsArbiter`)

Each route has one register between R2 and its queue (the core's after
the core), so a low-bit read takes exactly STAGES cycles more than a
BYPASS read (contract 4.3); both take two cycles more than with the core
fed from R1 and written into its queue straight from its output.

With the packed view (contract section 6) a view's beats take the core
route, errors included: R1 finds each beat's place in its burst
(``view_pack.BeatTrack``) and hands the core the SIGN format and the
beat's slice of the mask (the entry stores it arranged so that each
lane's bit is a choice by the beat alone, ``view_pack.lane_mask``);
after the core, beside which the beat's place and poison are delayed,
``view_pack.Packer`` puts its slice into the ID's line, and only the
burst's last beat goes into the core queue, with the whole line.  A
build with the view looks an R beat up in two cycles
(``view_pack.VIEW_LOOKUP_CYCLES``: the table's entry and the beat's place
both registers at R1), packs a cycle after the core
(``view_pack.PACK_CYCLES``: the slice registered on its way across the
line), with the bypass line delayed as long beside it (so a low-bit read
still takes exactly STAGES cycles more than a BYPASS read), and holds R
after reset while the beat track clears its memory.  The ID is retired at R1 with the last
beat.  The beats a view absorbs give their credit back when they leave
the core (one a cycle with DRS's: one owed when both come together).

``r_ready`` is a register, high while every beat accepted and not yet sent
on DRS fits in either queue; so the core's output is never refused (the
core runs with ``out_ready`` high and never stalls) and no clock enable
sits on the wide registers before the queues.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import COUNT_LANE_BITS, DRS_MEMDATA, Mode
from neuron_fabric.hdl.top.bus import DrsLayout, OKAY
from neuron_fabric.hdl.hierarchy.count_steps import LIMITS_BITS
from neuron_fabric.hdl.prims.credit import credit_ready
from neuron_fabric.hdl.datapath.pipeline import KEEP
from neuron_fabric.hdl.top.drs_arbiter import DrsArbiter
from neuron_fabric.hdl.top.inflight import response_members
from neuron_fabric.hdl.prims.pipe import copies, delay, register
from neuron_fabric.hdl.top.request import ReadCfgLayout, ReadEntryLayout
from neuron_fabric.hdl.top.view_pack import (MASK_COPIES, MASK_CYCLES, PACK_CYCLES,
                                             VIEW_LOOKUP_CYCLES, BeatTrack, Packer, counts_copies,
                                             mask_first, mask_second, read_lookup_cycles,
                                             view_geometry)

__all__ = ["ReadPath", "CoreInLayout", "CoreOutLayout"]

#: Memories each of the two queues is cut into (each with its own addresses).
QUEUE_SLICES = 8

#: Groups of slices, each with its own copies of the queues' controls.
QUEUE_GROUPS = 4


def CoreInLayout(params):
    """A line and its controls, as the datapath core takes them."""
    return data.StructLayout({"data": params.line_bits, "tag": 16, "cfg": ReadCfgLayout(params),
                              "mask": params.lanes})


def CoreOutLayout(params):
    return data.StructLayout({"data": params.line_bits, "tag": 16})


def _owed_give(m, depth, take, absorbed):
    """One credit given back a cycle for the DRS ``take`` and the beats a
    view ``absorbed``: when both come in one cycle the absorbed beat's is
    owed, and given in a later cycle with neither (never more owed than
    the ``depth`` beats the window holds)."""
    owed = Signal(range(depth + 1), name="view_owed")
    pay = ~take & ~absorbed & (owed != 0)
    with m.If(take & absorbed):
        m.d.sync += owed.eq(owed + 1)
    with m.Elif(pay):
        m.d.sync += owed.eq(owed - 1)
    return take | absorbed | pay


def _valid_delay(m, name, valid, cycles):
    """``valid`` after ``cycles`` registers that reset to 0 (so a reset in
    the middle of traffic leaves no line behind)."""
    for k in range(cycles):
        reg = Signal(name=f"{name}{k}")
        m.d.sync += reg.eq(valid)
        valid = reg
    return valid


def _BypassLayout(params):
    return data.StructLayout({"data": params.line_bits, "tag": 16, "poison": 1})


class ReadPath(wiring.Component):
    """Turns AXI read data into DRS responses.

    Parameters
    ----------
    params : TopParams
    lookup_cycles : int or None
        Cycles from a lookup to its entry (the in-flight table's; 1 or 2):
        the beat waits as long beside the lookup (R1).  By default the
        build's (:func:`.view_pack.read_lookup_cycles`: 2 with the packed
        view, whose beat track takes two).

    Members
    -------
    r_id, r_data, r_resp, r_valid, r_ready, lookup, devload, rd_err :
        :func:`.inflight.response_members` of the R channel.
    to_core : Out(stream.Signature(CoreInLayout(params)))
        ``ready`` is not used: the core is always ready after reset when its
        output is (contract section 3), and its output always is.
    from_core : In(stream.Signature(CoreOutLayout(params)))
    permute : Out(line_bits // 32), with the ``hierarchy`` feature
        The hierarchy wrapper's permutation select for ``to_core``'s line
        (the entry's ``permute``, :func:`.hierarchy.permutes` of its CFG as
        the request pipeline formed it), one register per 32-bit group of
        the line, each kept apart (:data:`.datapath.pipeline.KEEP`): the
        wrapper's multiplexers are in front of the core's first registers,
        so no net that selects them spans the line.
    limits : Out(LIMITS_BITS), with the entry's ``limits``
        The count unit's MARGIN-gate limits for ``to_core``'s line (the
        entry's, formed by the request pipeline), a register at R2, so that
        no carry chain sits between the read path and the count unit.
    drs : Out(stream.Signature(DrsLayout(line_bits)))
    """

    def __init__(self, params, *, lookup_cycles=None):
        if lookup_cycles is None:
            lookup_cycles = read_lookup_cycles(params)
        if lookup_cycles not in (1, 2):
            raise ValueError(f"lookup_cycles must be 1 or 2, not {lookup_cycles!r}")
        self._params, self._lookup_cycles = params, lookup_cycles
        members = ReadEntryLayout(params).members
        self._hierarchy, self._limits = "permute" in members, "limits" in members
        self._view = "view" in members
        if self._view and lookup_cycles != VIEW_LOOKUP_CYCLES:
            raise ValueError(f"the packed view's beat track needs lookup_cycles "
                             f"{VIEW_LOOKUP_CYCLES}")
        super().__init__({
            **response_members(params, "r", ReadEntryLayout(params), "rd_err",
                               data_bits=params.line_bits, retire=self._view),
            "to_core": Out(stream.Signature(CoreInLayout(params))),
            "from_core": In(stream.Signature(CoreOutLayout(params))),
            **({"permute": Out(params.line_bits // COUNT_LANE_BITS)} if self._hierarchy else {}),
            **({"limits": Out(LIMITS_BITS)} if self._limits else {}),
            "drs": Out(stream.Signature(DrsLayout(params.line_bits))),
        })

    @property
    def depth(self):
        """Beats between ``r_ready`` and DRS: the credit window, as small as
        keeps a beat a cycle with DRS ready (the core's STAGES, the eight
        cycles of the registers around it, of the queue and of the credit
        seeing a line leave a cycle late; one more for a lookup of two, and
        the view's packing cycles)."""
        return self._params.stages + 7 + self._lookup_cycles + self._view_cycles

    @property
    def _pack_cycles(self):
        """Cycles the view's packing adds after the core, and on the bypass
        route beside it (:data:`.view_pack.PACK_CYCLES`, 0 without the view)."""
        return PACK_CYCLES if self._view else 0

    @property
    def _view_cycles(self):
        """Cycles the view adds between R0 and DRS besides the lookup's: the
        mask's first choice (:data:`.view_pack.MASK_CYCLES`) and the packing."""
        return MASK_CYCLES + PACK_CYCLES if self._view else 0

    def elaborate(self, platform):
        m = Module()
        p = self._params
        drs = m.submodules.drs = DrsArbiter(_BypassLayout(p).size, self.depth,
                                            slices=QUEUE_SLICES, groups=QUEUE_GROUPS)
        drs_take = self.drs.valid & self.drs.ready
        core_in, r2_bypass, r2_err, view, hold = self._routes(m)
        # the bypass line, as many cycles later as the view's packing makes the core's
        bypass_valid = _valid_delay(m, "bypass_pack_valid", r2_bypass, self._pack_cycles)
        bypass_line = delay(m, "bypass_pack", Cat(core_in.data, core_in.tag, r2_err),
                            self._pack_cycles)
        core_valid, core_line, core_poison = self.from_core.valid, self.from_core.payload.data, 0
        core_tag = self.from_core.payload.tag
        give = drs_take
        if view is not None:
            core_valid, core_line, core_tag, core_poison, absorbed = self._pack(m, view)
            give = _owed_give(m, self.depth, drs_take, absorbed)
        m.d.comb += self.r_ready.eq(credit_ready(m, self.depth, self.r_valid, give, hold=hold,
                                                 late_give=True, late_admit=True))
        # the core's line and the bypass line, each registered once more in
        # the arbiter
        line = data.View(_BypassLayout(p), drs.data)
        m.d.comb += [
            self.from_core.ready.eq(1),
            drs.core_valid.eq(core_valid),
            drs.core_data.eq(Cat(core_line, core_tag, core_poison)),
            drs.bypass_valid.eq(bypass_valid),
            drs.bypass_data.eq(bypass_line),
            self.drs.valid.eq(drs.valid), drs.ready.eq(self.drs.ready),
            self.drs.payload.data.eq(line.data), self.drs.payload.tag.eq(line.tag),
            self.drs.payload.poison.eq(line.poison),
            self.drs.payload.opcode.eq(DRS_MEMDATA),
            self.drs.payload.devload.eq(self.devload),
        ]
        return m

    def _routes(self, m):
        """R0 (the beat; the lookup), R1 (the entry, ``lookup_cycles`` later),
        R2 (the core's input and the bypass line).  Returns R2's line, whether it takes the bypass
        route, whether the memory answered with an error, the view's values
        (R1's and R2's) and what holds R (the view's beat track clearing
        after reset)."""
        p = self._params
        r0_valid, r0_err = Signal(), Signal()
        r0_id = Signal(p.id_bits)
        r0_data = Signal(p.line_bits, reset_less=True)
        m.d.sync += [r0_valid.eq(self.r_valid & self.r_ready), r0_id.eq(self.r_id),
                     r0_data.eq(self.r_data), r0_err.eq(self.r_resp != OKAY)]
        m.d.comb += [self.lookup.valid.eq(r0_valid), self.lookup.id.eq(r0_id),
                     self.rd_err.eq(r0_valid & r0_err)]

        r1_valid, r1_err, r1_data = r0_valid, r0_err, r0_data
        for k in range(self._lookup_cycles):
            valid, err = Signal(name=f"r1_valid{k}"), Signal(name=f"r1_err{k}")
            line = Signal(p.line_bits, reset_less=True, name=f"r1_data{k}")
            m.d.sync += [valid.eq(r1_valid), err.eq(r1_err), line.eq(r1_data)]
            r1_valid, r1_err, r1_data = valid, err, line
        entry = self.lookup.entry
        bypass = (entry.cfg.mode == Mode.BYPASS) | r1_err
        mask, view, hold = entry.mask[:p.lanes], None, None
        if self._view:
            view, track = self._track(m, r1_valid, r1_err, entry)
            # (a view's format is SIGN in its entry, and its mask arranged so
            # that each lane's bit is a choice by the beat alone; the choice's
            # first step registered with everything else at R1b)
            firsts = register(m, "r1b_mask", mask_first(p, entry.mask, track.beat_copies))
            beats = [register(m, f"r1b_beat{k}", b) for k, b in enumerate(track.beat_copies)]
            r1_valid = _valid_delay(m, "r1b_valid", r1_valid, MASK_CYCLES)
            r1_err = _valid_delay(m, "r1b_err", r1_err, MASK_CYCLES)
            r1_data = delay(m, "r1b_data", r1_data, MASK_CYCLES)
            entry = delay(m, "r1b_entry", entry, MASK_CYCLES)
            bypass = ((entry.cfg.mode == Mode.BYPASS) | r1_err) & ~entry.view
            mask = mask_second(p, firsts, beats, counts_copies(entry.counts)[:MASK_COPIES])
            hold = track.clearing
            view = delay(m, "r2_view", view, MASK_CYCLES + 1)

        core_in = Signal(CoreInLayout(p), reset_less=True)
        r2_core, r2_bypass = Signal(), Signal()
        r2_err = Signal(reset_less=True)
        m.d.sync += [r2_core.eq(r1_valid & ~bypass), r2_bypass.eq(r1_valid & bypass),
                     core_in.data.eq(r1_data), core_in.tag.eq(entry.tag),
                     core_in.cfg.eq(entry.cfg), core_in.mask.eq(mask), r2_err.eq(r1_err)]
        m.d.comb += [self.to_core.valid.eq(r2_core), self.to_core.payload.eq(core_in)]
        if self._hierarchy:
            for g in range(len(self.permute)):
                copy = Signal(name=f"r2_permute{g}", reset_less=True, attrs=KEEP)
                m.d.sync += copy.eq(entry.permute)
                m.d.comb += self.permute[g].eq(copy)
        if self._limits:
            limits = Signal(LIMITS_BITS, name="r2_limits", reset_less=True)
            m.d.sync += limits.eq(entry.limits)
            m.d.comb += self.limits.eq(limits)
        return core_in, r2_bypass, r2_err, view, hold

    def _track(self, m, r1_valid, r1_err, entry):
        """R0-R1 of a view's beat: its index in its burst and the burst's
        poison so far (:class:`.view_pack.BeatTrack`, looked up with the
        entry at its own copy of the beat's ID, so that the table's address
        nets do not reach it), whether it is the burst's last (every beat of
        a read that is no view is), the ID retired on the last.  Returns the
        beat's values for the pack: ``valid`` (a view's beat), ``id``,
        ``beat``, ``last``, ``poison`` (of this beat and the earlier ones),
        ``counts``; and the track."""
        p = self._params
        track = m.submodules.beat_track = BeatTrack(p)
        r0_id = copies(m, "r0_view_id", self.r_id, 1)[0]
        r1_id = delay(m, "r1_id", r0_id, self._lookup_cycles)
        geometry = view_geometry(p)
        counts = counts_copies(entry.counts)[MASK_COPIES]
        end = Mux(counts, track.ends[1], track.ends[0]) if True in geometry else track.ends[0]
        last = ~entry.view | end
        poison = track.poison_before | r1_err
        m.d.comb += [track.lookup_id.eq(r0_id), track.lookup_valid.eq(self.lookup.valid),
                     track.update.eq(r1_valid & entry.view),
                     track.id.eq(r1_id), track.last.eq(last), track.error.eq(r1_err),
                     self.lookup.retire.eq(r1_valid & last), self.lookup.retire_id.eq(r1_id)]
        return {"valid": r1_valid & entry.view, "id": r1_id, "beat": track.beat, "last": last,
                "poison": poison, "counts": counts}, track

    def _pack(self, m, view):
        """After the core (its STAGES, the view's values of R2 delayed beside
        it): a view's beat into its line (:class:`.view_pack.Packer`, its
        controls a cycle ahead, its line :data:`.view_pack.PACK_CYCLES`
        after the core's).  Returns what goes to the core queue (valid: a
        line that is no view's, or a view's last beat; the line, its tag;
        poison) and whether a beat was absorbed."""
        p = self._params
        packer = m.submodules.packer = Packer(p)
        r2 = view
        before = delay(m, "view_next", r2, p.stages - 1)
        out = self.from_core
        m.d.comb += [packer.next_view.eq(before["valid"]),
                     packer.next_write.eq(before["valid"] & ~before["last"]),
                     packer.next_id.eq(before["id"]), packer.next_beat.eq(before["beat"]),
                     packer.next_counts.eq(before["counts"]), packer.data.eq(out.payload.data)]
        at = {**delay(m, "view_out", {k: before[k] for k in ("valid", "last", "poison")},
                      1 + PACK_CYCLES),
              "tag": delay(m, "core_out_tag", out.payload.tag, PACK_CYCLES)}
        packed, valid = at["valid"], _valid_delay(m, "core_out_valid", out.valid, PACK_CYCLES)
        return (valid & (~packed | at["last"]), packer.line, at["tag"],
                packed & at["poison"], valid & packed & ~at["last"])
