"""The M2S Req pipeline: region match, configuration capture, gate phase and
gate mask (contract 4.3), handing each classified request to read issue.

Every stage is a register loaded every cycle (the pipeline never stalls),
and each step between two is at most two LUT4 levels or a short carry
chain.  Two tracks run side by side from the accept register A:

* the region match (``region.py``): 2-bit chunk compares of the address
  with every region's BASE and LIMIT, their combination, each region's
  match, the first match one-hot, and the AND-OR choice of the matched
  region's CFG and BASE residues (``region_residues.py``), DEFAULT_CFG and zero
  residues when none matches;
* the address residues (``residue_tracks.py``): for each modulus the plain sum
  of the address's leaf residues, folded.

They meet in the stage that adds the region's ``(-BASE) mod q``, which is
taken modulo q; then one step gives the phase candidate of every P, two
the phase of this P, and two the gate mask from the pattern table of P
and K (formed beside, ``phase.py``).  The last stage fills the read's
in-flight entry (tag, CFG fields, mask; with the hierarchy extension the
permute bit and the count unit's MARGIN limits).  A read takes its AXI ID in the
first stage after A; read issue takes it AR_LEAD stages before the
last, so a read's AR goes out while its mask is still being formed.
The pipeline is eighteen stages after A (:attr:`RequestPipeline.depth`).

Admission is by credit: ``req.ready`` is an AND of two registers, high
only when read issue's AR queue has room for every read accepted and
not yet issued, and the NDR arbiter's queue of Req completions for
every MemInv and unsupported request accepted and not yet moved out of
it (:func:`credit_windows`; the kind is known from the opcode at the
accept, and each queue's leave comes back as ``left``, registered
here), and the in-flight table has room for a read.  So nothing
downstream can stop a request once accepted, and read issue takes every
request the cycle it is offered (``out`` has no ``ready``): no handshake
between the blocks, and no queue between them.  The pipeline reads its own copy of the
configuration (registers beside it, a cycle behind the control
registers) as a request leaves A (BASE, LIMIT), enters the match stage
(enable) and the choice (CFG, and the region residues); ``config.idle``
tells the control registers that no stage up to the choice holds a
request and none is being accepted, so a write may take effect (contract
4.3).  After ``hold`` the pipeline admits nothing for
:attr:`RequestPipeline.quiet` idle cycles, in which its copy and each
region's residues (which follow its BASE within
:func:`.derive.refresh_cycles`) take the written values.
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import CXL_ADDR_BITS
from neuron_fabric.hdl.top.bus import ReqLayout
from neuron_fabric.hdl.top.cfg import CfgLayout, ConfigSignature, has_view
from neuron_fabric.hdl.prims.credit import credit_ready
from neuron_fabric.hdl.top.region_residues import RegionResidues, ResidueLayout, local_config, refresh_cycles
from neuron_fabric.hdl.top.gate import FIXED_PATTERN, gate_mask_steps, slices
from neuron_fabric.hdl.top.inflight import ReadAllocSignature, ReserveSignature
from neuron_fabric.hdl.hierarchy.count_steps import staged_limits
from neuron_fabric.hdl.top.request_layout import (Kind, ReadCfgLayout, ReadEntryLayout, RequestLayout, answered_here,
                                                  classify, read_entry, stored_entry)
from neuron_fabric.hdl.top.phase import MODULI, reduce_small
from neuron_fabric.hdl.prims.pipe import Line, copies, delay, register
from neuron_fabric.hdl.top.region import chunk_compare, combine, compare_steps, first, match, select_final, \
    select_partial
from neuron_fabric.hdl.top.residue_tracks import plain_residues, track_length
from neuron_fabric.hdl.top.view_source import SOURCE_STEPS, view_request_steps
from neuron_fabric.hdl.top.request_stages import (AR_LEAD, LeftSignature, credit_windows, first_stage, idle_after,
                                                  join_stage, pipeline_depth)

__all__ = ["Kind", "ReadCfgLayout", "RequestLayout", "ReadEntryLayout", "RequestPipeline",
           "LeftSignature", "FIXED_PATTERN", "AR_LEAD", "credit_windows", "first_stage",
           "idle_after", "pipeline_depth"]


#: Registered copies of the accepted address for the region compares (each
#: serving a share of the regions), and of each first-match select (each
#: serving a slice of the chosen values).
ADDR_COPIES, SELECT_COPIES = 4, 4


class RequestPipeline(wiring.Component):
    """Classifies M2S Req requests and captures each read's configuration.

    Parameters
    ----------
    params : TopParams

    Members
    -------
    req : In(stream.Signature(ReqLayout()))
    config : In(ConfigSignature(params))
        The configuration changes only while ``hold`` is high and ``idle``
        answers, as the control registers change it.
    out : Out(stream.Signature(RequestLayout(params), always_ready=True))
        Every request but MemSpecRd, from the tap ``AR_LEAD`` stages
        before the last (``valid`` and the payload registers).
    left : In(LeftSignature())
        A read's AR beat (``read``) or a completion (``cmp``) left its
        queue this cycle (read issue's, the NDR arbiter's).
    reserve : Out(ReserveSignature())
        A place in the in-flight table for each read accepted; no request
        is accepted while the table will have no room.
    alloc : Out(ReadAllocSignature(...))
        A read takes its ID in the stage after A (one is always free: its
        place was reserved) and fills its entry in the last stage.
    """

    def __init__(self, params):
        self._params = params
        super().__init__({
            "req": In(stream.Signature(ReqLayout())),
            "config": In(ConfigSignature(params)),
            "out": Out(stream.Signature(RequestLayout(params), always_ready=True)),
            "left": In(LeftSignature()),
            "reserve": Out(ReserveSignature()),
            "alloc": Out(ReadAllocSignature(params.id_bits, ReadEntryLayout(params))),
        })

    # -- stage numbers (the register after A is stage 1) -----------------------------
    @property
    def _width(self):
        return CXL_ADDR_BITS - self._params.offset_bits

    @property
    def _first_stage(self):
        return first_stage(self._params)

    @property
    def _join_stage(self):
        return join_stage(self._params)

    @property
    def depth(self):
        """:func:`pipeline_depth` of this pipeline's parameters."""
        return pipeline_depth(self._params)

    @property
    def idle_after(self):
        """:func:`idle_after` of this pipeline's parameters."""
        return idle_after(self._params)

    @property
    def quiet(self):
        """Cycles the pipeline stays idle, with ``hold`` low, before it admits
        a request again after a control write: the write takes effect in the
        last cycle of ``hold``, its local copy follows a cycle later, and a
        request accepted after these cycles reads its region's residues (as
        it leaves the first-match stage) no sooner than
        :func:`.derive.refresh_cycles` after that (with a cycle to spare)."""
        return max(1, refresh_cycles(self._params) - self._first_stage)

    def elaborate(self, platform):
        m = Module()
        p = self._params
        # A registered copy of the region table and DEFAULT_CFG beside the
        # pipeline (a cycle behind the control registers, which the quiet
        # cycles after hold cover).
        line = Line(m, "req")
        drained = Signal()
        accept = self._admission(m, drained)
        req = self.req.payload
        config = local_config(m, self.config, p)
        derive = m.submodules.derive = RegionResidues(p)
        m.d.comb += [derive.bases[r].eq(config["regions"][r].base) for r in range(p.regions)]
        line.step(accept, {"opcode": req.opcode, "tag": req.tag,
                           "addr": req.addr[p.offset_bits:]})
        # copies of A's address: for the compares, and for the residue track
        addr = copies(m, "a_addr", req.addr[p.offset_bits:], ADDR_COPIES + 1)
        chosen = self._match(m, line, config, addr[:ADDR_COPIES], derive.residues)
        plain, low = plain_residues(m, "req", addr[ADDR_COPIES])
        join, track = self._join_stage, track_length(self._width)
        plain = {q: delay(m, f"req_plain{q}", v, join - track) for q, v in plain.items()}
        low = delay(m, "req_low", low, join - track)
        chosen = delay(m, "req_chosen", chosen, join - self._first_stage - 2)
        line.run_to(join)
        cfg = data.View(CfgLayout, chosen[:CfgLayout.size])
        res = data.View(ResidueLayout(), chosen[CfgLayout.size:][:ResidueLayout().size])
        view_fields, self._view_ar = {}, None
        if has_view(p):
            # (a view's AR beat, formed beside the pipeline for the tap)
            base, source, view = self._view_values(chosen[CfgLayout.size + ResidueLayout().size:])
            view_fields = {"view": view}
            steps = self.depth - AR_LEAD - join
            ar = view_request_steps(m, p, line.fields["addr"], base, source, view, cfg.operand)
            self._view_ar = [delay(m, f"view_ar{k}", v, steps - SOURCE_STEPS)
                             for k, v in enumerate(ar)]
        # the region's (-BASE) residues added, then each sum taken modulo q
        line.step(fields={"cfg": cfg, **view_fields})
        limits = None
        w = register(m, "req_offset", {q: plain[q] + res[f"r{q}"] for q in MODULI})
        low = register(m, "req_low_offset", (low + res.low)[:3])
        if "limits" in ReadEntryLayout(p).members:     # (for the stage that fills the entry)
            cfg = data.View(CfgLayout, line.fields["cfg"])
            limits = staged_limits(m, "req_margin", cfg.mode, cfg.gate_kind, cfg.total,
                                   cfg.threshold, self.depth - len(line.stages))
        line.step()
        r = register(m, "req_mod", {**{q: reduce_small(w[q], q) for q in MODULI},
                                    3: reduce_small(w[9], 3)})
        low = register(m, "req_low_mod", low)
        mask = gate_mask_steps(m, line, p, r, low)
        entry = read_entry(m, p, line.fields["tag"], data.View(CfgLayout, line.fields["cfg"]),
                           mask, limits, line.fields.get("view"))
        fill = Signal(name="fill_entry")
        m.d.sync += fill.eq(line.valid & (line.fields["kind"] == Kind.READ))
        _, last = line.step(fields={"entry": entry}, drop=("tag", "addr", "cfg", "view"))
        m.d.comb += [self.alloc.fill.eq(fill), self.alloc.fill_id.eq(last["id"]),
                     self.alloc.entry.eq(stored_entry(m, p, last["entry"]))]
        self._issue(m, line)
        m.d.comb += drained.eq(~Cat(*(valid for valid, _ in
                                      line.stages[:self._first_stage + 1])).any())
        # for the formal check of the configuration's use (test_top_formal)
        self.probes = {"bases": Cat(*(rg.base for rg in config["regions"])),
                       "choosing": line.stages[self._first_stage][0], "drained": drained}
        return m

    def _match(self, m, line, config, addrs, residues):
        """Stages 1 .. first + 2: the class of the request and its ID, the
        region match, the choice of the CFG and residues (returned as one
        value, at stage first + 2)."""
        n, regions = self._params.regions, config["regions"]
        per = -(-n // len(addrs)) if n else 1
        kind = classify(m, line.fields["opcode"])
        # (``take``, for another block, a register of its own)
        take = Signal(name="take_id")
        m.d.sync += take.eq(line.valid & (kind == Kind.READ))
        line.step(fields={"kind": kind}, drop=("opcode",))
        m.d.comb += self.alloc.take.eq(take)
        pairs = register(m, "m_chunk", [[chunk_compare(addrs[r // per], bound)
                                         for bound in (rg.base, rg.limit)]
                                        for r, rg in enumerate(regions)])
        steps = compare_steps(self._width)
        for step in range(steps):
            line.step(fields={"id": self.alloc.id} if step == 0 else None)
            pairs = register(m, f"m_comb{step}", [[combine(b) for b in rg] for rg in pairs])
        line.step(fields={"id": self.alloc.id} if not steps else None)
        matches = register(m, "m_match", [match(rg.enable, *pairs[r])
                                          for r, rg in enumerate(regions)])
        one_hot, none = first(matches) if n else ([], Const(1, 1))
        line.step()
        one_hot = register(m, "m_first", one_hot + [none])
        # copies of each select, each placed by the slice of the values it chooses
        line.step()
        selects = [copies(m, f"m_select{r}", s, SELECT_COPIES) for r, s in enumerate(one_hot)]
        # the values to choose from: each region's CFG and residues (with the
        # packed view its BASE, SOURCE and VIEW bit), and the default's (no view)
        view = has_view(self._params)
        sources = [Cat(rg.cfg.as_value(), residues[r].as_value(),
                       *((rg.base, rg.source, rg.view) if view else ()))
                   for r, rg in enumerate(regions)]
        sources.append(Cat(config["default"].as_value(), Const(0, ResidueLayout().size),
                           Const(0, 2 * self._width + 1 if view else 0)))
        line.step()
        partial = [register(m, f"m_part{k}", select_partial([s[k] for s in selects], values))
                   for k, values in enumerate(zip(*(slices(v, SELECT_COPIES) for v in sources)))]
        line.step()
        return register(m, "m_chosen", Cat(*(select_final(part) for part in partial)))

    def _view_values(self, value):
        """The chosen region's BASE, SOURCE and VIEW bit from the tail of the
        chosen value."""
        w = self._width
        return value[:w], value[w:2 * w], value[2 * w]

    def _issue(self, m, line):
        """Read issue's stream, AR_LEAD stages before the entry is filled."""
        tap_valid, tap = line.stages[-1 - AR_LEAD]
        tap_cfg = data.View(CfgLayout, tap["cfg"])
        to_issue = Signal(RequestLayout(self._params))
        m.d.comb += [to_issue.kind.eq(tap["kind"]), to_issue.tag.eq(tap["tag"]),
                     to_issue.addr.eq(tap["addr"]), to_issue.id.eq(tap["id"]),
                     to_issue.mode.eq(tap_cfg.mode)]
        if self._view_ar is not None:
            addr, length = self._view_ar
            m.d.comb += [to_issue.addr.eq(addr), to_issue.len.eq(length)]
        m.d.comb += [self.out.valid.eq(tap_valid), self.out.payload.eq(to_issue)]

    def _admission(self, m, drained):
        """``req.ready`` from the credit counts of reads and completions
        between admission and their leaving read issue's queues, the
        in-flight table's room, ``hold`` and the quiet cycles after it;
        reserves a place in the table for each read; drives
        ``config.idle``; returns the accept strobe.

        ``idle`` is high while nothing is being accepted and no request is
        in a stage that reads the configuration (``drained``); after
        ``hold`` the pipeline admits nothing until it has been idle with
        ``hold`` low for :attr:`quiet` cycles, so its local copy of the
        configuration and the region residues have followed the write."""
        quiet, hold = self.quiet, self.config.hold
        since = Signal(range(quiet + 1), name="since_hold")
        settled = Signal(name="settled", init=1)
        kind = classify(m, self.req.payload.opcode)
        is_read = kind == Kind.READ
        is_cmp = answered_here(kind)
        # each credit counts its kind, admitted while both have room (so
        # ``ready`` is an AND of two registers); each sees its items leave
        # a cycle late, from a register of read issue's ``left``
        windows = credit_windows(self._params)
        read_room, cmp_room = Signal(), Signal()
        m.d.comb += [
            read_room.eq(credit_ready(m, windows["read"], self.req.valid & is_read & cmp_room,
                                      self.left.read, hold=hold | ~settled, late_admit=True,
                                      room=self.reserve.room, late_give=True, name="read")),
            cmp_room.eq(credit_ready(m, windows["cmp"], self.req.valid & is_cmp & read_room,
                                     self.left.cmp, late_give=True, late_admit=True,
                                     name="cmp")),
        ]
        ready = read_room & cmp_room
        idle = ~ready & drained
        # (quiet counted from a registered idle, so no enable is formed from
        # the stages' valids; ``config.idle``, for another block, a register
        # of idle under hold)
        was_idle, idle_q = Signal(name="was_idle"), Signal(name="idle_q")
        m.d.sync += [was_idle.eq(idle), idle_q.eq(idle & hold)]
        with m.If(hold):
            m.d.sync += [since.eq(0), settled.eq(0)]
        with m.Elif(~settled & was_idle):
            m.d.sync += [since.eq(since + 1), settled.eq(since == quiet - 1)]
        accept = self.req.valid & ready
        m.d.comb += [self.req.ready.eq(ready), self.config.idle.eq(idle_q),
                     self.reserve.take.eq(accept & is_read)]
        return accept
