# amaranth: UnusedElaboratable=no
"""The core under fixed ``out_ready`` patterns with a line offered in every
cycle: the output skid of the full profile fills and drains in every way
these patterns allow (stalls of one cycle and of many, alternate cycles).
Checked each cycle: lines leave in order with the golden model's data, an
offered output (valid, not taken) stays the same line until taken, and the
input is ready whenever the output is; at the end every line has left once.
"""

import random

import pytest
from neuron_fabric.sim.amaranth_sim import run_testbenches

from neuron_fabric.host import golden
from neuron_fabric.hdl.datapath import Datapath
from neuron_fabric.contract.facts import PROFILES

LINE_BITS, WORKERS = 64, 8

#: out_ready in cycle c.
PATTERNS = {
    "alternate": lambda c: c % 2 == 1,
    "long_stalls": lambda c: c % 23 >= 9,
    "single_drops": lambda c: c % 5 != 2,
    "two_of_three_low": lambda c: c % 3 == 0,
}


def beats(rng, n, profile):
    """(fields, tag, expected line) of ``n`` random lines in range."""
    lanes = LINE_BITS // WORKERS
    out = []
    for k in range(n):
        mode, fmt, kind = rng.randint(0, 3), rng.randint(0, 2), rng.randint(0, 1)
        mask, threshold = rng.getrandbits(lanes), rng.randint(0, WORKERS)
        data = rng.getrandbits(LINE_BITS)
        e_fmt, e_kind, _, _ = PROFILES[profile].effective(fmt, kind, 3, 2)
        line = golden.transform(golden.lines_from_ints([data], LINE_BITS), WORKERS, mode,
                                e_fmt, e_kind, threshold=threshold,
                                gate_mask=[bool(mask >> i & 1) for i in range(lanes)])
        fields = {"line": data, "tag": k, "mode": mode, "format": fmt, "gate_kind": kind,
                  "gate_mask": mask, "gate_threshold": threshold}
        out.append((fields, k, golden.lines_to_ints(line)[0]))
    return out


@pytest.mark.parametrize("profile", ["full", "paper"])
@pytest.mark.parametrize("stages", [1, 2, 5])
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_output_ready_patterns(profile, stages, pattern):
    ready_at = PATTERNS[pattern]
    lines = beats(random.Random(stages * 7 + len(pattern)), 60, profile)
    dut = Datapath(line_bits=LINE_BITS, workers=WORKERS, stages=stages, profile=profile)
    i, o = dut.i_stream, dut.o_stream

    async def bench(ctx):
        sent, got, offered, cycle = 0, 0, None, 0
        while got < len(lines):
            assert cycle < 40 * len(lines), f"stalled: {got} of {len(lines)} lines out"
            ready = ready_at(cycle)
            ctx.set(o.ready, ready)
            ctx.set(i.valid, sent < len(lines))
            if sent < len(lines):
                ctx.set(i.payload, lines[sent][0])
            if cycle > 0 and ready:
                assert ctx.get(i.ready), f"cycle {cycle}: input not ready, output ready"
            if ctx.get(o.valid):
                now = (ctx.get(o.payload.tag), ctx.get(o.payload.line))
                assert offered in (None, now), f"cycle {cycle}: offered line changed"
                assert now == lines[got][1:], f"cycle {cycle}: line {got} wrong"
                offered = None if ready else now
                got += ready
            else:
                assert offered is None, f"cycle {cycle}: offered line withdrawn"
            if sent < len(lines) and ctx.get(i.ready):
                sent += 1
            await ctx.tick()
            cycle += 1
        ctx.set(o.ready, 1)
        for _ in range(stages + 2):
            assert not ctx.get(o.valid), "an extra line came out"
            await ctx.tick()

    run_testbenches(dut, bench)
