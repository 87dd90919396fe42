"""The step plumbing of the DDP hook (see :mod:`.hook`): modes, faults and
collectives.

The mixin :class:`_FabricSteps` holds what :class:`~.hook.FabricState` does
between buckets: each group's mode per step (the fixed warm-up and policies,
or the control plane's decision: :meth:`~_FabricSteps.set_modes`,
:meth:`~_FabricSteps.begin_step`, :meth:`~_FabricSteps.end_step`), the
fall-back of every group to FP32 on a fault (:meth:`~_FabricSteps.fault`),
and the collectives that name the missing ranks when one fails
(:class:`~.hook_config.RankLostError`).
"""

import time
from dataclasses import replace

import torch.distributed as dist

from neuron_fabric.host.control import FP32 as FP32_MODE, MODE_POLICY
from neuron_fabric.contract.facts import Mode
from neuron_fabric.host.runtime import FP32
from neuron_fabric.host.ddp.hook_config import Event, RankLostError, StepTraffic
from neuron_fabric.host.ddp.hook_devices import _sync


class _FabricSteps:
    """:class:`~.hook.FabricState`'s modes, faults and collectives."""

    # -- modes -------------------------------------------------------------------

    def _layout(self, policy):
        return replace(policy, layout=self.config.layout) if policy.low_bit else FP32

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

    def _apply_modes(self, modes, kind, detail="", program=True):
        """Program every group whose mode changes (this rank's devices, unless
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
                    _sync(self.regions.set_policy(g, policy))
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
            self._apply_modes(modes, kind, detail)

    def fault(self, detail):
        """Every group on FP32 for the rest of the run, on this rank (every
        rank calls it on the same step: the flag came through a collective)."""
        if self.faulted:
            return
        self.faulted = True
        for g in self.groups:
            try:
                _sync(self.regions.set_policy(g, FP32))
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
                self._apply_modes(self._fixed_modes(self.step), "warm-up end")
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
            self._apply_modes(self._fixed_modes(self.step), "warm-up end")

    # -- collectives ---------------------------------------------------------------

    def _collective(self, what, fn):
        try:
            return fn()
        except Exception as err:     # gloo: timeout, or a peer's connection closed
            raise self._lost(what, err) from err

    def _lost(self, what, err):
        msg = f"NEURON-Fabric hook: {what} at step {self.step} failed on rank {self.rank}"
        if self.store is None:
            return RankLostError(f"{msg} (no store to find the missing rank; the process "
                                 f"group's timeout is {self.config.timeout_s} s): {err}")
        try:
            self.store.set(f"census/{self.rank}", "alive")
            deadline = time.monotonic() + self.config.census_s
            while True:
                present = [r for r in range(self.world) if self.store.check([f"census/{r}"])]
                if len(present) == self.world or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        except Exception as store_err:       # the store's host is gone too
            return RankLostError(f"{msg}; the store cannot be reached either "
                                 f"({type(store_err).__name__}: {store_err}): {err}")
        missing = [r for r in range(self.world) if r not in present]
        if not missing:
            return RankLostError(f"{msg}: every rank is alive: {err}")
        names = ", ".join(str(m) for m in missing)
        return RankLostError(f"{msg}: rank {names} did not take part within the "
                             f"{self.config.timeout_s} s timeout ({len(missing)} of "
                             f"{self.world} ranks missing): {type(err).__name__}: {err}",
                             missing)

    def _all_reduce(self, what, tensor, op=dist.ReduceOp.SUM, group=None):
        self._collective(what, lambda: dist.all_reduce(tensor, op=op,
                                                        group=group or self.group))
        return tensor

    def _fallback(self):
        """A rank reported a fault at a barrier: every rank names the faults
        it saw, then puts every group on FP32."""
        details = [None] * self.world
        self._collective("fault report", lambda: dist.all_gather_object(
            details, self.pending_fault, group=self.group))
        self.fault("; ".join(d for d in details if d) or "a fault")
        return None
