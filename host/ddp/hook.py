"""A PyTorch DDP communication hook that aggregates gradients through
NEURON-Fabric: the hook's state (:class:`FabricState`) and the hook
(:func:`fabric_hook`), as PyTorch's own ``powerSGD_hook`` holds its state
and hook together.

Each rank of the job is one worker of one controller: controller ``c``
serves ranks ``split.first(c) ..``
(:func:`neuron_fabric.models.controllers.plan_controllers`: one controller
up to 16 ranks, else the fewest controllers that serve the job, of sizes
differing by at most one; at most 8).  For every DDP bucket the
hook splits the bucket by parameter group (``bucket.parameters()``); each
group has a window of the controller's memory and, on a low-bit path, a
region of its region table.  The state
owns two objects for that:

* its :class:`~.replica.Replicas`: this rank's models of its controller
  (and of the level-2 controller), with the groups' windows and region
  tables, programmed alike on every rank;
* its :class:`~.pool.Pools`: the shared CXL pool its controller's ranks
  write their segments into (shared memory on one host, an all-gather
  across hosts).

Low-bit groups (G-Binary, G-Ternary):

1. *write*: the rank packs its gradient signs in torch
   (:func:`.pack.pack_signs`) into its own segment of each line of the
   group's window, worker-major (contract section 5.2): the bytes its
   MemWrPtl would carry, stored into the pool;
2. *barrier*: a small all-reduce over every rank, which also carries fault
   flags (and, with ``scale``, the ranks' mean magnitudes);
3. *read*: the pool's lines go through the aggregation engine
   (:func:`neuron_fabric.host.runtime.engine.aggregate`) on the rank's
   replica, with the region's mode, format and gate, so every rank
   decodes the same aggregate.

With several controllers, each level-1 read is G-Binary COUNT (the exact
counts), the counts are written as contributor ``c`` of a level-2 window of
count lines (contract section 5.3, COUNTS4 or COUNTS8, worker-major) and the
level-2 read applies the group's mode, format and gate to the exact count
over every rank (section 5.4).

FP32 groups are averaged by an all-reduce over every rank (``allreduce_hook``
when the whole bucket is FP32).

Any number of ranks: each rank writes its signs into one worker slot (an
even world size) or two (an odd one, so that every vote counts twice and
every total of votes is even), W is the smallest of 4, 8, 16 that holds a
controller's slots, and the spare slots never vote: with one controller
they are written once as cancelling pairs, one all-positive and one
all-non-positive (every margin is the ranks' own, doubled with two copies;
the direction takes the pairs off a COUNT); with several they hold 0, so
each level-1 COUNT read is exactly ``copies`` times the controller's count
of positive ranks, and the level-2 region counts ``copies * world`` votes.
The direction divides by those votes and a MARGIN gate's threshold is
multiplied by ``copies`` to match.

The options, and what the hook reports, are in :mod:`.config` (torch-free).
"""

import math
import time
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.distributed as dist

from neuron_fabric.contract.facts import (COUNT_LANE_BITS, PROFILES, Format, Layout, Mode,
                                          count_geometry)
from neuron_fabric.host import golden
from neuron_fabric.host.control import FP32 as FP32_MODE, MODE_POLICY
from neuron_fabric.host.ddp.config import (Event, FabricConfig, RankLostError, StepTraffic,
                                           policy_of)
from neuron_fabric.host.ddp.pack import pack_counts, pack_signs
from neuron_fabric.host.ddp.pool import Pools, Window
from neuron_fabric.host.ddp.replica import Replicas, run_untimed
from neuron_fabric.models.controllers import controller_workers, plan_controllers
from neuron_fabric.host.runtime import FP32, engine

__all__ = ["FabricConfig", "FabricState", "fabric_hook", "RankLostError", "Event",
           "StepTraffic", "controller_workers", "policy_of"]


@dataclass
class _Piece:
    """A run of one group's parameters in a bucket."""
    group: str
    start: int          # in the bucket's buffer, elements
    stop: int
    cursor: int         # the run's first element in the group's window (aligned)
    params: list = None  # (id, elements) of its parameters, in order

    @property
    def n(self):
        return self.stop - self.start


