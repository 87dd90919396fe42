"""The :class:`ControlPlane`: the Predictor, Commander and Supervisor run at
step boundaries, and the region CFG words they decide written and read back
(see :mod:`neuron_fabric.host.control`)."""

from dataclasses import dataclass

from neuron_fabric.contract.facts import Mode
from neuron_fabric.contract.regmap import cfg_decode
from neuron_fabric.host import runtime
from neuron_fabric.host.control.commander import FP32, MODE_POLICY
from neuron_fabric.host.driver import BusError


@dataclass(frozen=True)
class ControlFault:
    """A control-plane fault: the step before which it happened, and what."""
    step: int
    error: str


@dataclass(frozen=True)
class StepDecision:
    """Mode writes the control plane made before a step."""
    step: int
    modes: dict
    reason: str
    writes: int


class ControlPlane:
    """Predictor, Commander and Supervisor at step boundaries.

    Decisions reach the device as mode metadata only: DEFAULT_CFG (the mode
    latch, BYPASS) once at :meth:`start`, then each group's region CFG
    through :meth:`GradientRuntime.set_policy`, which writes through the
    driver and waits for a running step.  Call :meth:`before_step` between
    steps: the writes complete (BVALID) before it returns, so every read of
    the step is accepted after them and sees one mode (contract 4.3).  Call
    :meth:`after_step` with the step's trace, loss and (on FP32 steps)
    cosine diagnostics.

    Parameters
    ----------
    runtime : GradientRuntime
        Whose groups the plane decides; every group on FP32 at first.
    driver : Driver
        The same device's driver (the runtime's): DEFAULT_CFG and read-back.
    predictor, commander, supervisor :
        The three roles; ``commander.groups`` must be the runtime's groups.
    delay_steps : int, default 0
        Apply each decision this many steps late (the late mode update of
        Fig. 3d, measured in the loop).
    verify : bool, default True
        Read each group's region CFG back after a change; a mismatch is a
        fault.  A memory-mapped bus cannot report SLVERR: this catches it.
    """

    def __init__(self, runtime, driver, predictor, commander, supervisor, *, delay_steps=0,
                 verify=True):
        if set(runtime.windows) != set(commander.groups):
            raise ValueError(f"runtime groups {sorted(runtime.windows)} and Commander groups "
                             f"{sorted(commander.groups)} differ")
        if isinstance(delay_steps, bool) or not isinstance(delay_steps, int) or delay_steps < 0:
            raise ValueError(f"delay_steps must be a non-negative int, not {delay_steps!r}")
        self.runtime = runtime
        self.driver = driver
        self.predictor = predictor
        self.commander = commander
        self.supervisor = supervisor
        self.delay_steps = delay_steps
        self.verify = verify
        self.modes = {g: FP32 for g in commander.groups}
        self.faults = []
        self.log = []
        self._target = {g: commander.config.default_mode for g in commander.groups}
        self._pending = [(0, dict(self._target), "default mode")]
        self._admitted_once = False
        self._fp32_steps = 0
        self._step = 0

    def __getstate__(self):
        """What a checkpoint keeps: the roles, the modes, the decisions due and
        made, the faults; not the runtime or the driver, which :meth:`bind`
        gives a loaded plane."""
        return {k: v for k, v in vars(self).items() if k not in ("runtime", "driver")}

    def bind(self, runtime, driver):
        """Give a plane loaded from a checkpoint the resumed job's runtime and
        driver (their groups on the plane's modes already)."""
        if set(runtime.windows) != set(self.commander.groups):
            raise ValueError(f"runtime groups {sorted(runtime.windows)} and Commander groups "
                             f"{sorted(self.commander.groups)} differ")
        self.runtime, self.driver = runtime, driver

    async def start(self):
        """Set DEFAULT_CFG to BYPASS (reads outside every region take the
        FP32 path); call once before the first step."""
        try:
            if any(p.low_bit for p in self.runtime.policies.values()):
                raise ValueError("the runtime must start with every group on FP32")
            await self.driver.set_default(Mode.BYPASS)
        except Exception as err:      # a fault at start: nothing is admitted, ever
            await self._fault(f"start: {type(err).__name__}: {err}")
        return self

    @property
    def faulted(self):
        return bool(self.faults)

    def _schedule(self, step, modes, reason):
        self._pending.append((step + self.delay_steps, dict(modes), reason))

    async def before_step(self, step):
        """Apply the decisions due at ``step``; return ``{group: mode}`` for it."""
        self._step = step
        due = [p for p in self._pending if p[0] <= step]
        self._pending = [p for p in self._pending if p[0] > step]
        for _, modes, reason in due:
            if self.faulted:
                break
            writes = await self._apply(modes)
            if writes:
                self.log.append(StepDecision(step, dict(self.modes), reason, writes))
        return dict(self.modes)

    async def _apply(self, modes):
        """Change every group whose mode differs; on a fault every group goes
        to FP32 and the fault is recorded."""
        changed = 0
        for g, mode in modes.items():
            if mode == self.modes[g]:
                continue
            try:
                await self.runtime.set_policy(g, MODE_POLICY[mode])
                if self.verify:
                    await self._check(g, mode)
            except Exception as err:     # any bus or driver failure is a fault
                await self._fault(f"group {g!r} -> {mode}: {type(err).__name__}: {err}")
                return changed
            self.modes[g] = mode
            changed += 1
        return changed

    async def _check(self, group, mode):
        """Read the group's region CFG back: the mode must be what was asked."""
        policy = MODE_POLICY[mode]
        region = self.runtime.regions.get(group)
        if not policy.low_bit:
            if region is not None:
                raise BusError(f"group {group!r} still holds region {region} on FP32")
            return
        cfg = cfg_decode(await self.driver.read(f"REGION{region}_CFG"))
        if cfg["mode"] != policy.mode or not cfg["enable"]:
            raise BusError(f"REGION{region}_CFG reads mode {cfg['mode']} enable "
                           f"{cfg['enable']} after writing {policy.mode.name}")

    async def _fault(self, error):
        """Every group on FP32, then a best-effort BYPASS to the latch.

        FP32 is the host mean, which needs no device; a group whose region
        could not be released is put on the host path by
        :meth:`GradientRuntime.host_fp32`, so no group is left in an unknown mode.
        """
        self.faults.append(ControlFault(self._step, error))
        self._pending.clear()
        self._target = {g: FP32 for g in self.modes}
        for g in self.modes:
            try:
                await self.runtime.set_policy(g, runtime.FP32)
            except Exception:   # recorded above; FP32 must hold on the host anyway
                self.runtime.host_fp32(g)
            self.modes[g] = FP32
        try:
            await self.driver.set_default(Mode.BYPASS)
        except Exception:       # the runtime never reads outside its regions
            pass

    def after_step(self, trace, loss, diagnostics=None):
        """Feed the step's telemetry to the three roles; schedule decisions.

        Parameters
        ----------
        trace : TraceRecord
            Timings and volumes (to the Predictor only).
        loss : float
            The step's training loss (to the Supervisor only).
        diagnostics : dict, optional
            ``{group: {mode: cosine}}`` measured on this step, given only
            when every group ran on FP32 (the Commander's warm-up data).
        """
        self.predictor.observe(trace)
        if self.faulted:
            return
        step = trace.step
        trigger = self.supervisor.observe(loss)
        low = any(m != FP32 for m in self._target.values())
        if trigger:
            self.commander.clear_diagnostics()
            if low:
                self._target = {g: FP32 for g in self._target}
                self._schedule(step + 1, self._target, f"Supervisor: {trigger}")
            return
        if all(m == FP32 for m in self.modes.values()) and diagnostics is not None:
            self.commander.record_diagnostics(diagnostics)
            self._fp32_steps += 1
        if low or self.supervisor.cooling or self._fp32_steps < self.commander.config.warmup_steps:
            return
        if not self.commander.ready():
            return
        split = self.commander.propose(self.predictor.forecast())
        if split != self._target:
            self._target = split
            reason = "Commander: re-admission" if self._admitted_once else "Commander: admission"
            self._admitted_once = True
            self._schedule(step + 1, split, reason)
        self.commander.clear_diagnostics()
