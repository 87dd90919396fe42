"""The in-flight table: AXI transaction IDs, what each one is for, and the
occupancy bound."""

from amaranth import Cat, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from neuron_fabric.hdl.prims.pipe import copies
from neuron_fabric.hdl.top.occupancy import Occupancy, devload_level

__all__ = ["IdPool", "AllocSignature", "LookupSignature", "ReserveSignature", "InFlightTable",
           "devload_level", "response_members", "ReadAllocSignature", "WRITE_LOOKUP_CYCLES"]

#: Entry bits that one register choosing a lookup's half steers (a wider
#: entry has copies of it).
HALF_FANOUT = 128

#: Cycles from a write's lookup to its entry (from a register).
WRITE_LOOKUP_CYCLES = 2


class IdPool(wiring.Component):
    """Free list of the IDs ``0 .. size-1``: a queue of the free IDs whose
    head is a register (``alloc_id``).

    After reset the IDs ``0 .. size-1`` go into the queue one a cycle, an
    ID given back (``free``) ahead of them, each through a register; an ID
    given back in cycle t is handed out from cycle t+3 on, and ID k after
    reset from cycle k+2.  The queue is two memories
    that take turns (even and odd places), each read at a registered
    address, so the head of the next cycle is one of the two memories'
    outputs, chosen by ``alloc``: taking an ID moves one address and the
    head, nothing else.  No state survives a reset, so a reset in the
    middle of traffic leaves every ID free.

    The queue has no empty flag on the way of ``alloc``: the in-flight
    table takes an ID only with a place promised (:mod:`.occupancy`), and
    a place comes back a cycle after its ID, so an ID is always there.

    Parameters
    ----------
    size : int
        Number of IDs.
    id_bits : int
        Width of an ID.

    Members
    -------
    alloc_ok : Out(1)
        An ID is on ``alloc_id`` (from the queue's pointers, for use alone).
    alloc_id : Out(id_bits)
        A register.
    alloc : In(1)
        Take ``alloc_id`` (only while an ID is there).
    free : In(1)
        Give ``free_id`` back.
    free_id : In(id_bits)
    """

    def __init__(self, *, size, id_bits):
        if size < 1 or size > (1 << id_bits):
            raise ValueError(f"size must be in 1..{1 << id_bits}, not {size!r}")
        self._size = size
        super().__init__({
            "alloc_ok": Out(1), "alloc_id": Out(id_bits), "alloc": In(1),
            "free": In(1), "free_id": In(id_bits),
        })

    @property
    def size(self):
        return self._size

    def elaborate(self, platform):
        m = Module()
        n = self._size
        depth = 1 << max(0, (n + 1) // 2 - 1).bit_length()     # places of each memory
        # What goes in, registered: an ID given back, else the next fresh
        # one; from reset the first one (0) is already there.
        fresh = Signal(range(n), name="fresh", init=min(1, n - 1))
        fresh_left = Signal(init=int(n > 1), name="fresh_left")
        push = self.free | fresh_left
        with m.If(~self.free & fresh_left):
            m.d.sync += fresh_left.eq(fresh != n - 1)
            if n > 1:
                m.d.sync += fresh.eq(fresh + 1)
        # Places counted over twice the queue, so equal counts mean empty.
        wptr = Signal(range(4 * depth), name="wptr", init=1)
        rptr = Signal(range(4 * depth), name="rptr")
        p_en = [Signal(name=f"push{b}", init=int(b == 0)) for b in range(2)]
        p_id, p_addr = Signal.like(self.alloc_id, name="push_id"), Signal(range(depth), name="push_addr")
        m.d.sync += [*(e.eq(push & (wptr[0] == b)) for b, e in enumerate(p_en)),
                     p_id.eq(Mux(self.free, self.free_id, fresh)), p_addr.eq(wptr[1:])]
        with m.If(push):
            m.d.sync += wptr.eq(wptr + 1)
        heads = []
        for b in range(2):
            mem = m.submodules[f"ids{b}"] = Memory(shape=len(self.alloc_id), depth=depth, init=[])
            wr, rd = mem.write_port(), mem.read_port(domain="comb")
            raddr = Signal(range(depth), name=f"raddr{b}")
            m.d.comb += [wr.en.eq(p_en[b]), wr.addr.eq(p_addr), wr.data.eq(p_id),
                         rd.addr.eq(raddr)]
            with m.If(self.alloc & (rptr[0] == b)):
                m.d.sync += raddr.eq(raddr + 1)
            heads.append(rd.data)
        # The head of the next cycle: this one's place, or the next place
        # (the other memory) when it is taken.
        m.d.sync += self.alloc_id.eq(Mux(rptr[0], heads[1], heads[0]))
        with m.If(self.alloc):
            m.d.sync += [self.alloc_id.eq(Mux(rptr[0], heads[0], heads[1])),
                         rptr.eq(rptr + 1)]
        # (the places written by the end of the cycle before last)
        written = [Signal.like(wptr, name=f"wptr_{k}", init=0) for k in range(2)]
        m.d.sync += [written[0].eq(wptr), written[1].eq(written[0])]
        m.d.comb += self.alloc_ok.eq(written[1] != rptr)
        return m


def AllocSignature(id_bits, entry_shape):
    """Taking an ID and storing its entry (seen from the requester)."""
    return wiring.Signature({"take": Out(1), "entry": Out(entry_shape),
                             "ok": In(1), "id": In(id_bits)})


def response_members(params, channel, entry_shape, err, data_bits=0, retire=False):
    """Members of a block that takes the AXI responses of ``channel`` ("r" or
    "b") and retires their IDs: the beat (``<channel>_id``, ``_data`` when
    ``data_bits``, ``_resp``, ``_valid``, ``_ready``), ``lookup``
    (:func:`LookupSignature`, with ``retire``), ``devload`` (reported on the
    block's S2M channel) and ``err`` (a response was an error this cycle)."""
    c = channel
    return {f"{c}_id": In(params.id_bits),
            **({f"{c}_data": In(data_bits)} if data_bits else {}),
            f"{c}_resp": In(2), f"{c}_valid": In(1), f"{c}_ready": Out(1),
            "lookup": Out(LookupSignature(params.id_bits, entry_shape, retire=retire)),
            "devload": In(2), err: Out(1)}


def ReadAllocSignature(id_bits, entry_shape):
    """Taking a read's ID (``take``, ``id``) and, some cycles later, filling
    its entry (``fill``, ``fill_id``, ``entry``), seen from the requester."""
    return wiring.Signature({"take": Out(1), "id": In(id_bits), "fill": Out(1),
                             "fill_id": Out(id_bits), "entry": Out(entry_shape)})


def ReserveSignature():
    """Reserving a place for a read when the request is accepted (seen from
    the requester): ``room`` says whether a read may be reserved in the next
    cycle (formed this cycle, so the requester registers its ``ready`` from
    it)."""
    return wiring.Signature({"take": Out(1), "room": In(1)})


def LookupSignature(id_bits, entry_shape, retire=False):
    """Retiring an ID (``valid``): its entry comes back a fixed number of
    cycles later (the next cycle for a read, :class:`InFlightTable`).

    With ``retire`` (a packed view's burst: one ID for several beats) a
    lookup (``valid``, ``id``) only reads the entry, and the ID is given
    back by ``retire`` and ``retire_id``, for the burst's last beat."""
    members = {"valid": Out(1), "id": Out(id_bits), "entry": In(entry_shape)}
    if retire:
        members.update({"retire": Out(1), "retire_id": Out(id_bits)})
    return wiring.Signature(members)


class InFlightTable(wiring.Component):
    """The in-flight table: read and write entries by AXI ID, the ID free
    lists, the occupancy bound and ``devload``.

    Reads and writes have separate ID spaces of MAX_OUTSTANDING IDs each;
    the places of :class:`.occupancy.Occupancy` keep reads + writes at or
    below MAX_OUTSTANDING.  A read takes its place in the cycle its
    request is accepted (``read_reserve``, after ``room``), so no more
    reads are accepted than the table holds and ``devload`` counts every
    read accepted and not yet answered (contract 4.2); its ID is taken
    later (``read_alloc.take``, which does not count again) and is always
    free then.  A write takes its place and its ID together (``take``,
    while ``ok``).  An ID is in flight from its ``take`` until its lookup,
    which gives back its ID (out again from the third cycle on) and its
    place (counted out from the next cycle on).  From reset the free
    lists fill one ID a cycle, so an ID is taken from the second cycle
    after reset on (a read reserved in the first takes its ID then).

    A write's entry is written a cycle after its take (from registers), a
    read's with its fill; each can be looked up from the cycle after it is
    written.  The memories are read at the lookup's ID into registers, one
    for each half of the IDs; the entry is the one of the half of the
    looked-up ID, the cycle after the lookup (``read_cycles`` 1), or
    registered once more (2, and always for a write).

    Parameters
    ----------
    params : TopParams
    read_entry, write_entry : shape
        What a read and a write remember.
    read_cycles : int
        Cycles from a read's lookup to its entry (1 or 2; a write's:
        ``WRITE_LOOKUP_CYCLES``).

    Members
    -------
    read_reserve : In(ReserveSignature())
    read_alloc : In(ReadAllocSignature(...))
        A read's entry is filled after its ID is taken, before its lookup.
    write_alloc : In(AllocSignature(...))
    read_lookup, write_lookup : In(LookupSignature(...))
        The entry comes back ``read_cycles`` and ``WRITE_LOOKUP_CYCLES``
        cycles after the lookup; with ``read_retire`` a read's ID is given
        back by ``retire`` instead of its lookup (a packed view's burst).
    devload : Out(2)
        Load level (contract 4.2; thresholds in :func:`devload_level`) of
        the places taken two cycles before.
    """

    def __init__(self, params, *, read_entry, write_entry, read_cycles=1, read_retire=False):
        if read_cycles not in (1, 2):
            raise ValueError(f"read_cycles must be 1 or 2, not {read_cycles!r}")
        self._params = params
        self._read_cycles = read_cycles
        idw = params.id_bits
        super().__init__({
            "read_reserve": In(ReserveSignature()),
            "read_alloc": In(ReadAllocSignature(idw, read_entry)),
            "write_alloc": In(AllocSignature(idw, write_entry)),
            "read_lookup": In(LookupSignature(idw, read_entry, retire=read_retire)),
            "write_lookup": In(LookupSignature(idw, write_entry)),
            "devload": Out(2),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._params.max_outstanding
        idw = self._params.id_bits
        places = m.submodules.places = Occupancy(n)
        sides = {"read": (self.read_alloc, self.read_lookup, self._read_cycles),
                 "write": (self.write_alloc, self.write_lookup, WRITE_LOOKUP_CYCLES)}
        for name, (alloc, lookup, cycles) in sides.items():
            pool = m.submodules[f"{name}_ids"] = IdPool(size=n, id_bits=idw)
            if name == "read":
                fill, fill_id = alloc.fill, alloc.fill_id
            else:
                fill, fill_id = alloc.take, pool.alloc_id
            retire = getattr(lookup, "retire", lookup.valid)
            m.d.comb += [alloc.id.eq(pool.alloc_id), pool.alloc.eq(alloc.take),
                         pool.free.eq(retire), pool.free_id.eq(getattr(lookup, "retire_id", lookup.id))]
            _table(m, name, n, (fill, fill_id, alloc.entry), lookup, cycles, name == "write")
            m.d.comb += getattr(places, f"{name}_free").eq(retire)
        m.d.comb += [
            places.read_take.eq(self.read_reserve.take),
            places.write_take.eq(self.write_alloc.take),
            self.read_reserve.room.eq(places.room), self.write_alloc.ok.eq(places.ok),
            self.devload.eq(places.devload),
        ]
        return m


def _table(m, name, depth, write, lookup, cycles, later):
    """The entries of one side: written with ``write`` (enable, address,
    entry), or a cycle later from registers (``later``); read at
    ``lookup.id`` into a register for each half of the IDs, of which the
    cycle after the half of the lookup's ID is chosen (``cycles`` 1), or
    registered again (2).  An entry can be looked up from the cycle after
    it is written."""
    w_en, w_addr, entry = write
    width = len(Value.cast(entry))
    halves = 2 if depth > 16 else 1
    w_data = entry
    if later:
        w_en, w_addr = Signal(name=f"{name}_w_en"), Signal.like(w_addr, name=f"{name}_w_addr")
        w_data = Signal(width, name=f"{name}_w_data")
        m.d.sync += [w_en.eq(write[0]), w_addr.eq(write[1]), w_data.eq(entry)]
    # the halves split the IDs by their top bit: the first holds 0 .. 2^row - 1,
    # the second the rest (as many, for a depth that is a power of two; at
    # least two places, so that no address is 0 bits wide)
    row = len(w_addr) - (halves > 1)
    half = Signal(name=f"{name}_half")
    m.d.sync += half.eq(lookup.id[row:] if halves > 1 else 0)
    # the choice of the half: one register for each HALF_FANOUT bits of the entry
    parts = -(-width // HALF_FANOUT)
    chooses = [half] if parts == 1 or halves == 1 else \
        [half] + copies(m, f"{name}_half", lookup.id[row:], parts - 1)
    rows = []
    for h in range(halves):
        size = depth if halves == 1 else max(2, min(1 << row, depth - h * (1 << row)))
        mem = m.submodules[f"{name}_table{h}"] = Memory(shape=width, depth=size, init=[])
        wr, rd = mem.write_port(), mem.read_port(domain="comb")
        q = Signal(width, name=f"{name}_row{h}")
        m.d.comb += [wr.en.eq(w_en & (w_addr[row:] == h if halves > 1 else 1)),
                     wr.addr.eq(w_addr[:row]), wr.data.eq(w_data), rd.addr.eq(lookup.id[:row])]
        m.d.sync += q.eq(rd.data)
        rows.append(q)
    out = Signal(width, name=f"{name}_entry")
    step = -(-width // len(chooses))
    chosen = Mux(half, rows[-1], rows[0]) if len(chooses) == 1 else Cat(
        Mux(c, rows[-1][k * step:(k + 1) * step], rows[0][k * step:(k + 1) * step])
        for k, c in enumerate(chooses))
    m.d[("comb", "sync")[cycles - 1]] += out.eq(chosen)
    m.d.comb += lookup.entry.eq(out)
