"""The in-flight table: AXI transaction IDs, what each one is for, and the
occupancy bound."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .credit import below

__all__ = ["IdPool", "AllocSignature", "LookupSignature", "ReserveSignature", "InFlightTable",
           "devload_level", "response_members", "ReadAllocSignature"]


class IdPool(wiring.Component):
    """Free list of the IDs ``0 .. size-1``.

    After reset the IDs are handed out in order from a counter; IDs given
    back go through a FIFO and are handed out again from there.  No state
    survives a reset, so a reset in the middle of traffic leaves every ID
    free.

    Parameters
    ----------
    size : int
        Number of IDs.
    id_bits : int
        Width of an ID.

    Members
    -------
    alloc_ok : Out(1)
        An ID is available on ``alloc_id``.
    alloc_id : Out(id_bits)
    alloc : In(1)
        Take ``alloc_id`` (only while ``alloc_ok``).
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
        returned = m.submodules.returned = SyncFIFO(width=len(self.alloc_id), depth=self._size)
        fresh = Signal(range(self._size + 1))
        fresh_left = Signal()
        m.d.comb += [
            fresh_left.eq(fresh != self._size),
            self.alloc_ok.eq(fresh_left | returned.r_rdy),
            self.alloc_id.eq(Mux(fresh_left, fresh, returned.r_data)),
            returned.r_en.eq(self.alloc & ~fresh_left),
            returned.w_en.eq(self.free),
            returned.w_data.eq(self.free_id),
        ]
        with m.If(self.alloc & fresh_left):
            m.d.sync += fresh.eq(fresh + 1)
        return m


def AllocSignature(id_bits, entry_shape):
    """Taking an ID and storing its entry (seen from the requester)."""
    return wiring.Signature({"take": Out(1), "entry": Out(entry_shape),
                             "ok": In(1), "id": In(id_bits)})


