"""The gradient runtime over one device: :class:`GradientRuntime` owns named
parameter groups, lays out their windows, programs their regions and
aggregates each step (see :mod:`neuron_fabric.host.runtime`)."""

import asyncio

import numpy as np

from neuron_fabric.host import encoding as _encoding
from neuron_fabric.host.runtime.engine import (aggregate, align_view, check_device, check_policy,
                                               direction, program_view, reads_view, segments_of,
                                               view_window)
from neuron_fabric.host.runtime.policy import FP32, FP32_BYTES, GroupTraffic, GroupWindow
from neuron_fabric.models.traffic import packed_lines


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
    views : dict of str to GroupWindow, optional
        On a build with the packed view (contract section 6), each group's
        view window; a SIGN-format group reads its results there.
    """

    def __init__(self, port, driver, windows, policies, views=None):
        self._port = port
        self._driver = driver
        self._params = driver.params
        self._windows = dict(windows)
        self._views = dict(views or {})
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
        await check_device(driver)
        params = driver.params
        if set(policies) != set(groups):
            raise ValueError(f"policies must name exactly the groups {list(groups)}, "
                             f"not {list(policies)}")
        if base % params.line_bytes:
            raise ValueError(f"base {base:#x} is not aligned to a {params.line_bytes}-byte line")
        windows, addr = {}, base
        # a packed view reads a 4 KiB-aligned window; the views follow the groups
        align = align_view if driver.has_view else int
        for name, n in groups.items():
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
                raise ValueError(f"group {name!r} must have a positive element count, not {n!r}")
            lines = packed_lines(int(n), params.line_bits, params.workers)
            windows[name] = GroupWindow(name, int(n), align(addr), lines, params.line_bytes)
            addr = windows[name].limit
        views = {}
        for name, w in windows.items() if driver.has_view else ():
            views[name] = view_window(w, addr, params)
            addr = views[name].limit
        for name, policy in policies.items():
            check_policy(policy, port, driver)
        low_bit = [name for name, p in policies.items() if p.low_bit]
        if len(low_bit) > params.regions:
            raise ValueError(f"{len(low_bit)} low-bit groups need as many regions; "
                             f"the device has {params.regions}")
        rt = cls(port, driver, windows, {name: FP32 for name in groups}, views)
        for name in low_bit:
            await rt._apply(name, policies[name])
        return rt

    # -- policies ----------------------------------------------------------------

    @property
    def workers(self):
        """W, the worker count the device was built for."""
        return self._params.workers

    @property
    def windows(self):
        return dict(self._windows)

    @property
    def views(self):
        """Group name -> its packed view's window (empty on a build without
        the view, contract section 6)."""
        return dict(self._views)

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
        check_policy(policy, self._port, self._driver)
        async with self._lock:
            await self._apply(name, policy)

    async def _apply(self, name, policy):
        d, w = self._driver, self._windows[name]
        region = self._regions.get(name)
        if policy.low_bit and (region is None or d.has_view):
            # (a build with the view reprograms the region whole: it may turn
            # from a view to lanes or back)
            region = self._free_region() if region is None else region
            if reads_view(d, policy):
                await program_view(d, region, self._views[name], w, policy)
            else:
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
        fp32_up, fp32_down = workers * n * FP32_BYTES, n * FP32_BYTES
        if not policy.low_bit:
            self._traffic[name].add(fp32_up, fp32_down, fp32_up, fp32_down)
            return np.mean(g, axis=0, dtype=np.float32)
        turn = self._traffic[name].steps % policy.period if policy.rotate else 0
        lines = _encoding.encode_signs(np.roll(g, turn, axis=1) if turn else g,
                                       self._params.line_bits, policy.layout, policy.encoding)
        view = self._views[name] if reads_view(self._driver, policy) else None
        values, moved = await aggregate(self._port, w, lines, n, workers, policy.format,
                                        segments=segments_of(policy.layout, workers), view=view)
        self._traffic[name].add(moved.up, moved.down, fp32_up, fp32_down, moved.writes,
                                moved.reads)
        return direction(np.roll(values, -turn) if turn else values, policy.format, workers)

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
