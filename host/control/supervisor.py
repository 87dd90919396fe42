"""The Supervisor (paper sections 3 and 8): the training-health guard, a CUSUM
on the standardised loss with recovery triggers and a cooldown."""

import math
from dataclasses import dataclass


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
