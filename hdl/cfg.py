"""The CFG word of the control registers (contract 4.4 and section 5): its
layouts, the configuration the registers hand the request pipeline, and
the check of a value written to it, as logic in three registered steps
(terms of at most eight bits, rules of a few terms, the verdict), each at
most two LUT4 levels deep."""

from amaranth import Cat, Const, Signal, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import Operand
from neuron_fabric.host.regmap import (CFG_ENABLE, CFG_FIELDS, CXL_ADDR_BITS, DATA_BITS,
                                       count_total_max)

__all__ = ["CfgWordLayout", "CfgLayout", "RegionLayout", "ConfigSignature", "drive_config",
           "cfg_terms", "cfg_rules", "cfg_verdict", "cfg_invalid", "check_steps", "CHECK_STEPS"]

#: The 32-bit CFG word (contract 4.4), from the register map's field list.
CfgWordLayout = data.FlexibleLayout(DATA_BITS, {
    f.name: data.Field(unsigned(f.width), f.lsb) for f in CFG_FIELDS + (CFG_ENABLE,)})

#: One read configuration as the request pipeline carries it (no enable).
CfgLayout = data.StructLayout({f.name: f.width for f in CFG_FIELDS})


def RegionLayout(addr_bits):
    """A region: its configuration, enable bit and line-aligned window."""
    return data.StructLayout({"cfg": CfgLayout, "enable": 1,
                              "base": addr_bits, "limit": addr_bits})


def ConfigSignature(params):
    """What the registers hand the request pipeline (seen from the registers).

    ``hold`` asks the pipeline to accept no new request; ``idle`` answers
    that none it accepted still reads the configuration."""
    members = {"default": Out(CfgLayout), "hold": Out(1), "idle": In(1)}
    if params.regions:
        addr_bits = CXL_ADDR_BITS - params.offset_bits
        members["regions"] = Out(data.ArrayLayout(RegionLayout(addr_bits), params.regions))
    return wiring.Signature(members)


def drive_config(m, config, store, params):
    """Drive ``config`` (:func:`ConfigSignature`) from the registers' words
    ``store`` (``{register name: 32-bit signal}``): the CFG fields, each
    region's enable, and its BASE and LIMIT as line addresses."""
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


#: Registered steps of :func:`check_steps`: terms, rules, verdict.
CHECK_STEPS = 3


def cfg_terms(cfg, workers, features=()):
    """The first step of the rules of contract 4.4 and section 5 on a CFG
    value: each term a function of at most eight bits (two LUT levels).  A
    compare ``a > b`` is cut into chunks (two bits of each of ``a`` and
    ``b``, or four of ``a`` against a constant), each giving its own
    ``gt`` and ``eq`` terms; :func:`cfg_rules` combines them."""
    terms = {"format": cfg.format == 3, "period": cfg.period == 0,
             "operand": cfg.operand == 3, "signs": cfg.operand == Operand.SIGNS,
             **_chunks("keep", cfg.keep, cfg.period),
             **_chunks("total_zero", cfg.total, 0),
             **_chunks("threshold_workers", cfg.threshold, workers)}
    if "hierarchy" not in features:
        terms["extension"] = (cfg.layout != 0) | (cfg.operand != 0)
        return terms
    for operand in (Operand.COUNTS4, Operand.COUNTS8):
        terms[f"counts{operand:d}"] = cfg.operand == operand
        terms.update(_chunks(f"total_max{operand:d}", cfg.total, count_total_max(operand)))
    terms.update(_chunks("threshold_total", cfg.threshold, cfg.total))
    return terms


def cfg_rules(terms):
    """The second step: each rule of :func:`cfg_verdict` from the terms of
    :func:`cfg_terms` (a compare from its chunks, two LUT levels)."""
    t = terms
    rules = {k: t[k] for k in ("format", "period", "operand", "signs", "extension") if k in t}
    rules.update(keep=_combine(t, "keep"), total_zero=~_combine(t, "total_zero"),
                 threshold_workers=_combine(t, "threshold_workers"))
    if "extension" not in t:
        rules.update({f"total_max{op:d}": t[f"counts{op:d}"] & _combine(t, f"total_max{op:d}")
                      for op in (Operand.COUNTS4, Operand.COUNTS8)})
        rules["threshold_total"] = _combine(t, "threshold_total")
    return rules


def _chunks(name, a, b):
    """Terms ``{name}_gt{j}`` and (above the lowest chunk) ``{name}_eq{j}``
    of ``a > b`` (``b`` a value or an int), chunk ``j`` lowest first."""
    a = Value.cast(a)
    size = 4 if isinstance(b, int) else 2
    width = max(len(a), b.bit_length() if isinstance(b, int) else len(b))
    out = {}
    for j, lo in enumerate(range(0, width, size)):
        hi = min(lo + size, width)
        ac, bc = _bits(a, lo, hi), b >> lo & ((1 << hi - lo) - 1) if isinstance(b, int) \
            else _bits(b, lo, hi)
        out[f"{name}_gt{j}"] = _greater(ac, bc)
        if j:
            out[f"{name}_eq{j}"] = ac == bc
    return out


def _bits(value, lo, hi):
    """Bits ``[lo, hi)`` of ``value``, zero beyond its width."""
    return Cat(value[lo:hi], Const(0, max(0, hi - max(lo, len(value)))))


def _combine(terms, name):
    """``a > b`` from the chunk terms of :func:`_chunks`."""
    gt, j = terms[f"{name}_gt0"], 1
    while f"{name}_gt{j}" in terms:
        gt = terms[f"{name}_gt{j}"] | (terms[f"{name}_eq{j}"] & gt)
        j += 1
    return gt


def _greater(a, b):
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
    """The third step: whether the CFG value of :func:`cfg_rules` is refused.

    Without the ``hierarchy`` feature, layout and operand must be 0 (and so
    total must be 0): a build never accepts a value it does not implement."""
    r = rules
    bad = (r["format"] | r["period"] | r["keep"] | r["operand"] |
           (r["signs"] & (~r["total_zero"] | r["threshold_workers"])))
    if "extension" in r:
        return bad | r["extension"]
    return bad | (~r["signs"] & (r["total_zero"] | r["total_max1"] | r["total_max2"] |
                                 r["threshold_total"]))


def cfg_invalid(cfg, workers, features=()):
    """The rule of contract 4.4 and section 5 for a CFG value, as logic
    (``host.regmap.cfg_check`` in Python, with the same ``features``)."""
    return cfg_verdict(cfg_rules(cfg_terms(cfg, workers, features)))


def check_steps(m, cfg, workers, features, name):
    """:func:`cfg_invalid` of ``cfg`` in :data:`CHECK_STEPS` registered
    steps (terms, rules, verdict): the returned register is the verdict on
    the value ``cfg`` had that many cycles before."""
    terms = _registered(m, cfg_terms(cfg, workers, features), f"{name}_term_")
    rules = _registered(m, cfg_rules(terms), f"{name}_rule_")
    bad = Signal(name=f"{name}_bad")
    m.d.sync += bad.eq(cfg_verdict(rules))
    return bad


def _registered(m, values, prefix):
    regs = {k: Signal(name=prefix + k) for k in values}
    m.d.sync += [regs[k].eq(v) for k, v in values.items()]
    return regs
