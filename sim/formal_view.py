"""Formal specification of the packed view's read path (contract section 6.2,
6.3), checked with SymbiYosys.

:class:`ViewPackSpec` -- the read path (``hdl/top/read_path.py``) with the
core it feeds, as the top wires them, against a small ideal model: reads
of views are issued on free IDs, each owed B beats; the R channel gives
any beat (any data, any RRESP) of any ID that is still owed one, so bursts
of different IDs interleave freely; the entry of each ID is constant
(``AnyConst``: G-Binary or G-Ternary PATTERN over SIGNS, element-major,
any mask, any format, which the view ignores; stored as the request
pipeline stores it, ``request_layout.stored_entry``), and its tag is its ID.  One
ID (``AnyConst``) is watched: the model keeps its beats in order, and when
its DRS is taken the response must be poisoned exactly when one of its
beats was an error and, when not, must be the 2-bit results
(:func:`~neuron_fabric.sim.formal_datapath.reference_value` in the SIGN
format, low two bits) of exactly its own B beats, beat ``b``'s E elements
at ``[2E*b, 2E*(b+1))``, each under its slice of the entry's mask.  Its ID
is retired exactly when its last beat is taken, and never twice.  A DRS of
the watched ID comes only after its B beats, so no beat of another read
enters it.  Bounded (BMC) over two whole reads of the watched ID.

:func:`view_pack_job` writes the job under ``build/formal/``
(``tests/hdl/top/test_view_rtl.py`` runs it).
"""

import shutil

from amaranth import Array, Cat, Const, Elaboratable, Module, Mux, ResetSignal, Signal
from amaranth.asserts import AnyConst, AnySeq, Initial
from amaranth.back import rtlil
from amaranth.hdl import Assert, Assume, Cover

from neuron_fabric.contract import facts
from neuron_fabric.contract.facts import Format, GateKind, Mode, Operand, TopParams, view_beats
from neuron_fabric.contract.paths import BUILD
from neuron_fabric.hdl.datapath import Datapath
from neuron_fabric.hdl.top.cfg import CfgLayout
from neuron_fabric.hdl.top.read_path import ReadPath
from neuron_fabric.hdl.top.request_layout import read_entry, stored_entry
from neuron_fabric.hdl.top.top import Top
from neuron_fabric.hdl.top.view_pack import VIEW_LOOKUP_CYCLES
from neuron_fabric.sim.formal import ENGINE
from neuron_fabric.sim.formal_datapath import reference_value

__all__ = ["ViewPackSpec", "view_pack_job", "DEPTH"]

#: BMC depth: reset, the beat track's clearing (R is held for its
#: MAX_OUTSTANDING = 4 cycles and one), and a whole read of the watched ID
#: (its beats, the read path's stages with the lookup's two cycles, the
#: core and the DRS queue: the cover reaches its DRS at step 15) with a few
#: cycles of stalls or other IDs' beats.
DEPTH = 20


