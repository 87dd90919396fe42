"""The control plane: Predictor, Commander and Supervisor (paper sections 3 and 8).

The controller exposes a mode latch (DEFAULT_CFG) and a region table; this
module decides, per parameter group and per step, which aggregation path a
group takes, and writes only that mode metadata through the control-plane
driver (:class:`neuron_fabric.host.driver.Driver`), so the same code drives
the device model, the RTL under cocotb, or a memory-mapped device.

Roles (paper section 3, "Control interface"):

:class:`Predictor`
    Estimates collective pressure from trace-derived forecasts.  Its only
    input is a :class:`TraceRecord` of timings and volumes: it cannot be
    handed gradients, weights or loss.  Its All-Reduce times come from the
    communication-time model (:mod:`neuron_fabric.models.commtime`)
    and the datapath exposure from the timing-envelope model
    (:mod:`neuron_fabric.models.envelope.model`).
:class:`Commander`
    Proposes a mode per group with a deterministic ladder: the lowest-traffic
    mode whose cosine-alignment diagnostic (measured on FP32 warm-up steps)
    passes; a sensitive group (the classifier head) stays on FP32 unless
    every other group is admitted.
:class:`Supervisor`
    Keeps or returns every group to FP32 when training health degrades
    (CUSUM on the standardised loss, a non-finite loss), holds FP32
    for a cooldown, then reports recovery so the Commander may re-admit.
:class:`ControlPlane`
    Runs the three at step boundaries and writes the region CFG words.  A
    control-plane fault (SLVERR, a rejected CFG, a bus error, a read-back
    mismatch) puts every group on FP32 and is recorded; the runtime
    aggregates FP32 groups in software, so no group is ever in an unknown
    mode.

Mode names are the keys of :data:`neuron_fabric.models.traffic.BITS_PER_ELEMENT`
(``"fp32"``, ``"gbinary"``, ``"gternary"``); the ladder is that table sorted
by bits per element.
"""

import math
from dataclasses import dataclass, field
from functools import lru_cache

from neuron_fabric.models.commtime import CommParams, allreduce_times_ms
from neuron_fabric.models.envelope.model import overhead_pct
from neuron_fabric.models.envelope.params import ANCHOR, ServiceParams

from neuron_fabric.host import runtime
from neuron_fabric.host.driver import BusError
from neuron_fabric.contract.facts import Mode
from neuron_fabric.contract.regmap import cfg_decode
from neuron_fabric.models.traffic import BITS_PER_ELEMENT

__all__ = [
    "FP32", "LOW_BIT_MODES", "MODE_POLICY", "TraceRecord", "Forecast", "PredictorConfig",
    "Predictor", "CommanderConfig", "Commander", "SupervisorConfig", "Supervisor",
    "ControlFault", "StepDecision", "ControlPlane",
]

FP32 = "fp32"

#: Low-bit modes in ladder order: fewest bits per element first.
LOW_BIT_MODES = tuple(sorted((m for m in BITS_PER_ELEMENT if m != FP32),
                             key=BITS_PER_ELEMENT.get))

#: The runtime policy of each mode.  FP32 is BYPASS: the runtime averages
#: FP32 groups on the host and never reads them through the datapath.  The
#: low-bit modes return SIGN lanes (majority sign; G-Ternary with the
#: paper's fixed 2-of-3 pattern gate).
MODE_POLICY = {FP32: runtime.FP32, "gbinary": runtime.G_BINARY, "gternary": runtime.G_TERNARY}


def _check_mode(mode):
    if mode != FP32 and mode not in LOW_BIT_MODES:
        raise ValueError(f"mode must be one of {(FP32,) + LOW_BIT_MODES}, not {mode!r}")
    return mode


# -- Predictor ------------------------------------------------------------------------

def _check_count(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"{name} must be a non-negative int, not {type(value).__name__} {value!r}")


