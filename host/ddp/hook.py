"""A PyTorch DDP communication hook that aggregates gradients through
NEURON-Fabric.

Each rank of the job is one worker of one controller: ranks ``c*R .. c*R +
R - 1`` share controller ``c`` (``R`` ranks a controller, at most 16).  For
every DDP bucket the hook (:func:`fabric_hook`, state :class:`FabricState`)
splits the bucket by parameter group (``bucket.parameters()``); each group
has a window of the controller's memory and, on a low-bit path, a region of
its region table programmed through the driver
(:class:`~neuron_fabric.host.driver.Driver`, by
:class:`~neuron_fabric.host.runtime.GradientRuntime`).

Low-bit groups (G-Binary, G-Ternary):

1. *write*: the rank packs its gradient signs in torch
   (:func:`.pack.pack_signs`) into its own segment of each line of the
   group's window, worker-major (contract section 5.2): the bytes its
   MemWrPtl would carry, stored into the pool (:mod:`.pool`: shared memory
   on one host, an all-gather across hosts);
2. *barrier*: a small all-reduce over every rank, which also carries fault
   flags (and, with ``scale``, the ranks' mean magnitudes);
3. *read*: the lines are read through the controller's device model
   (:class:`~neuron_fabric.host.device.Device`) with the region's mode,
   format and gate, so every rank decodes the same aggregate.

With several controllers, each level-1 read is G-Binary COUNT (the exact
counts), the counts are written as contributor ``c`` of a level-2 window of
count lines (contract section 5.3, COUNTS4 or COUNTS8, worker-major) and the
level-2 read applies the group's mode, format and gate to the exact count
over every rank (section 5.4).

FP32 groups are averaged by an all-reduce over every rank (``allreduce_hook``
when the whole bucket is FP32).

A controller built for W workers with R < W ranks (W is the smallest of 4,
8, 16 at least R; W - R must be even) has its W - R spare worker slots
written once as cancelling pairs, one all-positive and one all-non-positive,
so every vote margin is the R ranks' own.

The module's parts live beside it: ``hook_config`` (:class:`FabricConfig`,
:class:`Event`, :class:`StepTraffic`, :class:`RankLostError` and the argument
checks), ``hook_devices`` (devices, region tables, pools), ``hook_steps``
(modes, faults, collectives) and ``hook_bucket`` (one bucket); every public
name is importable from here.
"""

import torch.distributed as dist

from neuron_fabric.host.control import FP32 as FP32_MODE
from neuron_fabric.contract.facts import COUNT_LANE_BITS
from neuron_fabric.host.ddp.hook_bucket import _FabricBuckets
from neuron_fabric.host.ddp.hook_config import (MAX_RANKS_PER_CONTROLLER, Event, FabricConfig,
                                                RankLostError, StepTraffic, controller_workers,
                                                policy_of)
from neuron_fabric.host.ddp.hook_devices import _FabricDevices, _sync  # noqa: F401 (re-export)
from neuron_fabric.host.ddp.hook_steps import _FabricSteps

__all__ = ["FabricConfig", "FabricState", "fabric_hook", "RankLostError", "Event",
           "StepTraffic", "controller_workers", "policy_of"]


class FabricState(_FabricBuckets, _FabricSteps, _FabricDevices):
    """The hook's state on one rank.

    Parameters
    ----------
    groups : dict of str to iterable of Parameter
        Parameter groups (the model's parameters, each in exactly one group);
        each group gets a window and, while low-bit, a region.
    policies : dict of str to str or GroupPolicy
        Each group's aggregation after the warm-up: ``"fp32"``, ``"gbinary"``,
        ``"gternary"`` or a :class:`GroupPolicy` (any mode, format and gate
        the device takes; its layout is the config's).
    config : FabricConfig
    process_group : ProcessGroup, optional
        The group of the job's ranks (WORLD by default).
    store : Store, optional
        The job's key-value store (``torch.distributed.TCPStore``), used only
        after a failed collective to find which ranks are missing.

    Members read by the training script
    -----------------------------------
    modes : dict
        Each group's mode name this step (a :class:`GroupPolicy`'s mode for
        a custom policy).
    events : list of Event
        Every mode change (warm-up end, admission, recovery, fault), the
        same on every rank.
    faulted : bool
    traffic : StepTraffic
        This step's bytes so far (reset by :meth:`begin_step`).
    hook_s, hook_cpu_s : float
        Seconds spent in the hook this step, wall and this thread's CPU
        (``last_hook_s``, ``last_hook_cpu_s``: the last step's).
    """

    def __init__(self, groups, policies, config=FabricConfig(), *, process_group=None,
                 store=None):
        if not dist.is_initialized():
            raise RuntimeError("FabricState needs torch.distributed to be initialised")
        self.config = c = config
        self.group = process_group or dist.group.WORLD
        self.world = dist.get_world_size(self.group)
        self.rank = dist.get_rank(self.group)
        self.store = store
        r = c.ranks_per_controller or min(self.world, MAX_RANKS_PER_CONTROLLER)
        if self.world % r:
            raise ValueError(f"{self.world} ranks do not split into controllers of {r}")
        self.ranks_per_controller = r
        self.controllers = self.world // r
        self.controller, self.local = divmod(self.rank, r)
        self.workers = controller_workers(r)
        self.pad_pairs = (self.workers - r) // 2
        groups = {name: list(params) for name, params in groups.items()}
        self._group_of = {}
        for name, params in groups.items():
            for p in params:
                if id(p) in self._group_of:
                    raise ValueError(f"a parameter is in groups {self._group_of[id(p)]!r} "
                                     f"and {name!r}")
                self._group_of[id(p)] = name
        if set(policies) != set(groups):
            raise ValueError(f"policies must name exactly the groups {sorted(groups)}, "
                             f"not {sorted(policies)}")
        self.groups = tuple(groups)
        self.policies = {g: self._layout(policy_of(m)) for g, m in policies.items()}
        self._align = c.line_bits // 4              # the widest E of any W: 128 at 512 bits
        self._lanes1 = c.line_bits // self.workers   # E
        self._lanes2 = c.line_bits // COUNT_LANE_BITS
        self._lb = c.line_bits // 8
        capacity = {g: max(self._align, sum(-(-p.numel() // self._align) * self._align
                                             for p in params))
                    for g, params in groups.items()}
        self.group_elements = {g: sum(p.numel() for p in params) for g, params in groups.items()}
        self._setup_devices(capacity)
        self._setup_pools()
        self._layouts = {}
        self._cursor = {}
        self._residual = {}
        self.modes = {g: FP32_MODE for g in self.groups}
        self._low = {g: False for g in self.groups}
        self.events = []
        self.faulted = False
        self.pending_fault = None
        self.step = 0
        self.traffic = self.last_traffic = StepTraffic()
        self.hook_s = self.last_hook_s = 0.0
        self.hook_cpu_s = self.last_hook_cpu_s = 0.0
        self.diagnose = c.diagnostics
        self._diag, self._last_diag = {}, {}
        self.control = None
        self._apply_modes(self._fixed_modes(0), "warm-up end" if c.warmup_steps else "")


def fabric_hook(state, bucket):
    """The DDP communication hook: ``model.register_comm_hook(state, fabric_hook)``."""
    return state.communicate(bucket)
