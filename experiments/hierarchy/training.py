"""Training at 64 virtual workers through a two-level hierarchy: 8
controllers of 8 workers, one hop of fan-in 8 (:class:`MultiHopTree` (8, 8, 1)).

Each step the 64 workers' gradients (``jax.vmap(jax.value_and_grad(loss))``,
:func:`neuron_fabric.experiments.train.harness.step_functions`) are
aggregated by one scheme on both parameter groups, concatenated:

=================  =======================================================================
scheme             direction
=================  =======================================================================
``fp32``           the FP32 mean of the 64 gradients
``exact``          exact count forwarding: the global majority sign over all 64 workers
                   (G-Binary over 64, 0 on a tie), computed through the contract's count
                   path (:func:`neuron_fabric.host.hierarchy.contract_vote`: 8 level-1
                   G-Binary COUNT reads, one level-2 COUNTS4 read with total 64, SIGN)
``mom``            majority of majorities as sign lines carry it: each controller's
                   sign packed as 1 bit (a tie travels as negative), the top's G-Binary
                   vote over the 8 bits (0 on a tie)
``mom-ternary``    majority of majorities with ties forwarded as 0: the sign of the sum
                   of the controllers' signs
``dq-grad``        DynamiQ-style: every worker's gradient quantized to 4 bits, each
                   controller's sum re-quantized to 4 bits, summed at the top, divided
                   by 64 (an unbiased estimate of the mean, with magnitudes)
``signofmean``     the sign of the FP32 mean (a reference: FP32 traffic)
``dq-<v>-b<b>``    DynamiQ-style at b bits with the seed's correlated rounding, on vote
                   counts (``v`` = ``sign``: exact level-1 margins, re-quantized partial
                   margins, the sign at the top) or on gradients (``v`` = ``grad``); the
                   equal-bits sweep of :data:`BIT_SWEEP`
=================  =======================================================================

The update is SGD with momentum 0.9 and a cosine-decayed rate, as in
:mod:`neuron_fabric.experiments.train.harness`.  The rate is chosen per
task and scheme on the validation split (seed 0, best final validation accuracy, the test split never looked
at).  By default the workers share the harness's global batch: 2 examples
per worker and step, 128 a step (``batch``).  This loop does not go through the device model (a
device serves at most 16 workers); the exact scheme runs through the
golden model's count path instead.
"""

import time
from dataclasses import asdict, dataclass

import numpy as np

from neuron_fabric.host.hierarchy import MultiHopTree, aggregate, contract_vote, cosine
from neuron_fabric.experiments.train import models
from neuron_fabric.experiments.train.harness import (
    TASK_DEFAULTS,
    batch_indices,
    lr_factor,
    step_functions,
)
from neuron_fabric.experiments.train.models import GROUPS
from neuron_fabric.experiments.train.tasks import load_task

__all__ = ["TRAIN_SCHEMES", "LR_GRIDS", "HIERARCHY", "DQ_BITS", "BIT_SWEEP", "SWEEP_SCHEMES",
           "scheme_bits", "HopRun", "direction", "train"]

#: Schemes trained, in report order, with their labels.
TRAIN_SCHEMES = {
    "fp32": "FP32 mean",
    "exact": "exact counts (global majority)",
    "mom": "majority of majorities (1-bit)",
    "mom-ternary": "majority of majorities (ternary)",
    "dq-grad": "DynamiQ-style 4-bit partial sums",
    "signofmean": "sign of the FP32 mean (reference)",
}
_SIGN_GRID = (1e-4, 3e-4, 1e-3, 3e-3)
_VALUE_GRID = (0.01, 0.03, 0.1, 0.3)
#: Learning rates tried on the validation split, per scheme.
LR_GRIDS = {"fp32": _VALUE_GRID, "exact": _SIGN_GRID, "mom": _SIGN_GRID,
            "mom-ternary": _SIGN_GRID, "dq-grad": _VALUE_GRID, "signofmean": _SIGN_GRID}
#: The hierarchy of the 64 virtual workers.
HIERARCHY = MultiHopTree(workers=8, fanin=8, hops=1)
#: Bits of the DynamiQ-style codes.
DQ_BITS = 4
#: Bits per coordinate per hop of the equal-bits sweep.
BIT_SWEEP = (1, 2, 3, 4, 8)
#: The sweep's schemes (correlated rounding), with labels and grids.
SWEEP_SCHEMES = {f"dq-{v}-b{b}": f"DynamiQ-style {what}, b = {b}, correlated rounding"
                 for v, what in (("sign", "vote sums"), ("grad", "gradient sums"))
                 for b in BIT_SWEEP}