@dataclass(frozen=True)
class TraceRecord:
    """One step's communication trace: the Predictor's only input.

    Every field is a timing or a volume, checked to be a plain Python
    number, so no array (gradient, weight) and no loss can ride along.

    Parameters
    ----------
    step : int
        Step index.
    compute_s : float
        Measured forward + backward time of the step, in seconds.
    group_elements : tuple of (str, int)
        Gradient elements per parameter group (the volume each group
        communicates), in a fixed group order.
    """
    step: int
    compute_s: float
    group_elements: tuple

    def __post_init__(self):
        _check_count("step", self.step)
        if isinstance(self.compute_s, bool) or not isinstance(self.compute_s, (int, float)) \
                or not math.isfinite(self.compute_s) or self.compute_s < 0:
            raise TypeError(f"compute_s must be a finite non-negative float, not {self.compute_s!r}")
        if not isinstance(self.group_elements, tuple):
            raise TypeError("group_elements must be a tuple of (name, elements) pairs, "
                            f"not {type(self.group_elements).__name__}")
        for pair in self.group_elements:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
                raise TypeError(f"group_elements entries must be (name, elements), not {pair!r}")
            _check_count(f"elements of group {pair[0]!r}", pair[1])

    @property
    def elements(self):
        return sum(n for _, n in self.group_elements)


@dataclass(frozen=True)
class Forecast:
    """The Predictor's stored forecasts for the next step (paper section 3).

    Times in seconds, volumes in bytes; ``allreduce_s`` maps each mode to
    the modelled All-Reduce time of the step's gradient on that path.
    """
    compute_s: float
    allreduce_s: dict
    gradient_bytes: int
    shard_bytes_per_gpu: float
    peak_cxl_bytes_per_s: float
    cache_line_reads: int

    @property
    def pressure(self):
        """FP32 All-Reduce time over forward + backward time: how much of a
        step the FP32 collective would take were it not overlapped."""
        return self.allreduce_s[FP32] / self.compute_s if self.compute_s else math.inf


@dataclass(frozen=True)
class PredictorConfig:
    """Parameters of the Predictor.

    Parameters
    ----------
    compute_ema : float, default 0.2
        Weight of the newest step in the forward/backward time forecast
        (exponential moving average; the paper stores a forecast but gives
        no smoothing).
    comm : CommParams
        The communication-time model's parameters (``gpus`` = W workers,
        link bandwidths; :mod:`neuron_fabric.models.commtime`).
    service : ServiceParams
        The timing-envelope anchor whose exposed datapath overhead scales the
        low-bit paths (paper section 4, full-LLC-miss anchor).
    fp32_path : str
        Which FP32 path of the communication-time model is the baseline.
    line_bits : int, default 512
        Cache-line width: sets the read count of a low-bit aggregate.
    """
    compute_ema: float = 0.2
    comm: CommParams = CommParams()
    service: ServiceParams = ANCHOR
    fp32_path: str = "FP32 via CXL pooled memory"
    line_bits: int = 512

    def __post_init__(self):
        if not 0 < self.compute_ema <= 1:
            raise ValueError(f"compute_ema must be in (0, 1], not {self.compute_ema!r}")


@lru_cache(maxsize=8)
def _exposure_pct(service):
    """Exposed datapath overhead of the anchor (timing-envelope model)."""
    return overhead_pct(service, 256)


_COMM_KEYS = {"gbinary": "G-Binary (CXL-side)", "gternary": "G-Ternary (CXL-side)"}


