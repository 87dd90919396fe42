"""The CFG word of the control registers (contract 4.4 and section 5): its
layouts, the configuration the registers hand the request pipeline, and
the check of a value written to it, as logic in three registered steps
(terms, rules, partial verdicts), each output of each a function of at most
four values of the step before (one LUT4)."""

from amaranth import Cat, Const, Signal, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import profile_named, Operand
from neuron_fabric.contract.regmap import (CFG_ENABLE, CFG_FIELDS, CXL_ADDR_BITS, DATA_BITS,
                                           count_total_max)
from neuron_fabric.hdl.prims.gather import and_all, or_all

__all__ = ["CfgWordLayout", "CfgLayout", "RegionLayout", "ConfigSignature", "drive_config", "has_view",
           "cfg_terms", "cfg_rules", "cfg_partial_verdicts", "cfg_verdict", "cfg_invalid",
           "check_steps", "CHECK_STEPS", "PARTS"]

#: The 32-bit CFG word (contract 4.4), from the register map's field list.
CfgWordLayout = data.FlexibleLayout(DATA_BITS, {
    f.name: data.Field(unsigned(f.width), f.lsb) for f in CFG_FIELDS + (CFG_ENABLE,)})

#: One read configuration as the request pipeline carries it (no enable).
CfgLayout = data.StructLayout({f.name: f.width for f in CFG_FIELDS})


def RegionLayout(addr_bits, view=False):
    """A region: its configuration, enable bit and line-aligned window; with
    ``view`` (a build with the packed view, contract section 6.1) also its
    VIEW bit and its SOURCE as a line address."""
    extra = {"view": 1, "source": addr_bits} if view else {}
    return data.StructLayout({"cfg": CfgLayout, "enable": 1,
                              "base": addr_bits, "limit": addr_bits, **extra})


def has_view(params):
    """Whether a build of ``params`` has the packed view (contract section 6)."""
    return profile_named(params.profile).has("packed_view")


def ConfigSignature(params):
    """What the registers hand the request pipeline (seen from the registers).

    ``hold`` asks the pipeline to accept no new request; ``idle`` answers
    that none it accepted still reads the configuration."""
    members = {"default": Out(CfgLayout), "hold": Out(1), "idle": In(1)}
    if params.regions:
        addr_bits = CXL_ADDR_BITS - params.offset_bits
        members["regions"] = Out(data.ArrayLayout(RegionLayout(addr_bits, has_view(params)),
                                                  params.regions))
    return wiring.Signature(members)


def drive_config(m, config, store, params):
    """Drive ``config`` (:func:`ConfigSignature`) from the registers' words
    ``store`` (``{register name: 32-bit signal}``): the CFG fields, each
    region's enable, and its BASE and LIMIT as line addresses (with the
    packed view, its VIEW bit and SOURCE too)."""
    default = data.View(CfgWordLayout, store["DEFAULT_CFG"])
    m.d.comb += [config.default[f.name].eq(default[f.name]) for f in CFG_FIELDS]
    ob = params.offset_bits
    for r in range(params.regions):
        word = data.View(CfgWordLayout, store[f"REGION{r}_CFG"])
        region = config.regions[r]
        m.d.comb += [region.cfg[f.name].eq(word[f.name]) for f in CFG_FIELDS]
        m.d.comb += [
            region.enable.eq(word.enable),
            region.base.eq(Cat(store[f"REGION{r}_BASE_LO"],
                               store[f"REGION{r}_BASE_HI"][:CXL_ADDR_BITS - 32])[ob:]),
            region.limit.eq(Cat(store[f"REGION{r}_LIMIT_LO"],
                                store[f"REGION{r}_LIMIT_HI"][:CXL_ADDR_BITS - 32])[ob:]),
        ]
        if has_view(params):
            # (SOURCE_LO's bits below the 4 KiB alignment hold no state: they read 0)
            m.d.comb += [
                region.view.eq(store[f"REGION{r}_VIEW"][0]),
                region.source.eq(Cat(store[f"REGION{r}_SOURCE_LO"],
                                     store[f"REGION{r}_SOURCE_HI"][:CXL_ADDR_BITS - 32])[ob:]),
            ]


#: Registered steps of :func:`check_steps`: terms, rules, partial verdicts.
CHECK_STEPS = 3
#: Inputs of a LUT4: the most any term, rule or partial verdict takes.
_INPUTS = 4


