"""The Commander (paper section 8): the deterministic admission ladder over
the cosine-alignment diagnostics of FP32 warm-up steps, and the ladder's
mode names with the runtime policy of each."""

import math
from dataclasses import dataclass, field

from neuron_fabric.host import runtime
from neuron_fabric.models.traffic import BITS_PER_ELEMENT

#: The host FP32 path (no device).
FP32 = "fp32"

#: Low-bit modes in ladder order: fewest bits per element first.
LOW_BIT_MODES = tuple(sorted((m for m in BITS_PER_ELEMENT if m != FP32),
                             key=BITS_PER_ELEMENT.get))

#: The runtime policy of each mode.  FP32 is BYPASS: the runtime averages
#: FP32 groups on the host and never reads them through the datapath.  The
#: low-bit modes return SIGN lanes (majority sign; G-Ternary with the
#: paper's fixed 2-of-3 pattern gate).
MODE_POLICY = {FP32: runtime.FP32, "gbinary": runtime.G_BINARY, "gternary": runtime.G_TERNARY}


def check_mode(mode):
    if mode != FP32 and mode not in LOW_BIT_MODES:
        raise ValueError(f"mode must be one of {(FP32,) + LOW_BIT_MODES}, not {mode!r}")
    return mode


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
        check_mode(self.default_mode)
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
