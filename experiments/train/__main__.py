"""Command line of the training harness: one task, one policy, some seeds.

    python -m neuron_fabric.experiments.train --task pairs --policy gbinary-backbone+fp32-head \\
        --seeds 0 1 2 --steps 1200 --out build/train/run.json

Without ``--lr`` each group gets the rate chosen for its aggregation under
``--encoding`` on that task (:data:`.policies.TUNED_LR`).  Prints one line per
seed and writes every result (curves, diagnostics, traffic) as JSON.
"""

import json
import pathlib

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.experiments.train.harness import TASK_DEFAULTS, RunConfig, train
from neuron_fabric.experiments.train.models import GROUPS, PAPER_REGIME
from neuron_fabric.experiments.train.policies import POLICIES, tuned_lr
from neuron_fabric.experiments.train.tasks import TASKS
from neuron_fabric.host.encoding import ENCODINGS


def _parser():
    ap = ArgumentParser(prog="python -m neuron_fabric.experiments.train",
                        description="Train with per-worker gradients aggregated through "
                                    "the gradient runtime and the device model.")
    ap.add_argument("--task", required=True, choices=sorted(TASKS))
    ap.add_argument("--policy", required=True, choices=list(POLICIES))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--steps", type=int, help="steps (task default: "
                    + ", ".join(f"{t} {d['steps']}" for t, d in TASK_DEFAULTS.items()) + ")")
    ap.add_argument("--batch", type=int, help="examples per worker and step (default 16)")
    ap.add_argument("--workers", type=int, default=8, choices=(4, 8, 16))
    ap.add_argument("--lr", type=float, help="one learning rate for every group")
    ap.add_argument("--hidden", type=int, help="features the head reads (default 64)")
    ap.add_argument("--paper-regime", action="store_true",
                    help="the paper-regime model (models.PAPER_REGIME: > 1 M backbone "
                         "parameters, head 0.45%% of them)")
    ap.add_argument("--encoding", default=ENCODINGS[0], choices=ENCODINGS,
                    help="how a zero gradient becomes a bit (host/encoding.py; default "
                         "%(default)s, the contract's g > 0; abstain is an upper bound that "
                         "needs one writer holding every worker's signs)")
    ap.add_argument("--out", help="write the results to this JSON file")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    return ap


@guarded
def main(argv=None):
    ap = _parser()
    args = ap.parse_args(argv)
    for name in ("steps", "batch", "hidden"):
        value = getattr(args, name)
        if value is not None and value < 1:
            ap.error(f"--{name} must be at least 1, not {value}")
    if args.lr is not None and not args.lr > 0:
        ap.error(f"--lr must be positive, not {args.lr}")
    policy = POLICIES[args.policy]
    lr = {g: args.lr if args.lr is not None
          else tuned_lr(args.task, policy.rate_aggregation(g), args.encoding)
          for g in GROUPS}
    extra = dict(PAPER_REGIME) if args.paper_regime else {}
    if args.hidden:
        extra["hidden"] = args.hidden
    results = []
    for seed in args.seeds:
        cfg = RunConfig(args.task, args.policy, lr, seed=seed, steps=args.steps,
                        batch=args.batch, workers=args.workers, encoding=args.encoding,
                        **extra)
        r = train(cfg, progress=not args.no_progress)
        results.append(r)
        print(f"{args.task} {policy.label} seed {seed}: test {100 * r['test']:.2f}% "
              f"val {100 * r['val']:.2f}% payload {r['traffic']['total']['payload_ratio']:.4f} "
              f"of FP32", flush=True)
    if args.out:
        path = pathlib.Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=1))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
