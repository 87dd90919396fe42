"""Aggregation policies: what each parameter group's update direction is.

An *aggregation* turns one group's per-worker gradients into an update
direction; a *policy* names one aggregation per group (backbone, head).
Every low-bit aggregation runs through :class:`~neuron_fabric.host.runtime.GradientRuntime`
and the device; the FP32 ones through the runtime's FP32 path.

========================  ===============================================================
aggregation               direction per element
========================  ===============================================================
``fp32``                  FP32 mean of the workers' gradients
``gbinary``               G-Binary SIGN lane: the majority sign, 0 on a tie
``gternary``              G-Ternary SIGN lane, 2-of-3 PATTERN gate (the paper's)
``gternary-rotating``     as ``gternary``, the elements turned by one lane a step so that
                          the gate does not zero the same third at every step (ours)
``gternary-margin``       G-Ternary SIGN lane, MARGIN gate ``|a| >= T``
                          (T = :data:`MARGIN_THRESHOLD` for W = 8: at least 6 of 8 agree)
``signofmean``            sign of the FP32 mean (accuracy reference, FP32 traffic)
``gbinary-margin``        G-Binary MARGIN lane divided by W: ``a / W`` (ours)
========================  ===============================================================

Each aggregation has a learning-rate grid; :mod:`.experiments` picks one
value per task, aggregation and encoding of a zero on the validation split
(:func:`rate_key`: a low-bit aggregation's rate under each encoding is its
own, ``gbinary@abstain``).  A split policy (one group low-bit, the other
FP32) uses for each group the rate of its aggregation; the section 7
ablation (``...@low-bit-lr``) gives the FP32 head the low-bit rate instead.
Under SGD an FP32 head at a sign rate (1e-4 on gradients of about 1e-2)
barely moves, so the ablation also runs scale-free
(``...@low-bit-lr+adam``): the FP32 head's mean through Adam, its step per
element about the low-bit rate, as a sign step's is.

Where the low-bit rate is chosen: on most tasks, on the aggregation applied
to every group.  On a task of :data:`SPLIT_TUNED` it is chosen on the split
policy ``<aggregation>-backbone+fp32-head`` (the head at FP32's rate): there
the head's vote leaves every rate of the uniform policy near chance, so a
choice made on it would be noise.
"""

from dataclasses import dataclass

import numpy as np

from neuron_fabric.host import runtime
from neuron_fabric.host.encoding import ENCODINGS
from neuron_fabric.experiments.train.models import GROUPS

__all__ = ["Aggregation", "Policy", "AGGREGATIONS", "POLICIES", "MARGIN_THRESHOLD",
           "margin_threshold", "TASK_GRIDS", "lr_grid", "TUNED_LR", "tuned_lr", "get_policy",
           "rate_key", "SPLIT_TUNED", "tuning_policy",
           "cosine"]


def margin_threshold(workers):
    """T of the ``gternary-margin`` gate: a lane is kept when at least
    3/4 of the workers agree, ``|a| >= W / 2`` (T = 4 for W = 8)."""
    return workers // 2


#: T for the default W = 8.
MARGIN_THRESHOLD = margin_threshold(8)

_SIGN_GRID = (1e-4, 3e-4, 1e-3, 3e-3)


@dataclass(frozen=True)
class Aggregation:
    """One group's aggregation.

    Parameters
    ----------
    name : str
    traffic : str
        Representation in :data:`neuron_fabric.models.traffic.BITS_PER_ELEMENT`
        (for the paper's accounting).
    lr_grid : tuple of float
        Learning rates tried on the validation split.
    sign_of_mean : bool
        Take the sign of the runtime's FP32 mean.
    """
    name: str
    traffic: str
    lr_grid: tuple
    sign_of_mean: bool = False

    def group_policy(self, workers):
        """The runtime's :class:`~neuron_fabric.host.runtime.GroupPolicy` for ``workers``."""
        if self.name == "gternary-margin":
            return runtime.g_ternary_margin(margin_threshold(workers))
        return _RUNTIME[self.name]

    def finish(self, direction):
        """The update direction from the runtime's output."""
        return np.sign(direction) if self.sign_of_mean else direction


