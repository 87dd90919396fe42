"""Control-plane driver for ``neuron_fabric`` (plain Python, no HDL import).

The driver speaks to the AXI4-Lite control port through a *bus* object with
two coroutine methods::

    async def read(offset) -> (value, ok)
    async def write(offset, value) -> ok

``ok`` is False when the port answered SLVERR.  Two buses are provided:
:class:`AxiLiteMasterBus` (a cocotbext-axi ``AxiLiteMaster`` in simulation)
and :class:`MmapBus` (a memory-mapped register window of a real device).
Offsets come from :class:`neuron_fabric.contract.regmap.RegisterMap`; every value is
checked against the same rules the hardware applies before anything reaches
the bus.

Example (a device whose registers are mapped by a UIO driver)::

    import asyncio
    from neuron_fabric.host.driver import Driver, MmapBus
    from neuron_fabric.contract.facts import Mode

    async def main():
        nf = await Driver.probe(MmapBus("/dev/uio0"))
        await nf.set_default(Mode.BYPASS)
        await nf.set_region(0, base=0x1_0000_0000, limit=0x1_0400_0000,
                            mode=Mode.GTERNARY, period=3, keep=2)
        print(await nf.counters())

    asyncio.run(main())
"""

import mmap
import os
import struct

from neuron_fabric.contract.facts import (CXL_ADDR_BITS, PROFILES, Format, GateKind, Layout, Mode, Operand,
                                          Profile, TopParams, profile_named)
from neuron_fabric.contract.regmap import (COUNTERS, ID_VALUE, SOURCE_ALIGN_BITS, STATUS_BITS, VIEW_FIELDS,
                                           CfgError, RegisterMap, caps2_decode, cfg_check, cfg_decode,
                                           cfg_encode)

__all__ = ["BusError", "Driver", "AxiLiteMasterBus", "MmapBus", "CfgError"]


class BusError(RuntimeError):
    """The control port answered SLVERR."""


class AxiLiteMasterBus:
    """Bus adapter for a cocotbext-axi ``AxiLiteMaster`` (simulation)."""

    def __init__(self, master):
        self.master = master

    async def read(self, offset):
        resp = await self.master.read(offset, 4)
        return int.from_bytes(resp.data, "little"), int(resp.resp) == 0

    async def write(self, offset, value):
        resp = await self.master.write(offset, int(value).to_bytes(4, "little"))
        return int(resp.resp) == 0


class MmapBus:
    """Bus adapter for a memory-mapped register window (a UIO device or a PCIe
    BAR resource file).  A real bus cannot report SLVERR through a load or a
    store, so ``ok`` is always True here; read STATUS.BAD_CSR to find out."""

    WINDOW = 0x1000

    def __init__(self, path, offset=0):
        fd = os.open(path, os.O_RDWR | os.O_SYNC)
        try:
            self._map = mmap.mmap(fd, self.WINDOW, offset=offset)
        finally:
            os.close(fd)

    async def read(self, offset):
        return struct.unpack_from("<I", self._map, offset)[0], True

    async def write(self, offset, value):
        struct.pack_into("<I", self._map, offset, value)
        return True

    def close(self):
        self._map.close()


