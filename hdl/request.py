"""The M2S Req pipeline: region match, configuration capture, gate phase and
gate mask (contract 4.3), with a queue of classified requests for issue.

Stages (one register each, no clock enable: the pipeline never stalls)::

    A   accept (opcode, line address, tag); a read reserves its table place
    M1  opcode class (a read takes its ID); each region's BASE and LIMIT
        compared with the address in 2-bit chunks (region.py)
    M2  each compare for runs of 8 chunks (short carry chains)
    M3  each compare whole, and each region's match
    M4  within each pair of regions, the first match's CFG, BASE and
        r < K for each residue r
    M5  the same of the first match (DEFAULT_CFG and 0 when none)
    LEAF residues of 6-bit groups of the address and of minus BASE
        (phase.py), whose sum is the line index; the low three bits of the
        index; the pattern table T[u] = (u mod P) < K for each P[3:1]
    T1.. the leaves' sums, one level of adds each (four at 512 bits); T
        chosen by P[1], P[2], P[3] in T1..T3
    R1  each sum modulo q for each value of its bits above the low six
    R2  each residue of the line index  -> issue queue
    PC  the phase for every P
    PH1 the phase for each P[3:2] (chosen by P[1:0])
    PH2 the phase for this P
    K1  T shifted down by phase[1:0]
    MASK gate mask, mask[i] = T[i + phase]  -> the read's in-flight entry

Admission is by credit: ``req.ready`` is a register that is high only when
the queue has room for every request the pipeline may still hold and the
in-flight table has room for a read, so nothing downstream can stop a
request once accepted.  The configuration is read in stages A (BASE, LIMIT,
enable) and M3 (CFG, BASE, DEFAULT_CFG); ``config.idle`` tells the control
registers that neither holds a request and none is being accepted, so a
register write may take effect (contract 4.3).
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
from .phase import (MODULI, add_pairs, choose_high, choose_low, keep_below, leaves, mask_high,
                    mask_low, halve, pattern_start, pattern_table, phase_candidates, residue_high,
                    residue_low)
from .region import CHUNK, RUN, below, chunk_compare, first_choice, pair_choice, runs

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
#: queue 2, the AXI handshakes 1, the R beat register 1) and reads the table
#: as it was the cycle before: so the entry is filled in time as long as
#: AR_LEAD <= 5, whatever the memory does (a test checks it with a memory
#: answering the cycle after each address).
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

        def stage(name, valid, fields, keep=(), source=None):
            fields = {**{k: source[k] for k in keep}, **fields}
            stages.append(_stage(m, name, valid, fields))
            return stages[-1]

        a_valid, a = stage("a", accept, {
            "opcode": self.req.payload.opcode, "addr": self.req.payload.addr[p.offset_bits:],
            "tag": self.req.payload.tag})
        regions = self.config.regions if p.regions else []
        m1_valid, m1 = stage("m1", a_valid, {
            "kind": _kind(m, a["opcode"]),
            "cmp": [Cat(*chunk_compare(a["addr"], region.base),
                        *chunk_compare(a["addr"], region.limit), region.enable)
                    for region in regions]}, ("addr", "tag"), a)
        # A read takes its ID here; it travels with the request from M2 on.
        m.d.comb += self.alloc.take.eq(m1_valid & (m1["kind"] == Kind.READ))
        keep = ("kind", "addr", "tag", "id")
        n = -(-len(a["addr"]) // CHUNK)
        m2_valid, m2 = stage("m2", m1_valid, {
            "id": self.alloc.id,
            "bounds": [Cat(*runs(c[:n], c[n:2 * n]), *runs(c[2 * n:3 * n], c[3 * n:4 * n]),
                           c[4 * n]) for c in m1["cmp"]]}, keep[:3], m1)
        w = -(-n // RUN)
        m3_valid, m3 = stage("m3", m2_valid, {"match": Cat(*(
            b[4 * w] & ~below(b[:w], b[w:2 * w]) & below(b[2 * w:3 * w], b[3 * w:4 * w])
            for b in m2["bounds"]))}, keep, m2)
        # The CFG and BASE of the first match, with r < K for each residue r
        # (registered from each region's K every cycle: read in M3 as it was
        # the cycle before, which idle covers too): within pairs, then among
        # the pairs and DEFAULT_CFG (BASE 0).
        default = self.config.default
        below_k = [_reg(m, f"below_k{i}", keep_below(c.keep))
                   for i, c in enumerate([r.cfg for r in regions] + [default])]
        pairs = pair_choice(m3["match"], [Cat(r.cfg.as_value(), r.base, below_k[i])
                                          for i, r in enumerate(regions)])
        m4_valid, m4 = stage("m4", m3_valid, {
            "any": Cat(*(hit for hit, _ in pairs)), "pair": [v for _, v in pairs],
            "default": Cat(default.as_value(), Const(0, len(a["addr"])), below_k[-1])},
            keep, m3)
        m.d.comb += self.config.idle.eq(~self.req.ready & ~a_valid & ~m1_valid & ~m2_valid
                                        & ~m3_valid)
        chosen = first_choice(m4["any"], m4["pair"], m4["default"])
        base_end = CfgLayout.size + len(a["addr"])
        m5_valid, m5 = stage("m5", m4_valid, {
            "cfg": chosen[:CfgLayout.size], "base": chosen[CfgLayout.size:base_end],
            "below": chosen[base_end:]}, keep, m4)

        # The residues of the line index, address - BASE: leaves of the
        # address and negated leaves of BASE, their sums (one level of adds
        # per stage), then each sum modulo q in two steps.  The pattern
        # table (a function of CFG alone) forms beside them, then is carried.
        programmable = PROFILES[p.profile].has("gate_pattern_programmable")
        keep = ("kind", "addr", "tag", "id", "cfg")
        table = (pattern_start(data.View(CfgLayout, m5["cfg"]).period, m5["below"], p.lanes)
                 if programmable else [pattern_table(*FIXED_PATTERN, p.lanes)])
        sums = {q: [v[:(q - 1).bit_length()] for v in vs + leaves(m, m5["base"], True)[q]]
                for q, vs in leaves(m, m5["addr"]).items()}
        t_valid, t = stage("leaf", m5_valid, {
            "table": table, "low": (m5["addr"][:3] - m5["base"][:3])[:3],
            **{f"r{q}": vs for q, vs in sums.items()}}, keep, m5)
        keep = ("kind", "addr", "tag", "id", "cfg", "table")
        for level in range((len(sums[MODULI[0]]) - 1).bit_length()):
            table, period = t["table"], data.View(CfgLayout, t["cfg"]).period
            t_valid, t = stage(f"t{level + 1}", t_valid, {
                "table": halve(table, period[4 - (len(table) - 1).bit_length()])
                if len(table) > 1 else table, "low": t["low"],
                **{f"r{q}": add_pairs(t[f"r{q}"]) for q in MODULI}}, keep[:5], t)
        parts = {q: residue_low(t[f"r{q}"][0], q) for q in MODULI}
        t_valid, t = stage("r1", t_valid, {
            "low": t["low"], **{f"r{q}": parts[q][0] for q in MODULI},
            **{f"h{q}": parts[q][1] for q in MODULI if len(parts[q][1])}}, keep, t)
        t_valid, t = stage("r2", t_valid, {"low": t["low"], **{
            f"r{q}": residue_high(t[f"r{q}"], t.get(f"h{q}", Cat())) for q in MODULI}}, keep, t)
        # The phase for every P, then the one of this P in two steps, then
        # the mask in two.  A count line (contract section 5.3) has
        # E_c = LINE_BITS / 32 elements.
        t_cfg = data.View(CfgLayout, t["cfg"])
        counts = ((t_cfg.operand != Operand.SIGNS, p.line_bits // COUNT_LANE_BITS)
                  if PROFILES[p.profile].has("hierarchy") else None)
        pc_valid, pc = stage("pc", t_valid, {
            "cand": phase_candidates(t["low"], {q: t[f"r{q}"] for q in MODULI}, p.lanes,
                                     counts)}, keep, t)
        ph1_valid, ph1 = stage("ph1", pc_valid, {"cand": choose_low(
            pc["cand"], data.View(CfgLayout, pc["cfg"]).period, 4)}, keep, pc)
        ph_valid, ph = stage("ph2", ph1_valid, {"phase": choose_high(
            ph1["cand"], data.View(CfgLayout, ph1["cfg"]).period, 4)}, keep, ph1)
        k1_valid, k1 = stage("k1", ph_valid, {
            "shifted": mask_low(ph["table"][0], ph["phase"], p.lanes),
            "phase": ph["phase"]}, keep[:5], ph)
        k1_cfg = data.View(CfgLayout, k1["cfg"])
        entry = Signal(ReadEntryLayout(p))
        m.d.comb += [entry.tag.eq(k1["tag"]),
                     *(entry.cfg[name].eq(k1_cfg[name]) for name, _ in ReadCfgLayout(p)),
                     entry.mask.eq(mask_high(k1["shifted"], k1["phase"], p.lanes))]
        last_valid, last = stage("mask", k1_valid, {"entry": entry}, ("kind", "id"), k1)
        m.d.comb += [self.alloc.fill.eq(last_valid & (last["kind"] == Kind.READ)),
                     self.alloc.fill_id.eq(last["id"]), self.alloc.entry.eq(last["entry"])]

        # The issue queue, AR_LEAD stages before the entry is filled.
        tap_valid, tap = stages[-1 - AR_LEAD]
        tap_cfg = data.View(CfgLayout, tap["cfg"])
        to_issue = Signal(RequestLayout(p))
        m.d.comb += [to_issue.kind.eq(tap["kind"]), to_issue.tag.eq(tap["tag"]),
                     to_issue.addr.eq(tap["addr"]), to_issue.id.eq(tap["id"]),
                     to_issue.mode.eq(tap_cfg.mode)]
        m.d.comb += [queue.w_en.eq(tap_valid), queue.w_data.eq(to_issue),
                     self.out.valid.eq(queue.r_rdy), self.out.payload.eq(queue.r_data),
                     queue.r_en.eq(self.out.ready)]
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