class Predictor:
    """Trace-derived forecasts of collective pressure.

    Only :meth:`observe` feeds it, and it accepts nothing but a
    :class:`TraceRecord`.
    """

    def __init__(self, config=PredictorConfig()):
        self.config = config
        self._compute_s = None
        self._last = None

    def observe(self, record):
        """Take one step's trace."""
        if type(record) is not TraceRecord:
            raise TypeError(f"the Predictor takes a TraceRecord, not {type(record).__name__}")
        a = self.config.compute_ema
        self._compute_s = record.compute_s if self._compute_s is None else \
            (1 - a) * self._compute_s + a * record.compute_s
        self._last = record

    def forecast(self):
        """Forecast for the next step (None before the first trace)."""
        if self._last is None:
            return None
        c = self.config
        n = self._last.elements
        times = allreduce_times_ms(n, _exposure_pct(c.service), c.comm)
        allreduce = {FP32: times[c.fp32_path] * 1e-3}
        allreduce.update({m: times[_COMM_KEYS[m]] * 1e-3 for m in LOW_BIT_MODES})
        grad_bytes = int(n * BITS_PER_ELEMENT[FP32] // 8)
        lanes = c.line_bits // c.comm.gpus
        lines = sum(-(-e // lanes) for _, e in self._last.group_elements)
        window = max(self._compute_s, 1e-12)
        return Forecast(compute_s=self._compute_s, allreduce_s=allreduce,
                        gradient_bytes=grad_bytes,
                        shard_bytes_per_gpu=grad_bytes / c.comm.gpus,
                        peak_cxl_bytes_per_s=2 * grad_bytes / window,
                        cache_line_reads=lines)


# -- Commander ------------------------------------------------------------------------

@dataclass(frozen=True)
class CommanderConfig:
    """Parameters of the Commander's deterministic ladder (paper section 8).

    Parameters
    ----------
    default_mode : str, default "fp32"
        Mode of every group before the first decision: ``"fp32"`` is the
        paper's admission trace (training starts on FP32, section 3,
        "Admission and recovery"); a low-bit mode is its recovery trace
        (Fig. 6, G-Binary-default).
    warmup_steps : int, default 20
        FP32 steps before the first admission.  The paper gives no length.
    diag_window : int, default 10
        FP32 steps whose cosine diagnostics are averaged for a decision
        (the last ``diag_window`` of the warm-up or of a cooldown).
    cos_min : dict, default {"gbinary": 0.4, "gternary": 0.4}
        A mode passes for a group when its mean low-bit/FP32 cosine is at
        least this.  The paper gives no number; 0.4 lies between the
        CIFAR-100 head's .174/.142 and every group the paper admits
        (>= .415, Table 5).
    min_pressure : float, default 0.0
        Admit only when the Predictor's FP32 All-Reduce / compute ratio is
        at least this (network telemetry).  0 admits on diagnostics alone.
    sensitive : tuple of str, default ("head",)
        Groups that go low-bit only when every other group is admitted
        (paper section 8: "keeps a sensitive head on FP32 when only the
        backbone passes"; the reverse split saves almost no traffic,
        Table 6).
    """
    default_mode: str = FP32
    warmup_steps: int = 20
    diag_window: int = 10
    cos_min: dict = field(default_factory=lambda: {m: 0.4 for m in LOW_BIT_MODES})
    min_pressure: float = 0.0
    sensitive: tuple = ("head",)

    def __post_init__(self):
        _check_mode(self.default_mode)
        if self.diag_window < 1 or self.warmup_steps < 0:
            raise ValueError("diag_window must be >= 1 and warmup_steps >= 0")
        if set(self.cos_min) != set(LOW_BIT_MODES):
            raise ValueError(f"cos_min must name exactly {LOW_BIT_MODES}, not {sorted(self.cos_min)}")


class Commander:
    """The deterministic admission ladder.

    Parameters
    ----------
    groups : sequence of str
        Parameter-group names.
    config : CommanderConfig
    """

    def __init__(self, groups, config=CommanderConfig()):
        self.groups = tuple(groups)
        self.config = config
        self._diag = {g: {m: [] for m in LOW_BIT_MODES} for g in self.groups}

    def record_diagnostics(self, cosines):
        """Take one FP32 step's cosines: ``{group: {mode: cosine}}``."""
        for g, per_mode in cosines.items():
            for m, cos in per_mode.items():
                hist = self._diag[g][m]
                hist.append(float(cos))
                del hist[:-self.config.diag_window]

    def clear_diagnostics(self):
        for per_mode in self._diag.values():
            for hist in per_mode.values():
                hist.clear()

    def ready(self):
        """True when every group and mode has a full diagnostic window."""
        w = self.config.diag_window
        return all(len(h) >= w for per in self._diag.values() for h in per.values())

    def diagnostics(self):
        """Mean cosine per group and mode over the window."""
        return {g: {m: (sum(h) / len(h) if h else math.nan) for m, h in per.items()}
                for g, per in self._diag.items()}

    def propose(self, forecast=None):
        """The ladder's split: ``{group: mode}``.

        Each group gets the lowest-traffic mode whose diagnostic passes
        (FP32 if none does); sensitive groups stay FP32 unless every other
        group was admitted; nothing is admitted when the forecast pressure
        is below ``min_pressure``.
        """
        c = self.config
        if forecast is not None and forecast.pressure < c.min_pressure:
            return {g: FP32 for g in self.groups}
        diag = self.diagnostics()
        split = {}
        for g in self.groups:
            passing = [m for m in LOW_BIT_MODES if diag[g][m] >= c.cos_min[m]]
            split[g] = passing[0] if passing else FP32
        others = [g for g in self.groups if g not in c.sensitive]
        if any(split[g] == FP32 for g in others):
            for g in self.groups:
                if g in c.sensitive:
                    split[g] = FP32
        return split


# -- Supervisor -----------------------------------------------------------------------

@dataclass(frozen=True)
class SupervisorConfig:
    """Parameters of the Supervisor's training-health guard.

    The CUSUM runs on the step loss standardised by running estimates of
    its mean ``R`` and standard deviation ``sigma`` (exponential moving
    averages): ``x_t = (L_t - R_{t-1}) / sigma_{t-1}``, ``S_t = max(0,
    S_{t-1} + x_t - drift)``, alarm when ``S_t > limit``.  The paper names
    the CUSUM, the recovery triggers and the cooldown (sections 3 and 8) but
    gives no values; ``drift`` = 0.5 and ``limit`` = 5 are the textbook
    one-sided CUSUM for a one-sigma shift (k = delta / 2, h = 5 sigma).

    Parameters
    ----------
    ref_ema : float, default 0.05
        Weight of the newest loss in ``R`` and in the variance estimate.
    drift : float, default 0.5
        CUSUM drift ``k``, in standard deviations per step.
    limit : float, default 5.0
        CUSUM decision limit ``h``, in standard deviations.
    min_samples : int, default 10
        Losses that only build ``R`` and ``sigma`` before the CUSUM runs.
    cooldown_steps : int, default 20
        Quiet steps after the last trigger before recovery is declared
        (every group stays on FP32 meanwhile).
    """
    ref_ema: float = 0.05
    drift: float = 0.5
    limit: float = 5.0
    min_samples: int = 10
    cooldown_steps: int = 20

    def __post_init__(self):
        if not 0 < self.ref_ema <= 1:
            raise ValueError(f"ref_ema must be in (0, 1], not {self.ref_ema!r}")
        if self.drift < 0 or self.limit <= 0 or self.cooldown_steps < 0 or self.min_samples < 2:
            raise ValueError("need drift >= 0, limit > 0, cooldown_steps >= 0, min_samples >= 2")


class Supervisor:
    """CUSUM loss-trend guard with recovery triggers and cooldown."""

    def __init__(self, config=SupervisorConfig()):
        self.config = config
        self.reference = None
        self.variance = 0.0
        self.samples = 0
        self.cusum = 0.0
        self.since_trigger = None     # steps since the last trigger; None: never
        self.last_trigger = None

    @property
    def cooling(self):
        """True from a trigger until ``cooldown_steps`` quiet steps later."""
        return self.since_trigger is not None and self.since_trigger < self.config.cooldown_steps

    def _track(self, loss):
        a = self.config.ref_ema
        if self.reference is None:
            self.reference = loss
        else:
            dev = loss - self.reference
            self.variance = (1 - a) * (self.variance + a * dev * dev)
            self.reference += a * dev
        self.samples += 1

    def observe(self, loss):
        """Take one step's loss; return the trigger's name or None.

        A trigger restarts the cooldown and the CUSUM and rebases ``R`` on
        the current loss, so a lasting shift is not counted twice.
        """
        c = self.config
        loss = float(loss)
        if self.since_trigger is not None:
            self.since_trigger += 1
        trigger = None
        if not math.isfinite(loss):
            trigger = "non-finite loss"
        elif self.samples >= c.min_samples:
            x = (loss - self.reference) / max(math.sqrt(self.variance), 1e-12)
            self.cusum = max(0.0, self.cusum + x - c.drift)
            if self.cusum > c.limit:
                trigger = "CUSUM"
        if trigger:
            self.cusum = 0.0
            self.since_trigger = 0
            self.last_trigger = trigger
            if math.isfinite(loss):
                self.reference = loss
            return trigger
        self._track(loss)
        return None


# -- the control plane --------------------------------------------------------------

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