class Driver:
    """Control-plane operations on one ``neuron_fabric`` instance.

    Parameters
    ----------
    bus :
        See the module docstring.
    params : TopParams
        The instance's parameters (:meth:`probe` reads them from CAPS0-CAPS2).
    profile : Profile, optional
        The build's features when they are not ``profile_named(params.profile)``'s
        (as for :class:`~neuron_fabric.host.device.Device`); they decide
        which CFG values :meth:`cfg_value` accepts.
    """

    def __init__(self, bus, params=None, *, profile=None):
        self.bus = bus
        self.params = params or TopParams()
        self.profile = profile_named(self.params.profile) if profile is None else profile
        self.map = RegisterMap(self.params, self.profile.features)

    @classmethod
    async def probe(cls, bus, profile="full"):
        """Read ID and CAPS0-CAPS2 and return a driver for what is there.

        CAPS2 (contract 2.2) gives the build's profile and features; a build
        older than 2.2 answers its offset SLVERR, and then ``profile`` (a name
        of ``PROFILES``) is taken as the build's."""
        value, ok = await bus.read(0x000)
        if not ok or value != ID_VALUE:
            raise BusError(f"no neuron_fabric at this bus: ID reads 0x{value:08X}")
        caps0, _ = await bus.read(0x008)
        caps1, _ = await bus.read(0x00C)
        caps2, ok = await bus.read(0x018)
        name, features = caps2_decode(caps2) if ok else (profile, PROFILES[profile].features)
        params = TopParams(line_bits=caps0 & 0xFFFF, workers=(caps0 >> 16) & 0xFF,
                           stages=(caps0 >> 24) & 0xF, regions=caps1 & 0xFF,
                           max_outstanding=(caps1 >> 8) & 0xFFFF, profile=name)
        built = PROFILES[name]
        if features != built.features:
            built = Profile(f"{name} (as CAPS2 reads)", features)
        return cls(bus, params, profile=built)

    # -- raw access --------------------------------------------------------------

    async def read(self, name):
        reg = self.map[name]
        value, ok = await self.bus.read(reg.offset)
        if not ok:
            raise BusError(f"reading {name} (0x{reg.offset:03X}) answered SLVERR")
        return value

    async def write(self, name, value):
        reg = self.map[name]
        if reg.access == "RO":
            raise ValueError(f"{name} is read-only")
        ok = await self.bus.write(reg.offset, value)
        if not ok:
            raise BusError(f"writing 0x{value:08X} to {name} (0x{reg.offset:03X}) answered SLVERR")

    # -- configuration -----------------------------------------------------------

    def cfg_value(self, mode, format=Format.COUNT, gate_kind=GateKind.PATTERN, period=3,
                  keep=2, threshold=0, enable=0, *, layout=Layout.ELEMENT_MAJOR,
                  operand=Operand.SIGNS, total=0):
        """Checked CFG word; raises :class:`CfgError` for what the port would reject
        (``layout``, ``operand`` and ``total``: contract section 5)."""
        for name, value, enum in (("mode", mode, Mode), ("format", format, Format),
                                  ("gate_kind", gate_kind, GateKind), ("layout", layout, Layout),
                                  ("operand", operand, Operand)):
            if value not in tuple(enum):
                raise CfgError(f"{name} must be one of {[int(v) for v in enum]}, not {value!r}")
        value = cfg_encode(mode, format, gate_kind, period, keep, threshold, enable,
                           layout=layout, operand=operand, total=total)
        reason = cfg_check(value, self.params.workers, self.profile.features)
        if reason:
            raise CfgError(f"invalid configuration: {reason}")
        return value

    async def set_default(self, mode, **fields):
        """Set DEFAULT_CFG (the mode latch for reads outside every region)."""
        await self.write("DEFAULT_CFG", self.cfg_value(mode, **fields))

    async def default(self):
        return cfg_decode(await self.read("DEFAULT_CFG"))

    def _check_region(self, r):
        if not 0 <= r < self.params.regions:
            raise ValueError(f"region must be in 0..{self.params.regions - 1}, not {r!r}")

    def _check_addr(self, name, addr):
        if not 0 <= addr < (1 << CXL_ADDR_BITS):
            raise ValueError(f"{name} must be a {CXL_ADDR_BITS}-bit address, not {addr:#x}")
        if addr % self.params.line_bytes:
            raise ValueError(f"{name} {addr:#x} is not aligned to a "
                             f"{self.params.line_bytes}-byte line")

    @property
    def has_view(self):
        """Whether the build has the packed view (contract section 6)."""
        return "packed_view" in self.profile.features

    async def set_region(self, r, *, base, limit, mode, **fields):
        """Program and enable region ``r`` for byte addresses ``base <= a < limit``.

        The region is disabled while its window is rewritten, so no read sees a
        half-written window; on a build with the packed view it is made no
        view first (contract section 6.4).
        """
        self._check_region(r)
        self._check_addr("base", base)
        self._check_addr("limit", limit)
        if limit <= base:
            raise ValueError(f"limit {limit:#x} must be above base {base:#x}")
        cfg = self.cfg_value(mode, enable=1, **fields)
        if self.has_view:
            await self.write(f"REGION{r}_VIEW", 0)
        await self._set_window(r, base, limit, cfg)

    async def _set_window(self, r, base, limit, cfg):
        """Region ``r``'s CFG (disabled), window, then CFG (enabled)."""
        await self.write(f"REGION{r}_CFG", cfg & ~(1 << 31))
        await self.write(f"REGION{r}_BASE_LO", base & 0xFFFF_FFFF)
        await self.write(f"REGION{r}_BASE_HI", base >> 32)
        await self.write(f"REGION{r}_LIMIT_LO", limit & 0xFFFF_FFFF)
        await self.write(f"REGION{r}_LIMIT_HI", limit >> 32)
        await self.write(f"REGION{r}_CFG", cfg)

    async def set_view(self, r, *, base, limit, source, mode, **fields):
        """Program and enable region ``r`` as a packed view (contract section 6)
        of the source window at byte address ``source``: a read of line ``j``
        of ``base <= a < limit`` returns the 2-bit results of source lines
        ``j*B .. j*B + B - 1`` (:func:`.facts.view_beats`) under ``mode``
        (G-Binary or G-Ternary) and the other CFG ``fields``.

        Raises
        ------
        ValueError
            On a build without the packed view, for a ``source`` that is not a
            4 KiB-aligned 52-bit address, or a window as :meth:`set_region`.
        CfgError
            For a mode other than G-Binary or G-Ternary, or a bad CFG field.
        """
        if not self.has_view:
            raise ValueError("this build has no packed view (contract section 6)")
        self._check_region(r)
        self._check_addr("base", base)
        self._check_addr("limit", limit)
        if limit <= base:
            raise ValueError(f"limit {limit:#x} must be above base {base:#x}")
        align = 1 << SOURCE_ALIGN_BITS
        if not 0 <= source < (1 << CXL_ADDR_BITS) or source % align:
            raise ValueError(f"source must be a {CXL_ADDR_BITS}-bit address aligned to "
                             f"{align} bytes, not {source:#x}")
        if mode not in (Mode.GBINARY, Mode.GTERNARY):
            raise CfgError(f"a packed view needs mode G-Binary or G-Ternary, not {mode!r}")
        cfg = self.cfg_value(mode, enable=1, **fields)
        # CFG first (a view's mode), then its window, its source, VIEW, the enable
        await self.write(f"REGION{r}_CFG", cfg & ~(1 << 31))
        await self.write(f"REGION{r}_SOURCE_LO", source & 0xFFFF_FFFF)
        await self.write(f"REGION{r}_SOURCE_HI", source >> 32)
        await self.write(f"REGION{r}_VIEW", 1)
        await self._set_window(r, base, limit, cfg)

    async def clear_region(self, r):
        """Disable region ``r`` and zero its window (and its view)."""
        self._check_region(r)
        words = ("VIEW", "SOURCE_LO", "SOURCE_HI") if self.has_view else ()
        for word in words:
            await self.write(f"REGION{r}_{word}", 0)
        await self.write(f"REGION{r}_CFG", self.cfg_value(Mode.BYPASS))
        for word in ("BASE_LO", "BASE_HI", "LIMIT_LO", "LIMIT_HI"):
            await self.write(f"REGION{r}_{word}", 0)

    async def _address(self, r, word):
        return (await self.read(f"REGION{r}_{word}_HI") << 32) | await self.read(f"REGION{r}_{word}_LO")

    async def region(self, r):
        """Region ``r``'s CFG fields, ``base`` and ``limit``; with the packed view
        also ``view`` (0 or 1) and ``source``."""
        self._check_region(r)
        out = cfg_decode(await self.read(f"REGION{r}_CFG"))
        out["base"] = await self._address(r, "BASE")
        out["limit"] = await self._address(r, "LIMIT")
        if self.has_view:
            out["view"] = VIEW_FIELDS[0].get(await self.read(f"REGION{r}_VIEW"))
            out["source"] = await self._address(r, "SOURCE")
        return out

    # -- status and counters -------------------------------------------------------

    async def status(self):
        """STATUS as a dict of bit name -> bool."""
        value = await self.read("STATUS")
        return {f.name: bool(f.get(value)) for f in STATUS_BITS}

    async def clear_status(self, *names):
        """Clear the named STATUS bits (all when none are named)."""
        known = {f.name: f for f in STATUS_BITS}
        for name in names:
            if name not in known:
                raise ValueError(f"unknown STATUS bit {name!r}; known: {sorted(known)}")
        bits = [known[n] for n in names] or list(STATUS_BITS)
        await self.write("STATUS", sum(f.mask for f in bits))

    async def counter(self, j):
        """Counter ``j`` (0..5) as one consistent 64-bit value."""
        if not 0 <= j < len(COUNTERS):
            raise ValueError(f"counter must be in 0..{len(COUNTERS) - 1}, not {j!r}")
        lo = await self.read(f"COUNTER{j}_LO")
        hi = await self.read(f"COUNTER{j}_HI")
        return (hi << 32) | lo

    async def counters(self):
        """All counters as a dict name -> value."""
        return {name: await self.counter(j) for j, name in enumerate(COUNTERS)}
