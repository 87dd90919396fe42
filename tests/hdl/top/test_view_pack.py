"""The read path's blocks of a packed view (``hdl/top/view_pack.py``) in the
Amaranth simulator: the beat's mask slice and result slice against
contract section 6.2 worked by hand in Python; the per-ID beat track
against a dictionary model under interleaved beats; the packer against
the lines its slices make."""

import random

import pytest
from amaranth import ClockDomain, Module, Signal

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.hdl.top.view_pack import (PACK_CYCLES, BeatTrack, Packer, arrange_mask,
                                             beat_slice, lane_mask, mask_slot, view_geometry)
from neuron_fabric.sim.amaranth_sim import run_testbenches


@pytest.mark.parametrize("workers", [4, 8, 16])
def test_mask_and_result_slices(workers):
    """Beat b's mask, from the entry's arranged mask, is bits [b*E', (b+1)*E')
    of the view line's mask, the lanes past E' zero; a read that is no view
    (arranged as signs, at beat 0) gets the first E bits; the slice is the
    low two bits of each output lane, W-bit lanes for signs, 32-bit for
    counts (contract section 6.2, by hand)."""
    params = TopParams(line_bits=128, workers=workers)
    m = Module()
    mask, line = Signal(64), Signal(128)
    beat, counts = Signal(4), Signal()
    stored = Signal(64)
    got_mask, got_slice = Signal(params.lanes), Signal(len(beat_slice(params, line, counts)))
    m.d.comb += [stored.eq(arrange_mask(params, mask, [counts, counts])),
                 got_mask.eq(lane_mask(params, stored, [beat, beat, beat], [counts])),
                 got_slice.eq(beat_slice(params, line, counts))]
    rng = random.Random(workers)
    geometry = view_geometry(params)
    assert sorted(mask_slot(params, lane, b) for c, (beats, lanes) in geometry.items()
                  for lane in range(lanes) for b in range(beats) if c) == list(range(64))

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
            ctx.set(counts, 0), ctx.set(beat, 0)
            assert ctx.get(got_mask) == mv & ((1 << params.lanes) - 1)

    run_testbenches(m, bench, clock=False)


def test_beat_track_under_interleaving():
    """Each ID's count and poison follow its own beats whatever comes between,
    back to 0 after its last beat, including the same ID two and three
    cycles running (a lookup's place two cycles later, the updates of every
    cycle around it forwarded); after reset (at the start and in the middle
    of bursts) the track clears for MAX_OUTSTANDING cycles and every ID is
    at its first beat."""
    params = TopParams(line_bits=64, workers=8, max_outstanding=4)
    dut = BeatTrack(params)
    rng = random.Random(1)
    beats_of = 4
    ends = [beats for beats, _ in view_geometry(params).values()]

    async def bench(ctx):
        # after reset the memory is cleared, one ID a cycle, before any beat
        for _ in range(params.max_outstanding):
            assert ctx.get(dut.clearing)
            await ctx.tick()
        assert not ctx.get(dut.clearing)
        model = {k: (0, 0) for k in range(4)}
        flight = [None, None]          # the IDs looked up one and two cycles before
        for _ in range(400):
            # the beat at R1 (looked up two cycles before): its place, and its update
            at = flight.pop(0)
            if at is not None:
                count, poison = model[at]
                assert (ctx.get(dut.beat), ctx.get(dut.poison_before)) == (count, poison)
                assert ctx.get(dut.ends) == sum(int(count == b - 1) << k
                                                for k, b in enumerate(ends))
                assert [ctx.get(c) for c in dut.beat_copies] == [count] * len(dut.beat_copies)
                last, error = int(count == beats_of - 1), int(rng.random() < 0.1)
                ctx.set(dut.update, 1), ctx.set(dut.id, at)
                ctx.set(dut.last, last), ctx.set(dut.error, error)
                model[at] = (0, 0) if last else (count + 1, poison | error)
            else:
                ctx.set(dut.update, 0)
            # a beat of a burst is never right behind its burst's last beat (the
            # ID comes back only with a new read); the same ID often
            ahead = flight[0]
            banned = ahead if ahead is not None and model[ahead][0] == beats_of - 1 else None
            allowed = [k for k in range(4) if k != banned]
            ident = None if rng.random() < 0.15 else \
                ahead if ahead in allowed and rng.random() < 0.4 else rng.choice(allowed)
            flight.append(ident)
            ctx.set(dut.lookup_id, ident if ident is not None else 0)
            ctx.set(dut.lookup_valid, ident is not None)
            await ctx.tick()
        # a reset in the middle of bursts: cleared again, every ID at its first beat
        assert any(c for c, _ in model.values())
        ctx.set(dut.update, 0), ctx.set(dut.lookup_valid, 0), ctx.set(domain.rst, 1)
        await ctx.tick()
        ctx.set(domain.rst, 0)
        for _ in range(params.max_outstanding):
            assert ctx.get(dut.clearing)
            await ctx.tick()
        for ident in range(4):
            ctx.set(dut.lookup_id, ident), ctx.set(dut.lookup_valid, 1)
            await ctx.tick()
            ctx.set(dut.lookup_valid, 0)
            await ctx.tick()
            assert (ctx.get(dut.beat), ctx.get(dut.poison_before)) == (0, 0)

    top = Module()
    top.domains.sync = domain = ClockDomain("sync")
    top.submodules.dut = dut
    run_testbenches(top, bench)


