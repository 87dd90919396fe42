"""``make train-batch64``: the head-vote check on the hard task at 64
examples per worker instead of 16.

    python -m neuron_fabric.experiments.train.batch64 [--out build/reports] [--jobs 2] [--quick]

At 16 examples per worker a class of the 100 is in about 15% of a worker's
batches, so nearly every row of the head gets 7 of 8 "lower this logit"
votes and G-Binary on every layer stays near chance (``make train``).  At
64 a class is in about half of them.  Four runs, seed 0, 600 steps, at the
rates ``make train`` uses (chosen at 16 examples a worker,
:data:`.policies.TUNED_LR`): FP32; G-Binary on every layer under the
contract's packing and with zeros abstaining; the G-Binary backbone with an
FP32 head, zeros abstaining.  ``make train-full``'s batch-64 sweep is the
whole experiment (5 seeds, every policy, rates chosen again).
Writes ``batch64.{md,json}``.
"""

import json
import pathlib
import time
from dataclasses import asdict

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.experiments import single_thread_env
from neuron_fabric.experiments.train import experiments
from neuron_fabric.experiments.train.catalogue import TRAIN_HARD_STEPS
from neuron_fabric.experiments.train.harness import RunConfig
from neuron_fabric.experiments.train.models import PAPER_REGIME
from neuron_fabric.experiments.train.policies import POLICIES, TUNED_LR

__all__ = ["RUNS", "BATCH", "configs", "run", "main"]

BATCH = 64
#: (policy, encoding) of each run.
RUNS = (("fp32", "negative"), ("gbinary", "negative"), ("gbinary", "abstain"),
        ("gbinary-backbone+fp32-head", "abstain"))


def configs(quick=False):
    """The runs' :class:`.harness.RunConfig` dicts (``quick``: the first
    low-bit run alone, 2 steps)."""
    chosen = RUNS[1:2] if quick else RUNS
    return [asdict(RunConfig("pairs-hard", policy,
                             POLICIES[policy].rates(TUNED_LR["pairs-hard"], encoding), seed=0,
                             steps=2 if quick else TRAIN_HARD_STEPS, batch=BATCH,
                             evals=2 if quick else 20, encoding=encoding, **PAPER_REGIME))
            for policy, encoding in chosen]


def _markdown(rows, seconds, quick):
    lines = ["# The hard task at 64 examples per worker", "",
             ("QUICK SMOKE RUN, not results. " if quick else "")
             + f"`make train-batch64`: pairs-hard, W 8 x {BATCH} examples a step, seed 0, "
             f"{rows[0]['steps']} steps, the rates `make train` uses (chosen at 16 examples a "
             f"worker); {seconds / 60:.1f} min. Test accuracy of one seed: no spread.", "",
             "| policy | encoding | learning rates (backbone / head) | test acc. (%) | "
             "val. acc. (%) | payload vs FP32 |", "|---|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['label']} | {r['encoding']} | {r['lr']['backbone']:g} / "
                     f"{r['lr']['head']:g} | {100 * r['test']:.2f} | {100 * r['val']:.2f} | "
                     f"{r['payload_ratio']:.4f} |")
    return "\n".join(lines) + "\n"


def run(out, jobs=2, quick=False):
    """Run :func:`configs` and write ``batch64.{md,json}`` into ``out``; return the paths."""
    single_thread_env()
    start = time.perf_counter()
    results = experiments.run_jobs(configs(quick), jobs, "batch 64")
    rows = [dict(policy=r["config"]["policy"], label=r["policy_label"],
                 encoding=r["config"]["encoding"], lr=r["config"]["lr"],
                 steps=r["config"]["steps"], test=r["test"], val=r["val"],
                 payload_ratio=r["traffic"]["total"]["payload_ratio"]) for r in results]
    seconds = time.perf_counter() - start
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "batch64.json", out / "batch64.md"]
    paths[0].write_text(json.dumps(dict(quick=quick, batch=BATCH, wall_seconds=seconds,
                                        runs=rows), indent=1))
    paths[1].write_text(_markdown(rows, seconds, quick))
    return paths


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.experiments.train.batch64",
                        description="The hard task at 64 examples per worker: FP32, G-Binary "
                                    "(both encodings) and the G-Binary backbone + FP32 head.")
    ap.add_argument("--out", default="build/reports", help="report folder (default %(default)s)")
    ap.add_jobs()
    ap.add_argument("--quick", action="store_true", help="one run of 2 steps (a smoke run)")
    args = ap.parse_args(argv)
    for path in run(args.out, args.jobs, args.quick):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