_RUNTIME = {
    "fp32": runtime.FP32,
    "signofmean": runtime.FP32,
    "gbinary": runtime.G_BINARY,
    "gternary": runtime.G_TERNARY,
    "gternary-rotating": runtime.G_TERNARY_ROTATING,
    "gbinary-margin": runtime.G_BINARY_MARGIN,
}

AGGREGATIONS = {a.name: a for a in (
    Aggregation("fp32", "fp32", (0.03, 0.1, 0.3, 1.0)),
    Aggregation("gbinary", "gbinary", _SIGN_GRID),
    Aggregation("gternary", "gternary", _SIGN_GRID),
    Aggregation("gternary-rotating", "gternary", _SIGN_GRID),
    Aggregation("gternary-margin", "gternary", _SIGN_GRID),
    Aggregation("signofmean", "fp32", _SIGN_GRID, sign_of_mean=True),
    Aggregation("gbinary-margin", "gbinary", (3e-4, 1e-3, 3e-3, 1e-2)),
)}


#: Per-task learning-rate grids that replace an aggregation's own.  The
#: paper-regime model of ``pairs-hard`` has 1.1 M parameters whose He
#: initial weights in the wide layer are about 0.04: a sign step of 3e-4
#: per element (x10 with momentum) swamps them within tens of steps
#: (G-Binary at 3e-4 stayed at chance, 1.15%, in a 600-step trial), so its
#: sign and margin grids are ten times smaller, with one rate more at the
#: top: the abstaining encoding and SignOfMean, whose zeros do not move the
#: weights, take larger steps.
TASK_GRIDS = {"pairs-hard": {a.name: tuple(float(f"{x / 10:g}") for x in a.lr_grid)
                             + (float(f"{a.lr_grid[-1] / 3:.0g}"),)
                             for a in AGGREGATIONS.values() if a.traffic != "fp32"
                             or a.sign_of_mean}}


def lr_grid(task, aggregation):
    """The learning rates tried for ``aggregation`` on ``task``."""
    return TASK_GRIDS.get(task, {}).get(aggregation, AGGREGATIONS[aggregation].lr_grid)


def rate_key(aggregation, encoding=ENCODINGS[0]):
    """The key of a tuned rate: the aggregation's name, and for a low-bit
    aggregation under an encoding other than the contract's,
    ``<aggregation>@<encoding>`` (each encoding is tuned on its own)."""
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS}, not {encoding!r}")
    low_bit = AGGREGATIONS[aggregation].traffic != "fp32"
    return f"{aggregation}@{encoding}" if low_bit and encoding != ENCODINGS[0] else aggregation


@dataclass(frozen=True)
class Policy:
    """A named choice of aggregation per parameter group; ``lr_from`` names,
    for some groups, the aggregation whose tuned rate the group takes
    instead of its own (the section 7 ablation); ``scale_free``, the groups
    updated by Adam instead of SGD with momentum (:mod:`.harness`)."""
    name: str
    label: str
    groups: dict
    lr_from: dict = None
    scale_free: tuple = ()

    def rate_aggregation(self, group):
        """The aggregation whose tuned learning rate ``group`` uses."""
        return (self.lr_from or {}).get(group, self.groups[group])

    def rates(self, tuned, encoding=ENCODINGS[0]):
        """``{group: rate}`` from ``tuned`` (:func:`rate_key` -> rate) under ``encoding``."""
        return {g: tuned[rate_key(self.rate_aggregation(g), encoding)] for g in GROUPS}

    @property
    def low_bit(self):
        """True when some group goes through the device."""
        return any(AGGREGATIONS[a].traffic != "fp32" for a in self.groups.values())

    @property
    def uniform(self):
        """True when every group has the same aggregation."""
        return len(set(self.groups.values())) == 1

    def aggregation(self, group):
        return AGGREGATIONS[self.groups[group]]

    def traffic_policy(self):
        """Group -> representation, as :func:`neuron_fabric.models.traffic.traffic_ratio` takes it."""
        return {g: self.aggregation(g).traffic for g in GROUPS}


def _uniform(name, label):
    return Policy(name, label, {g: name for g in GROUPS})


def _split(backbone, head, label):
    return Policy(f"{backbone}-backbone+{head}-head", label,
                  {"backbone": backbone, "head": head})


def _ablation(backbone, label, scale_free=False):
    return Policy(f"{backbone}-backbone+fp32-head@low-bit-lr" + ("+adam" if scale_free else ""),
                  label, {"backbone": backbone, "head": "fp32"}, {"head": backbone},
                  ("head",) if scale_free else ())


