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
:class:`Hierarchy` aggregates ``G * W`` workers through G level-1 devices
of W workers each and one level-2 device (contract section 5.4): every
level-1 device returns exact sign counts (G-Binary, COUNT), which are
forwarded as contributor ``g``'s partial counts into a level-2 region
with a count operand and ``total = G * W``, whose read applies the group
policy's mode, format and gate to the exact count over all ``G * W``
workers.

Example::

    dev = Device(TopParams())
    rt = await GradientRuntime.create(dev, Driver(dev, dev.params),
                                      {"backbone": 70_400, "head": 6_500},
                                      {"backbone": G_BINARY, "head": FP32})
    directions = await rt.step({"backbone": g_backbone, "head": g_head})  # (W, n) each
"""

import asyncio
from dataclasses import dataclass

import numpy as np

from neuron_fabric.host import encoding as _encoding
from neuron_fabric.host import golden
from neuron_fabric.contract.facts import COUNT_LANE_BITS, Format, GateKind, Layout, Mode, Operand, count_geometry
from neuron_fabric.models.traffic import packed_lines

__all__ = ["GroupPolicy", "FP32", "G_BINARY", "G_TERNARY", "G_TERNARY_ROTATING", "G_BINARY_MARGIN",
           "g_ternary_margin", "GroupWindow", "GroupTraffic", "GradientRuntime",
           "write_worker_major", "Hierarchy"]

_FP32_BYTES = 4


@dataclass(frozen=True)
class GroupPolicy:
    """How one parameter group is aggregated.

    ``mode`` BYPASS is the FP32 path (host mean); GBINARY and GTERNARY are
    low-bit paths through the device, read back in ``format`` with the
    G-Ternary gate ``gate_kind`` (PATTERN: keep when ``(element mod P) < K``;
    MARGIN: keep when ``|a| >= T``).  The other fields are ignored on the
    FP32 path.  IDENTITY returns the packed signs, not an aggregate, and is
    rejected.

    ``rotate`` (PATTERN gate only; ours, beyond the paper) turns the group's
    elements by ``s mod P`` lanes before they are packed at the group's step
    ``s``, and back after the read: the PATTERN gate follows the address, so
    without it the same elements (``j mod P >= K``) are zeroed at every step
    and never learn; with it each element is kept in about ``K`` of every
    ``P`` steps.  The hardware and the bytes moved are the same.

    ``layout`` (contract section 5.2) is how the group's signs are written:
    ELEMENT_MAJOR, one MemWr per line; WORKER_MAJOR, one MemWrPtl per
    worker and line, each worker's own segment (the device needs the
    ``hierarchy`` feature, and ``E = LINE_BITS / W`` must be at least 8).

    ``encoding`` (:mod:`neuron_fabric.host.encoding`) is how a zero
    gradient becomes a bit: ``"negative"`` (the contract's ``g > 0``, a zero
    votes negative), ``"abstain"`` (the writer balances an element's zeros
    so that they do not move its SIGN lane; element-major only) or
    ``"alternate"`` (worker ``k`` packs a zero as ``k mod 2``).  The
    device, its CFG and the bytes moved are the same for all three.
    """
    mode: Mode = Mode.BYPASS
    format: Format = Format.SIGN
    gate_kind: GateKind = GateKind.PATTERN
    period: int = 3
    keep: int = 2
    threshold: int = 0
    rotate: bool = False
    layout: Layout = Layout.ELEMENT_MAJOR
    encoding: str = _encoding.NEGATIVE

    def __post_init__(self):
        if self.mode not in tuple(Mode) or self.mode == Mode.IDENTITY:
            raise ValueError(f"mode must be BYPASS (FP32), GBINARY or GTERNARY, not {self.mode!r}")
        if self.rotate and not (self.mode == Mode.GTERNARY and self.gate_kind == GateKind.PATTERN):
            raise ValueError("rotate applies to the G-Ternary PATTERN gate only, not to "
                             f"mode {Mode(self.mode).name} with gate kind "
                             f"{GateKind(self.gate_kind).name}")

    @property
    def low_bit(self):
        """True when the group goes through the device."""
        return self.mode != Mode.BYPASS

    def check(self, workers, line_bits=None):
        """Raise ``ValueError`` if the device would reject this configuration,
        or (when ``line_bits`` is given) a worker's segment of a worker-major
        line is not whole bytes."""
        if self.layout not in tuple(Layout):
            raise ValueError(f"layout must be one of {[int(x) for x in Layout]}, "
                             f"not {self.layout!r}")
        if self.low_bit:
            golden.check_config(workers, self.mode, self.format, self.gate_kind,
                                self.period, self.keep, self.threshold)
            _encoding.check_encoding(self.encoding, self.layout)
        if self.low_bit and self.layout == Layout.WORKER_MAJOR and line_bits is not None \
                and line_bits // workers < 8:
            raise ValueError(f"worker-major writes need E = LINE_BITS / W >= 8 (whole-byte "
                             f"segments), not {line_bits}/{workers} = {line_bits // workers}")

    def cfg_fields(self):
        """Keyword arguments of :meth:`Driver.cfg_value` for this policy."""
        return dict(format=self.format, gate_kind=self.gate_kind, period=self.period,
                    keep=self.keep, threshold=self.threshold, layout=self.layout)


#: FP32 mean on the host.
FP32 = GroupPolicy()
#: G-Binary, SIGN output: the majority sign.
G_BINARY = GroupPolicy(Mode.GBINARY, Format.SIGN)
#: G-Ternary with the paper's fixed 2-of-3 PATTERN gate, SIGN output.
G_TERNARY = GroupPolicy(Mode.GTERNARY, Format.SIGN, GateKind.PATTERN, period=3, keep=2)
#: G-Ternary with the 2-of-3 gate turned by one lane a step (ours).
G_TERNARY_ROTATING = GroupPolicy(Mode.GTERNARY, Format.SIGN, GateKind.PATTERN, period=3, keep=2,
                                 rotate=True)
#: G-Binary, MARGIN output: direction ``a / W`` (the vote margin).
G_BINARY_MARGIN = GroupPolicy(Mode.GBINARY, Format.MARGIN)


def g_ternary_margin(threshold):
    """G-Ternary with the MARGIN gate ``|a| >= threshold``, SIGN output."""
    return GroupPolicy(Mode.GTERNARY, Format.SIGN, GateKind.MARGIN, threshold=threshold)


@dataclass(frozen=True)
class GroupWindow:
    """A group's place in device memory: bytes ``base <= addr < limit``."""
    name: str
    elements: int
    base: int
    lines: int
    line_bytes: int

    @property
    def limit(self):
        return self.base + self.lines * self.line_bytes


