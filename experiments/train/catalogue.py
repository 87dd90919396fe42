"""What ``make train`` runs: each experiment's task and policies, and the seeds
(read by the runner, :mod:`.experiments`, and the report writer, :mod:`.report`)."""

__all__ = ["UNIFORM", "SPLITS", "EXPERIMENTS", "SEEDS", "TASKS"]

#: Policies with one aggregation on every group, in report order.
UNIFORM = ("fp32", "gbinary", "gternary", "gternary-rotating", "gternary-margin", "signofmean",
           "gbinary-margin")
#: Table 6's policies, in the paper's order.
SPLITS = ("fp32", "gbinary", "gternary", "gbinary-backbone+fp32-head",
          "gternary-backbone+fp32-head", "fp32-backbone+gbinary-head",
          "fp32-backbone+gternary-head")

#: Experiment -> (task, policies).
EXPERIMENTS = {
    "convergence": ("digits", UNIFORM),
    "boundary": ("pairs", UNIFORM),
    "admission": ("pairs", SPLITS),
}
SEEDS = (0, 1, 2)
TASKS = ("digits", "pairs")
