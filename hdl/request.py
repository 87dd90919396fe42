"""The M2S Req pipeline: region match, configuration capture, gate phase and
gate mask (contract 4.3), with a queue of classified requests for issue.

Stages (one register each, no clock enable: the pipeline never stalls)::

    A   accept (opcode, line address, tag); a read reserves its table place
    M1  opcode class (a read takes its ID); each region's BASE and LIMIT
        compared in two halves
    M2  each region's match
    M3  the lowest-numbered match, one-hot (or none)
    M4  its configuration and BASE (DEFAULT_CFG and 0 when none)
    S5  line index = address - BASE; r < K for each residue r
    S6  residues of the line index: leaves of the modular-adder trees;
        the pattern table T[u] = (u mod P) < K
    T1.. one tree level each (three at 512 bits)  -> issue queue from T1
    PC  the phase for every P
    PH  the phase for this P
    MASK gate mask, mask[i] = T[i + phase]  -> the read's in-flight entry

The issue queue is written AR_LEAD stages before the last, so a read's AR
goes out while its mask is still being formed; the entry is filled before
its R beat can come back (see AR_LEAD).

Admission is by credit: ``req.ready`` is a register that is high only when
the queue has room for every request the pipeline may still hold and the
in-flight table has room for a read, so nothing downstream can stop a
request once accepted.  The configuration is
read in stages A (BASE, LIMIT, enable) and M3 (CFG, BASE); ``config.idle``
tells the control registers that neither holds a request and none is being
accepted, so a register write may take effect (contract 4.3).
"""

from amaranth import Cat, Const, Module, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import COUNT_LANE_BITS, CXL_ADDR_BITS, PROFILES, Operand, ReqOpcode
from neuron_fabric.host.regmap import HIERARCHY_CFG_FIELDS
from .bus import ReqLayout
from .credit import credit_ready
from .csr import CfgLayout, ConfigSignature
from .inflight import ReadAllocSignature, ReserveSignature
from .phase import (MODULI, gate_mask, keep_below, leaves, pattern_table, phase_candidates,
                    phase_lookup, reduce, tree_levels)
from .region import compare_halves, match, select

__all__ = ["Kind", "ReadCfgLayout", "RequestLayout", "ReadEntryLayout", "RequestPipeline",
           "FIXED_PATTERN", "AR_LEAD"]


class Kind:
    """What the top does with a request: read the line, answer NDR Cmp,
    answer NDR Cmp and flag UNSUPPORTED, or drop it (MemSpecRd)."""
    READ, CMP, UNSUPPORTED, DROP = range(4)


#: The fixed PATTERN gate of a build without ``gate_pattern_programmable``
#: (the paper's 2-of-3 gate): P, K.
FIXED_PATTERN = (3, 2)


def ReadCfgLayout(params):
    """CFG fields a read needs when its line returns: the core's inputs but
    for the mask, which replaces P, K and the phase; and with the
    ``hierarchy`` feature the layout, operand and total (contract section 5)."""
    names = ("mode", "format", "gate_kind", "threshold")
    if PROFILES[params.profile].has("hierarchy"):
        names += HIERARCHY_CFG_FIELDS
    return data.StructLayout({name: CfgLayout[name].shape for name in names})


def RequestLayout(params):
    """A classified request, as it leaves the pipeline for issue: what the AR
    beat and the counters need (a read's in-flight entry is filled later)."""
    return data.StructLayout({"kind": 2, "tag": 16,
                              "addr": CXL_ADDR_BITS - params.offset_bits,
                              "id": params.id_bits, "mode": CfgLayout["mode"].shape})


def ReadEntryLayout(params):
    """What the in-flight table remembers of a read."""
    return data.StructLayout({"tag": 16, "cfg": ReadCfgLayout(params), "mask": params.lanes})


#: Depth of the queue behind the pipeline: covers the requests in flight
#: from admission to the queue's output, so that one is accepted per cycle.
QUEUE_DEPTH = 16

#: Stages from the one that writes the issue queue to the last one, which
#: fills the read's in-flight entry.  The earliest lookup of a read's entry
#: comes 6 cycles after its request is written to the queue (queue 2, AR
#: queue 2, the AXI address and data handshakes 1, the R beat register 1),
#: and reads the table as it was after the cycle before: so the entry is
#: filled before any lookup can read it as long as AR_LEAD <= 5, whatever
#: the memory does (a test checks it with a memory answering the cycle
#: after each address).
AR_LEAD = 5


