"""A memory port that corrupts the low-bit path inside the device: sign
bits flipped in device memory after they are written.

:class:`BitFlipPort` wraps a memory port that also offers the backdoor
``peek(addr, count)`` / ``poke(addr, lines)`` of
:class:`~neuron_fabric.host.device.Device`.  While ``active``, every
``write_lines`` / ``write_lines_partial`` lands as usual and then each bit
of the lines it wrote is flipped in memory with probability ``fraction``
(a failing memory bank or link: the stored sign lines no longer hold what
the workers wrote).  Reads pass through unchanged, so the device's read
transform counts the corrupted votes.  The FP32 path never touches the
device, so it is immune, which is what makes FP32 a recovery path.

The flips are drawn from a numpy Generator seeded at construction: a run
is reproducible.
"""

import numpy as np

__all__ = ["BitFlipPort"]


class BitFlipPort:
    """``port`` with sign bits flipped in memory after each write while ``active``.

    Parameters
    ----------
    port :
        A memory port with ``write_lines``, ``read_lines``, ``peek`` and
        ``poke`` (a :class:`~neuron_fabric.host.device.Device`), and
        optionally ``write_lines_partial``.
    fraction : float
        Probability that a written bit is flipped, 0..1.
    seed : int or sequence of int
        Seed of the flips.

    Members
    -------
    active : bool
        Whether writes are corrupted now (set by the caller, e.g. per step).
    flipped : int
        Bits flipped so far.
    """

    def __init__(self, port, fraction, seed=0):
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction must be in [0, 1], not {fraction!r}")
        for name in ("write_lines", "read_lines", "peek", "poke"):
            if not callable(getattr(port, name, None)):
                raise TypeError(f"the wrapped port needs {name}(); {type(port).__name__} has none")
        self._port = port
        self.fraction = float(fraction)
        self.active = False
        self.flipped = 0
        self._rng = np.random.default_rng(seed)

    def __getattr__(self, name):
        return getattr(self._port, name)

    def _corrupt(self, addr, count, enables=None):
        """Flip bits of the ``count`` lines from ``addr`` (only the bytes
        ``enables`` selects, when given)."""
        if not self.active or not self.fraction or not count:
            return
        stored = self._port.peek(addr, count)
        bits = self._rng.random((stored.shape[0], stored.shape[1] * 8)) < self.fraction
        mask = np.packbits(bits, axis=1, bitorder="little")
        if enables is not None:
            mask &= np.where(np.broadcast_to(enables, mask.shape), 0xFF, 0).astype(np.uint8)
        self.flipped += int(np.unpackbits(mask).sum())
        self._port.poke(addr, stored ^ mask)

    async def write_lines(self, addr, lines):
        await self._port.write_lines(addr, lines)
        self._corrupt(addr, len(lines))

    async def write_lines_partial(self, addr, lines, enables):
        await self._port.write_lines_partial(addr, lines, enables)
        self._corrupt(addr, len(lines), np.asarray(enables, dtype=bool))

    async def read_lines(self, addr, count):
        return await self._port.read_lines(addr, count)
