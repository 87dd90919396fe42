"""A memory port that corrupts the low-bit path inside the device: the sign
lines the runtime writes are not what device memory then holds.

:class:`FaultPort` wraps a memory port that also offers the backdoor
``peek(addr, count)`` / ``poke(addr, lines)`` of
:class:`~neuron_fabric.host.device.Device`.  While ``active``, every
``write_lines`` / ``write_lines_partial`` lands as usual and then its
lines are corrupted in memory by one fault:

==================  ==================================================================
fault               what memory holds after a write
==================  ==================================================================
:class:`BitFlips`   each written bit flipped with probability ``fraction`` (a failing
                    bank or link; 0.75: the votes lean to the opposite sign; 0.01:
                    a subtle one)
:class:`StuckLane`  the W bits of lane ``lane`` of every written line stuck at
                    ``value`` (a stuck data lane: that element of every line votes
                    unanimously, ``+1`` at ``value`` True, at every step)
:class:`StaleWorker`  worker ``worker``'s bit of every lane what it was before the
                    write (its segment left stale: last step's signs, or the
                    initial zeros)
==================  ==================================================================

Lane ``e`` of a line holds worker ``k``'s bit at bit ``e * W + k``
(element-major, the contract's packing; bits little-endian in each byte).
Reads pass through unchanged, so the device's read transform counts the
corrupted votes.  The FP32 path never touches the device, so it is immune,
which is what makes FP32 a recovery path.

Random faults draw from a numpy Generator seeded at construction: a run is
reproducible.
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["BitFlips", "StuckLane", "StaleWorker", "FaultPort", "BitFlipPort"]


@dataclass(frozen=True)
class BitFlips:
    """Each written bit flipped with probability ``fraction`` (0..1)."""
    fraction: float

    def __post_init__(self):
        if not 0.0 <= self.fraction <= 1.0:
            raise ValueError(f"fraction must be in [0, 1], not {self.fraction!r}")

    def corrupt(self, new, old, workers, rng):
        bits = rng.random((new.shape[0], new.shape[1] * 8)) < self.fraction
        return new ^ np.packbits(bits, axis=1, bitorder="little")


def _lane_mask(line_bytes, workers, lanes=None, worker=None):
    """uint8 ``(line_bytes,)`` mask of bits ``e * W + k`` for the lanes
    ``lanes`` (all when None) and the worker ``worker`` (all when None)."""
    bits = np.zeros((line_bytes * 8 // workers, workers), bool)
    bits[slice(None) if lanes is None else lanes, slice(None) if worker is None else worker] = True
    return np.packbits(bits.ravel(), bitorder="little")


@dataclass(frozen=True)
class StuckLane:
    """Lane ``lane`` of every written line stuck at ``value`` (all W bits)."""
    lane: int = 0
    value: bool = True

    def corrupt(self, new, old, workers, rng):
        if not 0 <= self.lane < new.shape[1] * 8 // workers:
            raise ValueError(f"lane {self.lane} is not in a line of "
                             f"{new.shape[1] * 8 // workers} lanes")
        mask = _lane_mask(new.shape[1], workers, lanes=self.lane)
        return new | mask if self.value else new & ~mask


@dataclass(frozen=True)
class StaleWorker:
    """Worker ``worker``'s bits of every written line left as they were."""
    worker: int = 0

    def corrupt(self, new, old, workers, rng):
        if not 0 <= self.worker < workers:
            raise ValueError(f"worker {self.worker} is not one of W = {workers}")
        mask = _lane_mask(new.shape[1], workers, worker=self.worker)
        return (new & ~mask) | (old & mask)


class FaultPort:
    """``port`` with its written lines corrupted in memory by ``fault`` while ``active``.

    Parameters
    ----------
    port :
        A memory port with ``write_lines``, ``read_lines``, ``peek`` and
        ``poke`` (a :class:`~neuron_fabric.host.device.Device`), and
        optionally ``write_lines_partial``.
    fault : BitFlips, StuckLane or StaleWorker
    seed : int or sequence of int
        Seed of a random fault.
    workers : int or None
        W of the lines (``port.params.workers`` when None).

    Members
    -------
    active : bool
        Whether writes are corrupted now (set by the caller, e.g. per step).
    flipped : int
        Bits that differ from what was written, summed over the writes.
    """

    def __init__(self, port, fault, seed=0, workers=None):
        for name in ("write_lines", "read_lines", "peek", "poke"):
            if not callable(getattr(port, name, None)):
                raise TypeError(f"the wrapped port needs {name}(); {type(port).__name__} has none")
        if not callable(getattr(fault, "corrupt", None)):
            raise TypeError(f"fault must be BitFlips, StuckLane or StaleWorker, not {fault!r}")
        self._port = port
        self._workers = workers or port.params.workers
        self.fault = fault
        self.active = False
        self.flipped = 0
        self._rng = np.random.default_rng(seed)

    def __getattr__(self, name):
        return getattr(self._port, name)

    async def _corrupting(self, addr, count, written, enables=None):
        """Await ``written`` (the write of ``count`` lines at ``addr``), then,
        while active, corrupt those lines in memory (only the bytes
        ``enables`` selects, when given)."""
        old = self._port.peek(addr, count) if self.active and count else None
        await written
        if old is None:
            return
        new = self._port.peek(addr, count)
        bad = self.fault.corrupt(new, old, self._workers, self._rng)
        if enables is not None:
            bad = np.where(np.broadcast_to(enables, new.shape), bad, new).astype(np.uint8)
        self.flipped += int(np.unpackbits(bad ^ new).sum())
        self._port.poke(addr, bad)

    async def write_lines(self, addr, lines):
        await self._corrupting(addr, len(lines), self._port.write_lines(addr, lines))

    async def write_lines_partial(self, addr, lines, enables):
        await self._corrupting(addr, len(lines),
                               self._port.write_lines_partial(addr, lines, enables),
                               np.asarray(enables, dtype=bool))

    async def read_lines(self, addr, count):
        return await self._port.read_lines(addr, count)


class BitFlipPort(FaultPort):
    """:class:`FaultPort` with :class:`BitFlips` of ``fraction``."""

    def __init__(self, port, fraction, seed=0):
        super().__init__(port, BitFlips(fraction), seed)

    @property
    def fraction(self):
        return self.fault.fraction
