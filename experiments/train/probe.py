"""Table 5 on the same gradients: every aggregation of one set of per-worker
gradients, against their FP32 mean.

The paper's Table 5 compares the low-bit and FP32 aggregates "of the same
layer group"; a run of each policy on its own trajectory (different
weights, different gradients) does not.  Here an FP32 run stops at fixed
points (:data:`PROBE_AT` of training) and passes the *same* per-worker
gradients of each of a few steps through every mode and encoding, each
through its own gradient runtime and device model (so the rotating gate
turns from one probe step to the next, as it would in training):

* G-Binary, G-Ternary with the fixed 2-of-3 gate, with the rotating gate
  and with the MARGIN gate (``|a| >= W/2``), G-Binary MARGIN (``a / W``),
  each under every encoding of a zero (:data:`neuron_fabric.host.encoding.ENCODINGS`);
* SignOfMean, ``sgn(mean)``, whose cosine to the mean is the *ceiling* of a
  {-1, +1} direction: no such vote can beat it, ``cos(sgn(m), m) = |m|_1 /
  (sqrt(n) |m|_2)`` (n the non-zero entries of m; a direction with zeros,
  from ties or a gate, can exceed it);
* the ternary ceiling, ``sgn(m)`` under the fixed 2-of-3 gate.

Each cosine is taken per group (``backbone``, ``head``) and over both
(``global``), then averaged over the probe steps.  The probe also measures
how many gradient entries are exactly 0 and in how many lanes every worker
holds 0 (:func:`neuron_fabric.host.encoding.zero_stats`).
"""

from dataclasses import replace

import numpy as np

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.experiments.train.models import GROUPS
from neuron_fabric.experiments.train.policies import cosine, margin_threshold
from neuron_fabric.host import encoding as enc
from neuron_fabric.host import runtime
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver

__all__ = ["PROBE_AT", "PROBE_STEPS", "MODES", "probe_runtimes", "probe_step", "ProbeSums"]

#: Fractions of training at which an FP32 run is probed.
PROBE_AT = (0.1, 0.3, 0.6)
#: Consecutive steps probed at each point.
PROBE_STEPS = 5

#: Low-bit modes probed, with the runtime policy of each for W workers.
MODES = {
    "gbinary": lambda w: runtime.G_BINARY,
    "gternary": lambda w: runtime.G_TERNARY,
    "gternary-rotating": lambda w: runtime.G_TERNARY_ROTATING,
    "gternary-margin": lambda w: runtime.g_ternary_margin(margin_threshold(w)),
    "gbinary-margin": lambda w: runtime.G_BINARY_MARGIN,
}
_KEYS = ("global",) + GROUPS


async def _create(sizes, workers, policy):
    dev = Device(TopParams(workers=workers))
    return await runtime.GradientRuntime.create(dev, Driver(dev, dev.params), sizes,
                                                {g: policy for g in GROUPS})


async def probe_runtimes(sizes, workers):
    """One runtime per probed mode and encoding: ``{(mode, encoding): runtime}``."""
    return {(m, e): await _create(sizes, workers, replace(make(workers), encoding=e))
            for m, make in MODES.items() for e in enc.ENCODINGS}


def _cosines(direction, mean):
    out = {g: cosine(direction[g], mean[g]) for g in GROUPS}
    out["global"] = cosine(np.concatenate([direction[g] for g in GROUPS]),
                           np.concatenate([mean[g] for g in GROUPS]))
    return out


def _ternary_ceiling(mean):
    """``sgn(m)`` under the fixed 2-of-3 gate: element ``j`` of a group kept
    iff ``j mod 3 < 2`` (the gate of a window that starts at its region's BASE)."""
    p = runtime.G_TERNARY
    return {g: np.where(np.arange(mean[g].size) % p.period < p.keep, np.sign(mean[g]), 0.0)
            for g in GROUPS}


class ProbeSums:
    """Running sums of one probe point's cosines and zero fractions."""

    def __init__(self):
        self.sums = {}
        self.count = 0

    def add(self, key, values):
        mine = self.sums.setdefault(key, {})
        for k, v in values.items():
            mine[k] = mine.get(k, 0.0) + v

    def result(self):
        """``{row: {column: mean}}`` over the probe steps."""
        return {k: {c: v / self.count for c, v in cols.items()} for k, cols in self.sums.items()}


async def probe_step(runtimes, grads, sums):
    """Every probed aggregation of one step's gradients ``{group: (W, n)}``
    into ``sums`` (a :class:`ProbeSums`): rows ``<mode>/<encoding>``,
    ``signofmean`` (the ceiling), ``ternary-ceiling`` and ``zeros``."""
    mean = {g: grads[g].mean(axis=0, dtype=np.float64) for g in GROUPS}

    for (m, e), rt in runtimes.items():
        sums.add(f"{m}/{e}", _cosines(await rt.step(grads), mean))
    sums.add("signofmean", _cosines({g: np.sign(mean[g]) for g in GROUPS}, mean))
    sums.add("ternary-ceiling", _cosines(_ternary_ceiling(mean), mean))
    zeros = {}
    for g in GROUPS:
        zeros[f"{g}_zero"], zeros[f"{g}_all_zero_lanes"] = enc.zero_stats(grads[g])
    both = np.concatenate([grads[g] for g in GROUPS], axis=1)
    zeros["global_zero"], zeros["global_all_zero_lanes"] = enc.zero_stats(both)
    sums.add("zeros", zeros)
    sums.count += 1
