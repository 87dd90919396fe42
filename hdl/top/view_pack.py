"""The read path's side of a packed view (contract section 6.2, 6.3): each
read of a view is one burst of ``B`` beats under one AXI ID, and beats of
other IDs may come between them, so the read path keeps, per ID:

* the beats seen so far and whether any was an error (:class:`BeatTrack`,
  registers: one ID's count and poison flag a cycle after its lookup,
  with the beat one cycle ahead forwarded from registers);
* the packed line so far, memories of MAX_OUTSTANDING lines written a
  ``LINE_BITS / B`` slice a beat (:class:`Packer`, a cycle after the
  core).

Beat ``b`` of a view read goes through the core in the SIGN format with
the slice ``[b*E', (b+1)*E')`` of the view line's mask (the entry stores
the mask arranged so that each lane's bit is a choice by the beat alone:
:func:`arrange_mask`, :func:`lane_mask`), and the low two bits of each
of its E' output lanes are its slice of the view line
(:func:`beat_slice`): bits ``[2t, 2t+2)`` for element ``t = b*E' + i``.
The burst's last beat completes the line, which goes to DRS with the
poison of all its beats; the others are absorbed.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import COUNT_LANE_BITS, profile_named, Operand, view_beats
from neuron_fabric.hdl.prims.pipe import copies, kept_copies, register
from neuron_fabric.hdl.top.cfg import has_view

__all__ = ["view_geometry", "mask_slot", "arrange_mask", "lane_mask", "mask_first", "mask_second",
           "FIRST_CHOICE", "MASK_CYCLES", "beat_slice", "BeatTrack", "Packer", "RESULT_BITS", "PACK_GROUPS", "PACK_CYCLES", "MASK_COPIES", "COUNTS_COPIES",
           "stored_counts", "counts_copies", "VIEW_LOOKUP_CYCLES", "read_lookup_cycles"]

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

#: Copies of a read's "view of count lines" bit its in-flight entry holds:
#: one for each of the :data:`MASK_COPIES` parts of the lanes, and one for
#: the beat's controls (:func:`counts_copies`).
COUNTS_COPIES = MASK_COPIES + 1


def stored_counts(counts):
    """The entry's :data:`COUNTS_COPIES` copies of ``counts``, odd ones
    inverted (so that no two neighbouring copies are equal nets that
    synthesis would merge)."""
    return Cat(~counts if k & 1 else counts for k in range(COUNTS_COPIES))


def counts_copies(stored):
    """The copies of :func:`stored_counts` as they were given."""
    return [~stored[k] if k & 1 else stored[k] for k in range(COUNTS_COPIES)]

#: Cycles from a beat's line leaving the core to its packed line
#: (:class:`Packer`).
PACK_CYCLES = 1

#: Memories the packed lines are cut into, each with its own copies of the
#: IDs and controls.
PACK_GROUPS = 8


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


def _slot_geometry(params):
    """``(Bs, Es, Bc, Ec)``: beats and lanes of a view read of signs and of
    counts (the signs' again in a build without the count operands)."""
    geometry = view_geometry(params)
    bs, es = geometry[False]
    bc, ec = geometry.get(True, geometry[False])
    return bs, es, bc, ec


def mask_slot(params, lane, beat):
    """Where the stored mask (:func:`arrange_mask`) holds lane ``lane``'s
    bit for beat ``beat``: lane ``i < Ec`` has the ``Bc`` slots ``[i*Bc,
    (i+1)*Bc)``, one a beat (a count view's beats, of which a sign view's
    use the first ``Bs``); each lane ``L >= Ec`` (sign views alone) has
    ``Bs`` of the slots the first ``Ec`` lanes' sign views leave free, in
    order."""
    bs, _, bc, ec = _slot_geometry(params)
    if lane < ec:
        return lane * bc + beat
    free = (lane - ec) * bs + beat
    return (free // (bc - bs)) * bc + bs + free % (bc - bs)


def arrange_mask(params, mask, counts):
    """The mask a read's in-flight entry stores, from the mask the request
    pipeline formed (``LINE_BITS / 2`` bits, one per element of a view
    line; a read that is no view uses the first E) and ``counts`` (a view
    of count lines; one Value, or copies that each steer a share of the
    slots): slot :func:`mask_slot` ``(lane, b)`` holds the bit of element
    ``b*E' + lane`` for the view's operand kind, so that the read path
    chooses each lane's bit by the beat alone (:func:`lane_mask`), with no
    choice by the operand on its way.  A read that is no view is arranged
    as a sign view, whose beat 0 gives lane ``i`` bit ``i``."""
    bs, es, bc, ec = _slot_geometry(params)
    size = bs * es
    signs, by_counts = [None] * size, [None] * size
    for lane in range(es):
        for b in range(bs):
            signs[mask_slot(params, lane, b)] = mask[b * es + lane]
    for lane in range(ec):
        for b in range(bc):
            by_counts[mask_slot(params, lane, b)] = mask[b * ec + lane]
    if not isinstance(counts, (list, tuple)):
        counts = [counts]
    return Cat(Mux(counts[s * len(counts) // size], by_counts[s], signs[s])
               for s in range(size))


#: Cycles between a view build's entry (R1) and the core's input register
#: beyond a build without the view: the mask's first choice
#: (:func:`mask_first`) is registered, with everything else beside it (R1b).
MASK_CYCLES = 1

#: A lane's stored bits each first choice of :func:`mask_first` takes, by
#: the beat's low bits (a choice of four: one LUT6 of ECP5).
FIRST_CHOICE = 4


def _lane_slots(params, lane):
    """The stored mask's slots lane ``lane`` chooses among, by beat."""
    bs, _, bc, ec = _slot_geometry(params)
    return [mask_slot(params, lane, b) for b in range(bc if lane < ec else bs)]


def mask_first(params, stored, beats):
    """The first of the two choices of :func:`lane_mask`: for each lane, its
    slots (:func:`mask_slot`) in groups of :data:`FIRST_CHOICE` consecutive
    beats, each group's bit chosen by the beat's low bits.  Returns the
    groups' bits, lane after lane (:func:`mask_second` takes them)."""
    out = []
    for lane in range(_slot_geometry(params)[1]):
        beat = beats[lane % len(beats)]
        slots = _lane_slots(params, lane)
        for g in range(0, len(slots), FIRST_CHOICE):
            group = Cat(stored[s] for s in slots[g:g + FIRST_CHOICE])
            bits = _log2(len(group))
            out.append(group.bit_select(beat[:bits], 1) if bits else group)
    return Cat(out)


def mask_second(params, firsts, beats, counts):
    """The second choice of :func:`lane_mask`: each lane's bit among its
    groups' bits ``firsts`` (:func:`mask_first`) by the beat's high bits;
    lanes ``L >= Ec`` are 0 for a view of count lines (``counts``)."""
    _, es, _, ec = _slot_geometry(params)
    low = _log2(FIRST_CHOICE)
    lanes, at = [], 0
    for lane in range(es):
        beat, n = beats[lane % len(beats)], -(-len(_lane_slots(params, lane)) // FIRST_CHOICE)
        group = firsts[at:at + n]
        at += n
        bit = group.bit_select(beat[low:low + _log2(n)], 1) if n > 1 else group
        lanes.append(bit if lane < ec else bit & ~counts[lane % len(counts)])
    return Cat(lanes)


def lane_mask(params, stored, beats, counts):
    """The core's E-bit PATTERN mask for a beat of a read from the entry's
    ``stored`` mask (:func:`arrange_mask`): lane ``L`` takes slot
    :func:`mask_slot` ``(L, beat)``, and lanes ``L >= Ec`` are 0 for a view
    of count lines (``counts``).  ``beats`` and ``counts`` are copies of the
    beat's index and of ``counts`` (lane ``L`` steered by copy ``L mod``
    each's number).  The choice by the beat is two choices
    (:func:`mask_first`, :func:`mask_second`), which the read path puts a
    register between."""
    return mask_second(params, mask_first(params, stored, beats), beats, counts)


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

    A beat is looked up at R0 (``lookup_id`` while ``lookup_valid``, both
    registers); two cycles later
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
    last beat, or a read that is no view's at its only one, and can come
    back only with a new read; so that choice is by a register, the two
    lookups' compare and the first's ``lookup_valid``).  Every ID compare is
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
        Copies of ``beat`` (for the mask's choice, :func:`lane_mask`, each
        steering a part of it).
    """

    def __init__(self, params):
        self._params = params
        self._beats = [beats for beats, _ in view_geometry(params).values()]
        idw = params.id_bits
        super().__init__({
            "lookup_id": In(idw), "lookup_valid": In(1),
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
        r0b_valid = Signal(name="view_r0b_valid")
        m.d.sync += [stored.eq(rd.data), written.eq(w_state), r0b_id.eq(self.lookup_id),
                     r0b_valid.eq(self.lookup_valid),
                     hit_written.eq(w_en & (w_id == self.lookup_id)),
                     hit_r1.eq(self.update & (self.id == self.lookup_id)),
                     ahead_same.eq(r0b_valid & (r0b_id == self.lookup_id))]
        # R0b: the newest of them; the beat just ahead (at R1 now) first
        base = Mux(hit_r1, w_state, Mux(hit_written, written, stored))
        ahead = Cat((beat + 1)[:4], poison | self.error, self._ends((beat + 1)[:4]))
        state = Mux(ahead_same, ahead, base)
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

    A beat's line ``data`` comes from the core in cycle t, and ``line`` is
    its result in cycle t+1 (:data:`PACK_CYCLES`): for a view's beat the
    line of its ID (the slices stored for the ID with this one in its
    place), else ``data``.  The beat's slice (:func:`beat_slice`, the low
    two bits of its lanes, repeated over the line) is registered in cycle
    t, so the long way of each lane's two bits to their places in the line
    ends in a register, and written into its place of the ID's line in
    cycle t+1.  The beat's controls come a cycle ahead of its data
    (``next_*``: whether it is a view's, its ID, place, operand kind and
    whether its slice is stored, not for a burst's last beat) and are
    registered twice, so that everything that steers the memory and the
    choices is a register: the memory is :data:`PACK_GROUPS` memories, each
    with its own copies of the IDs and controls (so no net of them spans
    the line), read in cycle t at the beat's ID into registers straight
    from the memories' outputs; the one write that read misses, the beat
    before's in cycle t, is taken instead by using that beat's whole line
    (registered) when it wrote this beat's ID.

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
            "next_counts": In(1),
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
        # cycle t (the beat's data): its controls, registered from the cycle
        # before, and whether the beat before, written in this cycle, has its ID
        write, enables = Signal(name="pack_write"), Signal(chunks, name="pack_enables")
        m.d.sync += [write.eq(self.next_write),
                     enables.eq(self._enables(self.next_beat, self.next_counts, chunks))]
        ids = kept_copies(m, "pack_id", self.next_id, groups)
        ctls = kept_copies(m, "pack_ctl", Cat(self.next_counts, self.next_view), groups)
        same = Signal(name="pack_same")
        m.d.sync += same.eq(ids[0] == self.next_id)
        # cycle t+1: the same a cycle later; the beat before's line is this
        # one's stored line when it wrote its ID in cycle t (``write`` there
        # is the beat before's)
        write, enables = register(m, "pack_write_b", write), register(m, "pack_enables_b", enables)
        w_ids = [register(m, f"pack_w_id{g}", ids[g]) for g in range(groups)]
        views = [register(m, f"pack_view{g}", ctls[g][1]) for g in range(groups)]
        fwds = kept_copies(m, "pack_fwd", same & write, groups)
        line = []
        for g in range(groups):
            # the slice repeated over the line, for each operand kind; registered
            piece = beat_slice(p, self.data, ctls[g][0])
            data = {k: Cat(piece[:RESULT_BITS * lanes] for _ in range(beats))
                    for k, (beats, lanes) in geometry.items()}
            w_data = Mux(ctls[g][0], data[True], data[False]) if True in data else data[False]
            g_data = register(m, f"pack_slice{g}", w_data[g * bits:(g + 1) * bits])
            plain = register(m, f"pack_plain{g}", self.data[g * bits:(g + 1) * bits])
            mem = m.submodules[f"packed{g}"] = Memory(shape=bits, depth=p.max_outstanding,
                                                      init=[])
            wr, rd = mem.write_port(granularity=c), mem.read_port(domain="comb")
            mine = enables[g * per_group:(g + 1) * per_group]
            # the ID's line as the memory held it in cycle t, a register
            # straight from the memory's output
            raw = register(m, f"pack_raw{g}", rd.data)
            prev = Signal(bits, name=f"pack_prev{g}", reset_less=True)
            stored = Mux(fwds[g], prev, raw)
            packed = Cat(Mux(mine[k], g_data[k * c:(k + 1) * c], stored[k * c:(k + 1) * c])
                         for k in range(per_group))
            m.d.sync += prev.eq(packed)
            m.d.comb += [wr.addr.eq(w_ids[g]), wr.data.eq(g_data),
                         wr.en.eq(Mux(write, mine, 0)), rd.addr.eq(ids[g])]
            line.append(Mux(views[g], packed, plain))
        m.d.comb += self.line.eq(Cat(line))
        return m
