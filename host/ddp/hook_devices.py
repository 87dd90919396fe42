"""The devices, region tables and pools behind the DDP hook (see :mod:`.hook`).

:func:`_sync` drives a coroutine of the untimed device model or driver to
completion; :class:`_Regions` is a controller's region table as the control
plane sees a runtime (level 1, and level 2 with several controllers); the
mixin :class:`_FabricDevices` builds a rank's devices, windows and pools
(:meth:`~_FabricDevices._setup_devices`, :meth:`~_FabricDevices._setup_pools`)
and releases them (:meth:`~_FabricDevices.close`).
"""

import socket
from dataclasses import replace

import torch.distributed as dist

from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.contract.facts import Format, Layout, Mode, Operand, TopParams, count_geometry
from neuron_fabric.contract.regmap import count_total_max
from neuron_fabric.host.runtime import FP32, GradientRuntime, GroupPolicy
from neuron_fabric.host.ddp.pool import GatherPool, ShmPool, Window


def _sync(coro):
    """Run a coroutine of the device model or the driver, which never waits
    on anything, to completion in this thread."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("a device call suspended; the hook drives an untimed model only")


class _Regions:
    """The controller's region table for the groups, as the control plane sees
    a runtime (``windows``, ``policies``, ``regions``, ``set_policy``,
    ``host_fp32``): level 1 through a :class:`GradientRuntime`; with several
    controllers, level-1 regions read exact counts (G-Binary COUNT) and the
    group's mode goes to its level-2 region."""

    def __init__(self, rt1, driver2, windows2, layout, operand, total):
        self.rt1 = rt1
        self.driver2 = driver2
        self.windows2 = windows2
        self.layout = layout
        self.operand = operand
        self.total = total
        self._policies = {g: FP32 for g in rt1.windows}
        self._regions2 = {}
        self._stranded2 = set()

    @property
    def windows(self):
        return self.rt1.windows

    @property
    def policies(self):
        return dict(self._policies)

    @property
    def regions(self):
        return self.rt1.regions if self.driver2 is None else dict(self._regions2)

    def _level1(self, policy):
        if self.driver2 is None or not policy.low_bit:
            return policy
        return GroupPolicy(Mode.GBINARY, Format.COUNT, layout=self.layout)

    async def set_policy(self, name, policy):
        policy = replace(policy, layout=self.layout) if policy.low_bit else FP32
        await self.rt1.set_policy(name, self._level1(policy))
        if self.driver2 is not None:
            await self._set_level2(name, policy)
        self._policies[name] = policy

    async def _set_level2(self, name, policy):
        d, (base, limit) = self.driver2, self.windows2[name]
        region = self._regions2.get(name)
        fields = dict(format=policy.format, gate_kind=policy.gate_kind, period=policy.period,
                      keep=policy.keep, threshold=policy.threshold,
                      layout=Layout.WORKER_MAJOR, operand=self.operand, total=self.total)
        if policy.low_bit and region is None:
            taken = set(self._regions2.values()) | self._stranded2
            region = next(r for r in range(d.params.regions) if r not in taken)
            await d.set_region(region, base=base, limit=limit, mode=policy.mode, **fields)
            self._regions2[name] = region
        elif policy.low_bit:
            await d.write(f"REGION{region}_CFG", d.cfg_value(policy.mode, enable=1, **fields))
        elif region is not None:
            await d.clear_region(region)
            del self._regions2[name]

    def host_fp32(self, name):
        self.rt1.host_fp32(name)
        region = self._regions2.pop(name, None)
        if region is not None:
            self._stranded2.add(region)
        self._policies[name] = FP32


