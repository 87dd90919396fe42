"""The Predictor (paper section 3): trace-derived forecasts of collective
pressure, fed by nothing but a :class:`TraceRecord` of timings and volumes."""

import math
from dataclasses import dataclass
from functools import lru_cache

from neuron_fabric.host.control.commander import FP32, LOW_BIT_MODES
from neuron_fabric.models.commtime import CommParams, allreduce_times_ms
from neuron_fabric.models.envelope.model import overhead_pct
from neuron_fabric.models.envelope.params import ANCHOR, ServiceParams
from neuron_fabric.models.traffic import BITS_PER_ELEMENT


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