class ViewPackSpec(Elaboratable):
    """See the module docstring.  ``params``' profile must have the view."""

    def __init__(self, params):
        self.params = params

    def elaborate(self, platform):
        p = self.params
        m = Module()
        m.d.comb += Assume(ResetSignal() == Initial())
        rst = ResetSignal()
        read = m.submodules.read = ReadPath(p, lookup_cycles=VIEW_LOOKUP_CYCLES)
        core = m.submodules.core = Datapath(line_bits=p.line_bits, workers=p.workers,
                                            stages=p.stages, profile=p.profile, keep_copies=True)
        Top._core(m, read, core)
        n, idw, lanes = p.max_outstanding, p.id_bits, p.lanes
        beats = view_beats(p.line_bits, p.workers, Operand.SIGNS)

        # each ID's entry: constant, a view of SIGNS, element-major, its tag its ID
        ternary = Array(AnyConst(1) for _ in range(n))
        masks = Array(AnyConst(p.line_bits // 2) for _ in range(n))
        fmt = AnyConst(2)
        m.d.comb += Assume(fmt != 3)
        looked = read.lookup.id       # the entry comes VIEW_LOOKUP_CYCLES after its lookup
        for k in range(VIEW_LOOKUP_CYCLES):
            looked_q = Signal(idw, name=f"looked{k}")
            m.d.sync += looked_q.eq(looked)
            looked = looked_q
        cfg = Signal(CfgLayout)
        m.d.comb += [cfg.mode.eq(Mux(ternary[looked], Mode.GTERNARY, Mode.GBINARY)),
                     cfg.format.eq(fmt), cfg.gate_kind.eq(GateKind.PATTERN), cfg.period.eq(3),
                     cfg.keep.eq(2)]
        entry = stored_entry(m, p, read_entry(m, p, looked, cfg, masks[looked], Const(0, 1),
                                              Const(1, 1)))
        m.d.comb += [read.lookup.entry.eq(entry), read.devload.eq(0)]

        # the model: IDs in flight (issued, not retired), beats owed per ID
        issue, issue_id = AnySeq(1), AnySeq(idw)
        busy = Array(Signal(name=f"busy{k}") for k in range(n))
        owed = Array(Signal(range(beats + 1), name=f"owed{k}") for k in range(n))
        m.d.comb += Assume(~issue | ~busy[issue_id])
        r_valid, r_id = AnySeq(1), AnySeq(idw)
        m.d.comb += [Assume(~r_valid | (read.r_ready & (owed[r_id] != 0))),
                     read.r_valid.eq(r_valid), read.r_id.eq(r_id),
                     read.r_data.eq(AnySeq(p.line_bits)), read.r_resp.eq(AnySeq(2)),
                     read.drs.ready.eq(AnySeq(1))]
        with m.If(issue):
            m.d.sync += [busy[issue_id].eq(1), owed[issue_id].eq(beats)]
        with m.If(r_valid):
            m.d.sync += owed[r_id].eq(owed[r_id] - 1)
        retire, retire_id = read.lookup.retire, read.lookup.retire_id
        with m.If(retire):
            m.d.sync += busy[retire_id].eq(0)
        # an ID is retired once, when in flight with no beat owed
        m.d.comb += Assert(rst | ~retire | (busy[retire_id] & (owed[retire_id] == 0)))

        # the watched ID: its beats in order, its poison; not issued again
        # before its DRS is taken
        watch = AnyConst(idw)
        seen = Signal(range(beats + 1))
        kept = [Signal(p.line_bits, name=f"beat{b}") for b in range(beats)]
        error, pending = Signal(), Signal()
        m.d.comb += Assume(~issue | (issue_id != watch) | ~pending)
        drs = read.drs
        taken = drs.valid & drs.ready & (drs.payload.tag == watch)
        with m.If(issue & (issue_id == watch)):
            m.d.sync += [seen.eq(0), error.eq(0), pending.eq(1)]
        with m.Elif(r_valid & (r_id == watch)):
            m.d.sync += [seen.eq(seen + 1), error.eq(error | (read.r_resp != 0))]
            for b in range(beats):
                with m.If(seen == b):
                    m.d.sync += kept[b].eq(read.r_data)
        with m.If(taken):
            m.d.sync += pending.eq(0)
        expected = Cat(self._results(kept[b], masks[watch][b * lanes:(b + 1) * lanes],
                                     ternary[watch]) for b in range(beats))
        m.d.comb += [
            Assert(rst | ~taken | (pending & (seen == beats) & ~busy[watch])),
            Assert(rst | ~taken | (drs.payload.poison == error)),
            Assert(rst | ~taken | error | (drs.payload.data == expected)),
            Cover(~rst & taken & ~error & ternary[watch]),
        ]
        return m

    def _results(self, line, mask, ternary):
        """The 2-bit results of one source line (contract section 6.2)."""
        w = self.params.workers
        out = []
        for i in range(self.params.lanes):
            c = sum(line[i * w + k].as_unsigned() for k in range(w))
            value = reference_value(c, w, Mux(ternary, Mode.GTERNARY, Mode.GBINARY),
                                    Const(Format.SIGN, 2), Const(GateKind.PATTERN, 1),
                                    mask[i], Const(0, 5))
            out.append(value.as_unsigned()[:2])
        return Cat(*out)


def view_pack_job(line_bits=64, workers=4, depth=DEPTH):
    """Write the job (a configuration with the view) under ``build/formal/``;
    return its ``.sby`` path."""
    # the view over SIGNS needs no hierarchy extension: the core alone, as
    # in a build without it
    saved = facts.PROFILES["full"]
    facts.PROFILES["full"] = facts.Profile(
        "full", (saved.features | {"packed_view"}) - {"hierarchy"})
    try:
        params = TopParams(line_bits=line_bits, workers=workers, stages=1, regions=0,
                           max_outstanding=4)
        il = rtlil.convert(ViewPackSpec(params), ports=[], emit_src=False)
    finally:
        facts.PROFILES["full"] = saved
    work = BUILD / "formal" / f"view_pack_L{line_bits}_W{workers}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    (work / "spec.il").write_text(il)
    sby = work / "view_pack.sby"
    sby.write_text("\n".join([
        "[tasks]", "bmc", "cover", "", "[options]", "bmc: mode bmc", f"bmc: depth {depth}",
        "cover: mode cover", f"cover: depth {depth}", "", "[engines]", ENGINE, "",
        "[script]", "read_rtlil spec.il", "prep -flatten -top top", "",
        "[files]", "spec.il", ""]))
    return sby