def cfg_terms(cfg, workers, features=()):
    """The first step of the rules of contract 4.4 and section 5 on a CFG
    value: each term a function of at most four of its bits.  A compare
    ``a > b`` is cut into chunks (two bits of each of ``a`` and ``b``, or
    four of ``a`` against a constant), each giving its ``gt`` and ``eq``
    terms (but those a constant chunk makes plain: :func:`_chunks`), and a
    test for zero into chunks of four bits."""
    n = len(cfg.threshold)
    terms = {"format": cfg.format == 3, "period": cfg.period == 0,
             "operand": cfg.operand == 3, "signs": cfg.operand == Operand.SIGNS,
             **_chunks("keep", cfg.keep, cfg.period),
             **_nonzero("total", cfg.total),
             **_chunks("threshold_workers", cfg.threshold, workers)}
    if "hierarchy" not in features:
        terms["extension"] = (cfg.layout != 0) | (cfg.operand != 0)
        return terms
    for operand in (Operand.COUNTS4, Operand.COUNTS8):
        terms[f"counts{operand:d}"] = cfg.operand == operand
        terms.update(_chunks(f"total_max{operand:d}", cfg.total, count_total_max(operand)))
    # threshold > total: total's bits above the threshold's zero, and the
    # compare of the rest
    terms.update(_nonzero("total_high", cfg.total[n:]))
    terms.update(_chunks("threshold_total", cfg.threshold, cfg.total[:n]))
    return terms


def cfg_rules(terms):
    """The second step: each rule a function of at most four terms of
    :func:`cfg_terms` (a compare as the OR of its chunks' products, cut
    into rules of at most four terms each with its condition)."""
    t = terms
    nonzero = or_all(_run(t, "total_nz"))
    rules = {"basic": or_all(t[k] for k in ("format", "period", "operand", "extension")
                             if k in t),
             "keep": _greater(t, "keep"),
             "signs_total": t["signs"] & nonzero,
             "signs_threshold": t["signs"] & _greater(t, "threshold_workers")}
    if "extension" in t:
        return rules
    rules["counts_total_zero"] = ~t["signs"] & ~nonzero
    for op in (Operand.COUNTS4, Operand.COUNTS8):
        for i, part in enumerate(_packed(_products(t, f"total_max{op:d}"), 1)):
            rules[f"total_max{op:d}_{i}"] = t[f"counts{op:d}"] & part
    # (the threshold's rules hold only under threshold_high: see cfg_partial_verdicts)
    rules["threshold_high"] = ~t["signs"] & ~or_all(_run(t, "total_high_nz"))
    for i, part in enumerate(_packed(_products(t, "threshold_total"), 0)):
        rules[f"threshold_total_{i}"] = part
    return rules


def cfg_partial_verdicts(rules):
    """The third step: ORs of at most four rules of :func:`cfg_rules`, the
    value refused when any is high (the threshold's rules ANDed with
    ``threshold_high`` in one of them)."""
    threshold = [v for k, v in rules.items() if k.startswith("threshold_total_")]
    plain = [v for k, v in rules.items()
             if not k.startswith("threshold_total_") and k != "threshold_high"]
    parts = [or_all(plain[i:i + _INPUTS]) for i in range(0, len(plain), _INPUTS)]
    if threshold:
        assert len(threshold) < _INPUTS
        parts.append(rules["threshold_high"] & or_all(threshold))
    return parts


def _chunks(name, a, b):
    """Terms ``{name}_gt{j}`` and ``{name}_eq{j}`` of ``a > b`` (``b`` a
    value or an int), chunk ``j`` lowest first; against a constant, no
    ``gt`` of a chunk of all ones (it is 0) and no ``eq`` of a zero chunk
    (it is ``~gt``), nor an ``eq`` of the lowest chunk (never needed)."""
    a = Value.cast(a)
    const = isinstance(b, int)
    size = 4 if const else 2
    width = max(len(a), b.bit_length() if const else len(b))
    out = {}
    for j, lo in enumerate(range(0, width, size)):
        hi = min(lo + size, width)
        ac = _bits(a, lo, hi)
        bc = b >> lo & ((1 << hi - lo) - 1) if const else _bits(b, lo, hi)
        if not (const and bc == (1 << hi - lo) - 1):
            out[f"{name}_gt{j}"] = _bit_greater(ac, bc)
        if j and not (const and bc == 0):
            out[f"{name}_eq{j}"] = ac == bc
    out[f"{name}_chunks"] = (width + size - 1) // size
    return out


