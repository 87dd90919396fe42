"""The aggregation engine: the one write -> read -> decode step that every
aggregator calls -- :class:`~.gradient.GradientRuntime` (a group's window on
one device), :class:`~.two_level.TwoLevelRuntime` (each level) and the DDP
hook (:mod:`neuron_fabric.host.ddp.hook`, through its replicas of the
controllers) -- so that a change of the contract lands here once.

* :func:`aggregate`: write lines into a window (:func:`write_lines`:
  whole lines by MemWr, or each owner its segment by MemWrPtl), read the
  results back (:func:`read_results`) and decode them
  (:func:`decode_lanes`); :func:`direction` turns the values into an
  update direction.
* The read forms: ``lane_bits``-bit output lanes (W bits for sign lines,
  contract section 2; 32 for count lines, section 5.3), or the 2-bit
  results of a packed view (section 6: :func:`reads_view`,
  :func:`view_window`, :func:`program_view`).  A new read form goes into
  :func:`read_results` (how its response lines decode) and beside
  :func:`reads_view` (when a group takes it); its callers are unchanged.
* The checks of a device and a policy before any of it
  (:func:`check_device`, :func:`check_policy`).
"""
from typing import NamedTuple

import numpy as np

from neuron_fabric.contract.facts import Format, Layout, Operand, view_beats
from neuron_fabric.contract.regmap import SOURCE_ALIGN_BITS
from neuron_fabric.host.golden import unpack_view
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


def direction(values, fmt, total, offset=0):
    """Update direction in [-1, 1] (float32) from output values of ``total``
    votes: SIGN as it is, MARGIN ``a' / total``, COUNT ``(2 (c' - offset) -
    total) / total``, where ``offset`` is the positive votes that are no
    worker's (spare slots; 0 without).  Float32 ``values`` are turned in
    place."""
    v = np.asarray(values).astype(np.float32, copy=False)
    if fmt == Format.MARGIN:
        v /= np.float32(total)
    elif fmt == Format.COUNT:
        if offset:
            v -= np.float32(offset)
        v *= np.float32(2)
        v -= np.float32(total)
        v /= np.float32(total)
    return v


#: numpy type of a whole-byte lane, by width (8-bit COUNT lanes are read
#: unsigned; the counts of wider lanes never reach their sign bit, so one
#: signed type reads every format).
_WHOLE_LANES = {8: np.int8, 16: np.int16, 32: np.int32}


def decode_lanes(resp, lane_bits, fmt, n, dtype=np.int32):
    """The first ``n`` output lanes of the response lines ``resp`` (uint8,
    ``(L, LINE_BYTES)``) as a new array of ``dtype``: lanes of ``lane_bits``
    (4, 8, 16: a W-worker read; 32: a count-operand read), COUNT unsigned,
    MARGIN and SIGN in two's complement (what ``golden.decode`` and
    ``golden.decode_counts`` define).  The conversions run in numpy views of
    the bytes: no Python loop per lane, and no integer step when ``dtype`` is
    float32."""
    signed = fmt != Format.COUNT
    flat = np.ascontiguousarray(resp).reshape(-1)
    if lane_bits in _WHOLE_LANES:
        kind = np.uint8 if lane_bits == 8 and not signed else _WHOLE_LANES[lane_bits]
        return flat.view(kind)[:n].astype(dtype)
    if lane_bits == 4:
        # Low nibble, then high nibble of each byte, into alternate places;
        # signed lanes by arithmetic shifts of the byte as int8.
        b = flat[:(n + 1) // 2]
        if signed:
            b = b.view(np.int8)
        out = np.empty((b.size, 2), dtype=dtype)
        out[:, 0] = (b << 4) >> 4 if signed else b & 0x0F
        out[:, 1] = b >> 4
        return out.reshape(-1)[:n]
    raise ValueError(f"lane_bits must be 4, 8, 16 or 32, not {lane_bits!r}")


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


async def write_lines(port, addr, lines, segments=None, writers=None):
    """Store ``lines`` from ``addr``: whole lines by MemWr (``segments``
    None), or each of the first ``writers`` of ``segments`` owners its own
    segment by MemWrPtl (:func:`write_worker_major`).  Returns ``(bytes
    written, write requests)``."""
    if segments is not None:
        return await write_worker_major(port, addr, lines, segments, writers)
    await port.write_lines(addr, lines)
    return lines.size, len(lines)


def segments_of(layout, owners):
    """The ``segments`` of :func:`write_lines` for lines of ``layout`` that
    ``owners`` write: each its own segment (worker-major), or whole lines."""
    return owners if layout == Layout.WORKER_MAJOR else None


class Moved(NamedTuple):
    """What one :func:`aggregate` moved: bytes up (written) and down (read),
    write and read requests."""
    up: int
    down: int
    writes: int
    reads: int


async def aggregate(port, window, lines, n, lane_bits, fmt, *, segments=None, writers=None,
                    view=None, dtype=np.int32):
    """The one aggregation step: write ``lines`` into ``window``
    (:func:`write_lines`), read the first ``n`` results back and decode them
    (:func:`read_results`: ``lane_bits``-bit lanes in ``fmt``, or the
    packed ``view`` of the window).  Returns ``(values, Moved)``."""
    up, writes = await write_lines(port, window.base, lines, segments, writers)
    values, down, reads = await read_results(
        port, window, view, n, lambda resp: decode_lanes(resp, lane_bits, fmt, n, dtype))
    return values, Moved(up, down, writes, reads)


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
