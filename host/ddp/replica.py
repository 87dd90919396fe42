"""A rank's replicas of its controllers (see :mod:`.hook`).

Every rank holds its own transaction-level model of its controller (and,
with several controllers, of the level-2 controller), programmed alike on
every rank, and reads the lines the pool assembled through it: every rank
decodes the same aggregate without a broadcast.

:func:`run_untimed` drives a coroutine of the untimed device model or driver
to completion; :class:`RegionTable` is a controller's region table as the
control plane sees a runtime; :class:`Replicas` owns a rank's devices,
windows and region tables and reads lines through them.
"""

from dataclasses import replace

import numpy as np

from neuron_fabric.contract.facts import (PROFILES, Format, Layout, Mode, Operand, Profile,
                                          TopParams, view_beats)
from neuron_fabric.host.device import Device, read_response
from neuron_fabric.host.golden import pack_view
from neuron_fabric.host.driver import Driver
from neuron_fabric.host.runtime import FP32, GradientRuntime, GroupPolicy, GroupWindow

__all__ = ["run_untimed", "RegionTable", "Replicas"]


def run_untimed(coro):
    """Run a coroutine of the device model or the driver, which never waits
    on anything, to completion in this thread."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("a device call suspended; the hook drives an untimed model only")


class RegionTable:
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
        d, w = self.driver2, self.windows2[name]
        region = self._regions2.get(name)
        fields = dict(format=policy.format, gate_kind=policy.gate_kind, period=policy.period,
                      keep=policy.keep, threshold=policy.threshold,
                      layout=Layout.WORKER_MAJOR, operand=self.operand, total=self.total)
        if policy.low_bit and region is None:
            taken = set(self._regions2.values()) | self._stranded2
            region = next(r for r in range(d.params.regions) if r not in taken)
            await d.set_region(region, base=w.base, limit=w.limit, mode=policy.mode, **fields)
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


class _Port:
    """One replica as the memory port the aggregation engine reads through:
    a write stores the lines the pool assembled (the pool carried the
    ranks' MemWrPtl bytes already); a read goes through the device model.
    When the model fails a read (a memory error), the response is computed
    in software from the stored lines and the region's configuration
    (``read_response``, the model's own rule), so every rank still holds
    the same aggregate this step; the failure is kept in ``fault`` for the
    hook to report at its next barrier."""

    def __init__(self, device, level):
        self.device = device
        self.level = level
        self.fault = None
        self._stored = None

    async def write_lines(self, addr, lines):
        self.device.poke(addr, lines)
        self._stored = (addr, lines)

    async def read_lines(self, addr, count):
        try:
            return await self.device.read_lines(addr, count)
        except Exception as err:
            if self.fault is None:
                self.fault = f"level-{self.level} read: {type(err).__name__}: {err}"
            return self._software(addr, count, err)

    def _software(self, addr, count, err):
        """The response to a read of ``count`` lines at ``addr`` computed from the
        lines last written: the same window read as lanes, or the packed
        view of it (contract section 6: ``B`` written lines a view line)."""
        stored_addr, raw = self._stored
        cfg, index = self.device.read_config(addr)
        if (stored_addr, len(raw)) == (addr, count):
            return read_response(self.device.params, self.device.profile, raw, index, cfg)
        p = self.device.params
        operand = Operand(cfg["operand"])
        beats = view_beats(p.line_bits, p.workers, operand)
        if stored_addr != addr and -(-len(raw) // beats) == count:
            # (the view's last line reads source lines past those written:
            # their results are past the piece's elements)
            source = np.zeros((count * beats, raw.shape[1]), dtype=np.uint8)
            source[:len(raw)] = raw
            fields = {k: cfg[k] for k in ("gate_kind", "period", "keep", "threshold", "layout",
                                          "total")}
            return pack_view(source, p.workers, Mode(cfg["mode"]), index=index, operand=operand,
                             **fields)
        raise RuntimeError(f"a read of {count} lines at {addr:#x} after a write of "
                           f"{len(raw)} at {stored_addr:#x}") from err


class Replicas:
    """A rank's models of its controller (level 1) and, with several
    controllers, of the level-2 controller: their devices, the groups'
    windows and region tables, programmed alike on every rank.

    Parameters
    ----------
    capacity : dict of str to int
        Each group's window size in elements (whole lines of every W).
    line_bits, regions : int
        The controllers' LINE_BITS and the regions of each region table.
    split : ControllerSplit
        How the job's ranks share controllers
        (:func:`~neuron_fabric.models.controllers.plan_controllers`): W of every controller, and with several the level-2 count operand
        and the votes a level-2 read counts.
    layout : Layout
        The layout of the sign lines the ranks write.
    view : bool
        Whether the level-1 controller has the packed result view (contract
        section 6), whatever the full profile has: its SIGN-format groups
        then read through it.

    Members
    -------
    port1, port2
        The memory ports the engine reads level 1 and level 2 through
        (``port2`` None with one controller); ``port1.device`` is the
        level-1 device model.
    driver1, driver2
        Their control-plane drivers.
    windows1, windows2 : dict of str to GroupWindow
        Each group's window of sign lines (level 1) and of count lines
        (level 2, empty with one controller).
    views1 : dict of str to GroupWindow
        Each group's packed view of its level-1 window (empty without the
        view).
    operand, total
        The level-2 count operand and the votes a level-2 read counts
        (None and W with one controller).
    regions : RegionTable
    """

    def __init__(self, capacity, line_bits, split, regions, layout, view=True):
        workers = split.workers
        params1 = TopParams(line_bits=line_bits, workers=workers, regions=regions)
        full = PROFILES[params1.profile]
        profile1 = full
        if view != full.has("packed_view"):
            profile1 = full.without("packed_view") if not view else \
                Profile(f"{full.name}+packed_view", full.features | {"packed_view"})
        dev1 = Device(params1, profile=profile1)
        self.driver1 = Driver(dev1, params1, profile=profile1)
        rt1 = run_untimed(GradientRuntime.create(dev1, self.driver1, capacity,
                                                 {g: FP32 for g in capacity}))
        self.windows1 = rt1.windows
        self.views1 = rt1.views
        self.size1 = max(w.limit for w in self.windows1.values())
        self.port1 = _Port(dev1, 1)
        self.port2 = self.driver2 = None
        self.windows2, self.size2 = {}, 0
        self.operand, self.total = None, workers
        if split.controllers > 1:
            self.operand, self.total = split.operand, split.total
            params2 = TopParams(line_bits=line_bits, workers=workers, regions=regions)
            dev2 = Device(params2)
            self.driver2 = Driver(dev2, params2)
            self.port2 = _Port(dev2, 2)
            per_line, addr = line_bits // 32, 0
            for name, cap in capacity.items():
                self.windows2[name] = GroupWindow(name, cap, addr, -(-cap // per_line),
                                                  params2.line_bytes)
                addr = self.windows2[name].limit
            self.size2 = addr
        self.regions = RegionTable(rt1, self.driver2, self.windows2, layout, self.operand,
                                   self.total)
        run_untimed(self.driver1.set_default(Mode.BYPASS))

    @property
    def control_driver(self):
        """The driver the control plane writes the groups' modes through: the
        level-2 controller's with several controllers (it applies them)."""
        return self.driver1 if self.driver2 is None else self.driver2

    def take_fault(self):
        """The first read a replica failed since the last call, or None."""
        faults = [p.fault for p in (self.port1, self.port2) if p is not None and p.fault]
        for p in (self.port1, self.port2):
            if p is not None:
                p.fault = None
        return faults[0] if faults else None

