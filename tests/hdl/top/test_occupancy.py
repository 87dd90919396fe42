# amaranth: UnusedElaboratable=no
"""The in-flight table's occupancy (``hdl/top/occupancy.py``) in the
Amaranth simulator, against a count of places kept in the test: reads are
taken only after ``room`` the cycle before and writes only while ``ok``
(the block's rule for its users), places come back when freed, and then

* the places held never pass MAX_OUTSTANDING;
* ``devload`` is the level of the places held as the cycle two cycles
  before began (docs/top.md: 0 when 4n < N, 1 when N <= 4n < 3N, 2 when
  3N <= 4n and n < N, 3 full);
* with seven or more places free then, both ``room`` and ``ok`` are high
  (the promises are conservative only near the end)."""

import random

import pytest

from neuron_fabric.hdl.top.occupancy import Occupancy, devload_level
from neuron_fabric.sim.amaranth_sim import run_testbenches


def level(n, size):
    """docs/top.md's devload table."""
    if n == size:
        return 3
    return 2 if 4 * n >= 3 * size else 1 if 4 * n >= size else 0


@pytest.mark.parametrize("size, p_take, p_free", [(4, 0.9, 0.3), (8, 0.7, 0.4), (32, 0.9, 0.35),
                                                  (13, 0.8, 0.3)])
def test_occupancy_against_a_count(size, p_take, p_free):
    dut = Occupancy(size)
    rng = random.Random(size)
    cycles = 400
    held_log, seen, after_log = [], [], []

    async def bench(ctx):
        reads, writes = 0, 0            # places held (taken, not yet freed)
        room_before = 0
        for t in range(cycles):
            # phases of heavy take and heavy free, so both ends are reached
            take_p, free_p = (p_take, p_free) if (t // 60) % 2 == 0 else (0.2, 0.8)
            ok = ctx.get(dut.ok)
            rt = int(room_before and rng.random() < take_p)
            wt = int(ok and rng.random() < take_p)
            rf = int(reads > 0 and rng.random() < free_p)
            wf = int(writes > 0 and rng.random() < free_p)
            for s, v in ((dut.read_take, rt), (dut.write_take, wt), (dut.read_free, rf),
                         (dut.write_free, wf)):
                ctx.set(s, v)
            reads, writes = reads + rt, writes + wt
            assert reads + writes <= size, t
            # (a place freed now counts until the next cycle)
            held_log.append(reads + writes)
            seen.append((ctx.get(dut.devload), ctx.get(dut.room), ok))
            room_before = seen[-1][1]
            reads, writes = reads - rf, writes - wf
            after_log.append(reads + writes)
            await ctx.tick()

    run_testbenches(dut, bench)
    assert max(held_log) == size and min(held_log[100:]) <= size // 4
    # start[t]: places held as cycle t begins (taken before it, not freed)
    start = [0] + after_log
    for t in range(2, cycles):
        devload, room, ok = seen[t]
        assert devload == level(start[t - 2], size), t
        assert devload == devload_level(start[t - 2], size), t
        if size - start[t - 2] >= 7:
            assert room and ok, t


def test_size_below_four_is_refused():
    with pytest.raises(ValueError, match="3"):
        Occupancy(3)
