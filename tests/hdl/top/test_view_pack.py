"""The read path's blocks of a packed view (``hdl/top/view_pack.py``) in the
Amaranth simulator: the beat's mask slice and result slice against
contract section 6.2 worked by hand in Python; the per-ID beat track
against a dictionary model under interleaved beats; the packer against
the lines its slices make."""

import random

import pytest
from amaranth import Module, Signal

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.hdl.top.view_pack import BeatTrack, Packer, beat_mask, beat_slice, view_geometry
from neuron_fabric.sim.amaranth_sim import run_testbenches


@pytest.mark.parametrize("workers", [4, 8, 16])
def test_mask_and_result_slices(workers):
    """Beat b's mask is bits [b*E', (b+1)*E') of the entry's; its slice is the
    low two bits of each output lane, W-bit lanes for signs, 32-bit for counts."""
    params = TopParams(line_bits=128, workers=workers)
    m = Module()
    mask, line = Signal(64), Signal(128)
    beat, counts = Signal(4), Signal()
    got_mask, got_slice = Signal(params.lanes), Signal(len(beat_slice(params, line, counts)))
    m.d.comb += [got_mask.eq(beat_mask(params, mask, beat, counts)),
                 got_slice.eq(beat_slice(params, line, counts))]
    rng = random.Random(workers)
    geometry = view_geometry(params)

    async def bench(ctx):
        for _ in range(20):
            mv, lv = rng.getrandbits(64), rng.getrandbits(128)
            ctx.set(mask, mv), ctx.set(line, lv)
            for c, (beats, lanes) in geometry.items():
                lane_bits = 128 // lanes
                ctx.set(counts, c)
                for b in range(beats):
                    ctx.set(beat, b)
                    assert ctx.get(got_mask) == (mv >> (b * lanes)) & ((1 << lanes) - 1)
                    want = sum(((lv >> (i * lane_bits)) & 3) << (2 * i) for i in range(lanes))
                    assert ctx.get(got_slice) == want

    run_testbenches(m, bench, clock=False)


def test_beat_track_under_interleaving():
    """Each ID's count and poison follow its own beats whatever comes between,
    back to 0 after its last beat, including the same ID two cycles running."""
    params = TopParams(line_bits=64, workers=8, max_outstanding=4)
    dut = BeatTrack(params)
    rng = random.Random(1)
    beats_of = 4

    async def bench(ctx):
        model = {k: (0, 0) for k in range(4)}
        prev = None                    # the update of the cycle: (id, last, error)
        for _ in range(300):
            ident = rng.randrange(4)
            ctx.set(dut.lookup_id, ident)
            if prev is not None:
                ctx.set(dut.update, 1), ctx.set(dut.id, prev[0])
                ctx.set(dut.last, prev[1]), ctx.set(dut.error, prev[2])
            else:
                ctx.set(dut.update, 0)
            await ctx.tick()
            if prev is not None:
                k, last, error = prev
                count, poison = model[k]
                model[k] = (0, 0) if last else (count + 1, poison | error)
            count, poison = model[ident]
            assert (ctx.get(dut.beat), ctx.get(dut.poison_before)) == (count, poison)
            prev = (ident, int(count == beats_of - 1), int(rng.random() < 0.1)) \
                if rng.random() < 0.8 else None

    run_testbenches(dut, bench)


@pytest.mark.parametrize("workers", [4, 16])
def test_packer_lines(workers):
    """Slices of interleaved bursts make each ID's line: the last beat's line
    is every earlier slice of its ID in its place and its own."""
    params = TopParams(line_bits=64, workers=workers, max_outstanding=4)
    dut = Packer(params)
    rng = random.Random(workers)
    beats, lanes = view_geometry(params)[False]
    width = 2 * lanes

    async def bench(ctx):
        pending = {k: [] for k in range(4)}
        order = [rng.randrange(4) for _ in range(120)]
        for n, ident in enumerate(order):
            piece = rng.getrandbits(width)
            b = len(pending[ident])
            ctx.set(dut.valid, b < beats - 1), ctx.set(dut.id, ident), ctx.set(dut.beat, b)
            ctx.set(dut.counts, 0), ctx.set(dut.slice, piece)
            ctx.set(dut.next_id, order[n + 1] if n + 1 < len(order) else 0)
            if b == beats - 1:
                want = sum(p << (width * k) for k, p in enumerate(pending[ident] + [piece]))
                assert ctx.get(dut.line) == want, (n, ident)
                pending[ident] = []
            else:
                pending[ident].append(piece)
            await ctx.tick()

    run_testbenches(dut, bench)