@dataclass
class GroupTraffic:
    """Bytes one group has moved, and what FP32 would have moved."""
    bytes_up: int = 0
    bytes_down: int = 0
    fp32_up: int = 0
    fp32_down: int = 0
    steps: int = 0
    writes: int = 0
    reads: int = 0

    def add(self, up, down, fp32_up, fp32_down, writes=0, reads=0):
        self.bytes_up += up
        self.bytes_down += down
        self.fp32_up += fp32_up
        self.fp32_down += fp32_down
        self.writes += writes
        self.reads += reads
        self.steps += 1

    def __iadd__(self, other):
        for f in ("bytes_up", "bytes_down", "fp32_up", "fp32_down", "steps", "writes", "reads"):
            setattr(self, f, getattr(self, f) + getattr(other, f))
        return self

    def payload_ratio(self):
        """Bytes up over FP32's bytes up (the paper's Table 6 measure)."""
        return self.bytes_up / self.fp32_up if self.fp32_up else float("nan")

    def round_trip_ratio(self):
        """Bytes up and down over FP32's up and down."""
        total = self.fp32_up + self.fp32_down
        return (self.bytes_up + self.bytes_down) / total if total else float("nan")


class GradientRuntime:
    """Aggregates named parameter groups through one device.

    Build it with :meth:`create` (it programs the device's region table).

    Parameters
    ----------
    port :
        Memory port: ``async write_lines(addr, lines)``, ``async read_lines(addr, count)``.
    driver : Driver
        Control-plane driver of the same device.
    windows : dict of str to GroupWindow
    policies : dict of str to GroupPolicy
    """

    def __init__(self, port, driver, windows, policies):
        self._port = port
        self._driver = driver
        self._params = driver.params
        self._windows = dict(windows)
        self._policies = dict(policies)
        self._regions = {}
        self._stranded = set()
        self._traffic = {name: GroupTraffic() for name in windows}
        self._lock = asyncio.Lock()

    # -- construction ------------------------------------------------------------

    @classmethod
    async def create(cls, port, driver, groups, policies, base=0):
        """Lay the groups out from byte address ``base`` and program the regions.

        Parameters
        ----------
        groups : dict of str to int
            Group name -> element count, in layout order.
        policies : dict of str to GroupPolicy
            One policy per group.

        Raises
        ------
        ValueError
            For a device whose CAPS disagree with ``driver.params``, a group
            without elements, policies that do not name exactly the groups,
            a policy the device would reject, more low-bit groups than
            regions, or windows outside the address space.
        """
        await cls._check_device(driver)
        params = driver.params
        if set(policies) != set(groups):
            raise ValueError(f"policies must name exactly the groups {list(groups)}, "
                             f"not {list(policies)}")
        if base % params.line_bytes:
            raise ValueError(f"base {base:#x} is not aligned to a {params.line_bytes}-byte line")
        windows, addr = {}, base
        for name, n in groups.items():
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
                raise ValueError(f"group {name!r} must have a positive element count, not {n!r}")
            lines = packed_lines(int(n), params.line_bits, params.workers)
            windows[name] = GroupWindow(name, int(n), addr, lines, params.line_bytes)
            addr = windows[name].limit
        for name, policy in policies.items():
            _check_policy(policy, port, driver)
        low_bit = [name for name, p in policies.items() if p.low_bit]
        if len(low_bit) > params.regions:
            raise ValueError(f"{len(low_bit)} low-bit groups need as many regions; "
                             f"the device has {params.regions}")
        rt = cls(port, driver, windows, {name: FP32 for name in groups})
        for name in low_bit:
            await rt._apply(name, policies[name])
        return rt

    @staticmethod
    async def _check_device(driver):
        caps0 = await driver.read("CAPS0")
        p = driver.params
        found = (caps0 & 0xFFFF, (caps0 >> 16) & 0xFF)
        if found != (p.line_bits, p.workers):
            raise ValueError(f"the device is built for LINE_BITS={found[0]}, W={found[1]}; "
                             f"the driver expects LINE_BITS={p.line_bits}, W={p.workers}")

    # -- policies ----------------------------------------------------------------

    @property
    def workers(self):
        """W, the worker count the device was built for."""
        return self._params.workers

    @property
    def windows(self):
        return dict(self._windows)

    @property
    def policies(self):
        return dict(self._policies)

    @property
    def regions(self):
        """Group name -> region index, for groups on a low-bit path."""
        return dict(self._regions)

    async def set_policy(self, name, policy):
        """Change group ``name``'s aggregation between steps.

        A group entering a low-bit path takes a free region (window, then
        CFG); a low-bit group changing mode gets its CFG rewritten; a group
        returning to FP32 frees its region.  Waits for a running step, so a
        step never mixes modes for a group.
        """
        self._check_name(name)
        _check_policy(policy, self._port, self._driver)
        async with self._lock:
            await self._apply(name, policy)

    async def _apply(self, name, policy):
        d, w = self._driver, self._windows[name]
        region = self._regions.get(name)
        if policy.low_bit and region is None:
            region = self._free_region()
            await d.set_region(region, base=w.base, limit=w.limit, mode=policy.mode,
                               **policy.cfg_fields())
            self._regions[name] = region
        elif policy.low_bit:
            await d.write(f"REGION{region}_CFG",
                          d.cfg_value(policy.mode, enable=1, **policy.cfg_fields()))
        elif region is not None:
            await d.clear_region(region)
            del self._regions[name]
        self._policies[name] = policy

    def host_fp32(self, name):
        """Put group ``name`` on the host FP32 path without touching the device.

        For a control-plane fault: the group's region (if any) could not be
        released, so it is left as it is and never handed out again, and the
        group's next steps are the host mean, which needs no device.
        """
        self._check_name(name)
        region = self._regions.pop(name, None)
        if region is not None:
            self._stranded.add(region)
        self._policies[name] = FP32

    def _free_region(self):
        taken = set(self._regions.values()) | self._stranded
        for r in range(self._params.regions):
            if r not in taken:
                return r
        raise ValueError(f"no free region: all {self._params.regions} are taken by "
                         f"{sorted(self._regions)}")

    async def close(self):
        """Disable the regions this runtime programmed."""
        async with self._lock:
            for name in list(self._regions):
                await self._apply(name, FP32)

    # -- one step ------------------------------------------------------------------

    def _check_name(self, name):
        if name not in self._windows:
            raise ValueError(f"unknown group {name!r}; known: {list(self._windows)}")

    def _checked(self, name, grads):
        """``grads`` as a float array of shape (W, n), or a ValueError naming the problem."""
        self._check_name(name)
        g = np.asarray(grads)
        w = self._windows[name]
        if g.ndim != 2:
            raise ValueError(f"group {name!r}: gradients must have shape (W, n), not {g.shape}")
        if g.shape[0] != self.workers:
            raise ValueError(f"group {name!r}: {g.shape[0]} workers, but the device is "
                             f"built for W={self.workers}")
        capacity = w.lines * (self._params.line_bits // self.workers)
        if g.shape[1] > capacity:
            raise ValueError(f"group {name!r}: {g.shape[1]} elements do not fit its window "
                             f"of {w.lines} lines ({capacity} elements)")
        if g.shape[1] != w.elements:
            raise ValueError(f"group {name!r} has {w.elements} elements, not {g.shape[1]}")
        if not np.issubdtype(g.dtype, np.floating):
            raise ValueError(f"group {name!r}: gradients must be floating point, not {g.dtype}")
        # One float sum finds any NaN or infinity; the element scan runs only
        # when the sum is not finite (an overflow of finite values is not an error).
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.sum(g)
        if not np.isfinite(total) and not np.isfinite(g).all():
            bad = np.argwhere(~np.isfinite(g))[0]
            raise ValueError(f"group {name!r}: non-finite gradient {g[tuple(bad)]} "
                             f"at worker {bad[0]}, element {bad[1]}")
        return g

    async def step(self, grads):
        """Aggregate one step's gradients.

        Parameters
        ----------
        grads : dict of str to array of shape (W, n)
            Per-worker gradients of some or all groups.

        Returns
        -------
        dict of str to float32 array of shape (n,)
            The update direction of each group given: the FP32 mean, or the
            decoded low-bit aggregate.

        Raises
        ------
        ValueError
            Before anything is written, for an unknown group, a worker count
            other than the device's W, an element count other than the
            group's, or a non-finite gradient.
        """
        checked = {name: self._checked(name, g) for name, g in grads.items()}
        async with self._lock:
            return {name: await self._aggregate(name, g) for name, g in checked.items()}

    async def _aggregate(self, name, g):
        policy, w = self._policies[name], self._windows[name]
        n, workers = w.elements, self.workers
        fp32_up, fp32_down = workers * n * _FP32_BYTES, n * _FP32_BYTES
        if not policy.low_bit:
            self._traffic[name].add(fp32_up, fp32_down, fp32_up, fp32_down)
            return np.mean(g, axis=0, dtype=np.float32)
        turn = self._traffic[name].steps % policy.period if policy.rotate else 0
        lines = _encoding.encode_signs(np.roll(g, turn, axis=1) if turn else g,
                                       self._params.line_bits, policy.layout, policy.encoding)
        up, writes = await _write_signs(self._port, w.base, lines, workers, policy.layout)
        resp = await self._port.read_lines(w.base, w.lines)
        self._traffic[name].add(up, w.lines * w.line_bytes, fp32_up, fp32_down, writes, w.lines)
        values = golden.decode(resp, workers, policy.format, n)
        return _direction(np.roll(values, -turn) if turn else values, policy.format, workers)

    # -- accounting ----------------------------------------------------------------

    def traffic(self):
        """Group name -> :class:`GroupTraffic` so far (copies), plus ``"total"``."""
        out = {name: GroupTraffic(**vars(t)) for name, t in self._traffic.items()}
        total = GroupTraffic()
        for t in out.values():
            total += t
        total.steps = max((t.steps for t in out.values()), default=0)
        out["total"] = total
        return out


def _direction(values, fmt, total):
    """Update direction in [-1, 1] from output values of ``total`` votes:
    SIGN as it is, MARGIN ``a' / total``, COUNT ``(2 c' - total) / total``."""
    if fmt == Format.SIGN:
        return values.astype(np.float32)
    if fmt == Format.MARGIN:
        return values.astype(np.float32) / np.float32(total)
    return (2 * values.astype(np.float32) - total) / np.float32(total)


def _check_policy(policy, port, driver):
    """``policy.check`` for the driver's device; a worker-major policy also
    needs the ``hierarchy`` feature and a port that writes partial lines."""
    params = driver.params
    policy.check(params.workers, params.line_bits)
    if policy.low_bit and policy.layout == Layout.WORKER_MAJOR:
        _check_worker_major(port, driver)


def _check_worker_major(port, driver):
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


async def _write_signs(port, addr, lines, workers, layout):
    """Sign lines by MemWr (element-major) or per worker (worker-major):
    ``(bytes written, write requests)``."""
    if layout == Layout.WORKER_MAJOR:
        return await write_worker_major(port, addr, lines, workers)
    await port.write_lines(addr, lines)
    return lines.size, len(lines)


class Hierarchy:
    """Aggregates ``G * W`` workers' signs through two levels of devices
    (contract section 5.4).

    Build it with :meth:`create` (it programs one region on every device).
    A step writes each group's signs into its level-1 device's G-Binary
    COUNT region and reads the exact counts back (0..W in W-bit lanes);
    forwards them as contributor ``g``'s partial counts into the level-2
    device's count region (``total = G * W``); and reads that region in
    the policy's mode, format and gate: what sections 2 and 5.3 give over
    all ``G * W`` workers.  Both levels are written in the policy's
    ``layout``: worker-major, every worker (level 1) and every level-1
    group (level 2) writes its own segment by MemWrPtl; element-major, one
    MemWr per line of what the writer gathered.

    Members
    -------
    groups, workers, elements, operand, total, policy
        G, W, n, the level-2 operand, ``G * W`` and the :class:`GroupPolicy`.
    """

    def __init__(self, level1, level2, elements, policy, operand, windows):
        self._level1 = list(level1)
        self._level2 = level2
        self.elements = elements
        self.policy = policy
        self.operand = operand
        self.workers = level1[0][1].params.workers
        self.groups = len(level1)
        self.total = self.groups * self.workers
        self._windows = windows
        self._traffic = {"level1": GroupTraffic(), "level2": GroupTraffic()}

    @classmethod
    async def create(cls, level1, level2, elements, policy, *, operand=None, base1=0, base2=0,
                     region1=0, region2=0):
        """Check the devices and the policy, then program the regions.

        Parameters
        ----------
        level1 : sequence of (port, Driver)
            The G level-1 devices, all with the same LINE_BITS and W.
        level2 : (port, Driver)
            The level-2 device; its build needs the ``hierarchy`` feature.
        elements : int
            n, the elements aggregated per step.
        policy : GroupPolicy
            G-Binary or G-Ternary, applied by the level-2 read; ``layout``
            is the layout of both levels' writes; ``rotate`` is not offered.
        operand : Operand, optional
            The level-2 count operand; by default COUNTS4 when a level-1
            count (0..W) fits 4 bits and G <= 8, else COUNTS8.
        base1, base2 : int
            Line-aligned byte addresses of the windows on the two levels.
        region1, region2 : int
            The region each level's window gets.

        Raises
        ------
        ValueError
            For devices that disagree with their drivers or with each other,
            a policy or operand the devices would reject (G more than the
            operand's contributors, W past its count width, T past the
            total), worker-major writes without the feature or a port that
            writes partial lines, or a bad element count or address.
        """
        if not level1:
            raise ValueError("level1 must name at least one device")
        for _, driver in list(level1) + [level2]:
            await GradientRuntime._check_device(driver)
        p1 = level1[0][1].params
        for _, driver in level1:
            if (driver.params.line_bits, driver.params.workers) != (p1.line_bits, p1.workers):
                raise ValueError(f"level-1 devices differ: LINE_BITS={driver.params.line_bits}, "
                                 f"W={driver.params.workers} beside LINE_BITS={p1.line_bits}, "
                                 f"W={p1.workers}")
        if isinstance(elements, bool) or not isinstance(elements, (int, np.integer)) \
                or elements < 1:
            raise ValueError(f"elements must be a positive integer, not {elements!r}")
        if not policy.low_bit or policy.rotate:
            raise ValueError(f"a hierarchy aggregates G-Binary or G-Ternary without rotate, "
                             f"not {policy!r}")
        groups, workers = len(level1), p1.workers
        if operand is None:
            operand = Operand.COUNTS4 if workers <= 15 and groups <= 8 else Operand.COUNTS8
        bits, contributors = count_geometry(operand)
        if groups > contributors or workers >= 1 << bits:
            raise ValueError(f"{Operand(operand).name} holds {contributors} contributors of "
                             f"counts up to {(1 << bits) - 1}, not {groups} groups of W={workers}")
        golden.check_count_config(operand, groups * workers, policy.mode, policy.format,
                                  policy.gate_kind, policy.period, policy.keep, policy.threshold,
                                  policy.layout)
        if not level2[1].profile.has("hierarchy"):
            raise ValueError(f"the level-2 device needs the hierarchy feature; profile "
                             f"{level2[1].profile.name!r} has none")
        signs = GroupPolicy(Mode.GBINARY, Format.COUNT, layout=policy.layout)
        for port, driver in level1:
            _check_policy(signs, port, driver)
        if policy.layout == Layout.WORKER_MAJOR:
            _check_worker_major(*level2)
        n = int(elements)
        p2 = level2[1].params
        windows = (GroupWindow("level1", n, base1, packed_lines(n, p1.line_bits, workers),
                               p1.line_bytes),
                   GroupWindow("level2", n, base2, -(-n // (p2.line_bits // COUNT_LANE_BITS)),
                               p2.line_bytes))
        h = cls(level1, level2, n, policy, operand, windows)
        w1, w2 = windows
        for _, driver in level1:
            await driver.set_region(region1, base=w1.base, limit=w1.limit, mode=Mode.GBINARY,
                                    **signs.cfg_fields())
        await level2[1].set_region(region2, base=w2.base, limit=w2.limit, mode=policy.mode,
                                   operand=operand, total=h.total, **policy.cfg_fields())
        if policy.layout == Layout.WORKER_MAJOR and groups < contributors:
            # Contributors past G never write: their segments must hold 0.
            await level2[0].write_lines(base2, np.zeros((windows[1].lines, p2.line_bytes),
                                                         dtype=np.uint8))
        return h

    def _checked(self, grads):
        g = np.asarray(grads)
        want = (self.total, self.elements)
        if g.shape != want or not np.issubdtype(g.dtype, np.floating):
            raise ValueError(f"gradients must be floating point of shape (G * W, n) = {want}, "
                             f"not {g.dtype} of shape {g.shape}")
        if not np.isfinite(g).all():
            bad = np.argwhere(~np.isfinite(g))[0]
            raise ValueError(f"non-finite gradient {g[tuple(bad)]} at worker {bad[0]}, "
                             f"element {bad[1]}")
        return g

    async def aggregate(self, grads):
        """One step: the level-2 read of the workers' gradients ``(G * W, n)``,
        decoded in the policy's format (int32 per element: ``c'``, ``a'`` or
        ``sgn(a')`` over all ``G * W`` workers)."""
        g = self._checked(grads)
        w1, w2 = self._windows
        layout, workers, n = self.policy.layout, self.workers, self.elements
        bits, contributors = count_geometry(self.operand)
        counts = np.empty((self.groups, n), dtype=np.int64)
        up = writes = 0
        for i, (port, driver) in enumerate(self._level1):
            lines = golden.encode_signs(g[i * workers:(i + 1) * workers],
                                        driver.params.line_bits, layout)
            moved, requests = await _write_signs(port, w1.base, lines, workers, layout)
            up, writes = up + moved, writes + requests
            resp = await port.read_lines(w1.base, w1.lines)
            counts[i] = golden.decode(resp, workers, Format.COUNT, n)
        down = self.groups * w1.lines * w1.line_bytes
        self._traffic["level1"].add(up, down, 0, 0, writes, self.groups * w1.lines)
        port2, driver2 = self._level2
        lines = golden.encode_counts(counts & ((1 << bits) - 1), driver2.params.line_bits,
                                     self.operand, layout)
        if layout == Layout.WORKER_MAJOR:
            up, writes = await write_worker_major(port2, w2.base, lines, contributors,
                                                  self.groups)
        else:
            await port2.write_lines(w2.base, lines)
            up, writes = lines.size, len(lines)
        resp = await port2.read_lines(w2.base, w2.lines)
        self._traffic["level2"].add(up, w2.lines * w2.line_bytes, 0, 0, writes, w2.lines)
        return golden.decode_counts(resp, self.policy.format, n)

    async def step(self, grads):
        """One step: the update direction in [-1, 1] (float32, ``(n,)``) of the
        level-2 read, as :class:`GradientRuntime` decodes it with ``total``
        votes."""
        return _direction(await self.aggregate(grads), self.policy.format, self.total)

    def traffic(self):
        """``{"level1", "level2", "total"}`` -> :class:`GroupTraffic` (copies).
        Level 1 sums its G devices (bytes up: the signs written; down: the
        counts read); level 2 counts the forwarded counts (up) and its read
        (down); only ``total`` holds what an FP32 collective of ``G * W``
        workers would move (``G * W * n * 4`` up, ``n * 4`` down a step)."""
        out = {name: GroupTraffic(**vars(t)) for name, t in self._traffic.items()}
        total = GroupTraffic()
        total += out["level1"]
        total += out["level2"]
        total.steps = out["level1"].steps
        total.fp32_up = total.steps * self.total * self.elements * _FP32_BYTES
        total.fp32_down = total.steps * self.elements * _FP32_BYTES
        out["total"] = total
        return out
