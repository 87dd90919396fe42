"""The pilots' configuration: one run of the loop (:class:`LoopConfig`), the
degradation and fault windows, the learning rates, the Commander, the
RTL-in-the-loop run and the JSON form a simulator process reads."""

import json
from dataclasses import asdict, dataclass, field, replace

from neuron_fabric.host.control import FP32, LOW_BIT_MODES, CommanderConfig, SupervisorConfig
from neuron_fabric.host.fault_injection import BitFlips, StaleWorker, StuckLane

__all__ = ["Degradation", "DeviceFault", "FAULT_KINDS", "LoopConfig", "DEGRADATION", "DEVICE_FAULT", "LR",
           "LR_GRID", "PILOT_COMMANDER", "RTL_CONFIG", "loop_config_to_json",
           "loop_config_from_json"]


@dataclass(frozen=True)
class Degradation:
    """An injected degradation window: steps ``start <= s < stop`` train on
    labels of which a fraction ``noise`` is replaced by uniformly random
    classes (a corrupted data shard; the paper names no mechanism)."""
    start: int
    stop: int
    noise: float = 1.0


@dataclass(frozen=True)
class DeviceFault:
    """A fault window on the low-bit path: at steps ``start <= s < stop``
    the sign lines the runtime writes are corrupted in device memory
    (:class:`~neuron_fabric.host.fault_injection.FaultPort`), by ``kind``:

    * ``flip``: each bit flipped with probability ``fraction``; above 0.5
      the stored votes lean to the opposite of the workers' signs, so
      G-Binary climbs the loss;
    * ``stuck-lane``: lane 0 of every line stuck at 1 (one element in 64
      votes +1 at every step);
    * ``stale-worker``: worker 0's bits left as they were (its segment stale).
    """
    start: int
    stop: int
    fraction: float = 0.75
    kind: str = "flip"

    def __post_init__(self):
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"kind must be one of {FAULT_KINDS}, not {self.kind!r}")

    def make(self):
        """The :mod:`~neuron_fabric.host.fault_injection` fault."""
        if self.kind == "stuck-lane":
            return StuckLane(lane=0, value=True)
        if self.kind == "stale-worker":
            return StaleWorker(worker=0)
        return BitFlips(self.fraction)


#: The kinds of :class:`DeviceFault`.
FAULT_KINDS = ("flip", "stuck-lane", "stale-worker")


#: The label-noise window (negative control): a tenth of the easy task's
#: 300 steps, after the warm-up and admission (steps 150..179), half the
#: labels random.
DEGRADATION = Degradation(150, 180, 0.5)
#: The recovery pilot's window: the same steps, three in four stored sign
#: bits flipped.
DEVICE_FAULT = DeviceFault(150, 180, 0.75)

#: Learning rates tried per mode (:func:`tune_rates`): the harness's FP32
#: grid less its largest rate, and its sign grid less its largest.
LR_GRID = {FP32: (0.01, 0.03, 0.1), "gbinary": (1e-4, 3e-4, 1e-3),
           "gternary": (1e-4, 3e-4, 1e-3)}

#: Learning rate per mode, the default of :class:`LoopConfig`: what
#: :func:`tune_rates` chose on the validation split of the easy task in
#: ``make pilots`` (``learning_rates`` in pilots.json: final validation
#: accuracy FP32 0.01 / 0.03 / 0.1: 96.1 / 97.2 / 96.7 %, G-Binary 1e-4 /
#: 3e-4 / 1e-3: 96.9 / 95.8 / 93.6 %, G-Ternary 96.7 / 95.8 / 93.9 %).
#: ``make pilots`` tunes again and uses its own choice.
LR = {FP32: 0.03, "gbinary": 1e-4, "gternary": 1e-4}

#: The pilots' Commander: ``cos_min`` calibrated on FP32 warm-up cosines
#: (seed 0, 16 examples per worker): easy task backbone .14-.25, head
#: .11-.46; hard task backbone .18-.30, head .00-.02.  The paper's Table 5
#: values are about three times ours (larger per-worker batches), so its
#: 0.4 would admit nothing here; 0.1 admits both groups of the easy task
#: and the hard task's backbone, not its head.
PILOT_COMMANDER = CommanderConfig(cos_min={m: 0.1 for m in LOW_BIT_MODES})


@dataclass(frozen=True)
class LoopConfig:
    """One run of the loop.

    Parameters
    ----------
    task : str
        ``digits`` (easy) or ``pairs`` (hard).
    seed, steps, batch, workers :
        As the training harness; ``batch`` is per worker.
    lr : dict
        Learning rate per mode (:data:`LR`); a group's rate follows its
        current mode.
    channels, hidden :
        Model size (:func:`neuron_fabric.experiments.train.models.init`).
    fixed : dict or None
        ``{group: mode}`` with no control plane (the fixed-mode traces).
    default_mode, delay_steps :
        The control plane's Commander default and the late-update delay.
    degradation : Degradation or None
    fault : DeviceFault or None
        Sign lines corrupted in device memory during a window.
    evals : int
        Validation and test-accuracy evaluations along the run (the
        per-epoch trace), plus one at each edge of the degradation and
        fault windows.
    commander, supervisor :
        Role configurations (their own defaults when None).
    """
    task: str = "digits"
    seed: int = 0
    steps: int = 300
    batch: int = 16
    workers: int = 8
    lr: dict = field(default_factory=lambda: dict(LR))
    channels: tuple = (16, 32)
    hidden: int = 64
    fixed: dict = None
    default_mode: str = FP32
    delay_steps: int = 0
    degradation: Degradation = None
    fault: DeviceFault = None
    evals: int = 20
    commander: CommanderConfig = PILOT_COMMANDER
    supervisor: SupervisorConfig = None


#: The RTL-in-the-loop run: the easy task on a small model (616 + 90
#: elements, a few lines a step; learning rates raised for its size), FP32
#: default with a short warm-up, a window of random labels at steps 20..24
#: for the Supervisor, a short cooldown: admission, return to FP32 and
#: re-admission in 40 steps.
RTL_CONFIG = LoopConfig(steps=40, channels=(2, 4), hidden=8, evals=4,
                        lr={FP32: 0.1, "gbinary": 3e-3, "gternary": 3e-3},
                        degradation=Degradation(20, 25, 1.0),
                        commander=replace(PILOT_COMMANDER, warmup_steps=5, diag_window=5),
                        supervisor=SupervisorConfig(min_samples=5, cooldown_steps=5))


def loop_config_to_json(cfg):
    """``cfg`` as JSON (for a simulator process)."""
    return json.dumps(asdict(cfg))


def loop_config_from_json(text):
    """Inverse of :func:`loop_config_to_json`."""
    d = json.loads(text)
    d["channels"] = tuple(d["channels"])
    if d["degradation"]:
        d["degradation"] = Degradation(**d["degradation"])
    if d.get("fault"):
        d["fault"] = DeviceFault(**d["fault"])
    c = d["commander"]
    d["commander"] = CommanderConfig(**{**c, "sensitive": tuple(c["sensitive"])})
    if d["supervisor"]:
        d["supervisor"] = SupervisorConfig(**d["supervisor"])
    return LoopConfig(**d)