LR_GRIDS.update({s: (_SIGN_GRID if s.startswith("dq-sign") else _VALUE_GRID)
                 for s in SWEEP_SCHEMES})


def scheme_bits(scheme):
    """``(base scheme, bits, rounding)`` of a training scheme name."""
    if scheme in SWEEP_SCHEMES:
        v, b = scheme[3:].split("-b")
        return f"dq-{v}", int(b), "correlated"
    return scheme, (DQ_BITS if scheme.startswith("dq") else None), "independent"


@dataclass(frozen=True)
class HopRun:
    """One run: ``task``, ``scheme`` (:data:`TRAIN_SCHEMES`), ``lr``, ``seed``;
    ``steps`` (task default of :mod:`neuron_fabric.experiments.train.harness` when None), ``batch``
    examples per worker and step, ``evals`` accuracy evaluations, and the
    step from which ``diag_steps`` steps' cosines to the FP32 mean are
    averaged (``diag_at`` of the run)."""
    task: str
    scheme: str
    lr: float
    seed: int = 0
    steps: int = None
    batch: int = 2
    evals: int = 10
    diag_at: float = 0.3
    diag_steps: int = 20

    def resolved(self):
        return HopRun(**{**asdict(self), "steps": self.steps or TASK_DEFAULTS[self.task]["steps"]})


def direction(scheme, grads, rng, h=HIERARCHY):
    """The update direction of ``scheme`` for the workers' gradients ``(K, n)``."""
    if scheme == "fp32":
        return grads.mean(axis=0, dtype=np.float64)
    if scheme == "exact":
        return contract_vote(h, grads).astype(np.float64)
    if scheme in ("mom", "mom-ternary", "dq-grad", "signofmean") or scheme in SWEEP_SCHEMES:
        base, bits, rounding = scheme_bits(scheme)
        return aggregate(h, grads, base, bits=bits, rng=rng, rounding=rounding)
    raise ValueError(f"unknown scheme {scheme!r}; known: {list(TRAIN_SCHEMES)}")


def train(run, h=HIERARCHY):
    """Run ``run`` (a :class:`HopRun`) with ``h.total`` virtual workers.

    Returns a dict: ``config``, ``curve`` (``step``, ``loss``, ``val``,
    ``test``), final ``val`` and ``test`` accuracies (fractions),
    ``cosine`` (mean cosine of the direction to the FP32 mean over the
    diagnostic steps) and ``seconds``.
    """
    start = time.perf_counter()
    run = run.resolved()
    task = load_task(run.task, run.seed)
    worker_grads, update, opt_init = step_functions(task.image_shape, task.classes)
    params = models.init(run.seed, task.image_shape, task.classes)
    state = opt_init(params)
    sizes = models.group_sizes(params)
    cut = sizes[GROUPS[0]]
    k = h.total
    batches = batch_indices(len(task.y_train), k * run.batch, run.seed)
    evals = sorted({round(run.steps * (e + 1) / run.evals) for e in range(run.evals)})
    diag_from = int(run.diag_at * run.steps)
    rng = np.random.default_rng([run.seed, 7])
    cosines, curve = [], []
    for step in range(run.steps):
        idx = next(batches)
        xw = task.x_train[idx].reshape(k, run.batch, *task.image_shape)
        yw = task.y_train[idx].reshape(k, run.batch)
        loss, grads = worker_grads(params, xw, yw)
        flat = np.concatenate([np.asarray(grads[g]) for g in GROUPS], axis=1)
        d = direction(run.scheme, flat, rng, h)
        if diag_from <= step < diag_from + run.diag_steps:
            cosines.append(cosine(d, flat.mean(axis=0, dtype=np.float64)))
        d = d.astype(np.float32)
        rate = np.float32(run.lr * lr_factor(step, run.steps))
        params, state = update(params, state, {GROUPS[0]: d[:cut], GROUPS[1]: d[cut:]},
                               {g: rate for g in GROUPS})
        if step + 1 in evals:
            curve.append(dict(step=step + 1, loss=float(loss),
                              val=models.accuracy(params, task.x_val, task.y_val),
                              test=models.accuracy(params, task.x_test, task.y_test)))
    return dict(config=asdict(run), curve=curve, val=curve[-1]["val"], test=curve[-1]["test"],
                cosine=float(np.mean(cosines)) if cosines else None,
                seconds=time.perf_counter() - start)
