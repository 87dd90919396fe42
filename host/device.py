"""Transaction-level model of the top ``neuron_fabric`` (contract section 4).

:class:`Device` serves the two interfaces of the RTL top, untimed and one
transaction at a time, in acceptance order:

* the control port, in the driver's bus protocol (``await read(offset)`` ->
  ``(value, ok)``, ``await write(offset, value, strb)`` -> ``ok``; ``ok`` is
  False where the RTL answers SLVERR), so ``Driver(Device(), params)`` works;
* CXL.mem: :meth:`Device.m2s_req` and :meth:`Device.m2s_rwd` take one M2S
  request and return its S2M :class:`Response` (or None for MemSpecRd);
  :meth:`Device.write_lines`, :meth:`Device.write_lines_partial` and
  :meth:`Device.read_lines` are the bulk form (one MemWr, MemWrPtl or MemRd
  per line, counted as such), vectorised for the gradient runtime.

Every rule comes from the host modules: register offsets, kinds, reset
values and writable masks from :mod:`.regmap`, the CFG check from
:func:`.regmap.cfg_check`, STATUS bits and counters from
:data:`.regmap.STATUS_BITS` / :data:`.regmap.COUNTERS`, opcodes and the
profile's hard-wired features from :mod:`.facts`, the read transform (sign
lines of either layout, count operands: contract sections 2 and 5) and the
gate phase from :mod:`.golden`, a packed view's lines (contract section 6)
from :func:`.golden.pack_view`.  What is written here is only what contract 4
states and no host module holds: the write merge under WSTRB, the region
match, which events set which STATUS bit and the memory.

Not modelled: timing and backpressure, ``devload`` (always 0: the model has
nothing in flight between calls, and the RTL reads 0 when nothing is in
flight), AXI IDs and the order of responses (each call answers at once).

Example::

    import asyncio
    import numpy as np
    from neuron_fabric.host.device import Device
    from neuron_fabric.host.driver import Driver
    from neuron_fabric.contract.facts import Mode, TopParams

    async def main():
        dev = Device(TopParams())
        nf = Driver(dev, dev.params)
        await nf.set_region(0, base=0, limit=1 << 20, mode=Mode.GBINARY)
        await dev.write_lines(0, np.full((4, 64), 0x0F, dtype=np.uint8))
        print(await dev.read_lines(0, 4))        # every lane counts 4 votes

    asyncio.run(main())
"""

import operator
from dataclasses import dataclass, field

import numpy as np

from neuron_fabric.contract.facts import (COUNT_LANE_BITS, CXL_ADDR_BITS, DRS_MEMDATA, NDR_CMP, profile_named, Mode,
                                          Operand, Profile, ReqOpcode, RwdOpcode, TopParams, view_beats)
from neuron_fabric.host.golden import line_phase, pack_view, transform, transform_counts
from neuron_fabric.contract.regmap import (ADDR_BITS, COUNTERS, DATA_BITS, STATUS_BITS, VIEW_FIELDS, RegisterMap,
                                           cfg_check, cfg_decode, view_check)

__all__ = ["Device", "Response", "Faults", "PoisonError", "read_response"]

_STATUS = {f.name: f.mask for f in STATUS_BITS}
_COUNTER = {name: j for j, name in enumerate(COUNTERS)}
_COUNTER_MASK = (1 << 64) - 1
_WORD_MASK = (1 << DATA_BITS) - 1
_STRB_BITS = DATA_BITS // 8
_REGION_WORDS = ("CFG", "BASE_LO", "BASE_HI", "LIMIT_LO", "LIMIT_HI", "VIEW", "SOURCE_LO",
                 "SOURCE_HI")
_READS = (ReqOpcode.MEM_RD, ReqOpcode.MEM_RD_DATA)
_INVALIDATES = (ReqOpcode.MEM_INV, ReqOpcode.MEM_INV_NT)

#: Lines per memory chunk: memory is a dict of zero-initialised chunks,
#: allocated on first write, so 52-bit addresses cost nothing until used.
_CHUNK_LINES = 1 << 12


