"""What the gradient runtime asks of a device and its memory port: the device
checks, the sign writes (element-major, or worker-major by MemWrPtl), the
results read back (W-bit lanes, or 2-bit results through a packed view,
contract section 6) and the update direction decoded from them."""

import numpy as np

from neuron_fabric.contract.facts import Format, Layout, Operand, view_beats
from neuron_fabric.contract.regmap import SOURCE_ALIGN_BITS
from neuron_fabric.host.golden.packed import unpack_view
from neuron_fabric.host.runtime.policy import GroupWindow

#: Alignment of a window a packed view reads (its SOURCE, contract section 6.1).
VIEW_ALIGN = 1 << SOURCE_ALIGN_BITS


async def check_device(driver):
    """Raise ``ValueError`` unless the device's CAPS0 names the LINE_BITS and W
    of ``driver.params``."""
    caps0 = await driver.read("CAPS0")
    p = driver.params
    found = (caps0 & 0xFFFF, (caps0 >> 16) & 0xFF)
    if found != (p.line_bits, p.workers):
        raise ValueError(f"the device is built for LINE_BITS={found[0]}, W={found[1]}; "
                         f"the driver expects LINE_BITS={p.line_bits}, W={p.workers}")


def direction(values, fmt, total):
    """Update direction in [-1, 1] from output values of ``total`` votes:
    SIGN as it is, MARGIN ``a' / total``, COUNT ``(2 c' - total) / total``."""
    if fmt == Format.SIGN:
        return values.astype(np.float32)
    if fmt == Format.MARGIN:
        return values.astype(np.float32) / np.float32(total)
    return (2 * values.astype(np.float32) - total) / np.float32(total)


def check_policy(policy, port, driver):
    """``policy.check`` for the driver's device; a worker-major policy also
    needs the ``hierarchy`` feature and a port that writes partial lines."""
    params = driver.params
    policy.check(params.workers, params.line_bits)
    if policy.low_bit and policy.layout == Layout.WORKER_MAJOR:
        check_worker_major(port, driver)


def check_worker_major(port, driver):
    if not driver.profile.has("hierarchy"):
        raise ValueError(f"worker-major writes need a build with the hierarchy feature; "
                         f"profile {driver.profile.name!r} has none")
    if not callable(getattr(port, "write_lines_partial", None)):
        raise ValueError(f"worker-major writes need a memory port with write_lines_partial, "
                         f"not {type(port).__name__}")


async def write_worker_major(port, addr, lines, segments, writers=None):
    """Write worker-major ``lines`` from ``addr`` as their ``segments`` owners do:
    owner ``k`` writes bytes ``[k*S, (k+1)*S)`` of every line (``S =
    LINE_BYTES / segments``) with one MemWrPtl per line, carrying only its
    own bytes (the rest of its data beat is 0, and not enabled).  Only the
    first ``writers`` owners write (all by default).

    Returns ``(bytes written, MemWrPtl requests)``: ``writers * L * S`` and
    ``writers * L``.
    """
    n_lines, line_bytes = lines.shape
    size = line_bytes // segments
    writers = segments if writers is None else writers
    for k in range(writers):
        own = slice(k * size, (k + 1) * size)
        enables = np.zeros(line_bytes, dtype=bool)
        enables[own] = True
        data = np.zeros_like(lines)
        data[:, own] = lines[:, own]
        await port.write_lines_partial(addr, data, enables)
    return writers * n_lines * size, writers * n_lines


async def write_signs(port, addr, lines, workers, layout):
    """Sign lines by MemWr (element-major) or per worker (worker-major):
    ``(bytes written, write requests)``."""
    if layout == Layout.WORKER_MAJOR:
        return await write_worker_major(port, addr, lines, workers)
    await port.write_lines(addr, lines)
    return lines.size, len(lines)


def reads_view(driver, policy):
    """Whether a group of ``policy`` reads its results through a packed view
    (contract section 6): on a build that has the view, for a low-bit policy
    in the SIGN format, whose results the view returns unchanged (a view
    returns ``sgn(a')`` whatever the format, so COUNT and MARGIN read lanes)."""
    return driver.has_view and policy.low_bit and policy.format == Format.SIGN


def align_view(addr):
    """``addr`` rounded up to :data:`VIEW_ALIGN`."""
    return -(-addr // VIEW_ALIGN) * VIEW_ALIGN


def view_window(window, base, params, operand=Operand.SIGNS):
    """The window of a packed view of ``window``'s lines, from byte ``base``:
    one view line for each ``B`` source lines (:func:`.facts.view_beats`)."""
    beats = view_beats(params.line_bits, params.workers, operand)
    return GroupWindow(f"{window.name}.view", window.elements, base, -(-window.lines // beats),
                       params.line_bytes)


async def program_view(driver, region, view, window, policy, **fields):
    """Region ``region`` as the packed view ``view`` of ``window``'s lines,
    under ``policy`` and the CFG ``fields`` it does not hold (``operand``,
    ``total``)."""
    if window.base % VIEW_ALIGN:
        raise ValueError(f"a packed view reads a window aligned to {VIEW_ALIGN} bytes, "
                         f"not one at {window.base:#x}")
    await driver.set_view(region, base=view.base, limit=view.limit, source=window.base,
                          mode=policy.mode, **policy.cfg_fields(), **fields)


async def read_results(port, window, view, n, decode):
    """The first ``n`` results of ``window``: its lanes read and ``decode``d
    (``view`` None), or the 2-bit results of the packed ``view`` of it (the
    SIGN format's values).  Returns ``(values, bytes read, read requests)``."""
    w = window if view is None else view
    resp = await port.read_lines(w.base, w.lines)
    values = decode(resp) if view is None else unpack_view(resp, n)
    return values, w.lines * w.line_bytes, w.lines
