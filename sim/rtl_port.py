"""A memory port and a control bus over the exported top under cocotb.

:class:`RtlPort` gives the gradient runtime's memory-port protocol
(``async write_lines(addr, lines)``, ``async write_lines_partial(addr,
lines, enables)``, ``async read_lines(addr, count)``) on the CXL.mem
channels of ``neuron_fabric``: one M2S RwD MemWr or MemWrPtl per line, one
M2S Req MemRd per line, the data from S2M DRS.  It drives the bus models of
:class:`neuron_fabric.sim.tb_top.TopTB`, whose scoreboard checks every
response against the golden model under the configuration the control
writes (``tb.driver``, AXI4-Lite) had given it: so a run through this port
also checks contract 4.3 for every line.
"""

import numpy as np

from neuron_fabric.contract.facts import RwdOpcode

__all__ = ["RtlPort"]


class RtlPort:
    """Memory port over ``tb`` (a started :class:`TopTB`).

    Parameters
    ----------
    tb : TopTB
    batch : int, default 1024
        Requests in flight at most per burst (tags are reused between bursts).
    """

    def __init__(self, tb, batch=1024):
        self.tb = tb
        self.batch = batch
        self.lines_written = 0
        self.lines_read = 0

    def _line(self, addr):
        lb = self.tb.params.line_bytes
        if addr % lb:
            raise ValueError(f"address {addr:#x} is not aligned to a {lb}-byte line")
        return addr // lb

    async def write_lines(self, addr, lines):
        """MemWr each row of ``lines`` (uint8, ``(L, LINE_BYTES)``) from ``addr`` on."""
        first = self._line(addr)
        lines = np.asarray(lines, dtype=np.uint8)
        for start in range(0, len(lines), self.batch):
            for tag, row in enumerate(lines[start:start + self.batch]):
                self.tb.write(tag, first + start + tag, row.tobytes(), opcode=RwdOpcode.MEM_WR)
            await self.tb.drain()
        self.lines_written += len(lines)

    async def write_lines_partial(self, addr, lines, enables):
        """MemWrPtl each row of ``lines`` from ``addr`` on, writing the bytes
        whose enable is True: ``enables`` is bool, ``(LINE_BYTES,)`` for every
        line or ``(L, LINE_BYTES)`` one row per line (as the device model's)."""
        first = self._line(addr)
        lines = np.asarray(lines, dtype=np.uint8)
        enables = np.asarray(enables)
        if enables.dtype != np.bool_ or enables.shape not in (lines.shape[1:], lines.shape):
            raise ValueError(f"enables must be bool of shape {lines.shape[1:]} or "
                             f"{lines.shape}, not {enables.dtype} of shape {enables.shape}")
        enables = np.broadcast_to(enables, lines.shape)
        for start in range(0, len(lines), self.batch):
            for tag, (row, en) in enumerate(zip(lines[start:start + self.batch],
                                                enables[start:start + self.batch])):
                be = int.from_bytes(np.packbits(en, bitorder="little").tobytes(), "little")
                self.tb.write(tag, first + start + tag, row.tobytes(),
                              opcode=RwdOpcode.MEM_WR_PTL, be=be)
            await self.tb.drain()
        self.lines_written += len(lines)

    async def read_lines(self, addr, count):
        """MemRd ``count`` lines from ``addr`` on; the DRS data as uint8 ``(count, LINE_BYTES)``."""
        first = self._line(addr)
        out = np.empty((count, self.tb.params.line_bytes), dtype=np.uint8)
        for start in range(0, count, self.batch):
            n = min(self.batch, count - start)
            for tag in range(n):
                self.tb.read(tag, first + start + tag)
            await self.tb.drain()
            for tag in range(n):
                out[start + tag] = np.frombuffer(self.tb.responses[tag], dtype=np.uint8)
        self.tb.check()
        self.lines_read += count
        return out