class _FabricDevices:
    """:class:`~.hook.FabricState`'s devices, region tables and pools."""

    def _setup_devices(self, capacity):
        c = self.config
        regions = max(c.regions, len(self.groups))
        self.params1 = TopParams(line_bits=c.line_bits, workers=self.workers, regions=regions)
        self.dev1 = Device(self.params1)
        self.driver1 = Driver(self.dev1, self.params1)
        for g, p in self.policies.items():
            p.check(self.workers, c.line_bits)
        rt1 = _sync(GradientRuntime.create(self.dev1, self.driver1, capacity,
                                           {g: FP32 for g in capacity}))
        self.windows1 = {g: (w.base, w.lines) for g, w in rt1.windows.items()}
        self.size1 = max(w.limit for w in rt1.windows.values())
        self.dev2 = self.driver2 = None
        self.windows2, self.size2 = {}, 0
        self.operand, self.total = None, self.workers
        if self.controllers > 1:
            g, w = self.controllers, self.workers
            self.operand = Operand.COUNTS4 if w <= 15 and g <= 8 else Operand.COUNTS8
            bits, contributors = count_geometry(self.operand)
            if g > contributors:
                raise ValueError(f"{g} controllers of W={w}: a level-2 count line holds at most "
                                 f"{contributors} contributors ({Operand(self.operand).name})")
            self.total = g * w
            if self.total > count_total_max(self.operand):
                raise ValueError(f"total {self.total} exceeds {Operand(self.operand).name}")
            self.params2 = TopParams(line_bits=c.line_bits, workers=w, regions=regions)
            self.dev2 = Device(self.params2)
            self.driver2 = Driver(self.dev2, self.params2)
            addr = 0
            for name, cap in capacity.items():
                lines = -(-cap // self._lanes2)
                self.windows2[name] = (addr, addr + lines * self._lb)
                addr += lines * self._lb
            self.size2 = addr
        self.regions = _Regions(rt1, self.driver2, self.windows2, c.layout, self.operand,
                                self.total)
        _sync(self.driver1.set_default(Mode.BYPASS))

    def _same_host(self):
        names = [None] * self.world
        dist.all_gather_object(names, socket.gethostname(), group=self.group)
        return len(set(names)) == 1

    def _setup_pools(self):
        c, r = self.config, self.ranks_per_controller
        kind = c.pool
        if kind == "auto":
            kind = "shm" if self._same_host() else "gather"
        self.pool_kind = kind
        fill = {}
        for i in range(self.pad_pairs):
            fill[r + 2 * i], fill[r + 2 * i + 1] = 0xFF, 0x00
        ranks = dist.get_process_group_ranks(self.group) if self.group is not dist.group.WORLD \
            else list(range(self.world))
        # Every rank takes part in creating every subgroup, in the same order.
        all_ranks = self.group
        if kind == "gather":
            # Every rank takes part in creating every subgroup, in the same order.
            member_groups = [dist.new_group([ranks[k * r + i] for i in range(r)])
                             for k in range(self.controllers)] if self.controllers > 1 else None
            cross_groups = [dist.new_group([ranks[k * r + i] for k in range(self.controllers)])
                            for i in range(r)] if self.controllers > 1 else None
            members = member_groups[self.controller] if self.controllers > 1 else self.group
            self.pool1 = GatherPool(members, r, self._lb, self.workers, fill)
            self.pool2 = GatherPool(cross_groups[self.local], self.controllers, self._lb,
                                    count_geometry(self.operand)[1], None) \
                if self.controllers > 1 else None
            return
        names = [ShmPool.new_name() for _ in range(self.controllers + 1)] if self.rank == 0 \
            else None
        box = [names]
        dist.broadcast_object_list(box, src=ranks[0], group=all_ranks)
        names = box[0]
        if self.local == 0:
            self.pool1 = ShmPool(names[self.controller], self.size1, self._lb, self.workers,
                                 create=True, fill=fill)
            for base, lines in self.windows1.values():
                self.pool1.prefill(Window(base, lines))
        if self.rank == 0 and self.controllers > 1:
            self.pool2 = ShmPool(names[-1], self.size2, self._lb,
                                 count_geometry(self.operand)[1], create=True)
        dist.barrier(group=all_ranks)
        if self.local != 0:
            self.pool1 = ShmPool(names[self.controller], self.size1, self._lb, self.workers,
                                 create=False, fill=fill)
        if self.controllers > 1 and self.rank != 0:
            self.pool2 = ShmPool(names[-1], self.size2, self._lb,
                                 count_geometry(self.operand)[1], create=False)
        elif self.controllers == 1:
            self.pool2 = None
        dist.barrier(group=all_ranks)

    def close(self):
        """Release the shared memory (after the last step, on every rank)."""
        for pool in (getattr(self, "pool1", None), getattr(self, "pool2", None)):
            if pool is not None:
                pool.close()
        self.pool1 = self.pool2 = None