class FabricState:
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
        The job's key-value store (``torch.distributed.TCPStore``): once a
        step the rank notes there the step it reached, and after a failed
        collective the survivors find there which ranks are missing.

    A state pickles into a training checkpoint (``torch.save``), with its
    control plane; loaded, it is bound to the resumed job's parameters by
    :meth:`attach`.

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
    split : ControllerSplit
        How the job's ranks share controllers (``split.sizes``, ``W``,
        ``copies``); ``workers``, ``copies``, ``controllers``,
        ``controller`` and ``local`` (this rank's controller and its index
        there) repeat it.
    replicas : Replicas
        This rank's models of its controllers.
    pools : Pools
        This rank's pools (``pools.kind``: ``"shm"`` or ``"gather"``).
    """

    def __init__(self, groups, policies, config=FabricConfig(), *, process_group=None,
                 store=None):
        self.config = config
        groups = {name: list(params) for name, params in groups.items()}
        if set(policies) != set(groups):
            raise ValueError(f"policies must name exactly the groups {sorted(groups)}, "
                             f"not {sorted(policies)}")
        self.groups = tuple(groups)
        self._asked = {g: policy_of(m) for g, m in policies.items()}
        self.events = []
        self.faulted = False
        self.pending_fault = None
        self.step = 0
        self.control = None
        self._residual = {}
        self._attach(groups, process_group, store)
        self.apply_modes(self._fixed_modes(0), "warm-up end" if config.warmup_steps else "")

    def _attach(self, groups, process_group, store):
        """Bind the state to this process: its process group and store, the
        parameters of each group, the controllers' replicas and the pools
        (a collective: every rank alike).  Every group starts on FP32."""
        if not dist.is_initialized():
            raise RuntimeError("FabricState needs torch.distributed to be initialised")
        c = self.config
        self.group = process_group or dist.group.WORLD
        self.world = dist.get_world_size(self.group)
        self.rank = dist.get_rank(self.group)
        self.store = store
        self.split = split = plan_controllers(self.world, c.line_bits, c.ranks_per_controller)
        self.controllers = split.controllers
        self.controller, self.local = split.locate(self.rank)
        self.workers, self.copies = split.workers, split.copies
        groups = {name: list(params) for name, params in groups.items()}
        if tuple(groups) != self.groups:
            raise ValueError(f"groups must be {list(self.groups)}, not {list(groups)}")
        self._group_of, self._position = {}, {}
        for name, params in groups.items():
            for i, p in enumerate(params):
                if id(p) in self._group_of:
                    raise ValueError(f"a parameter is in groups {self._group_of[id(p)]!r} "
                                     f"and {name!r}")
                self._group_of[id(p)] = name
                self._position[id(p)] = (name, i)
        self.group_sizes = {g: [p.numel() for p in params] for g, params in groups.items()}
        self.policies = {g: self._layout(p) for g, p in self._asked.items()}
        for p in self.policies.values():
            p.check(self.workers, c.line_bits)
        # Pieces start on whole lines of every W (the widest E: 128 at 512
        # bits), and on whole view lines (LINE_BITS / 2 elements) when a
        # packed view serves level 1 (one controller; contract section 6).
        view = PROFILES["full"].has("packed_view") if c.packed_view is None else c.packed_view
        self._views = bool(view) and self.controllers == 1
        self._align = c.line_bits // (2 if self._views else 4)
        self._lanes1 = c.line_bits // self.workers   # E
        self._lanes2 = c.line_bits // COUNT_LANE_BITS
        capacity = {g: max(self._align, sum(-(-n // self._align) * self._align for n in sizes))
                    for g, sizes in self.group_sizes.items()}
        self.group_elements = {g: sum(sizes) for g, sizes in self.group_sizes.items()}
        self.replicas = rep = Replicas(capacity, c.line_bits, split,
                                       max(c.regions, len(self.groups)), c.layout,
                                       view=self._views)
        self.regions = rep.regions
        self.pools = Pools(self.group, split, split.fill(), c.pool,
                           line_bytes=c.line_bits // 8, size1=rep.size1, size2=rep.size2,
                           windows1=[Window(w.base, w.lines) for w in rep.windows1.values()],
                           contributors=count_geometry(rep.operand)[1] if rep.operand else 0)
        self._layouts = {}
        self._cursor = {}
        self.modes = {g: FP32_MODE for g in self.groups}
        self._low = {g: False for g in self.groups}
        self.traffic = self.last_traffic = StepTraffic()
        self.hook_s = self.last_hook_s = 0.0
        self.hook_cpu_s = self.last_hook_cpu_s = 0.0
        self.diagnose = c.diagnostics
        self._diag, self._last_diag = {}, {}
        self._beat_step = None

    # -- checkpoints (the state is part of the model, as PowerSGD's is) --------------------

    def __getstate__(self):
        """What a training checkpoint keeps (``torch.save``): the options, the
        groups' policies and sizes, the step, the modes, the events, the
        fault, and the error-feedback residuals by (group, parameter
        position); not the process group, the store, the pools or the
        replicas, which :meth:`attach` builds anew in the resumed job.  A live
        control plane (:class:`~.control.RankControl`) goes with it: rank 0's
        Predictor, Commander and Supervisor, the decisions due, the last
        step's diagnostics."""
        return dict(config=self.config, groups=self.groups, asked=self._asked,
                    group_sizes=self.group_sizes, step=self.step, modes=dict(self.modes),
                    events=list(self.events), faulted=self.faulted,
                    pending_fault=self.pending_fault, control=self.control,
                    diagnose=self.diagnose, last_diag=self._last_diag,
                    residual={self._position[pid]: t.clone()
                              for pid, t in self._residual.items()})

    def __setstate__(self, saved):
        """A loaded state, detached: call :meth:`attach` before the next step."""
        self.config, self.groups, self._asked = saved["config"], saved["groups"], saved["asked"]
        self.step, self.events = saved["step"], saved["events"]
        self.faulted, self.pending_fault = saved["faulted"], saved["pending_fault"]
        self.control = None
        self._saved = saved
        self.pools = None

    def attach(self, groups, *, process_group=None, store=None):
        """Bind a loaded state (``torch.load`` of a checkpoint) to this job,
        every rank alike: ``groups`` are the resumed model's parameters, in
        the groups and order the state was built with.  The groups' modes of
        the saved step are programmed again and the residuals restored, so
        the run continues where it stopped."""
        saved = self.__dict__.pop("_saved", None)
        if saved is None:
            raise RuntimeError("attach() is for a state loaded from a checkpoint")
        self._attach(groups, process_group, store)
        if self.group_sizes != saved["group_sizes"]:
            raise ValueError(f"the groups' parameter sizes {self.group_sizes} are not the "
                             f"checkpoint's {saved['group_sizes']}")
        at = {key: pid for pid, key in self._position.items()}
        self._residual = {at[key]: t for key, t in saved["residual"].items()}
        if not self.faulted:
            self.apply_modes(saved["modes"], "")
        self.diagnose, self._last_diag = saved["diagnose"], saved["last_diag"]
        if saved["control"] is not None:
            saved["control"].reattach(self)

    @property
    def pool_kind(self):
        """``"shm"`` or ``"gather"``: how this rank's pools carry the lines."""
        return self.pools.kind

    def close(self):
        """Release the shared memory (after the last step, on every rank)."""
        if self.pools is not None:
            self.pools.close()

    # -- modes -------------------------------------------------------------------------

    def _layout(self, policy):
        """``policy`` as this state's controllers take it: the config's layout,
        and a MARGIN gate's threshold counted in slots (each rank votes
        ``copies`` times)."""
        if not policy.low_bit:
            return FP32
        return replace(policy, layout=self.config.layout,
                       threshold=policy.threshold * self.copies)

    def _fixed_modes(self, step):
        if step < self.config.warmup_steps:
            return {g: FP32_MODE for g in self.groups}
        return {g: self._mode_name(p) for g, p in self.policies.items()}

    @staticmethod
    def _mode_name(policy):
        for name, p in MODE_POLICY.items():
            if replace(p, layout=policy.layout) == policy:
                return name
        return Mode(policy.mode).name.lower() if policy.low_bit else FP32_MODE

    def _policy_for(self, group, mode):
        if mode == FP32_MODE:
            return FP32
        p = self.policies[group]
        if p.low_bit and self._mode_name(p) == mode:
            return p
        return self._layout(MODE_POLICY[mode])

    def apply_modes(self, modes, kind, detail="", program=True):
        """Program every group whose mode changes (this rank's replicas, unless
        ``program`` is False: rank 0's control plane did); a failure is a
        pending fault, reported at the next barrier."""
        changed = False
        for g, mode in modes.items():
            if mode == self.modes[g]:
                continue
            changed = True
            policy = self._policy_for(g, mode)
            try:
                if program and self.pending_fault is None and not self.faulted:
                    run_untimed(self.regions.set_policy(g, policy))
            except Exception as err:      # the device refused: every rank goes FP32
                self.pending_fault = f"rank {self.rank}: group {g!r} -> {mode}: " \
                                     f"{type(err).__name__}: {err}"
            self.modes[g] = mode
            self._low[g] = policy.low_bit
        if changed and kind:
            self.events.append(Event(self.step, kind, dict(self.modes), detail))

    def set_modes(self, modes, kind="", detail=""):
        """Set the modes of the next step (every rank must call it alike)."""
        if not self.faulted:
            self.apply_modes(modes, kind, detail)

    def fault(self, detail):
        """Every group on FP32 for the rest of the run, on this rank (every
        rank calls it on the same step: the flag came through a collective)."""
        if self.faulted:
            return
        self.faulted = True
        for g in self.groups:
            try:
                run_untimed(self.regions.set_policy(g, FP32))
            except Exception:    # the host path needs no device
                self.regions.host_fp32(g)
            self.modes[g] = FP32_MODE
            self._low[g] = False
        self.pending_fault = None
        self.events.append(Event(self.step, "fault", dict(self.modes), detail))

    def begin_step(self, step=None):
        """Start a step (every rank alike): with a control plane attached
        (:mod:`.control`), its decision for the step applies; without one the
        fixed modes (warm-up, then the policies) follow the hook's own step
        count and calling this is optional."""
        if step is not None and step != self.step:
            self.step = step
            if self.control is None and not self.faulted:
                self.apply_modes(self._fixed_modes(self.step), "warm-up end")
        if self.control is not None:
            self.control.before_step(self.step)

    def end_step(self):
        """Close a step (the hook calls it after the last bucket): this
        step's bytes, hook time and diagnostics move to ``last_traffic``,
        ``last_hook_s`` and :meth:`diagnostics`; the next step's fixed modes
        apply."""
        self.last_traffic, self.traffic = self.traffic, StepTraffic()
        self.last_hook_s, self.hook_s = self.hook_s, 0.0
        self.last_hook_cpu_s, self.hook_cpu_s = self.hook_cpu_s, 0.0
        self._last_diag, self._diag = self._diag, {}
        self.step += 1
        if self.control is None and not self.faulted:
            self.apply_modes(self._fixed_modes(self.step), "warm-up end")

    # -- collectives -----------------------------------------------------------------------

    def collective(self, what, fn):
        """``fn()``, a collective; a failure is a :class:`RankLostError`
        naming the ranks that did not answer."""
        self._beat()
        start = time.monotonic()
        try:
            return fn()
        except Exception as err:     # gloo: timeout, or a peer's connection closed
            raise self._lost(what, err, start) from err

    def _beat(self):
        """Tell the job's store that this rank reached this step's
        collectives (once a step): after a failure, a rank whose last beat is
        an earlier step is one that stopped between steps."""
        if self.store is not None and self._beat_step != self.step:
            self.store.set(f"beat/{self.rank}", str(self.step))
            self._beat_step = self.step

    def _reached(self, rank):
        key = f"beat/{rank}"
        return self.store.check([key]) and int(self.store.get(key)) >= self.step

    def _lost(self, what, err, start):
        """The :class:`RankLostError` of a collective that failed: the ranks
        named are those that did not reach this step's collectives (their
        last beat is older) or, when every rank did, those that did not
        answer the census within ``census_s``.  Survivors that notice the
        loss at different moments (a closed connection now, gloo's timeout
        later) so name the same ranks, and never each other."""
        msg = f"NEURON-Fabric hook: {what} at step {self.step} failed on rank {self.rank}"
        if self.store is None:
            return RankLostError(f"{msg} after {time.monotonic() - start:.1f} s (no store to "
                                 f"find the missing rank; the process group's timeout is "
                                 f"{self.config.timeout_s} s): {err}")
        census = [f"census/{self.step}/{r}" for r in range(self.world)]
        try:
            self.store.set(census[self.rank], "alive")
            deadline = time.monotonic() + self.config.census_s
            while True:
                answered = [r for r in range(self.world) if self.store.check([census[r]])]
                behind = [r for r in range(self.world)
                          if r not in answered and not self._reached(r)]
                if len(answered) == self.world or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        except Exception as store_err:       # the store's host is gone too
            return RankLostError(f"{msg} after {time.monotonic() - start:.1f} s; the store "
                                 f"cannot be reached either ({type(store_err).__name__}: "
                                 f"{store_err}): {err}")
        elapsed = time.monotonic() - start
        missing = behind or [r for r in range(self.world) if r not in answered]
        if not missing:
            return RankLostError(f"{msg} after {elapsed:.1f} s: every rank is alive: {err}")
        names = ", ".join(str(m) for m in missing)
        return RankLostError(f"{msg} after {elapsed:.1f} s (the process group's timeout is "
                             f"{self.config.timeout_s} s, the census {self.config.census_s} s): "
                             f"rank {names} did not take part ({len(missing)} of {self.world} "
                             f"ranks missing): {type(err).__name__}: {err}", missing)

    def all_reduce(self, what, tensor, op=dist.ReduceOp.SUM):
        """All-reduce ``tensor`` in place over every rank (:meth:`collective`)."""
        self.collective(what, lambda: dist.all_reduce(tensor, op=op, group=self.group))
        return tensor

    def _fallback(self):
        """A rank reported a fault at a barrier: every rank names the faults
        it saw, then puts every group on FP32."""
        details = [None] * self.world
        self.collective("fault report", lambda: dist.all_gather_object(
            details, self.pending_fault, group=self.group))
        self.fault("; ".join(d for d in details if d) or "a fault")
        return None

    # -- one bucket ------------------------------------------------------------------------

    def _pieces(self, bucket):
        params = bucket.parameters()
        key = tuple(id(p) for p in params)
        known = self._layouts.get(bucket.index())
        if known is not None and known[0] == key:
            return known[1]
        if known is not None:     # DDP rebuilt its buckets: lay every window out anew
            self._layouts.clear()
            self._cursor.clear()
        buf = bucket.buffer()
        size = buf.element_size()
        pieces = []
        for p, g in zip(params, bucket.gradients()):
            name = self._group_of.get(id(p))
            if name is None:
                raise ValueError(f"bucket {bucket.index()}: a parameter of shape "
                                 f"{tuple(p.shape)} is in no group")
            start = (g.data_ptr() - buf.data_ptr()) // size
            if pieces and pieces[-1].group == name and pieces[-1].stop == start:
                pieces[-1].stop += g.numel()
                pieces[-1].params.append((id(p), g.numel()))
            else:
                pieces.append(_Piece(name, start, start + g.numel(), 0, [(id(p), g.numel())]))
        for piece in pieces:
            piece.cursor = self._cursor.get(piece.group, 0)
            self._cursor[piece.group] = piece.cursor + -(-piece.n // self._align) * self._align
        self._layouts[bucket.index()] = (key, pieces)
        return pieces

    def communicate(self, bucket):
        """Aggregate one bucket (:func:`fabric_hook`): a future of its buffer,
        holding every group's direction."""
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            out = self._communicate(bucket)
        finally:
            self.hook_s += time.perf_counter() - t0
            self.hook_cpu_s += time.thread_time() - c0
        if bucket.is_last():
            self.end_step()
        return out

    def _communicate(self, bucket):
        if self.pools is None:
            raise RuntimeError("a FabricState loaded from a checkpoint needs "
                               "state.attach(groups) before its first step")
        buf = bucket.buffer()
        pieces = self._pieces(bucket)
        low = [p for p in pieces if self._low[p.group] and not self.faulted]
        fp = [p for p in pieces if p not in low]
        if not low and not (self.diagnose and not self.faulted):
            self.traffic.fp32_elements += buf.numel()
            return self._fp32_future(buf)
        results = self._low_bit(buf, low) if low else {}
        if results is None:                 # a fault: this bucket on FP32 after all
            fp, results = pieces, {}
        if fp:
            flat = torch.cat([buf[p.start:p.stop] for p in fp]) if len(fp) > 1 else \
                buf[fp[0].start:fp[0].stop].clone()
            flat.div_(self.world)
            self.all_reduce("FP32 all-reduce", flat)
            self.traffic.fp32_elements += flat.numel()
            at = 0
            for p in fp:
                results[id(p)] = flat[at:at + p.n]
                at += p.n
            if self.diagnose and not low and not self.faulted:
                self._diagnostics(buf, fp, results)
        for p in pieces:
            buf[p.start:p.stop].copy_(results[id(p)])
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut

    def _fp32_future(self, buf):
        buf.div_(self.world)
        self._beat()
        start = time.monotonic()
        try:
            work = dist.all_reduce(buf, group=self.group, async_op=True)
        except Exception as err:
            raise self._lost("FP32 all-reduce", err, start) from err

        def done(fut):
            try:
                return fut.value()[0]
            except Exception as err:
                raise self._lost("FP32 all-reduce", err, start) from err
        return work.get_future().then(done)

    def _signs_source(self, g, piece):
        """The values whose signs this rank packs (error feedback adds its residual)."""
        if not self.config.error_feedback:
            return g
        e = torch.cat([self._residual.get(pid, torch.zeros(n)) for pid, n in piece.params])
        p = g + e
        residual = p - p.abs().mean() * torch.sign(p)
        at = 0
        for pid, n in piece.params:            # kept per parameter: DDP may rebuild buckets
            self._residual[pid] = residual[at:at + n]
            at += n
        return p

    def _low_bit(self, buf, low):
        """Aggregate the low-bit pieces; ``{id(piece): direction}``, or None
        when a rank reported a fault (every rank then takes FP32)."""
        pools = self.pools
        flags = torch.zeros(1 + len(low), dtype=torch.float64)
        if self.pending_fault is not None:
            flags[0] = 1
        plan = []
        pools.begin()
        try:
            for i, p in enumerate(low):
                g = buf[p.start:p.stop]
                window = self.replicas.windows1[p.group].piece(p.cursor, p.n, self._lanes1)
                seg = pack_signs(self._signs_source(g, p), window.lines * self._lanes1)
                for slot in range(self.local * self.copies, (self.local + 1) * self.copies):
                    self.traffic.pool_write += pools.level1.write(_pool(window), slot, seg)
                self.traffic.low_elements += p.n
                if self.config.scale:
                    flags[1 + i] = float(g.abs().mean())
                plan.append((p, window))
        except Exception as err:
            self.pending_fault = f"rank {self.rank}: write: {type(err).__name__}: {err}"
            flags[0] = 1
        self.all_reduce("barrier before the read", flags)
        if flags[0]:
            return self._fallback()
        if self.controllers == 1:
            return {id(p): self._finish(p, self._read_level1(p, window, np.float32),
                                        self.split.pad_pairs, flags[1 + i])
                    for i, (p, window) in enumerate(plan)}
        counts = [(i, p, self._read_level1(p, window, np.int32))
                  for i, (p, window) in enumerate(plan)]
        windows2 = self._write_level2(counts)
        check = self.all_reduce("barrier before the level-2 read", torch.tensor(
            [1.0 if self.pending_fault else 0.0], dtype=torch.float64))
        if check[0]:
            return self._fallback()
        return {id(p): self._finish(p, self._read_level2(p, window), 0, flags[1 + i])
                for (i, p, _), window in zip(counts, windows2)}

    def _read(self, port, window, lines, n, lane_bits, fmt, dtype, view=None):
        """The engine's step on a replica: the pool's ``lines`` stored into
        ``window`` and read back (as lanes, or through the packed ``view`` of
        it), ``n`` values of ``dtype``; a failed read is this rank's pending
        fault (the replica answers in software)."""
        values, moved = run_untimed(engine.aggregate(port, window, lines, n, lane_bits, fmt,
                                                     view=view, dtype=dtype))
        fault = self.replicas.take_fault()
        if fault is not None and self.pending_fault is None:
            self.pending_fault = f"rank {self.rank}: {fault}"
        self.traffic.pool_read += moved.down
        return values

    def _pool_read(self, pool, window):
        """The pool's lines of ``window``, the bytes it all-gathered counted
        in ``traffic.gathered`` (a shared-memory pool gathers none)."""
        before = getattr(pool, "sent", 0)
        lines = pool.read(_pool(window))
        self.traffic.gathered += getattr(pool, "sent", 0) - before
        return lines

    def _read_level1(self, p, window, dtype):
        """Level 1: the direction's values (one controller) or the exact
        counts (several: G-Binary COUNT) of piece ``p``."""
        lines = self._pool_read(self.pools.level1, window)
        if self.config.layout == Layout.ELEMENT_MAJOR:
            lines = golden.to_element_major(lines, self.workers)
        policy = self.regions.policies[p.group]
        fmt = policy.format if self.controllers == 1 else Format.COUNT
        view = None
        if self.controllers == 1 and engine.reads_view(self.replicas.driver1, policy):
            view = self.replicas.views1[p.group].piece(p.cursor, p.n, self.config.line_bits // 2)
        return self._read(self.replicas.port1, window, lines, p.n, self.workers, fmt, dtype,
                          view)

    def _write_level2(self, counts):
        """Each piece's level-1 counts as this controller's segment of the
        level-2 count lines; the pieces' level-2 windows."""
        bits, _ = count_geometry(self.replicas.operand)
        windows = []
        for _, p, values in counts:
            window = self.replicas.windows2[p.group].piece(p.cursor, p.n, self._lanes2)
            windows.append(window)
            # A controller's counts are written once, by its first rank; across
            # hosts each rank all-gathers them from its peers of the same local
            # index in the other controllers (every rank of a controller holds them).
            if self.local != 0 and self.pools.kind == "shm":
                self.pools.level2.skip(_pool(window))
                continue
            padded = np.zeros(window.lines * self._lanes2, dtype=np.uint8)
            padded[:p.n] = values
            moved = self.pools.level2.write(_pool(window), self.controller,
                                            pack_counts(padded, bits))
            if self.local == 0:
                self.traffic.pool_write += moved
        return windows

    def _read_level2(self, p, window):
        lines = self._pool_read(self.pools.level2, window)
        return self._read(self.replicas.port2, window, lines, p.n, COUNT_LANE_BITS,
                          self.regions.policies[p.group].format, np.float32)

    def _finish(self, p, values, pads, mean_abs):
        """The direction of piece ``p`` from the values read: every one of the
        ``copies * world`` voting slots counted, the ``pads`` positive
        slots of the cancelling pairs taken off a COUNT."""
        d = torch.from_numpy(engine.direction(values, self.regions.policies[p.group].format,
                                              self.split.total, pads))
        if self.config.scale:
            d = d * float(mean_abs / self.world)
        return d

    # -- warm-up diagnostics ---------------------------------------------------------------

    def _diagnostics(self, buf, pieces, means):
        """Cosine of each low-bit mode's aggregate of every rank's signs with
        the FP32 mean, accumulated per group (golden model over all ranks)."""
        lines_c = self._lanes2
        for p in pieces:
            n_pad = -(-p.n // 64) * 64
            mine = torch.from_numpy(pack_signs(buf[p.start:p.stop], n_pad))
            parts = [torch.empty_like(mine) for _ in range(self.world)]
            self.collective("diagnostic all-gather",
                            lambda: dist.all_gather(parts, mine, group=self.group))
            self.traffic.diag_elements += p.n
            signs = np.unpackbits(np.stack([t.numpy() for t in parts]), axis=1,
                                  bitorder="little")[:, :p.n].astype(bool)
            mean = means[id(p)].double()
            first = p.cursor // lines_c
            for mode in MODE_POLICY:
                if mode == FP32_MODE:
                    continue
                pol = MODE_POLICY[mode]
                n_lines = -(-p.n // lines_c)
                phase = golden.line_phase(np.arange(first, first + n_lines), lines_c, pol.period)
                resp = golden.transform_wide(signs, pol.mode, pol.format, pol.gate_kind,
                                             pol.period, pol.keep, pol.threshold, phase,
                                             line_bits=self.config.line_bits)
                d = torch.from_numpy(golden.decode_counts(resp, pol.format, p.n)).double()
                acc = self._diag.setdefault(p.group, {}).setdefault(mode, [0.0, 0.0, 0.0])
                acc[0] += float(d @ mean)
                acc[1] += float(d @ d)
                acc[2] += float(mean @ mean)

    def diagnostics(self):
        """``{group: {mode: cosine}}`` of the last step (empty when none were taken)."""
        out = {}
        for g, per in self._last_diag.items():
            out[g] = {m: (a[0] / math.sqrt(a[1] * a[2]) if a[1] * a[2] > 0 else 0.0)
                      for m, a in per.items()}
        return out


def _pool(window):
    """The pool's :class:`~.pool.Window` of a :class:`GroupWindow`."""
    return Window(window.base, window.lines)


def fabric_hook(state, bucket):
    """The DDP communication hook: ``model.register_comm_hook(state, fabric_hook)``."""
    return state.communicate(bucket)
