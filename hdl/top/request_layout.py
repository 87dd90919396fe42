"""What the request pipeline hands on: each request's class (:class:`Kind`,
from its opcode), the classified request for issue, and what the
in-flight table remembers of a read."""

from amaranth import Const, Mux, Signal
from amaranth.lib import data

from neuron_fabric.contract.facts import CXL_ADDR_BITS, Format, Operand, profile_named, ReqOpcode
from neuron_fabric.contract.regmap import HIERARCHY_CFG_FIELDS
from neuron_fabric.hdl.top.cfg import CfgLayout
from neuron_fabric.hdl.top.gate import mask_lanes
from neuron_fabric.hdl.hierarchy.count_steps import LIMITS_BITS
from neuron_fabric.hdl.hierarchy.unit import permutes
from neuron_fabric.hdl.top.view_pack import (arrange_mask, COUNTS_COPIES, counts_copies,
                                             stored_counts)

__all__ = ["Kind", "ReadCfgLayout", "RequestLayout", "ReadEntryLayout", "read_entry",
           "stored_entry", "ARLEN_BITS", "classify", "answered_here"]


class Kind:
    """What the top does with a request: read the line, answer NDR Cmp,
    answer NDR Cmp and flag UNSUPPORTED, or drop it (MemSpecRd).  (The two
    that answer NDR Cmp share the high bit, so :func:`answered_here` is
    that one bit after synthesis.)"""
    READ, DROP, CMP, UNSUPPORTED = range(4)


def ReadCfgLayout(params):
    """CFG fields a read needs when its line returns: the core's inputs but
    for the mask, which replaces P, K and the phase; and with the
    ``hierarchy`` feature the layout, operand and total (contract section 5)."""
    names = ("mode", "format", "gate_kind", "threshold")
    if profile_named(params.profile).has("hierarchy"):
        names += HIERARCHY_CFG_FIELDS
    return data.StructLayout({name: CfgLayout[name].shape for name in names})


def RequestLayout(params):
    """A classified request, as it leaves the pipeline for issue: what the AR
    beat and the counters need (a read's in-flight entry is filled later);
    with the packed view also ``len``, the AR beat's ARLEN (``B - 1`` for a
    view's burst, contract section 6.3; ``addr`` is then the burst's first
    source line)."""
    extra = {"len": ARLEN_BITS} if profile_named(params.profile).has("packed_view") else {}
    return data.StructLayout({"kind": 2, "tag": 16,
                              "addr": CXL_ADDR_BITS - params.offset_bits,
                              "id": params.id_bits, "mode": CfgLayout["mode"].shape, **extra})


#: Bits of a view's beat count less one (B is at most 16, contract section 6.2).
ARLEN_BITS = 4


def ReadEntryLayout(params):
    """What the in-flight table remembers of a read; with the ``hierarchy``
    feature also ``permute``, whether the line reaches the core
    element-major (:func:`.hierarchy.permutes` of its CFG), and with
    ``gate_margin`` too ``limits``, the count unit's MARGIN-gate limits
    (:func:`.count_steps.margin_limits` of its CFG).  Both are formed when
    the request is accepted, so that the read path copies them from
    registers with no logic between.  With ``packed_view``: ``view``, the
    read is a view's burst, and ``counts``, a view of count lines
    (:func:`.view_pack.stored_counts`, copies); a view's ``cfg.format`` is
    SIGN (its beats go through the core so), and its ``mask`` is stored
    arranged (:func:`stored_entry`)."""
    has = profile_named(params.profile).has
    extra = {"permute": 1} if has("hierarchy") else {}
    if has("hierarchy") and has("gate_margin"):
        extra["limits"] = LIMITS_BITS
    if has("packed_view"):
        extra.update({"view": 1, "counts": COUNTS_COPIES})
    return data.StructLayout({"tag": 16, "cfg": ReadCfgLayout(params),
                              "mask": mask_lanes(params), **extra})


def read_entry(m, params, tag, cfg, mask, limits=None, view=None):
    """A read's in-flight entry (:func:`ReadEntryLayout`) from its tag, CFG
    (a :class:`.cfg.CfgLayout` view) and gate mask; where the layout has
    them, ``permute`` from the CFG and ``limits`` and ``view`` as given."""
    entry = Signal(ReadEntryLayout(params))
    members = ReadEntryLayout(params).members
    m.d.comb += [entry.tag.eq(tag), entry.mask.eq(mask),
                 *(entry.cfg[name].eq(cfg[name]) for name, _ in ReadCfgLayout(params))]
    if "permute" in members:
        m.d.comb += entry.permute.eq(permutes(cfg))
    if "limits" in members:
        m.d.comb += entry.limits.eq(limits)
    if "view" in members:
        counts = view & (cfg.operand != Operand.SIGNS) if "permute" in members else Const(0, 1)
        m.d.comb += [entry.view.eq(view), entry.counts.eq(stored_counts(counts)),
                     entry.cfg.format.eq(Mux(view, Format.SIGN, cfg.format))]
    return entry


def stored_entry(m, params, entry):
    """What the in-flight table stores of a read's (registered) ``entry``:
    the entry, with the packed view its mask arranged by the view's operand
    kind (:func:`.view_pack.arrange_mask`, steered by the entry's copies of
    ``counts``)."""
    if "view" not in ReadEntryLayout(params).members:
        return entry
    entry = data.View(ReadEntryLayout(params), entry)
    stored = Signal(ReadEntryLayout(params), name="stored_entry")
    m.d.comb += [stored.eq(entry),
                 stored.mask.eq(arrange_mask(params, entry.mask, counts_copies(entry.counts)))]
    return stored


def answered_here(kind):
    """Whether a request of ``kind`` is answered with NDR Cmp by the top
    itself, with no memory access (MemInv, MemInvNT and unsupported)."""
    return (kind == Kind.CMP) | (kind == Kind.UNSUPPORTED)


def classify(m, opcode):
    """The :class:`Kind` of a request of ``opcode`` (contract 4.2)."""
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