@pytest.mark.parametrize("workers", [4, 16])
def test_packer_lines(workers):
    """Slices of interleaved bursts make each ID's line: the last beat's line
    is every earlier slice of its ID in its place and its own (a slice: the
    low two bits of each W-bit lane); the line of a beat that is no view's
    is the core's own (each beat's controls given a cycle ahead of its
    data, its line PACK_CYCLES after its data)."""
    params = TopParams(line_bits=64, workers=workers, max_outstanding=4)
    dut = Packer(params)
    rng = random.Random(workers)
    beats, lanes = view_geometry(params)[False]
    width = 2 * lanes
    order = [rng.randrange(4) for _ in range(160)]
    plain = [rng.random() < 0.2 for _ in order]         # a beat of a read that is no view
    places, seen = [], {k: 0 for k in range(4)}
    for ident, no_view in zip(order, plain):
        places.append(0 if no_view else seen[ident])
        seen[ident] = seen[ident] if no_view else (seen[ident] + 1) % beats
    lines = [rng.getrandbits(64) for _ in order]

    def piece(line):
        return sum(((line >> (i * workers)) & 3) << (2 * i) for i in range(lanes))

    def controls(n):
        """(view, store, id, place) of beat n; nothing outside the order."""
        if not 0 <= n < len(order) or plain[n]:
            return 0, 0, order[n] if 0 <= n < len(order) else 0, 0
        return 1, int(places[n] < beats - 1), order[n], places[n]

    async def bench(ctx):
        pending = {k: [] for k in range(4)}
        for n in range(-1, len(order) + 1):
            view, store, ident, place = controls(n + 1)
            ctx.set(dut.next_view, view), ctx.set(dut.next_write, store)
            ctx.set(dut.next_id, ident), ctx.set(dut.next_beat, place)
            ctx.set(dut.next_counts, 0)
            if 0 <= n < len(order):
                ctx.set(dut.data, lines[n])
            k = n - PACK_CYCLES                  # the beat whose line is out
            if k >= 0:
                ident = order[k]
                if plain[k]:
                    assert ctx.get(dut.line) == lines[k], k
                elif places[k] == beats - 1:
                    want = sum(p << (width * j)
                               for j, p in enumerate(pending[ident] + [piece(lines[k])]))
                    assert ctx.get(dut.line) == want, (k, ident)
                    pending[ident] = []
                else:
                    pending[ident].append(piece(lines[k]))
            await ctx.tick()

    run_testbenches(dut, bench)