def _stage(m, name, valid, fields):
    """Register ``valid`` (reset) and ``fields`` (reset-less), every cycle."""
    valid_q = Signal(name=f"{name}_valid")
    m.d.sync += valid_q.eq(valid)
    regs = {}
    for key, value in fields.items():
        if isinstance(value, list):
            regs[key] = [_reg(m, f"{name}_{key}{i}", v) for i, v in enumerate(value)]
        else:
            regs[key] = _reg(m, f"{name}_{key}", value)
    return valid_q, regs


def _reg(m, name, value):
    shape = value.shape() if isinstance(value, data.View) else len(Value.cast(value))
    reg = Signal(shape, name=name, reset_less=True)
    m.d.sync += reg.eq(value)
    return reg


class RequestPipeline(wiring.Component):
    """Classifies M2S Req requests and captures each read's configuration.

    Parameters
    ----------
    params : TopParams

    Members
    -------
    req : In(stream.Signature(ReqLayout()))
    config : In(ConfigSignature(params))
    out : Out(stream.Signature(RequestLayout(params)))
    reserve : Out(ReserveSignature())
        A place in the in-flight table for each read accepted; no request
        is accepted while the table will have no room.
    alloc : Out(ReadAllocSignature(...))
        A read takes its ID in M1 (one is always free: its place was
        reserved) and fills its entry in the last stage.
    """

    def __init__(self, params):
        self._params = params
        super().__init__({
            "req": In(stream.Signature(ReqLayout())),
            "config": In(ConfigSignature(params)),
            "out": Out(stream.Signature(RequestLayout(params))),
            "reserve": Out(ReserveSignature()),
            "alloc": Out(ReadAllocSignature(params.id_bits, ReadEntryLayout(params))),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        queue = m.submodules.queue = SyncFIFOBuffered(width=RequestLayout(p).size,
                                                      depth=QUEUE_DEPTH)
        accept = self._admission(m, queue)
        stages = []

        def stage(name, valid, fields):
            stages.append(_stage(m, name, valid, fields))
            return stages[-1]

        a_valid, a = stage("a", accept, {
            "opcode": self.req.payload.opcode, "addr": self.req.payload.addr[p.offset_bits:],
            "tag": self.req.payload.tag})
        m1_valid, m1 = stage("m1", a_valid, {"kind": _kind(m, a["opcode"]),
                                            "addr": a["addr"], "tag": a["tag"],
                                            "cmp": compare_halves(self.config, a["addr"], p)})
        # A read takes its ID here; it travels with the request from M2 on.
        m.d.comb += self.alloc.take.eq(m1_valid & (m1["kind"] == Kind.READ))
        keep = ("kind", "addr", "tag", "id")
        m2_valid, m2 = stage("m2", m1_valid, {**{k: m1[k] for k in keep[:3]},
                                             "id": self.alloc.id,
                                             "match": [match(c) for c in m1["cmp"]]})
        first = [mt & ~Cat(*m2["match"][:r]).any() if r else mt
                 for r, mt in enumerate(m2["match"])]
        m3_valid, m3 = stage("m3", m2_valid, {**{k: m2[k] for k in keep}, "first": first,
                                             "none": ~Cat(*m2["match"]).any()
                                             if m2["match"] else Const(1, 1)})
        cfg, base = select(m, self.config, m3["first"], m3["none"], p)
        m4_valid, m4 = stage("m4", m3_valid, {**{k: m3[k] for k in keep},
                                             "cfg": cfg, "base": base})
        m.d.comb += self.config.idle.eq(~self.req.ready & ~a_valid & ~m1_valid & ~m2_valid
                                        & ~m3_valid)

        # The pattern table depends on the configuration alone: formed in two
        # steps beside the line index and the leaves, then carried.
        programmable = PROFILES[p.profile].has("gate_pattern_programmable")
        m4_cfg = data.View(CfgLayout, m4["cfg"])
        keep = ("kind", "addr", "tag", "id", "cfg")
        s5_valid, s5 = stage("s5", m4_valid, {**{k: m4[k] for k in keep},
                                             "below": keep_below(m4_cfg.keep),
                                             "index": m4["addr"] - m4["base"]})
        s5_cfg = data.View(CfgLayout, s5["cfg"])
        if programmable:
            table = pattern_table(s5_cfg.period, None, p.lanes, below=s5["below"])
        else:
            table = pattern_table(*FIXED_PATTERN, p.lanes)
        keep = ("kind", "addr", "tag", "id", "cfg", "table")
        # The residue trees, one table level per stage: leaves, then levels.
        t_valid, t = stage("s6", s5_valid, {**{k: s5[k] for k in keep[:5]}, "table": table,
                                           "low": s5["index"][:3],
                                           **{f"r{q}": v for q, v in
                                              leaves(m, s5["index"]).items()}})
        for level in range(tree_levels(len(s5["index"]))):
            t_valid, t = stage(f"t{level + 1}", t_valid, {
                **{k: t[k] for k in keep}, "low": t["low"],
                **{f"r{q}": reduce(t[f"r{q}"], q, levels=1) for q in MODULI}})
        # The phase for every P, then the one of this P, then the mask.
        # A count line (contract section 5.3) has E_c = LINE_BITS / 32 elements.
        t_cfg = data.View(CfgLayout, t["cfg"])
        counts = ((t_cfg.operand != Operand.SIGNS, p.line_bits // COUNT_LANE_BITS)
                  if PROFILES[p.profile].has("hierarchy") else None)
        pc_valid, pc = stage("pc", t_valid, {
            **{k: t[k] for k in keep},
            "cand": phase_candidates(t["low"], {q: t[f"r{q}"][0] for q in MODULI}, p.lanes,
                                     counts)})
        pc_cfg = data.View(CfgLayout, pc["cfg"])
        ph_valid, ph = stage("ph", pc_valid, {**{k: pc[k] for k in keep},
                                             "phase": phase_lookup(pc_cfg.period, pc["cand"])})
        ph_cfg = data.View(CfgLayout, ph["cfg"])
        entry = Signal(ReadEntryLayout(p))
        m.d.comb += [entry.tag.eq(ph["tag"]),
                     *(entry.cfg[name].eq(ph_cfg[name]) for name, _ in ReadCfgLayout(p)),
                     entry.mask.eq(gate_mask(ph["table"], ph["phase"], p.lanes))]
        last_valid, last = stage("mask", ph_valid, {"kind": ph["kind"], "id": ph["id"],
                                                   "entry": entry})
        m.d.comb += [self.alloc.fill.eq(last_valid & (last["kind"] == Kind.READ)),
                     self.alloc.fill_id.eq(last["id"]), self.alloc.entry.eq(last["entry"])]

        # The issue queue, AR_LEAD stages before the entry is filled.
        tap_valid, tap = stages[-1 - AR_LEAD]
        tap_cfg = data.View(CfgLayout, tap["cfg"])
        to_issue = Signal(RequestLayout(p))
        m.d.comb += [to_issue.kind.eq(tap["kind"]), to_issue.tag.eq(tap["tag"]),
                     to_issue.addr.eq(tap["addr"]), to_issue.id.eq(tap["id"]),
                     to_issue.mode.eq(tap_cfg.mode)]
        m.d.comb += [
            queue.w_en.eq(tap_valid), queue.w_data.eq(to_issue),
            self.out.valid.eq(queue.r_rdy), self.out.payload.eq(queue.r_data),
            queue.r_en.eq(self.out.ready),
        ]
        return m

    def _admission(self, m, queue):
        """``req.ready`` from a credit count of requests between admission
        and the queue's output and the in-flight table's room; reserves a
        place in the table for each read; returns the accept strobe."""
        ready = credit_ready(m, QUEUE_DEPTH, self.req.valid, queue.r_rdy & queue.r_en,
                             hold=self.config.hold, room=self.reserve.room)
        accept = self.req.valid & ready
        opcode = self.req.payload.opcode
        m.d.comb += [self.req.ready.eq(ready),
                     self.reserve.take.eq(accept & ((opcode == ReqOpcode.MEM_RD) |
                                                    (opcode == ReqOpcode.MEM_RD_DATA)))]
        return accept


def _kind(m, opcode):
    kind = Signal(2)
    with m.Switch(opcode):
        with m.Case(ReqOpcode.MEM_RD, ReqOpcode.MEM_RD_DATA):
            m.d.comb += kind.eq(Kind.READ)
        with m.Case(ReqOpcode.MEM_INV, ReqOpcode.MEM_INV_NT):
            m.d.comb += kind.eq(Kind.CMP)
        with m.Case(ReqOpcode.MEM_SPEC_RD):
            m.d.comb += kind.eq(Kind.DROP)
        with m.Default():
            m.d.comb += kind.eq(Kind.UNSUPPORTED)
    return kind
