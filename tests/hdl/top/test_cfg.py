"""The CFG word of the control registers (``hdl/top/cfg.py``): its layouts
against the bit positions of contract 4.4 and section 5 (written out
here), the configuration ``drive_config`` hands the request pipeline
(Amaranth simulator), and the registered check ``check_steps`` against
the contract's rule in Python (``contract.regmap.cfg_check``)."""

import random

import pytest
from amaranth import Module, Shape, Signal
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import PROFILES, TopParams
from neuron_fabric.contract.regmap import cfg_check
from neuron_fabric.hdl.top.cfg import (CHECK_STEPS, PARTS, CfgLayout, CfgWordLayout,
                                       ConfigSignature, RegionLayout, check_steps, drive_config)
from neuron_fabric.sim.amaranth_sim import run_testbenches

#: contract 4.4 and 5.1: field -> (lsb, width) of the CFG word
CONTRACT_CFG = {"mode": (0, 2), "format": (2, 2), "gate_kind": (4, 1), "layout": (5, 1),
                "operand": (6, 2), "period": (8, 4), "keep": (12, 4), "threshold": (16, 5),
                "total": (21, 10)}


def _field(word, lsb, width):
    return word >> lsb & ((1 << width) - 1)


def test_layouts_follow_the_contract():
    assert Shape.cast(CfgWordLayout).width == 32
    assert {name: (f.offset, Shape.cast(f.shape).width) for name, f in CfgWordLayout} == \
        {**CONTRACT_CFG, "enable": (31, 1)}
    assert {name: Shape.cast(f.shape).width for name, f in CfgLayout} == \
        {name: width for name, (_, width) in CONTRACT_CFG.items()}
    assert {name: Shape.cast(f.shape).width for name, f in RegionLayout(46)} == \
        {"cfg": sum(w for _, w in CONTRACT_CFG.values()), "enable": 1, "base": 46, "limit": 46}


def test_config_signature():
    members = dict(ConfigSignature(TopParams(line_bits=128, regions=2)).members.items())
    assert (members["hold"].flow, members["idle"].flow, members["default"].flow) == (Out, In, Out)
    assert members["regions"].shape.length == 2
    assert "regions" not in dict(ConfigSignature(TopParams(regions=0)).members.items())


def test_drive_config_decodes_the_words():
    """Each CFG field at its contract bits; a region's enable is bit 31, its
    BASE and LIMIT the 52-bit byte addresses of LO and HI's low 20 bits,
    as line addresses (less the 4 offset bits of a 16-byte line)."""
    params = TopParams(line_bits=128, workers=8, stages=2, regions=2)
    names = ["DEFAULT_CFG"] + [f"REGION{r}_{n}" for r in range(2) for n in
                               ("CFG", "BASE_LO", "BASE_HI", "LIMIT_LO", "LIMIT_HI")]
    m = Module()
    store = {n: Signal(32, name=n.lower()) for n in names}
    config = ConfigSignature(params).create()
    drive_config(m, config, store, params)
    rng = random.Random(2)

    async def bench(ctx):
        for _ in range(30):
            words = {n: rng.getrandbits(32) for n in names}
            for n, v in words.items():
                ctx.set(store[n], v)
            for name, (lsb, width) in CONTRACT_CFG.items():
                assert ctx.get(config.default[name]) == _field(words["DEFAULT_CFG"], lsb, width)
            for r in range(2):
                region = config.regions[r]
                word = words[f"REGION{r}_CFG"]
                assert ctx.get(region.enable) == word >> 31
                for name, (lsb, width) in CONTRACT_CFG.items():
                    assert ctx.get(region.cfg[name]) == _field(word, lsb, width), (r, name)
                for side in ("base", "limit"):
                    lo, hi = words[f"REGION{r}_{side.upper()}_LO"], \
                        words[f"REGION{r}_{side.upper()}_HI"]
                    byte_addr = ((hi & 0xFFFFF) << 32) | lo
                    assert ctx.get(getattr(region, side)) == byte_addr >> 4, (r, side)

    run_testbenches(m, bench, clock=False)


def _random_cfg(rng, workers, hierarchy):
    """A value the rule accepts, then (half the time) one field set to a
    value at or past one of the rule's edges, or (sometimes) any word."""
    if rng.random() < 0.1:
        return rng.getrandbits(32)
    operand = rng.choice([0, 1, 2]) if hierarchy else 0
    total = 0 if operand == 0 else rng.randint(1, 120 if operand == 1 else 1020)
    period = rng.randint(1, 15)
    fields = {"mode": rng.getrandbits(2), "format": rng.randint(0, 2),
              "gate_kind": rng.getrandbits(1), "layout": rng.getrandbits(1) if hierarchy else 0,
              "operand": operand, "period": period, "keep": rng.randint(0, period),
              "threshold": rng.randint(0, min(31, workers if operand == 0 else total)),
              "total": total}
    if rng.random() < 0.5:
        name, value = rng.choice([
            ("format", 3), ("period", 0), ("keep", min(15, period + 1)), ("operand", 3),
            ("layout", 1), ("operand", rng.choice([1, 2])), ("threshold", workers + 1),
            ("threshold", min(31, total + 1)), ("total", rng.choice([0, 1, 120, 121, 1020,
                                                                     1021, 1023]))])
        fields[name] = value
    return sum(v << CONTRACT_CFG[k][0] for k, v in fields.items())


@pytest.mark.parametrize("workers, profile", [(8, "full"), (4, "paper"), (16, "full")])
def test_check_steps_refuse_what_the_contract_refuses(workers, profile):
    features = PROFILES[profile].features
    m = Module()
    cfg = Signal(CfgWordLayout)
    parts = check_steps(m, cfg, workers, features, "chk")
    assert 1 <= len(parts) <= PARTS
    refused = Signal()
    m.d.comb += refused.eq(sum(p << i for i, p in enumerate(parts)) != 0)
    rng = random.Random(workers)
    values = [_random_cfg(rng, workers, "hierarchy" in features) for _ in range(400)]
    assert 50 < sum(cfg_check(v, workers, features) is None for v in values) < 350

    async def bench(ctx):
        for t, value in enumerate(values):
            ctx.set(cfg.as_value(), value)
            await ctx.tick()
            if t + 1 >= CHECK_STEPS:
                old = values[t + 1 - CHECK_STEPS]
                want = cfg_check(old, workers, features) is not None
                assert ctx.get(refused) == want, (hex(old), cfg_check(old, workers, features))

    run_testbenches(m, bench)
