"""The NDR arbiter, the ID free list and the in-flight table against models
(Amaranth simulator): every tag answered once and in its source's order,
one NDR per cycle while the sources are busy, a strict turn among busy
sources; every ID handed out once, in the order the free list documents,
an ID given back handed out again from the third cycle on; the table's
places, IDs and entries against contract 4.2 and its promises."""

import collections
import random

import pytest
from neuron_fabric.sim.amaranth_sim import run_testbenches

from neuron_fabric.hdl.top.inflight import WRITE_LOOKUP_CYCLES, IdPool, InFlightTable
from neuron_fabric.hdl.top.top import devload_level
from neuron_fabric.hdl.top.ndr_arbiter import NdrArbiter
from neuron_fabric.hdl.top.request import credit_windows
from neuron_fabric.contract.facts import TopParams

SMALL = TopParams(line_bits=64, workers=4, stages=2, regions=2, max_outstanding=4)


@pytest.mark.parametrize("p_ready, p_offer, busy", [
    (1.0, 1.0, "req rwd b"), (0.6, 0.7, "req rwd b"), (1.0, 0.3, "req rwd b"),
    (1.0, 1.0, "req"), (1.0, 1.0, "rwd"), (1.0, 1.0, "b"), (0.5, 1.0, "rwd b")])
