"""Two levels of devices (contract section 5.4).

:class:`TwoLevelRuntime` aggregates ``G * W`` workers through G level-1 devices
of W workers each and one level-2 device (contract section 5.4): every
level-1 device returns exact sign counts (G-Binary, COUNT), which are
forwarded as contributor ``g``'s partial counts into a level-2 region
with a count operand and ``total = G * W``, whose read applies the group
policy's mode, format and gate to the exact count over all ``G * W``
workers.  Where the level-2 device has the packed view (contract section
6) and the policy's format is SIGN, the level-2 read goes through a view
of the count window: 2 bits an element instead of a 32-bit lane.
"""

import numpy as np

from neuron_fabric.contract.facts import COUNT_LANE_BITS, Format, Layout, Mode, Operand, count_geometry
from neuron_fabric.host import golden
from neuron_fabric.host.runtime.engine import (Moved, aggregate, check_device, check_policy,
                                               check_worker_major, direction, program_view,
                                               reads_view, segments_of, view_window)
from neuron_fabric.host.runtime.policy import FP32_BYTES, GroupPolicy, GroupTraffic, GroupWindow
from neuron_fabric.models.traffic import packed_lines


class TwoLevelRuntime:
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

    def __init__(self, level1, level2, elements, policy, operand, windows, view=None):
        self._level1 = list(level1)
        self._level2 = level2
        self.elements = elements
        self.policy = policy
        self.operand = operand
        self.workers = level1[0][1].params.workers
        self.groups = len(level1)
        self.total = self.groups * self.workers
        self._windows = windows
        self._view = view
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
            Line-aligned byte addresses of the windows on the two levels
            (``base2`` 4 KiB-aligned where the level-2 read is a packed
            view; the view's window follows the count window).
        region1, region2 : int
            The region each level's window gets.

        Raises
        ------
        ValueError
            For devices that disagree with their drivers or with each other,
            a policy or operand the devices would reject (G more than the
            operand's contributors, W past its count width, T past the
            total), worker-major writes without the feature or a port that
            writes partial lines, or a bad element count or address (a
            ``base2`` a packed view cannot read).
        """
        p1 = await _check_levels(level1, level2)
        if isinstance(elements, bool) or not isinstance(elements, (int, np.integer)) \
                or elements < 1:
            raise ValueError(f"elements must be a positive integer, not {elements!r}")
        if not policy.low_bit or policy.rotate:
            raise ValueError(f"a hierarchy aggregates G-Binary or G-Ternary without rotate, "
                             f"not {policy!r}")
        operand = _level2_operand(operand, len(level1), p1.workers, policy, level2[1])
        signs = GroupPolicy(Mode.GBINARY, Format.COUNT, layout=policy.layout)
        for port, driver in level1:
            check_policy(signs, port, driver)
        if policy.layout == Layout.WORKER_MAJOR:
            check_worker_major(*level2)
        n = int(elements)
        p2 = level2[1].params
        windows = (GroupWindow("level1", n, base1, packed_lines(n, p1.line_bits, p1.workers),
                               p1.line_bytes),
                   GroupWindow("level2", n, base2, -(-n // (p2.line_bits // COUNT_LANE_BITS)),
                               p2.line_bytes))
        view = view_window(windows[1], windows[1].limit, p2, operand) \
            if reads_view(level2[1], policy) else None
        h = cls(level1, level2, n, policy, operand, windows, view)
        await h._program(signs, region1, region2)
        return h

    async def _program(self, signs, region1, region2):
        """Program the level-1 sign regions and the level-2 count region."""
        (w1, w2), policy = self._windows, self.policy
        for _, driver in self._level1:
            await driver.set_region(region1, base=w1.base, limit=w1.limit, mode=Mode.GBINARY,
                                    **signs.cfg_fields())
        port2, driver2 = self._level2
        if self._view is not None:
            await program_view(driver2, region2, self._view, w2, policy, operand=self.operand,
                               total=self.total)
        else:
            await driver2.set_region(region2, base=w2.base, limit=w2.limit, mode=policy.mode,
                                     operand=self.operand, total=self.total,
                                     **policy.cfg_fields())
        if policy.layout == Layout.WORKER_MAJOR and self.groups < count_geometry(self.operand)[1]:
            # Contributors past G never write: their segments must hold 0.
            await port2.write_lines(w2.base, np.zeros((w2.lines, w2.line_bytes), dtype=np.uint8))

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
        level1 = []
        for i, (port, driver) in enumerate(self._level1):
            lines = golden.encode_signs(g[i * workers:(i + 1) * workers],
                                        driver.params.line_bits, layout)
            counts[i], moved = await aggregate(port, w1, lines, n, workers, Format.COUNT,
                                               segments=segments_of(layout, workers))
            level1.append(moved)
        moved = Moved(*map(sum, zip(*level1)))
        self._traffic["level1"].add(moved.up, moved.down, 0, 0, moved.writes, moved.reads)
        port2, driver2 = self._level2
        lines = golden.encode_counts(counts & ((1 << bits) - 1), driver2.params.line_bits,
                                     self.operand, layout)
        values, moved = await aggregate(port2, w2, lines, n, COUNT_LANE_BITS, self.policy.format,
                                        segments=segments_of(layout, contributors),
                                        writers=self.groups, view=self._view)
        self._traffic["level2"].add(moved.up, moved.down, 0, 0, moved.writes, moved.reads)
        return values

    async def step(self, grads):
        """One step: the update direction in [-1, 1] (float32, ``(n,)``) of the
        level-2 read, as :class:`GradientRuntime` decodes it with ``total``
        votes."""
        return direction(await self.aggregate(grads), self.policy.format, self.total)

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
        total.fp32_up = total.steps * self.total * self.elements * FP32_BYTES
        total.fp32_down = total.steps * self.elements * FP32_BYTES
        out["total"] = total
        return out


async def _check_levels(level1, level2):
    """Check every device against its driver and the level-1 devices against
    each other; return the level-1 parameters."""
    if not level1:
        raise ValueError("level1 must name at least one device")
    for _, driver in list(level1) + [level2]:
        await check_device(driver)
    p1 = level1[0][1].params
    for _, driver in level1:
        if (driver.params.line_bits, driver.params.workers) != (p1.line_bits, p1.workers):
            raise ValueError(f"level-1 devices differ: LINE_BITS={driver.params.line_bits}, "
                             f"W={driver.params.workers} beside LINE_BITS={p1.line_bits}, "
                             f"W={p1.workers}")
    return p1


def _level2_operand(operand, groups, workers, policy, driver2):
    """The level-2 count operand (by default COUNTS4 when it holds G counts of
    0..W, else COUNTS8), checked with the policy against contract section 5."""
    if operand is None:
        operand = Operand.COUNTS4 if workers <= 15 and groups <= 8 else Operand.COUNTS8
    bits, contributors = count_geometry(operand)
    if groups > contributors or workers >= 1 << bits:
        raise ValueError(f"{Operand(operand).name} holds {contributors} contributors of "
                         f"counts up to {(1 << bits) - 1}, not {groups} groups of W={workers}")
    golden.check_count_config(operand, groups * workers, policy.mode, policy.format,
                              policy.gate_kind, policy.period, policy.keep, policy.threshold,
                              policy.layout)
    if not driver2.profile.has("hierarchy"):
        raise ValueError(f"the level-2 device needs the hierarchy feature; profile "
                         f"{driver2.profile.name!r} has none")
    return operand
