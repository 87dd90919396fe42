"""The in-flight table: AXI transaction IDs, what each one is for, and the
occupancy bound."""

from amaranth import C, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .queue import CreditQueue

__all__ = ["IdPool", "AllocSignature", "LookupSignature", "ReserveSignature", "InFlightTable",
           "devload_level", "response_members", "ReadAllocSignature"]


class IdPool(wiring.Component):
    """Free list of the IDs ``0 .. size-1``.

    The ID handed out is a register (``alloc_id``, with ``alloc_ok``),
    loaded while it is empty or taken: after reset from a counter that
    hands out the IDs in order, then from a second register, the spare,
    which is loaded from the queue of IDs given back
    (:class:`.queue.CreditQueue`).  An ID given back goes straight into the
    first of the two registers that would otherwise stay empty, else into
    the queue; so the queue holds at most ``size - 2`` IDs, an ID given
    back is handed out again from the next cycle on, the ID handed out and
    its flag are registers, and the queue's memory feeds only the spare.
    No state survives a reset, so a reset in the middle of traffic leaves
    every ID free.

    Parameters
    ----------
    size : int
        Number of IDs.
    id_bits : int
        Width of an ID.

    Members
    -------
    alloc_ok : Out(1)
        An ID is available on ``alloc_id`` (a register).
    alloc_id : Out(id_bits)
        A register.
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
        n = self._size
        returned = m.submodules.returned = CreditQueue(len(self.alloc_id), max(n - 2, 1))
        fresh = Signal(range(n), name="fresh")       # the next fresh ID
        fresh_left = Signal(name="fresh_left", init=1)
        spare = Signal(len(self.alloc_id), name="spare")
        spare_ok = Signal(name="spare_ok")
        # the ID register is loaded while empty or taken: a fresh ID, else
        # the spare, else an ID given back this cycle
        load = self.alloc | ~self.alloc_ok
        to_id = load & ~fresh_left & ~spare_ok & self.free
        with m.If(load):
            m.d.sync += [self.alloc_ok.eq(fresh_left | spare_ok | self.free),
                         self.alloc_id.eq(Mux(fresh_left, fresh, Mux(spare_ok, spare,
                                                                    self.free_id)))]
            with m.If(fresh_left):
                m.d.sync += fresh_left.eq(fresh != n - 1)
                if n > 1:
                    m.d.sync += fresh.eq(fresh + 1)
        # the spare is loaded while empty or passed on: the queue's head,
        # else an ID given back this cycle; other IDs given back wait in
        # the queue
        refill = ~spare_ok | (load & ~fresh_left)
        to_spare = refill & ~returned.r_rdy & self.free & ~to_id
        with m.If(refill):
            m.d.sync += [spare_ok.eq(returned.r_rdy | to_spare),
                         spare.eq(Mux(returned.r_rdy, returned.r_data, self.free_id))]
        m.d.comb += [returned.w_en.eq(self.free & ~to_id & ~to_spare),
                     returned.w_data.eq(self.free_id),
                     returned.r_en.eq(refill & returned.r_rdy)]
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
        Load level (contract 4.2; thresholds in :func:`devload_level`) of
        the count as it is this cycle: a small table of three of its
        registered flags.
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
        rt, wt = self.read_reserve.take, self.write_alloc.take
        # The occupancy count in unary: lt[k] (k = 1..N) says the count is
        # below k, a register (all ones after reset).  The takes of this
        # cycle are known late (they come from other blocks); the frees are
        # registered.  So the flags after the frees (``freed[j]``, a choice
        # among three flags by the two frees) are formed first, and each
        # flag of the next cycle is a choice among three of those by the two
        # takes: two small tables per flag, the takes in the last.
        lt = Signal(n, init=(1 << n) - 1, name="occupancy_below")

        def below(k):
            return C(int(k > n), 1) if k <= 0 or k > n else lt[k - 1]

        # freed[j]: the count less this cycle's frees is below j
        freed = {j: Signal(name=f"freed_below{j}") for j in range(-1, n + 1)}
        m.d.comb += [f.eq(Mux(r_free & w_free, below(j + 2),
                              Mux(r_free | w_free, below(j + 1), below(j))))
                     for j, f in freed.items()]

        with m.Switch(Cat(rt, wt)):
            for case, tk in ((0b00, 0), ((0b01, 0b10), 1), (0b11, 2)):
                with m.Case(*(case if isinstance(case, tuple) else (case,))):
                    m.d.sync += [lt[k - 1].eq(freed[k - tk]) for k in range(1, n + 1)]
        m.d.comb += [
            # the count of the next cycle below N
            self.read_reserve.room.eq(Mux(rt & wt, freed[n - 2],
                                          Mux(rt | wt, freed[n - 1], freed[n]))),
            # a read reserved in the same cycle counts first
            self.write_alloc.ok.eq(wpool.alloc_ok & Mux(rt, below(n - 1), below(n))),
            # devload: the count at least N/4, 3N/4, N (rounded up) adds 1 each
            self.devload.eq(_level(below, n)),
        ]
        return m


def _level(below, n):
    """devload (:func:`devload_level`) from the flags ``below(k)``: the
    count is below ``k``."""
    at_least = [~below(-(-n // 4)), ~below(-(-3 * n // 4)), ~below(n)]
    return Cat(at_least[0] ^ at_least[1] ^ at_least[2], at_least[1])


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
