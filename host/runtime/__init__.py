"""Gradient runtime: one training step's per-worker gradients aggregated
through a ``neuron_fabric`` device (the paper's communication runtime,
section 3).

The runtime owns named parameter groups.  Each group gets a line-aligned
address window in device memory; a group on a low-bit path also gets a
region of the device's region table whose CFG holds its mode, output format
and gate.  Per step, for every group:

* FP32 path (:data:`FP32`, mode BYPASS): the FP32 mean of the workers'
  gradients, computed on the host (the software collective the paper keeps
  for calibration and recovery); nothing touches the device.
* low-bit path (G-Binary, G-Ternary): the workers' signs are packed
  (:func:`golden.encode_signs`) and written into the group's window, either
  element-major (one MemWr per line: whoever writes holds every worker's
  signs) or worker-major (contract section 5.2; a build with the
  ``hierarchy`` feature: each worker writes its own E/8-byte segment of
  every line with one MemWrPtl, :func:`write_worker_major`, and nobody
  transposes), read back (one MemRd per line, which the device answers
  through its read transform; the same W-bit output lanes for both
  layouts) and decoded
  (:func:`golden.decode`) into an update direction in [-1, 1]:
  SIGN lanes as they are, MARGIN lanes as ``a' / W``, COUNT lanes as
  ``(2 c' - W) / W`` (so a gated lane gives 0 in every format).

The device is reached through two objects, so that the same runtime drives
the transaction-level model and the RTL under cocotb:

* a *memory port* with ``async write_lines(addr, lines)`` (uint8 lines of
  shape ``(L, LINE_BYTES)``) and ``async read_lines(addr, count)``, and for
  worker-major writes ``async write_lines_partial(addr, lines, enables)``
  (one MemWrPtl per line, ``enables`` bool of shape ``(LINE_BYTES,)``);
* a :class:`~neuron_fabric.host.driver.Driver` for the control registers.

Traffic accounting
------------------
The runtime counts the bytes it moves per group, up (workers to memory) and
down (memory to workers), and the requests (``writes``: MemWr or MemWrPtl,
``reads``: MemRd).  A low-bit group moves its packed lines each way
(``ceil(n / E)`` lines of ``LINE_BYTES``; the last line's padding lanes
count too): bytes up are the bytes written, so worker-major writes move
the same bytes up as element-major ones, in W times as many requests (a
MemWrPtl carries a whole line of data on the link, with its byte enables,
so the link carries ``writes * LINE_BYTES`` data bytes up).  An FP32 group
is counted as an FP32 collective would move it, ``W * n * 4`` bytes up and
``n * 4`` down, in no device request.  The *payload ratio* compares the
bytes up with ``W * n * 4`` (what every worker sends), the measure of the
paper's Table 6 and of :mod:`neuron_fabric.models.traffic`: one bit per
element per worker for G-Binary, i.e. 1/32.  G-Ternary moves the same
sign lines (the device derives the zero gate on the read side), so its
measured ratio is G-Binary's, not the paper's 1.58-bit count.  The
*round-trip ratio* adds the bytes down to both sides.

Two levels
----------
:class:`TwoLevelRuntime` (:mod:`.two_level`) aggregates ``G * W``
workers through G level-1 devices of W workers each and one level-2 device
(contract section 5.4).

Example::

    dev = Device(TopParams())
    rt = await GradientRuntime.create(dev, Driver(dev, dev.params),
                                      {"backbone": 70_400, "head": 6_500},
                                      {"backbone": G_BINARY, "head": FP32})
    directions = await rt.step({"backbone": g_backbone, "head": g_head})  # (W, n) each

Modules
-------
``policy`` (a group's :class:`GroupPolicy`, window and traffic),
``engine`` (the one write, read and decode step every aggregator calls),
``gradient`` (:class:`GradientRuntime`) and ``two_level``
(:class:`TwoLevelRuntime`); every public name is importable from here.
"""

from neuron_fabric.host.runtime.engine import check_device, write_worker_major
from neuron_fabric.host.runtime.gradient import GradientRuntime
from neuron_fabric.host.runtime.policy import (FP32, G_BINARY, G_BINARY_MARGIN, G_TERNARY,
                                               G_TERNARY_ROTATING, GroupPolicy, GroupTraffic,
                                               GroupWindow, g_ternary_margin)
from neuron_fabric.host.runtime.two_level import TwoLevelRuntime

__all__ = ["GroupPolicy", "FP32", "G_BINARY", "G_TERNARY", "G_TERNARY_ROTATING", "G_BINARY_MARGIN",
           "g_ternary_margin", "GroupWindow", "GroupTraffic", "GradientRuntime",
           "write_worker_major", "check_device", "TwoLevelRuntime"]
