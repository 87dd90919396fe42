"""The read path's side of a packed view (contract section 6.2, 6.3): each
read of a view is one burst of ``B`` beats under one AXI ID, and beats of
other IDs may come between them, so the read path keeps, per ID:

* the beats seen so far and whether any was an error (:class:`BeatTrack`,
  registers: one ID's count and poison flag a cycle after its lookup,
  with the beat one cycle ahead forwarded);
* the packed line so far, a memory of MAX_OUTSTANDING lines written a
  ``LINE_BITS / B`` slice a beat (:class:`Packer`).

Beat ``b`` of a view read goes through the core in the SIGN format with
the slice ``[b*E', (b+1)*E')`` of the entry's mask (:func:`beat_mask`),
and the low two bits of each of its E' output lanes are its slice of the
view line (:func:`beat_slice`): bits ``[2t, 2t+2)`` for element ``t =
b*E' + i``.  The burst's last beat completes the line, which goes to DRS
with the poison of all its beats; the others are absorbed.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import COUNT_LANE_BITS, profile_named, Operand, view_beats

__all__ = ["view_geometry", "beat_mask", "beat_slice", "BeatTrack", "Packer", "RESULT_BITS"]

#: Bits of one element's result in a view line (contract section 6.2).
RESULT_BITS = 2


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

    A beat is looked up at R0 (``lookup_id``); a cycle later (R1) ``beat``
    is its index in its burst and ``poison_before`` whether an earlier beat
    of the burst was an error; ``update`` at R1 (a view's beat: ``id``,
    ``last``, ``error``) moves the ID's count on (back to 0 after the last
    beat).  The registers reset, so a reset in the middle of a burst leaves
    every ID at its first beat.

    Parameters
    ----------
    params : TopParams
    """

    def __init__(self, params):
        self._params = params
        idw = params.id_bits
        super().__init__({
            "lookup_id": In(idw),
            "beat": Out(4), "poison_before": Out(1),
            "update": In(1), "id": In(idw), "last": In(1), "error": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._params.max_outstanding
        counts = Array(Signal(4, name=f"view_beats{k}") for k in range(n))
        poisons = Array(Signal(name=f"view_poison{k}") for k in range(n))
        count_next = Mux(self.last, 0, self.beat + 1)[:4]
        poison_next = ~self.last & (self.poison_before | self.error)
        with m.If(self.update):
            m.d.sync += [counts[self.id].eq(count_next), poisons[self.id].eq(poison_next)]
        forward = self.update & (self.id == self.lookup_id)
        m.d.sync += [self.beat.eq(Mux(forward, count_next, counts[self.lookup_id])),
                     self.poison_before.eq(Mux(forward, poison_next,
                                               poisons[self.lookup_id]))]
        return m


class Packer(wiring.Component):
    """The packed lines of the view reads in flight, one per AXI ID.

    Each cycle a beat leaves the core (``valid``) its ``slice`` (from
    :func:`beat_slice`) goes to its place ``beat`` of the line of ``id``;
    the line of a ``last`` beat is ``line``, in the same cycle: the slices
    stored for ``id`` with this one in its place.  The memory is read at
    ``next_id`` (the ID of the beat of the next cycle) into a register that
    sees this cycle's write.

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
            "valid": In(1), "id": In(idw), "next_id": In(idw), "beat": In(4),
            "counts": In(1), "slice": In(max(RESULT_BITS * lanes for _, lanes in
                                             geometry.values())),
            "line": Out(params.line_bits),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        chunks = p.line_bits // self._chunk
        mem = m.submodules.packed = Memory(shape=p.line_bits, depth=p.max_outstanding, init=[])
        wr = mem.write_port(granularity=self._chunk)
        rd = mem.read_port(transparent_for=(wr,))
        # each operand's slice repeated over the line, and its chunks' enables
        data, enables = {}, {}
        for is_counts, (beats, lanes) in view_geometry(p).items():
            width = RESULT_BITS * lanes
            data[is_counts] = Cat(self.slice[:width] for _ in range(beats))
            per = width // self._chunk
            one = Const((1 << per) - 1, chunks)
            enables[is_counts] = (one << (self.beat[:_log2(beats)] * per))[:chunks] \
                if beats > 1 else one
        pick = (lambda d: Mux(self.counts, d[True], d[False])) if True in data else \
            (lambda d: d[False])
        w_data, w_en = pick(data), pick(enables)
        m.d.comb += [wr.addr.eq(self.id), wr.data.eq(w_data),
                     wr.en.eq(Mux(self.valid, w_en, 0)),
                     rd.addr.eq(self.next_id)]
        c = self._chunk
        m.d.comb += self.line.eq(Cat(Mux(w_en[k], w_data[k * c:(k + 1) * c],
                                         rd.data[k * c:(k + 1) * c]) for k in range(chunks)))
        return m
