"""The read path's side of a packed view (contract section 6.2, 6.3): each
read of a view is one burst of ``B`` beats under one AXI ID, and beats of
other IDs may come between them, so the read path keeps, per ID:

* the beats seen so far and whether any was an error (:class:`BeatTrack`,
  registers: one ID's count and poison flag a cycle after its lookup,
  with the beat one cycle ahead forwarded from registers);
* the packed line so far, memories of MAX_OUTSTANDING lines written a
  ``LINE_BITS / B`` slice a beat (:class:`Packer`).

Beat ``b`` of a view read goes through the core in the SIGN format with
the slice ``[b*E', (b+1)*E')`` of the entry's mask (:func:`beat_mask`),
and the low two bits of each of its E' output lanes are its slice of the
view line (:func:`beat_slice`): bits ``[2t, 2t+2)`` for element ``t =
b*E' + i``.  The burst's last beat completes the line, which goes to DRS
with the poison of all its beats; the others are absorbed.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import COUNT_LANE_BITS, profile_named, Operand, view_beats
from neuron_fabric.hdl.prims.pipe import copies
from neuron_fabric.hdl.top.cfg import has_view

__all__ = ["view_geometry", "beat_mask", "beat_slice", "BeatTrack", "Packer", "RESULT_BITS",
           "PACK_GROUPS", "MASK_COPIES", "VIEW_LOOKUP_CYCLES",
           "read_lookup_cycles"]

#: Bits of one element's result in a view line (contract section 6.2).
RESULT_BITS = 2

#: Cycles from a view build's R channel lookup to its entry and its beat's
#: place (:class:`BeatTrack`; the read path's and the in-flight table's
#: ``lookup_cycles``, 1 in a build without the view).
VIEW_LOOKUP_CYCLES = 2

def read_lookup_cycles(params):
    """Cycles from an R beat's lookup to its entry in a build of ``params``:
    :data:`VIEW_LOOKUP_CYCLES` with the packed view, else 1."""
    return VIEW_LOOKUP_CYCLES if has_view(params) else 1


#: Copies of a view beat's index that steer the choice of its mask, each a
#: part of the lanes.
MASK_COPIES = 4

#: Memories the packed lines are cut into, each with its own copies of the
#: IDs (at most 4: :func:`.prims.pipe.copies` without inversion).
PACK_GROUPS = 4


def view_geometry(params):
    """``{counts: (B, E')}`` for the operands a build has: SIGNS (False) and,
    with the ``hierarchy`` feature, the count operands (True)."""
    out = {False: (view_beats(params.line_bits, params.workers, Operand.SIGNS), params.lanes)}
    if profile_named(params.profile).has("hierarchy"):
        out[True] = (view_beats(params.line_bits, params.workers, Operand.COUNTS4),
                     params.line_bits // COUNT_LANE_BITS)
    return out


def _log2(n):
    return n.bit_length() - 1


def beat_mask(params, mask, beat, counts):
    """The core's E-bit PATTERN mask for beat ``beat`` of a view read from
    the entry's ``mask`` (``LINE_BITS / 2`` bits, one per element of the
    view line): its slice ``[b*E', (b+1)*E')`` in the low E' bits."""
    geometry = view_geometry(params)
    picks = {}
    for is_counts, (beats, lanes) in geometry.items():
        part = mask.word_select(beat[:_log2(beats)], lanes) if beats > 1 else mask[:lanes]
        picks[is_counts] = Cat(part, Const(0, params.lanes - lanes))
    return Mux(counts, picks[True], picks[False]) if True in picks else picks[False]


def beat_slice(params, line, counts):
    """A beat's slice of the view line: the low two bits of each output lane
    of the core's ``line`` (W-bit lanes, or 32-bit lanes for a count
    operand), ``LINE_BITS / B`` bits, zero-extended to the widest slice."""
    geometry = view_geometry(params)
    width = max(RESULT_BITS * lanes for _, lanes in geometry.values())
    picks = {}
    for is_counts, (_, lanes) in geometry.items():
        lane_bits = params.line_bits // lanes
        bits = Cat(line[i * lane_bits:i * lane_bits + RESULT_BITS] for i in range(lanes))
        picks[is_counts] = Cat(bits, Const(0, width - len(bits)))
    return Mux(counts, picks[True], picks[False]) if True in picks else picks[False]


class BeatTrack(wiring.Component):
    """Per AXI ID, the beats of a view's burst seen so far and their poison.

    A beat is looked up at R0 (``lookup_id``, a register); two cycles later
    (R1) ``beat`` is its index in its burst, ``poison_before`` whether an
    earlier beat of the burst was an error and ``ends`` (one bit per
    operand kind of :func:`view_geometry`, signs first) whether ``beat``
    is that kind's last, ``B - 1``, each a register; ``update`` at R1 (a
    view's beat: ``id``, ``last``, ``error``) moves the ID's count on (back
    to 0 after the last beat).

    The IDs' states are a memory, read at the lookup into a register (one
    memory read, not a choice among MAX_OUTSTANDING registers), and written
    a cycle after their update from registers.  A lookup misses the
    updates of the three cycles around it, each of which it takes instead
    of the memory when it has its ID: the one being written (at R0), the
    one at R1 (whose next state is registered for the next cycle) and, in
    the next cycle, the one at R1 then, the beat just ahead of it, whose
    next place it takes as that beat's place plus one (a beat of the same
    ID one cycle behind is of the same burst: an ID is given back at its
    last beat and can come back only with a new read).  Every ID compare is
    between registers and registered, so no net of the lookup reaches
    further than a memory read or a compare.

    A memory does not reset: after reset ``clearing`` is high while the
    memory is written with every ID at its first beat, one ID a cycle
    (MAX_OUTSTANDING cycles), and the read path takes no beat until it is
    low, so a reset in the middle of a burst leaves every ID at its first
    beat.

    Parameters
    ----------
    params : TopParams

    Members
    -------
    beat_copies : Out(ArrayLayout(4, MASK_COPIES))
        Copies of ``beat`` (for the mask's choice, :func:`beat_mask`, each
        steering a part of it).
    """

    def __init__(self, params):
        self._params = params
        self._beats = [beats for beats, _ in view_geometry(params).values()]
        idw = params.id_bits
        super().__init__({
            "lookup_id": In(idw),
            "beat": Out(4), "poison_before": Out(1), "ends": Out(len(self._beats)),
            "beat_copies": Out(data.ArrayLayout(4, MASK_COPIES)),
            "update": In(1), "id": In(idw), "last": In(1), "error": In(1),
            "clearing": Out(1),
        })

    def _ends(self, count):
        return Cat(count == beats - 1 for beats in self._beats)

    def elaborate(self, platform):
        m = Module()
        p = self._params
        n, kinds = p.max_outstanding, len(self._beats)
        # an ID's state: count, poison, ends of the count (a count of 0 after reset)
        width = 4 + 1 + kinds
        first = Cat(Const(0, 5), self._ends(Const(0, 4)))
        mem = m.submodules.states = Memory(shape=width, depth=n, init=[])
        wr, rd = mem.write_port(), mem.read_port(domain="comb")
        # after reset: every ID's state written with the first beat's
        clearing = Signal(name="view_clearing", init=1)
        sweep = Signal(range(n), name="view_sweep")
        with m.If(clearing):
            m.d.sync += sweep.eq(sweep + 1)
            with m.If(sweep == n - 1):
                m.d.sync += clearing.eq(0)
        # R1: the beat's state, registers, and its next state
        now = Signal(width, name="view_now")
        beat, poison = now[:4], now[4]
        count_next = Mux(self.last, 0, beat + 1)[:4]
        poison_next = ~self.last & (poison | self.error)
        ends_next = Mux(self.last, self._ends(Const(0, 4)), self._ends((beat + 1)[:4]))
        # the update, registered, written into its ID's state
        w_en = Signal(name="view_w_en")
        w_id = Signal.like(self.id, name="view_w_id")
        w_state = Signal(width, name="view_w_state")
        m.d.sync += [w_en.eq(self.update | clearing), w_id.eq(Mux(clearing, sweep, self.id)),
                     w_state.eq(Mux(clearing, first, Cat(count_next, poison_next, ends_next)))]
        m.d.comb += [wr.en.eq(w_en), wr.addr.eq(w_id), wr.data.eq(w_state),
                     rd.addr.eq(self.lookup_id)]
        # R0: the memory read, and which of the updates around it have the ID
        stored, written = Signal(width, name="view_stored"), Signal(width, name="view_written")
        hit_written, hit_r1 = Signal(name="view_hit_written"), Signal(name="view_hit_r1")
        ahead_same = Signal(name="view_ahead_same")
        r0b_id = Signal.like(self.lookup_id, name="view_r0b_id")
        m.d.sync += [stored.eq(rd.data), written.eq(w_state), r0b_id.eq(self.lookup_id),
                     hit_written.eq(w_en & (w_id == self.lookup_id)),
                     hit_r1.eq(self.update & (self.id == self.lookup_id)),
                     ahead_same.eq(r0b_id == self.lookup_id)]
        # R0b: the newest of them; the beat just ahead (at R1 now) first
        base = Mux(hit_r1, w_state, Mux(hit_written, written, stored))
        ahead = Cat((beat + 1)[:4], poison | self.error, self._ends((beat + 1)[:4]))
        state = Mux(ahead_same & self.update, ahead, base)
        m.d.sync += now.eq(state)
        # (of the kinds of copy, the third is the one of ``now``, which
        # synthesis would merge with it)
        beats = copies(m, "view_beat", state[:4], MASK_COPIES + 1)
        beats = beats[:2] + beats[3:]
        m.d.comb += [self.beat.eq(beat), self.poison_before.eq(poison), self.ends.eq(now[5:]),
                     self.beat_copies.eq(Cat(beats)), self.clearing.eq(clearing)]
        return m


class Packer(wiring.Component):
    """The packed lines of the view reads in flight, one per AXI ID.

    Each cycle a beat leaves the core (its line ``data``), the low two
    bits of its lanes (:func:`beat_slice`) go to its place of the line of
    its ID, and ``line`` is that line (the slices stored for the ID with
    this one in its place) for a view's beat, else ``data``.  The beat's
    controls come a cycle ahead (``next_*``: whether it is a view's, its
    ID, place, operand kind and whether its slice is stored, not for a
    burst's last beat), and the ID of the beat after it two cycles ahead
    (``ahead_id``), so that everything that steers the memory and the
    choices is a register: the memory is :data:`PACK_GROUPS` memories,
    each with its own copies of the IDs and controls (so no net of them
    spans the line), read into registers that see the write of their
    cycle.

    Parameters
    ----------
    params : TopParams
    """

    def __init__(self, params):
        self._params = params
        geometry = view_geometry(params)
        self._chunk = min(params.line_bits // beats for beats, _ in geometry.values())
        idw = params.id_bits
        super().__init__({
            "next_view": In(1), "next_write": In(1), "next_id": In(idw), "next_beat": In(4),
            "next_counts": In(1), "ahead_id": In(idw),
            "data": In(params.line_bits), "line": Out(params.line_bits),
        })

    def _enables(self, beat, counts, chunks):
        """The chunks of the line that the slice of ``beat`` covers."""
        enables = {}
        for is_counts, (beats, lanes) in view_geometry(self._params).items():
            per = RESULT_BITS * lanes // self._chunk
            one = Const((1 << per) - 1, chunks)
            enables[is_counts] = (one << (beat[:_log2(beats)] * per))[:chunks] \
                if beats > 1 else one
        return Mux(counts, enables[True], enables[False]) if True in enables else enables[False]

    def elaborate(self, platform):
        m = Module()
        p = self._params
        c = self._chunk
        chunks = p.line_bits // c
        groups = min(PACK_GROUPS, chunks)
        per_group, bits = chunks // groups, p.line_bits // groups
        geometry = view_geometry(p)
        # this cycle's controls, registered from the cycle before
        write, same = Signal(name="pack_write"), Signal(name="pack_same")
        enables = Signal(chunks, name="pack_enables")
        m.d.sync += [write.eq(self.next_write),
                     enables.eq(self._enables(self.next_beat, self.next_counts, chunks)),
                     same.eq(self.next_id == self.ahead_id)]   # the next beat has this one's ID
        w_ids = copies(m, "pack_w_id", self.next_id, groups, inverted=False)
        r_ids = copies(m, "pack_r_id", self.ahead_id, groups, inverted=False)
        ctls = copies(m, "pack_ctl", Cat(self.next_counts, self.next_view), groups,
                      inverted=False)
        line = []
        for g in range(groups):
            counts, view = ctls[g][0], ctls[g][1]
            # the slice repeated over the line, for each operand kind
            piece = beat_slice(p, self.data, counts)
            data = {k: Cat(piece[:RESULT_BITS * lanes] for _ in range(beats))
                    for k, (beats, lanes) in geometry.items()}
            w_data = Mux(counts, data[True], data[False]) if True in data else data[False]
            g_data = w_data[g * bits:(g + 1) * bits]
            mem = m.submodules[f"packed{g}"] = Memory(shape=bits, depth=p.max_outstanding,
                                                      init=[])
            wr, rd = mem.write_port(granularity=c), mem.read_port(domain="comb")
            mine = enables[g * per_group:(g + 1) * per_group]
            stored = Signal(bits, name=f"pack_line{g}")
            m.d.comb += [wr.addr.eq(w_ids[g]), wr.data.eq(g_data),
                         wr.en.eq(Mux(write, mine, 0)), rd.addr.eq(r_ids[g])]
            for k in range(per_group):
                at = slice(k * c, (k + 1) * c)
                # the next beat's stored chunk: this beat's write when it has its ID
                m.d.sync += stored[at].eq(Mux(write & mine[k] & same, g_data[at],
                                              rd.data[at]))
                packed = Mux(mine[k], g_data[at], stored[at])
                line.append(Mux(view, packed, self.data[g * bits:(g + 1) * bits][at]))
        m.d.comb += self.line.eq(Cat(line))
        return m