def response_members(params, channel, entry_shape, err, data_bits=0):
    """Members of a block that takes the AXI responses of ``channel`` ("r" or
    "b") and retires their IDs: the beat (``<channel>_id``, ``_data`` when
    ``data_bits``, ``_resp``, ``_valid``, ``_ready``), ``lookup``
    (:func:`LookupSignature`), ``devload`` (reported on the block's S2M
    channel) and ``err`` (a response was an error this cycle)."""
    c = channel
    return {f"{c}_id": In(params.id_bits),
            **({f"{c}_data": In(data_bits)} if data_bits else {}),
            f"{c}_resp": In(2), f"{c}_valid": In(1), f"{c}_ready": Out(1),
            "lookup": Out(LookupSignature(params.id_bits, entry_shape)),
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


def LookupSignature(id_bits, entry_shape):
    """Retiring an ID (``valid``): its entry comes back the next cycle."""
    return wiring.Signature({"valid": Out(1), "id": Out(id_bits), "entry": In(entry_shape)})


class InFlightTable(wiring.Component):
    """The in-flight table: read and write entries by AXI ID, the ID free
    lists, the occupancy bound and ``devload``.

    Reads and writes have separate ID spaces of MAX_OUTSTANDING IDs each;
    one occupancy count keeps reads + writes at or below MAX_OUTSTANDING
    (a read reserved in the same cycle as a write counts first).  A read
    counts from the cycle its request is accepted (``read_reserve``), so
    no more reads are accepted than the table holds and ``devload`` counts
    every read accepted and not yet answered (contract 4.2); a read's ID is
    then always free when it comes to be issued, and ``read_alloc.take``
    does not count again.  A write counts from its ``take``.  An ID is
    in flight from its ``take`` until its lookup; it returns to the free
    list after the lookup has read its entry, so an entry is never
    overwritten before it is read; the count falls at the same time.

    Parameters
    ----------
    params : TopParams
    read_entry, write_entry : shape
        What a read and a write remember.

    Members
    -------
    read_reserve : In(ReserveSignature())
    read_alloc : In(ReadAllocSignature(...))
        A read's entry is filled after its ID is taken, before its lookup.
    write_alloc : In(AllocSignature(...))
    read_lookup, write_lookup : In(LookupSignature(...))
    devload : Out(2)
        Registered load level (contract 4.2; thresholds in :func:`devload_level`).
    """

    def __init__(self, params, *, read_entry, write_entry):
        self._params = params
        idw = params.id_bits
        super().__init__({
            "read_reserve": In(ReserveSignature()),
            "read_alloc": In(ReadAllocSignature(idw, read_entry)),
            "write_alloc": In(AllocSignature(idw, write_entry)),
            "read_lookup": In(LookupSignature(idw, read_entry)),
            "write_lookup": In(LookupSignature(idw, write_entry)),
            "devload": Out(2),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._params.max_outstanding
        idw = self._params.id_bits
        sides = {"read": (self.read_alloc, self.read_lookup),
                 "write": (self.write_alloc, self.write_lookup)}
        for name, (alloc, lookup) in sides.items():
            pool = m.submodules[f"{name}_ids"] = IdPool(size=n, id_bits=idw)
            table = m.submodules[f"{name}_table"] = Memory(
                shape=alloc.entry.shape(), depth=n, init=[])
            wr, rd = table.write_port(), table.read_port(domain="sync")
            fill = alloc.fill if name == "read" else alloc.take
            fill_id = alloc.fill_id if name == "read" else pool.alloc_id
            m.d.comb += [
                alloc.id.eq(pool.alloc_id),
                pool.alloc.eq(alloc.take),
                wr.en.eq(fill), wr.addr.eq(fill_id), wr.data.eq(alloc.entry),
                rd.addr.eq(lookup.id), lookup.entry.eq(rd.data),
            ]
            # Give the ID back a cycle after its entry was read.
            free, free_id = Signal(name=f"{name}_free"), Signal(idw, name=f"{name}_free_id")
            m.d.sync += [free.eq(lookup.valid), free_id.eq(lookup.id)]
            m.d.comb += [pool.free.eq(free), pool.free_id.eq(free_id)]
            sides[name] = (pool, free)

        (_, r_free), (wpool, w_free) = sides["read"], sides["write"]
        occupied = Signal(range(n + 1))
        # The IDs taken this cycle are known late (they depend on the ID
        # pools, the queues and each other); the frees and the count are
        # registered.  So every flag of the next cycle is a compare of the
        # registered count with constants (as gates, :func:`.credit.below`,
        # not carry chains), for each change (-2..2) the takes and frees may
        # make, chosen by them: the count's adder feeds only the count.
        takes = self.read_reserve.take + self.write_alloc.take
        m.d.sync += occupied.eq(occupied - r_free - w_free + takes)
        # under[d]: the count plus d (-2..2) is below N, registered: the room
        # for a read next cycle is one of them, chosen like the next flags.
        under = [Signal(name=f"under{d + 2}") for d in range(-2, 3)]
        room_next = Signal()
        with m.Switch(Cat(self.read_reserve.take, self.write_alloc.take, r_free, w_free)):
            for v in range(16):
                change = (v & 1) + (v >> 1 & 1) - (v >> 2 & 1) - (v >> 3 & 1)
                with m.Case(v):
                    m.d.comb += room_next.eq(under[change + 2])
                    m.d.sync += [self.devload.eq(_level(occupied, change, n)),
                                 *(u.eq(below(occupied, n - change - d))
                                   for d, u in zip(range(-2, 3), under))]
        m.d.comb += [
            self.read_reserve.room.eq(room_next),
            # a read reserved in the same cycle counts first
            self.write_alloc.ok.eq(wpool.alloc_ok & Mux(self.read_reserve.take,
                                                        under[3], under[2])),
        ]
        return m


def _level(count, change, n):
    """devload of ``count + change`` entries (:func:`devload_level`) as
    compares of ``count`` with constants."""
    def at_least(k):
        return ~below(count, k - change)
    return Mux(at_least(n), 3, Mux(at_least(-(-3 * n // 4)), 2, Mux(at_least(-(-n // 4)), 1, 0)))


def devload_level(in_flight, max_outstanding):
    """``devload`` for ``in_flight`` table entries (contract 4.2, thresholds of
    this implementation): 0 light below 1/4 full, 1 optimal from 1/4,
    2 moderate from 3/4, 3 severe when full."""
    if in_flight >= max_outstanding:
        return 3
    if 4 * in_flight >= 3 * max_outstanding:
        return 2
    if 4 * in_flight >= max_outstanding:
        return 1
    return 0