def _nonzero(name, value):
    """Terms ``{name}_nz{j}``: whether each four-bit chunk of ``value`` is
    not zero."""
    return {f"{name}_nz{j}": value[lo:lo + 4] != 0 for j, lo in enumerate(range(0, len(value), 4))}


def _run(terms, prefix):
    return [terms[f"{prefix}{j}"] for j in range(len(terms)) if f"{prefix}{j}" in terms]


def _products(terms, name):
    """``a > b`` as products of the chunk terms of :func:`_chunks` whose OR
    it is: for each chunk with a ``gt``, that ``gt`` and the ``eq`` of every
    chunk above (a chunk whose ``eq`` is ``~gt`` adds nothing: its own
    product covers the rest)."""
    products, above = [], []
    for j in reversed(range(terms[f"{name}_chunks"])):
        gt, eq = terms.get(f"{name}_gt{j}"), terms.get(f"{name}_eq{j}")
        if gt is not None:
            products.append(above + [gt])
        if eq is not None:
            above = above + [eq]
    return products


def _packed(products, spare):
    """The ORs of ``products`` (lists of terms ANDed) in groups of at most
    ``_INPUTS - spare`` terms."""
    groups, size = [], _INPUTS
    for p in products:
        if size + len(p) > _INPUTS - spare:
            groups.append([])
            size = 0
        groups[-1].append(and_all(p))
        size += len(p)
    return [or_all(g) for g in groups]


def _greater(terms, name):
    """``a > b`` from the chunk terms of :func:`_chunks`."""
    return or_all(and_all(p) for p in _products(terms, name))


def _bits(value, lo, hi):
    """Bits ``[lo, hi)`` of ``value``, zero beyond its width."""
    return Cat(value[lo:hi], Const(0, max(0, hi - max(lo, len(value)))))


def _bit_greater(a, b):
    """``a > b`` (unsigned; ``b`` a value or an int) as plain logic, bit by
    bit from the lowest: synthesis makes LUTs of it, where a compare would
    become a carry chain, slow to enter and leave on ECP5."""
    a = Value.cast(a)
    width = max(len(a), len(Value.cast(b)))
    gt = Const(0, 1)
    for i in range(width):
        ai = a[i] if i < len(a) else Const(0, 1)
        if isinstance(b, int):
            gt = (ai & gt) if b >> i & 1 else (ai | gt)
        else:
            bi = b[i] if i < len(b) else Const(0, 1)
            gt = (ai & ~bi) | (~(ai ^ bi) & gt)
    return gt


def cfg_verdict(rules):
    """Whether the CFG value of :func:`cfg_rules` is refused.

    Without the ``hierarchy`` feature, layout and operand must be 0 (and so
    total must be 0): a build never accepts a value it does not implement."""
    return or_all(cfg_partial_verdicts(rules))


def cfg_invalid(cfg, workers, features=()):
    """The rule of contract 4.4 and section 5 for a CFG value, as logic
    (``host.regmap.cfg_check`` in Python, with the same ``features``)."""
    return cfg_verdict(cfg_rules(cfg_terms(cfg, workers, features)))


def check_steps(m, cfg, workers, features, name):
    """:func:`cfg_invalid` of ``cfg`` in :data:`CHECK_STEPS` registered
    steps (terms, rules, partial verdicts): the value ``cfg`` had that many
    cycles before is refused when any of the returned registers is high
    (at most :data:`PARTS` of them)."""
    terms = _registered(m, cfg_terms(cfg, workers, features), f"{name}_term_")
    rules = _registered(m, cfg_rules(terms), f"{name}_rule_")
    parts = [Signal(name=f"{name}_bad{i}") for i in range(len(cfg_partial_verdicts(rules)))]
    m.d.sync += [q.eq(v) for q, v in zip(parts, cfg_partial_verdicts(rules))]
    assert len(parts) <= PARTS
    return parts


#: The most partial verdicts :func:`check_steps` gives.
PARTS = 3


def _registered(m, values, prefix):
    regs = {k: Signal(name=prefix + k) if not isinstance(v, int) else v
            for k, v in values.items()}
    m.d.sync += [regs[k].eq(v) for k, v in values.items() if not isinstance(v, int)]
    return regs