@dataclass(frozen=True)
class Response:
    """One S2M response.

    Attributes
    ----------
    channel : str
        ``"drs"`` (data response) or ``"ndr"`` (no-data response).
    opcode : int
        DRS MemData or NDR Cmp (:data:`.facts.DRS_MEMDATA`, :data:`.facts.NDR_CMP`).
    tag : int
        The request's tag.
    data : bytes or None
        The line (DRS only); for a poisoned DRS the memory's error beat, untransformed.
    poison : bool
        DRS poison: the memory answered the read with an error.
    """
    channel: str
    opcode: int
    tag: int
    data: bytes = None
    poison: bool = False


@dataclass
class Faults:
    """Lines for which the backing memory answers an AXI error.

    ``read_lines`` / ``write_lines`` hold line numbers (byte address //
    LINE_BYTES), as the testbench's ``FaultyAxiRam`` does.  A read of such a
    line returns poison with ``error_beat`` (zeros by default: what a
    cocotbext-axi ``AxiRam`` returns with SLVERR) and sets RD_ERR; a write
    to such a line changes nothing and sets WR_ERR.
    """
    read_lines: set = field(default_factory=set)
    write_lines: set = field(default_factory=set)
    error_beat: int = 0


class PoisonError(IOError):
    """:meth:`Device.read_lines` met lines whose memory read failed.

    The counters and STATUS were updated as for the per-line reads (RD_ERR
    set).  ``addrs`` are the byte addresses of the poisoned lines, ``data``
    the whole response array (poisoned lines hold the memory's error beat).
    """

    def __init__(self, addrs, data):
        self.addrs = addrs
        self.data = data
        shown = ", ".join(f"{a:#x}" for a in addrs[:4]) + (", ..." if len(addrs) > 4 else "")
        super().__init__(f"{len(addrs)} poisoned line(s) (memory read error) at {shown}")


