"""Region match of the request pipeline (``hdl/top/region.py``): its steps
chained without registers in the Amaranth simulator, against contract 4.3
written out here: the lowest-numbered enabled region with
``BASE <= addr < LIMIT`` is chosen, none when no enabled region holds the
address."""

import random

import pytest
from amaranth import Module, Signal

from neuron_fabric.hdl.top.region import (CHUNK_BITS, chunk_compare, combine, compare_steps, first,
                                          match, region_reference, select_final, select_partial)
from neuron_fabric.sim.amaranth_sim import run_testbenches


def contract_region(addr, regions):
    """contract 4.3: the first enabled region holding ``addr``, or None."""
    return next((r for r, (en, base, limit) in enumerate(regions) if en and base <= addr < limit),
                None)


@pytest.mark.parametrize("width", [5, 6, 24, 46, 49])
def test_compare_steps_bring_the_chunks_to_three_pairs(width):
    """``compare_steps`` combines leave at most three pairs, and no fewer
    combines do (a ``width``-bit compare has ``ceil(width / 2)`` chunks)."""
    def pairs_after(steps):
        n = -(-width // CHUNK_BITS)
        for _ in range(steps):
            n = -(-n // 4)
        return n
    steps = compare_steps(width)
    assert pairs_after(steps) <= 3
    assert steps == 0 or pairs_after(steps - 1) > 3
    addr, bound = Signal(width), Signal(width)
    pairs = chunk_compare(addr, bound)
    assert len(pairs) == -(-width // CHUNK_BITS)
    for _ in range(steps):
        pairs = combine(pairs)
    assert len(pairs) <= 3


def _wire(m, value, name):
    """``value`` through a Signal (each step's result, as the pipeline
    registers it)."""
    sig = Signal(len(value), name=name)
    m.d.comb += sig.eq(value)
    return sig


def _wired(m, pairs, name):
    return [(_wire(m, lt, f"{name}_lt{i}"), _wire(m, eq, f"{name}_eq{i}"))
            for i, (lt, eq) in enumerate(pairs)]


def _build(width, n, value_bits):
    m = Module()
    addr = Signal(width)
    regions = [(Signal(name=f"en{r}"), Signal(width, name=f"base{r}"),
                Signal(width, name=f"limit{r}"), Signal(value_bits, name=f"val{r}"))
               for r in range(n)]
    matches = []
    for r, (en, base, limit, _) in enumerate(regions):
        sides = []
        for side, bound in (("b", base), ("l", limit)):
            pairs = _wired(m, chunk_compare(addr, bound), f"r{r}{side}_c")
            for step in range(compare_steps(width)):
                pairs = _wired(m, combine(pairs), f"r{r}{side}_s{step}")
            sides.append(pairs)
        matches.append(_wire(m, match(en, *sides), f"match{r}"))
    hot, none = first(matches)
    hot = [_wire(m, h, f"hot{r}") for r, h in enumerate(hot)]
    out = {"hot": Signal(n), "none": Signal(), "value": Signal(value_bits)}
    m.d.comb += [out["hot"].eq(sum(h << r for r, h in enumerate(hot))), out["none"].eq(none),
                 out["value"].eq(select_final(select_partial(hot, [r[3] for r in regions])))]
    return m, addr, regions, out


@pytest.mark.parametrize("width, n", [(8, 4), (46, 3)])
def test_match_first_and_select_follow_the_contract(width, n):
    m, addr, regions, out = _build(width, n, 7)
    rng = random.Random(width)
    top = (1 << width) - 1

    async def bench(ctx):
        for trial in range(25):
            table = []
            for r in range(n):
                a, b = sorted(rng.getrandbits(width) for _ in range(2))
                if trial % 5 == 0:          # empty or reversed windows too
                    a, b = b, a
                table.append((rng.random() < 0.8, a, b, rng.getrandbits(7)))
            for (en, base, limit, val), (e, a, b, v) in zip(regions, table):
                ctx.set(en, e)
                ctx.set(base, a)
                ctx.set(limit, b)
                ctx.set(val, v)
            # addresses at, just below or just above a bound, and anywhere
            bounds = [v for _, a, b, _ in table for v in (a, b)]
            near = [min(top, max(0, v + d)) for v in bounds for d in (-1, 0, 1)]
            for x in rng.sample(near, 6) + [rng.getrandbits(width), 0, top]:
                ctx.set(addr, x)
                want = contract_region(x, [t[:3] for t in table])
                assert region_reference(x, [t[:3] for t in table]) == want
                assert ctx.get(out["none"]) == int(want is None), (x, table)
                assert ctx.get(out["hot"]) == (0 if want is None else 1 << want), (x, table)
                assert ctx.get(out["value"]) == (0 if want is None else table[want][3])

    run_testbenches(m, bench, clock=False)


def test_hand_worked_overlapping_regions():
    """Region 0 disabled over [0, 100), region 1 over [10, 20), region 2
    over [15, 40): 15 is in 1 (the lowest enabled), 20 in 2, 40 in none."""
    table = [(False, 0, 100), (True, 10, 20), (True, 15, 40)]
    m, addr, regions, out = _build(8, 3, 4)

    async def bench(ctx):
        for (en, base, limit, val), (e, a, b), v in zip(regions, table, (5, 6, 7)):
            ctx.set(en, e)
            ctx.set(base, a)
            ctx.set(limit, b)
            ctx.set(val, v)
        for x, hot, value in ((5, 0, 0), (15, 0b010, 6), (19, 0b010, 6), (20, 0b100, 7),
                              (39, 0b100, 7), (40, 0, 0)):
            ctx.set(addr, x)
            assert (ctx.get(out["hot"]), ctx.get(out["value"])) == (hot, value), x
            assert ctx.get(out["none"]) == int(hot == 0)

    run_testbenches(m, bench, clock=False)
