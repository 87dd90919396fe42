"""Unary counts (``hdl/prims/unary.py``) in the Amaranth simulator, against
a Python count: ``flag`` is "at least k" of the next cycle (from the flags
at k - 1, k, k + 1), and ``unary_count`` a count from 0 to ``most`` that
rises by ``up``, falls by ``down`` and stays within 0 .. most."""

import itertools
import random

import pytest
from amaranth import Module, Signal

from neuron_fabric.hdl.prims.unary import flag, unary_count
from neuron_fabric.sim.amaranth_sim import run_testbenches


def test_flag_truth_table():
    m = Module()
    up, down, below, here, above = ins = [Signal(name=n) for n in
                                          ("up", "down", "below", "here", "above")]
    out = Signal()
    m.d.comb += out.eq(flag(up, down, below, here, above))

    async def bench(ctx):
        for values in itertools.product((0, 1), repeat=5):
            for s, v in zip(ins, values):
                ctx.set(s, v)
            u, d, b, h, a = values
            # one up: the flag below moves here; one down: the one above
            want = b if (u and not d) else a if (d and not u) else h
            assert ctx.get(out) == want, values

    run_testbenches(m, bench, clock=False)


@pytest.mark.parametrize("most", [1, 3, 6])
def test_unary_count_follows_a_saturating_count(most):
    m = Module()
    up, down = Signal(), Signal()
    at_least, next_at_least = unary_count(m, "n", up, down, most)
    ks = range(-1, most + 2)
    now = {k: Signal(name=f"ge{k}".replace("-", "m")) for k in ks}
    nxt = {k: Signal(name=f"next_ge{k}".replace("-", "m")) for k in ks}
    m.d.comb += [now[k].eq(at_least(k)) for k in ks] + [nxt[k].eq(next_at_least(k)) for k in ks]
    rng = random.Random(most)
    # long runs up and down, so that both ends are reached and held
    events = [(1, 0)] * (most + 2) + [(1, 1), (0, 0)] + [(0, 1)] * (most + 2) + \
        [(rng.getrandbits(1), rng.getrandbits(1)) for _ in range(150)]

    async def bench(ctx):
        count = 0
        for u, d in events:
            ctx.set(up, u)
            ctx.set(down, d)
            after = min(most, max(0, count + u - d))
            for k in ks:
                assert ctx.get(now[k]) == int(count >= k), (count, k)
                assert ctx.get(nxt[k]) == int(after >= k), (count, u, d, k)
            await ctx.tick()
            count = after

    run_testbenches(m, bench)
