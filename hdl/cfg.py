"""The CFG word of the control registers (contract 4.4 and section 5): its
layouts, the configuration the registers hand the request pipeline, and
the check of a value written to it, as logic in registered terms."""

from amaranth import Cat, Const, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import Operand
from neuron_fabric.host.regmap import (CFG_ENABLE, CFG_FIELDS, CXL_ADDR_BITS, DATA_BITS,
                                       count_total_max)

__all__ = ["CfgWordLayout", "CfgLayout", "RegionLayout", "ConfigSignature", "drive_config",
           "cfg_terms", "cfg_verdict", "cfg_invalid"]

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


def cfg_terms(cfg, workers, features=()):
    """The terms of the rules of contract 4.4 and section 5 for a CFG value,
    each a function of one or two fields (:func:`cfg_verdict` combines
    them), so that they can be registered apart."""
    terms = {"format": cfg.format == 3, "period": cfg.period == 0,
             "keep": _greater(cfg.keep, cfg.period), "operand": cfg.operand == 3,
             "signs": cfg.operand == Operand.SIGNS, "total_zero": cfg.total == 0,
             "threshold_workers": _greater(cfg.threshold, workers)}
    if "hierarchy" not in features:
        terms["extension"] = (cfg.layout != 0) | (cfg.operand != 0)
        return terms
    too_many = Const(0)
    for operand in (Operand.COUNTS4, Operand.COUNTS8):
        too_many = too_many | ((cfg.operand == operand) &
                               _greater(cfg.total, count_total_max(operand)))
    terms.update(total_max=too_many, threshold_total=_greater(cfg.threshold, cfg.total))
    return terms


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


def cfg_verdict(terms):
    """Whether the CFG value of :func:`cfg_terms` is refused.

    Without the ``hierarchy`` feature, layout and operand must be 0 (and so
    total must be 0): a build never accepts a value it does not implement."""
    t = terms
    bad = (t["format"] | t["period"] | t["keep"] | t["operand"] |
           (t["signs"] & (~t["total_zero"] | t["threshold_workers"])))
    if "extension" in t:
        return bad | t["extension"]
    return bad | (~t["signs"] & (t["total_zero"] | t["total_max"] | t["threshold_total"]))


def cfg_invalid(cfg, workers, features=()):
    """The rule of contract 4.4 and section 5 for a CFG value, as logic
    (``host.regmap.cfg_check`` in Python, with the same ``features``)."""
    return cfg_verdict(cfg_terms(cfg, workers, features))