def _uint(name, value, bits):
    """``value`` as an int in ``0 .. 2**bits - 1``, else a TypeError/ValueError naming it."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {value!r}") from None
    if not 0 <= value < (1 << bits):
        raise ValueError(f"{name} must fit in {bits} bits, not {value:#x}")
    return value


def _byte_mask(strb):
    """32-bit mask of the bytes whose WSTRB bit is 1."""
    return sum(0xFF << (8 * i) for i in range(_STRB_BITS) if (strb >> i) & 1)



def read_response(params, profile, raw, index, cfg):
    """What a build of ``profile`` returns for stored lines ``raw`` (uint8,
    ``(L, LINE_BYTES)``) read under ``cfg`` (:func:`.regmap.cfg_decode`
    fields) when the first has line index ``index`` in its region: contract
    4.3 (the phase), sections 2 and 5 (the transform), by the golden model."""
    fmt, kind, period, keep = profile.effective(cfg["format"], cfg["gate_kind"],
                                                cfg["period"], cfg["keep"])
    counts = cfg["operand"] != Operand.SIGNS
    lanes = params.line_bits // COUNT_LANE_BITS if counts else params.lanes
    # The top computes the phase with the register's P; a build whose
    # pattern is hard-wired then applies it modulo its own period.
    phase = line_phase(np.arange(index, index + len(raw)), lanes, cfg["period"]) % period
    gate = dict(period=period, keep=keep, threshold=cfg["threshold"], phase=phase,
                layout=cfg["layout"])
    if counts:
        return transform_counts(raw, cfg["operand"], cfg["total"], Mode(cfg["mode"]), fmt,
                                kind, **gate)
    return transform(raw, params.workers, Mode(cfg["mode"]), fmt, kind, **gate)


class Device:
    """Transaction-level model of ``neuron_fabric``.

    Parameters
    ----------
    params : TopParams
        The build being modelled; the profile's hard-wired features apply to
        low-bit reads as in the RTL.
    profile : Profile, optional
        The build's features, when they are not those of
        ``profile_named(params.profile)``: a build with a feature no profile has
        yet (``hierarchy``, contract section 5), or a feature-cost variant.
        Whether the control port accepts the hierarchy fields follows
        ``profile.has("hierarchy")``, as :func:`.regmap.cfg_check` says;
        with ``packed_view`` the regions' VIEW and SOURCE registers exist
        (contract section 6).

    Members
    -------
    faults : Faults
        Lines for which the backing memory answers an AXI error.

    Raises
    ------
    TypeError
        If ``params`` is not a :class:`TopParams` or ``profile`` not a :class:`Profile`.
    """

    def __init__(self, params=TopParams(), *, profile=None):
        if not isinstance(params, TopParams):
            raise TypeError(f"params must be a TopParams, not {params!r}")
        if profile is not None and not isinstance(profile, Profile):
            raise TypeError(f"profile must be a Profile, not {profile!r}")
        self._params = params
        self._profile = profile_named(params.profile) if profile is None else profile
        self._map = RegisterMap(params, self._profile.features)
        self._chunks = {}
        self.faults = Faults()
        self.reset()

    @property
    def params(self):
        return self._params

    @property
    def profile(self):
        """The :class:`Profile` whose features the model implements."""
        return self._profile

    @property
    def register_map(self):
        return self._map

    @property
    def devload(self):
        """Always 0: nothing is in flight between calls (contract 4.2: both
        ``devload`` outputs read 0 whenever nothing is in flight)."""
        return 0

    def reset(self):
        """Control state to its reset values (contract 4.4); memory, outside the
        block, keeps its contents."""
        self._words = {reg.offset: reg.reset for reg in self._map.registers
                       if reg.access == "RW"}
        self._status = 0
        self._counters = [0] * len(COUNTERS)
        self._snapshots = [0] * len(COUNTERS)
        self._table = None

    # -- control port ---------------------------------------------------------------

    async def read(self, offset):
        """Read the register at ``offset``: ``(value, ok)``; unmapped gives ``(0, False)``."""
        reg = self._map.at(self._offset(offset))
        if reg is None:
            return 0, False
        if reg.kind == "const":
            return reg.value, True
        if reg.kind == "status":
            return self._status, True
        if reg.kind == "counter_lo":
            value = self._counters[reg.index]
            self._snapshots[reg.index] = value >> 32
            return value & _WORD_MASK, True
        if reg.kind == "counter_hi":
            return self._snapshots[reg.index], True
        return self._words[reg.offset], True

    async def write(self, offset, value, strb=(1 << _STRB_BITS) - 1):
        """Write ``value`` under byte strobes ``strb``; False where the RTL answers SLVERR."""
        offset = self._offset(offset)
        value = _uint("value", value, DATA_BITS)
        mask = _byte_mask(_uint("strb", strb, _STRB_BITS))
        reg = self._map.at(offset)
        if reg is None or reg.access == "RO":
            return self._bad_csr()
        if reg.kind == "status":
            self._status &= ~(value & mask)
            return True
        # A CFG write is checked on the value it would produce (contract 4.4).
        new = ((self._words[offset] & ~mask) | (value & mask)) & reg.writable_mask
        if reg.kind == "cfg" and cfg_check(new, self._params.workers,
                                           self._profile.features) is not None:
            return self._bad_csr()
        if reg.kind in ("cfg", "view") and self._view_refused(reg, new):
            return self._bad_csr()
        self._words[offset] = new
        self._table = None
        return True

    def _view_refused(self, reg, new):
        """Whether writing ``new`` to a region's CFG or VIEW would leave a view
        whose mode is BYPASS or IDENTITY (contract section 6.4)."""
        if reg.kind == "cfg" and "packed_view" not in self._profile.features or \
                not reg.name.startswith("REGION"):
            return False
        cfg, view = (self._map.region(reg.index, w).offset for w in ("CFG", "VIEW"))
        words = {**self._words, reg.offset: new}
        return view_check(words[cfg], words[view]) is not None

    def _offset(self, offset):
        # The RTL decodes address bits [11:2]; bits [1:0] are ignored.
        return _uint("offset", offset, ADDR_BITS) & ~3

    def _bad_csr(self):
        self._event("bad_csr")
        return False

    def _event(self, name, n=1):
        """``n`` events that set STATUS bit ``name``; counter 5 counts each."""
        if n:
            self._status |= _STATUS[name]
            self._count("errors", n)

    def _count(self, name, n=1):
        j = _COUNTER[name]
        self._counters[j] = (self._counters[j] + n) & _COUNTER_MASK

    # -- region table (contract 4.3) -------------------------------------------------------

    def _word(self, r, word):
        name = f"REGION{r}_{word}"
        return self._words[self._map[name].offset] if name in self._map else 0

    def _region_table(self):
        """``(enabled regions as (base line, limit line, cfg, source line or None
        for a region that is no packed view), DEFAULT_CFG fields)``."""
        if self._table is None:
            ob = self._params.offset_bits
            regions = []
            for r in range(self._params.regions):
                words = {w: self._word(r, w) for w in _REGION_WORDS}
                cfg = cfg_decode(words["CFG"])
                if cfg["enable"]:
                    base = ((words["BASE_HI"] << 32) | words["BASE_LO"]) >> ob
                    limit = ((words["LIMIT_HI"] << 32) | words["LIMIT_LO"]) >> ob
                    source = None
                    if VIEW_FIELDS[0].get(words["VIEW"]):
                        source = ((words["SOURCE_HI"] << 32) | words["SOURCE_LO"]) >> ob
                    regions.append((base, limit, cfg, source))
            self._table = (regions, cfg_decode(self._words[self._map["DEFAULT_CFG"].offset]))
        return self._table

    def _config(self, line):
        """``(cfg, base line, source line)`` of a read of ``line``: the
        lowest-numbered enabled region with ``BASE <= line < LIMIT``, else
        DEFAULT_CFG with base 0; the source line of a packed view, else None."""
        regions, default = self._region_table()
        for base, limit, cfg, source in regions:
            if base <= line < limit:
                return cfg, base, source
        return default, 0, None

    def read_config(self, addr):
        """The CFG fields (:func:`.regmap.cfg_decode`) a read of byte address
        ``addr`` gets now, and its line index in its region (contract 4.3)."""
        line = addr // self._params.line_bytes
        cfg, base, _ = self._config(line)
        return dict(cfg), line - base

    def _segments(self, first, count):
        """Runs ``(start, stop, cfg, base, source)`` of lines ``[first, first +
        count)`` that one configuration serves (the match changes only at a
        BASE or LIMIT)."""
        regions, _ = self._region_table()
        end = first + count
        cuts = {first, end}
        for base, limit, _, _ in regions:
            cuts.update(x for x in (base, limit) if first < x < end)
        cuts = sorted(cuts)
        for start, stop in zip(cuts, cuts[1:]):
            yield start, stop, *self._config(start)

    def _transform(self, raw, index, cfg):
        """Responses for stored lines ``raw`` whose first line has ``index`` in its region."""
        return read_response(self._params, self._profile, raw, index, cfg)

    # -- memory -------------------------------------------------------------------------

    def _pieces(self, first, count):
        """``(chunk key, row in chunk, position in run, length)`` covering the run."""
        pos = 0
        while pos < count:
            key, row = divmod(first + pos, _CHUNK_LINES)
            n = min(count - pos, _CHUNK_LINES - row)
            yield key, row, pos, n
            pos += n

    def _gather(self, first, count):
        out = np.zeros((count, self._params.line_bytes), dtype=np.uint8)
        for key, row, pos, n in self._pieces(first, count):
            chunk = self._chunks.get(key)
            if chunk is not None:
                out[pos:pos + n] = chunk[row:row + n]
        return out

    def _scatter(self, first, lines, where=None):
        """Store ``lines`` from line ``first``: every byte, or those ``where`` selects."""
        if where is not None:
            where = np.broadcast_to(where, lines.shape)
        for key, row, pos, n in self._pieces(first, len(lines)):
            chunk = self._chunks.get(key)
            if chunk is None:
                chunk = self._chunks[key] = np.zeros((_CHUNK_LINES, lines.shape[1]), np.uint8)
            if where is None:
                chunk[row:row + n] = lines[pos:pos + n]
            else:
                np.copyto(chunk[row:row + n], lines[pos:pos + n], where=where[pos:pos + n])

    def _faulty(self, lines, first, count):
        return sorted(line for line in lines if first <= line < first + count)

    def _write_run(self, first, lines, be=None):
        """MemWr (``be`` None) or MemWrPtl of consecutive ``lines`` from line ``first``."""
        self._count("writes", len(lines))
        failed = self._faulty(self.faults.write_lines, first, len(lines))
        if failed:
            # A failed write changes nothing in its line.
            be = np.array(np.broadcast_to(True if be is None else be, lines.shape))
            be[np.asarray(failed) - first] = False
            self._event("wr_err", len(failed))
        self._scatter(first, lines, be)

    def _read_run(self, first, count):
        """Responses of MemRd of lines ``[first, first + count)``: ``(lines, poisoned)``."""
        out = self._gather(first, count)
        poisoned = []
        for start, stop, cfg, base, source in self._segments(first, count):
            run = slice(start - first, stop - first)
            if source is None:
                out[run] = self._transform(out[run], start - base, cfg)
                failed = self._faulty(self.faults.read_lines, start, stop - start)
                self._event("rd_err", len(failed))
                poisoned += failed
            else:
                out[run], failed = self._view(start - base, stop - start, cfg, source)
                poisoned += [start + k for k in failed]
            # Counters 0..3 count reads by mode, counter j for mode j (contract 4.4).
            self._count(COUNTERS[cfg["mode"]], stop - start)
        if poisoned:
            beat = self.faults.error_beat.to_bytes(self._params.line_bytes, "little")
            out[np.asarray(poisoned) - first] = np.frombuffer(beat, dtype=np.uint8)
        return out, sorted(poisoned)

    def _view(self, index, count, cfg, source):
        """Responses of ``count`` lines of a packed view from view line ``index``
        on, whose source window starts at line ``source`` (contract section 6):
        ``(lines, positions of the poisoned ones)``; each source line the
        memory fails is an RD_ERR event."""
        p = self._params
        beats = view_beats(p.line_bits, p.workers, cfg["operand"])
        space = 1 << (CXL_ADDR_BITS - p.offset_bits)
        first, n = (source + index * beats) % space, count * beats
        # the source lines, modulo the address space (contract section 6.2)
        head = min(n, space - first)
        raw = np.concatenate([self._gather(first, head), self._gather(0, n - head)])
        failed = [(line - first) % space for line in self.faults.read_lines
                  if (line - first) % space < n]
        fields = {k: cfg[k] for k in ("gate_kind", "period", "keep", "threshold", "layout",
                                      "operand", "total")}
        out = pack_view(raw, p.workers, Mode(cfg["mode"]), index=index, **fields)
        self._event("rd_err", len(failed))
        return out, sorted({k // beats for k in failed})

    # -- CXL.mem, one transaction -------------------------------------------------------

    def _addr(self, addr):
        return _uint("addr", addr, CXL_ADDR_BITS)

    def m2s_req(self, opcode, addr, tag):
        """One M2S Req; its response, or None for MemSpecRd (contract 4.2).

        Unknown opcodes are answered as the contract says (NDR Cmp,
        STATUS.UNSUPPORTED); a value that does not fit the port's field
        raises ``ValueError``.
        """
        opcode = _uint("opcode", opcode, 4)
        line = self._addr(addr) >> self._params.offset_bits
        tag = _uint("tag", tag, 16)
        if opcode in _READS:
            data, poisoned = self._read_run(line, 1)
            return Response("drs", DRS_MEMDATA, tag, data[0].tobytes(), bool(poisoned))
        if opcode == ReqOpcode.MEM_SPEC_RD:
            return None
        if opcode not in _INVALIDATES:
            self._event("unsupported")
        return Response("ndr", NDR_CMP, tag)

    def m2s_rwd(self, opcode, addr, tag, data, be, poison=False):
        """One M2S RwD; its NDR Cmp (contract 4.2).

        ``data`` is the line (``LINE_BYTES`` bytes, byte 0 = bits [7:0]),
        ``be`` the byte enables (bit i for byte i; MemWrPtl only).
        """
        opcode = _uint("opcode", opcode, 4)
        line = self._addr(addr) >> self._params.offset_bits
        tag = _uint("tag", tag, 16)
        row = self._line_bytes(data)
        be = _uint("be", be, self._params.line_bytes)
        if poison not in (0, 1):
            raise ValueError(f"poison must be 0 or 1, not {poison!r}")
        if poison:
            self._event("poison_drop")
        elif opcode == RwdOpcode.MEM_WR:
            self._write_run(line, row)
        elif opcode == RwdOpcode.MEM_WR_PTL:
            enables = np.frombuffer(be.to_bytes(self._params.line_bytes // 8, "little"), np.uint8)
            self._write_run(line, row, np.unpackbits(enables, bitorder="little")[None].astype(bool))
        else:
            self._event("unsupported")
        return Response("ndr", NDR_CMP, tag)

    def _line_bytes(self, data):
        """``data`` as a ``(1, LINE_BYTES)`` uint8 array."""
        if isinstance(data, np.ndarray):
            if data.dtype != np.uint8:
                raise TypeError(f"data must be uint8, not {data.dtype}")
            data = data.tobytes()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, not {type(data).__name__}")
        data = bytes(data)
        if len(data) != self._params.line_bytes:
            raise ValueError(f"data must be one {self._params.line_bytes}-byte line, "
                             f"not {len(data)} bytes")
        return np.frombuffer(data, dtype=np.uint8)[None]

    # -- bulk memory port ---------------------------------------------------------------

    def _run(self, addr, count):
        """First line of a run of ``count`` lines at line-aligned byte ``addr``."""
        lb = self._params.line_bytes
        addr = self._addr(addr)
        if addr % lb:
            raise ValueError(f"addr {addr:#x} is not aligned to a {lb}-byte line")
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)):
            raise TypeError(f"count must be an integer, not {count!r}")
        if count < 0 or addr + count * lb > 1 << CXL_ADDR_BITS:
            raise ValueError(f"{count} lines at {addr:#x} do not fit the "
                             f"{CXL_ADDR_BITS}-bit address space")
        return addr // lb

    def _check_lines(self, lines):
        if not isinstance(lines, np.ndarray):
            raise TypeError(f"lines must be a numpy array, not {type(lines).__name__}")
        if lines.dtype != np.uint8:
            raise TypeError(f"lines must be uint8, not {lines.dtype}")
        if lines.ndim != 2 or lines.shape[1] != self._params.line_bytes:
            raise ValueError(f"lines must have shape (L, {self._params.line_bytes}), "
                             f"not {lines.shape}")
        return lines

    async def write_lines(self, addr, lines):
        """MemWr of each line of ``lines`` (uint8, ``(L, LINE_BYTES)``) from ``addr`` on."""
        lines = self._check_lines(lines)
        self._write_run(self._run(addr, len(lines)), lines)

    async def write_lines_partial(self, addr, lines, enables):
        """MemWrPtl of each line of ``lines`` from ``addr`` on, writing the bytes
        whose enable is True: ``enables`` is bool, ``(LINE_BYTES,)`` for every
        line or ``(L, LINE_BYTES)`` one row per line."""
        lines = self._check_lines(lines)
        enables = np.asarray(enables)
        if enables.dtype != np.bool_ or enables.shape not in (lines.shape[1:], lines.shape):
            raise ValueError(f"enables must be bool of shape {lines.shape[1:]} or "
                             f"{lines.shape}, not {enables.dtype} of shape {enables.shape}")
        self._write_run(self._run(addr, len(lines)), lines,
                        np.broadcast_to(enables, lines.shape))

    async def read_lines(self, addr, count):
        """MemRd of ``count`` lines from ``addr`` on: uint8 ``(count, LINE_BYTES)``.

        Raises
        ------
        PoisonError
            If the memory failed some of the reads (after the counters and
            STATUS were updated as for the per-line reads).
        """
        first = self._run(addr, count)
        out, poisoned = self._read_run(first, count)
        if poisoned:
            lb = self._params.line_bytes
            raise PoisonError([line * lb for line in poisoned], out)
        return out

    def peek(self, addr, count):
        """The stored lines (backdoor: no counters, no transform)."""
        return self._gather(self._run(addr, count), count)

    def poke(self, addr, lines):
        """Store ``lines`` (backdoor: no counters, no faults)."""
        lines = self._check_lines(lines)
        self._scatter(self._run(addr, len(lines)), lines)