def test_ndr_arbiter_against_a_model(p_ready, p_offer, busy):
    """The sources named in ``busy`` (the dropped RwD completions, holding
    ``valid`` until ``ready`` as a registered queue output does; the Req
    completions, each offered once while fewer than the request pipeline's
    credit window of them are in the arbiter, counting the moves
    ``req_left`` reports; and B beats whose entry the table returns the
    next cycle), NDR's ready at random:
    each source's tags come out once each, in its order.  With the sources
    always offering and NDR always ready, one NDR is taken every cycle (one
    source alone or all three), and with all three each run of three
    consecutive NDRs serves all three (round robin, none starved)."""
    dut = NdrArbiter(SMALL)
    rng = random.Random(int(p_ready * 10 + p_offer * 100) + len(busy))
    busy = busy.split()
    count = 60
    tags = {"req": list(range(0, count)), "rwd": list(range(100, 100 + count)),
            "b": list(range(1000, 1000 + count))}
    tags = {name: items if name in busy else [] for name, items in tags.items()}
    got = []

    def feeder(port, items):
        async def bench(ctx):
            for tag in items:
                while rng.random() >= p_offer:
                    await ctx.tick()
                ctx.set(port.payload, tag)
                ctx.set(port.valid, 1)
                await ctx.tick().until(port.ready)
                ctx.set(port.valid, 0)
        return bench

    async def credited(ctx):
        window, held = credit_windows(SMALL)["cmp"], 0
        for tag in tags["req"]:
            while True:
                go = held < window and rng.random() < p_offer
                ctx.set(dut.req_cmp.payload, tag)
                ctx.set(dut.req_cmp.valid, go)
                _, _, left = await ctx.tick().sample(dut.req_left)
                held += go - left
                assert 0 <= held <= window
                if go:
                    break
        ctx.set(dut.req_cmp.valid, 0)

    async def beats(ctx):
        for i in range(len(tags["b"])):
            while rng.random() >= p_offer:
                await ctx.tick()
            ctx.set(dut.b_id, i % 4), ctx.set(dut.b_resp, 0), ctx.set(dut.b_valid, 1)
            await ctx.tick().until(dut.b_ready)
            ctx.set(dut.b_valid, 0)

    async def table(ctx):
        # the entry of the n-th lookup, WRITE_LOOKUP_CYCLES after it: the
        # n-th write's tag
        looked, due = 0, collections.deque()
        async for _, _, valid in ctx.tick().sample(dut.lookup.valid):
            due.append(tags["b"][looked] if valid else None)
            looked += bool(valid)
            if len(due) == WRITE_LOOKUP_CYCLES:
                if due[0] is not None:
                    ctx.set(dut.lookup.entry, due[0])
                due.popleft()

    async def sink(ctx):
        cycle = 0
        while len(got) < len(busy) * count and cycle < 40 * count:
            ctx.set(dut.ndr.ready, rng.random() < p_ready)
            _, _, valid, ready, tag = await ctx.tick().sample(dut.ndr.valid, dut.ndr.ready,
                                                               dut.ndr.payload.tag)
            if valid and ready:
                got.append((cycle, tag))
            cycle += 1

    run_testbenches(dut, credited, feeder(dut.rwd_cmp, tags["rwd"]), beats, sink,
         background=[table])
    out = [tag for _, tag in got]
    assert sorted(out) == sorted(tags["req"] + tags["rwd"] + tags["b"])
    for name, items in tags.items():
        assert [t for t in out if t in set(items)] == items, name
    if p_ready == 1.0 and p_offer == 1.0:
        source = ["req" if t < 100 else "rwd" if t < 1000 else "b" for t in out]
        cycles = [c for c, _ in got]
        # the middle, where every source named is busy
        middle = slice(count // 2, (len(busy) - 1) * count + count // 2 + 20)
        assert all(b - a == 1 for a, b in zip(cycles[middle], cycles[middle][1:])), cycles
        if len(busy) == 3:
            run = source[middle]
            assert all(len(set(run[k:k + 3])) == 3 for k in range(len(run) - 2)), run


class FreeListModel:
    """The free list as IdPool documents it: one ID goes in each cycle, an
    ID given back ahead of the fresh ones (0, 1, 2, ... after reset); an ID
    that goes in during cycle t can be handed out from cycle t + 3 on, ID 0
    from cycle 2, in the order they went in."""

    def __init__(self, size):
        self.fresh = list(range(1, size))
        self.queue = collections.deque([(2, 0)])    # (first cycle it can go out, ID)

    def head(self, cycle):
        return self.queue[0][1] if self.queue and self.queue[0][0] <= cycle else None

    def step(self, cycle, take, give):
        if take:
            self.queue.popleft()
        if give is not None:
            self.queue.append((cycle + 3, give))
        elif self.fresh:
            self.queue.append((cycle + 3, self.fresh.pop(0)))


def run_id_pool(size, cycles, p_take, p_give, seed):
    """Random takes (only while the model has an ID out) and gives of IDs
    held: ``alloc_ok`` and ``alloc_id`` follow the model every cycle, and
    no ID is held twice."""
    dut = IdPool(size=size, id_bits=max(1, (size - 1).bit_length()))
    rng = random.Random(seed)

    async def bench(ctx):
        model, held = FreeListModel(size), set()
        for cycle in range(cycles):
            want = model.head(cycle)
            assert ctx.get(dut.alloc_ok) == (want is not None), cycle
            take = want is not None and rng.random() < p_take
            if take:
                assert ctx.get(dut.alloc_id) == want, (cycle, want)
                assert want not in held
            give = rng.choice(sorted(held)) if held and rng.random() < p_give else None
            if give is not None:
                ctx.set(dut.free_id, give)
            ctx.set(dut.alloc, take), ctx.set(dut.free, give is not None)
            await ctx.tick()
            model.step(cycle, take, give)
            if take:
                held.add(want)
            held.discard(give)
        ctx.set(dut.alloc, 0), ctx.set(dut.free, 0)

    run_testbenches(dut, bench)


@pytest.mark.parametrize("size, cycles, p_take, p_give", [
    (1, 3000, 0.7, 0.6), (2, 3000, 0.7, 0.6), (3, 3000, 0.7, 0.6), (32, 3000, 0.7, 0.6),
    (6, 400, 0.5, 0.5)])
def test_id_pool_gives_back_at_once(size, cycles, p_take, p_give):
    """Several IDs in flight each cycle: the pool hands out what the model
    says, so an ID given back goes out again from the third cycle on."""
    run_id_pool(size, cycles, p_take, p_give, size)


@pytest.mark.parametrize("n, read_cycles, width", [(4, 1, 8), (32, 1, 8), (32, 2, 8),
                                                   (32, 1, 300)])
def test_in_flight_table_places_ids_and_entries(n, read_cycles, width):
    """Reads reserved whenever ``room`` allowed it the cycle before, each
    taking its ID a cycle later and filling its entry some cycles after;
    writes taken whenever ``ok``; random lookups of what is in flight.
    Against contract 4.2 and the table's own promises: the places taken
    (a lookup's until the cycle of the lookup) never pass N, a read and a write
    taken together always fit, both may take while at most N - 7 places
    were taken two cycles before, ``devload`` is the level
    of the count two cycles before, no ID is handed out while in flight,
    and every lookup
    returns the entry written for its ID, ``read_cycles`` (reads) or
    ``WRITE_LOOKUP_CYCLES`` (writes) later (a read entry of 300 bits: its
    half chosen by three registers, each for a part of it)."""
    dut = InFlightTable(TopParams(max_outstanding=n), read_entry=width, write_entry=8,
                        read_cycles=read_cycles)
    rng = random.Random(n + read_cycles)
    cycles = {"read": read_cycles, "write": WRITE_LOOKUP_CYCLES}

    async def bench(ctx):
        flight = {"read": {}, "write": {}}      # ID -> entry (reads: once filled)
        count, counts, room, to_take, to_fill, due = 0, [0, 0], 0, 0, [], []
        written, wentries = [], {}
        for cycle in range(3000):
            assert ctx.get(dut.devload) == devload_level(counts[-2], n), cycle
            read = bool(room) and rng.random() < 0.7
            ok = ctx.get(dut.write_alloc.ok)
            # (the ID lists fill from reset: a write from the second cycle)
            write = bool(ok) and cycle >= 2 and rng.random() < 0.7
            if counts[-2] <= n - 7 and cycle > 2:
                assert ctx.get(dut.read_reserve.room) and ok, (cycle, counts)
            assert count + read + write <= n, (cycle, count, read, write)
            ctx.set(dut.read_reserve.take, read), ctx.set(dut.write_alloc.take, write)
            # a read takes its ID the cycle after it is reserved
            ctx.set(dut.read_alloc.take, to_take)
            taken = {"read": ctx.get(dut.read_alloc.id) if to_take else None,
                     "write": ctx.get(dut.write_alloc.id) if write else None}
            for side, got in taken.items():
                assert got is None or got not in flight[side], (cycle, side, got)
            wentry = rng.getrandbits(8)
            ctx.set(dut.write_alloc.entry, wentry)
            if write:
                wentries[taken["write"]] = wentry
            # a read's entry is filled a few cycles after its ID is taken
            fill = bool(to_fill) and to_fill[0][0] <= cycle
            ctx.set(dut.read_alloc.fill, bool(fill))
            if fill:
                _, rid, rentry = to_fill.pop(0)
                ctx.set(dut.read_alloc.fill_id, rid), ctx.set(dut.read_alloc.entry, rentry)
            looked = 0
            for side, lookup in (("read", dut.read_lookup), ("write", dut.write_lookup)):
                ready = [i for i, e in flight[side].items() if e is not None]
                give = bool(ready) and rng.random() < 0.45
                ctx.set(lookup.valid, give)
                if give:
                    gid = rng.choice(ready)
                    ctx.set(lookup.id, gid)
                    due.append((cycle + cycles[side], side, flight[side].pop(gid)))
                    looked += 1
            for when, side, want in [d for d in due if d[0] == cycle]:
                lookup = dut.read_lookup if side == "read" else dut.write_lookup
                assert ctx.get(lookup.entry) == want, (cycle, side, want)
            due = [d for d in due if d[0] > cycle]
            room = ctx.get(dut.read_reserve.room)
            await ctx.tick()
            if taken["read"] is not None:
                flight["read"][taken["read"]] = None
                to_fill.append((cycle + rng.randrange(1, 4), taken["read"], rng.getrandbits(width)))
            if fill:
                flight["read"][rid] = rentry
            for wid in written[:-1] if write else written:
                flight["write"][wid] = wentries[wid]
            written = written[-1:] if write else []
            if write:       # (looked up from the second cycle after the take)
                flight["write"][taken["write"]] = None
                written.append(taken["write"])
            counts = counts[1:] + [count]
            count += read + write - looked
            to_take = read

    run_testbenches(dut, bench)
