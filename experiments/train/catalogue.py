"""What ``make train`` and ``make train-full`` run: each experiment's task,
model, batch and policies, the encodings and the seeds (read by the
runner, :mod:`.experiments`, and the report writer, :mod:`.report`)."""

from dataclasses import dataclass, field

from neuron_fabric.experiments.train.models import PAPER_REGIME

__all__ = ["UNIFORM", "SPLITS", "ABLATION", "EXPERIMENTS", "FULL_EXPERIMENTS", "SEEDS",
           "FULL_SEEDS", "TASKS", "ENCODINGS", "Experiment", "experiments_for", "RECORDED",
           "TRAIN_HARD_STEPS"]

#: Policies with one aggregation on every group, in report order.
UNIFORM = ("fp32", "gbinary", "gternary", "gternary-rotating", "gternary-margin", "signofmean",
           "gbinary-margin")
#: Table 6's policies, in the paper's order.
SPLITS = ("fp32", "gbinary", "gternary", "gbinary-backbone+fp32-head",
          "gternary-backbone+fp32-head", "fp32-backbone+gbinary-head",
          "fp32-backbone+gternary-head")
#: The paper's section 7 ablation: the head on FP32 aggregation at the
#: low-bit learning rate.
ABLATION = ("gbinary-backbone+fp32-head@low-bit-lr", "gternary-backbone+fp32-head@low-bit-lr")
#: Encodings of a zero trained on the low-bit paths (both reported): the
#: contract's packing and the abstaining one (:mod:`neuron_fabric.host.encoding`).
ENCODINGS = ("negative", "abstain")


@dataclass(frozen=True)
class Experiment:
    """One experiment: ``task``, ``policies``, examples per worker and step
    (``batch``), the model size (``model``: keyword arguments of
    :class:`.harness.RunConfig`), ``steps`` (task default when None),
    ``seeds`` (the run's seeds when None)."""
    task: str
    policies: tuple
    batch: int = 16
    model: dict = field(default_factory=dict)
    steps: int = None
    seeds: tuple = None


_HARD = dict(task="pairs-hard", model=PAPER_REGIME)

#: ``make train-full``: every experiment.
FULL_EXPERIMENTS = {
    "convergence": Experiment("digits", UNIFORM),
    "boundary": Experiment(policies=UNIFORM, **_HARD),
    "admission": Experiment(policies=SPLITS + ABLATION, **_HARD),
    "batch64": Experiment(policies=("fp32", "gbinary", "gternary", "signofmean",
                                    "gbinary-backbone+fp32-head",
                                    "gternary-backbone+fp32-head"), batch=64, steps=600, **_HARD),
}

#: Steps of ``make train``'s hard-task runs (the task's default, 1200, in
#: ``make train-full``).
TRAIN_HARD_STEPS = 600

#: ``make train``: the easy task whole; on the hard task (paper regime,
#: about 1 CPU-minute a run at 600 steps) seeds 0 and 1, 600 steps, at the
#: rates ``make train-rates`` recorded (:data:`.policies.TUNED_LR`), without
#: the rotating and margin variants, the reverse splits (FP32 backbone +
#: low-bit head), the G-Ternary ablation and the batch-64 sweep, which
#: ``make train-full`` adds (with its own selection, at 1200 steps, 5 seeds).
EXPERIMENTS = {
    "convergence": FULL_EXPERIMENTS["convergence"],
    "boundary": Experiment(policies=("fp32", "gbinary", "gternary", "signofmean"),
                           steps=TRAIN_HARD_STEPS, seeds=(0, 1), **_HARD),
    "admission": Experiment(policies=SPLITS[:5] + ABLATION[:1], steps=TRAIN_HARD_STEPS,
                            seeds=(0, 1), **_HARD),
}

#: Tasks whose rates ``make train`` takes from :data:`.policies.TUNED_LR`
#: (recorded by ``make train-rates``) instead of selecting them again.
RECORDED = ("pairs-hard",)

SEEDS = (0, 1, 2)
#: ``make train-full``: five seeds (the spread of several rows exceeds 2 points).
FULL_SEEDS = (0, 1, 2, 3, 4)
TASKS = ("digits", "pairs-hard")


def experiments_for(full):
    """``(experiments, seeds, recorded)`` of ``make train-full`` (``full``)
    or ``make train``: ``recorded``, the tasks whose rates are not selected
    again (:data:`RECORDED`)."""
    return (FULL_EXPERIMENTS, FULL_SEEDS, ()) if full else (EXPERIMENTS, SEEDS, RECORDED)