POLICIES = {p.name: p for p in (
    _uniform("fp32", "FP32"),
    _uniform("gbinary", "G-Binary"),
    _uniform("gternary", "G-Ternary (2-of-3 gate)"),
    _uniform("gternary-rotating", "G-Ternary (2-of-3 gate, rotating)"),
    _uniform("gternary-margin", "G-Ternary (margin gate)"),
    _uniform("signofmean", "SignOfMean"),
    _uniform("gbinary-margin", "G-Binary-MARGIN"),
    _split("gbinary", "fp32", "G-Binary backbone + FP32 head"),
    _split("gternary", "fp32", "G-Ternary backbone + FP32 head"),
    _split("fp32", "gbinary", "FP32 backbone + G-Binary head"),
    _split("fp32", "gternary", "FP32 backbone + G-Ternary head"),
    _ablation("gbinary", "G-Binary backbone + FP32 head at the low-bit rate"),
    _ablation("gternary", "G-Ternary backbone + FP32 head at the low-bit rate"),
    _ablation("gbinary", "G-Binary backbone + FP32 head at the low-bit rate, Adam", True),
    _ablation("gternary", "G-Ternary backbone + FP32 head at the low-bit rate, Adam", True),
)}


#: The rates chosen on the validation split (``learning_rates`` in
#: ``training.json``; for ``pairs-hard``, ``make train-rates``'s
#: ``learning_rates.json``), task -> :func:`rate_key` -> rate: ``make
#: train``'s rates for the hard task and the command line's default.  Rerun
#: the command and copy them here when the grids change.
TUNED_LR = {
    "digits": {"fp32": 0.03, "gbinary": 3e-4, "gternary": 3e-4, "gternary-rotating": 3e-4,
               "gternary-margin": 3e-4,
               "signofmean": 1e-3, "gbinary-margin": 3e-4},
    "pairs": {"fp32": 0.1, "gbinary": 1e-3, "gternary": 3e-4, "gternary-rotating": 1e-3,
              "gternary-margin": 1e-3,
              "signofmean": 3e-4, "gbinary-margin": 3e-4},
    # make train-rates (600 steps, seed 0, whole grids, every encoding; a
    # low-bit rate chosen on its split policy): learning_rates.md; the other
    # aggregations were not tuned on this task
    "pairs-hard": {"fp32": 0.1, "signofmean": 1e-3, "gbinary": 1e-4, "gbinary@abstain": 1e-3,
                   "gternary": 1e-4, "gternary@abstain": 1e-3},
}


def tuned_lr(task, aggregation, encoding=ENCODINGS[0]):
    """The rate ``make train`` chose for ``aggregation`` under ``encoding`` on ``task``."""
    if task not in TUNED_LR:
        raise ValueError(f"unknown task {task!r}; known: {sorted(TUNED_LR)}")
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {aggregation!r}; known: {sorted(AGGREGATIONS)}")
    key = rate_key(aggregation, encoding)
    if key not in TUNED_LR[task]:
        raise ValueError(f"no rate was tuned for {key!r} on {task!r}; give --lr")
    return TUNED_LR[task][key]


#: Tasks whose low-bit rates are chosen on the split policy
#: ``<aggregation>-backbone+fp32-head`` (module docstring).
SPLIT_TUNED = ("pairs-hard",)


def tuning_policy(task, aggregation):
    """The policy a rate of ``aggregation`` is chosen on, and the groups the
    tried rate goes to (the others take FP32's tuned rate)."""
    split = f"{aggregation}-backbone+fp32-head"
    if task in SPLIT_TUNED and split in POLICIES and aggregation != "fp32":
        return split, ("backbone",)
    return aggregation, GROUPS


def get_policy(name):
    """The policy called ``name``."""
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; known: {list(POLICIES)}")
    return POLICIES[name]


def cosine(u, v):
    """Cosine of the angle between vectors ``u`` and ``v`` (0 if either is zero)."""
    u = np.asarray(u, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    # Element-wise sums rather than BLAS: no thread pool, same result on every machine.
    norm = np.sqrt(np.sum(u * u) * np.sum(v * v))
    return float(np.sum(u * v) / norm) if norm else 0.0
