"""The training experiments of ``make train``: learning-rate selection, then
the paper's Fig. 4, Fig. 5, Table 5 and Table 6 on our tasks.

    python -m neuron_fabric.experiments.train.experiments [--out build/reports] [--jobs 2] [--quick]

1. *Learning rates*: for each task and each aggregation of
   :data:`.policies.AGGREGATIONS`, every rate of its grid on seed 0 with the
   aggregation on every group; the rate with the best final *validation*
   accuracy is kept (the test split is never looked at).
2. *Runs*, seeds 0, 1, 2 (in ``--jobs`` processes):

   * convergence (Fig. 4): the easy task (``digits``), every uniform policy;
   * boundary (Fig. 5): the hard task (``pairs``), every uniform policy;
   * admission (Table 6): the hard task, FP32, G-Binary and G-Ternary on
     every group and the four backbone/head splits;
   * diagnostics (Table 5): the cosines the G-Binary and G-Ternary runs of
     both tasks recorded at 30% of training.

3. :mod:`.report` writes ``training.md``, ``training.json`` and the plots.

``--quick`` is a smoke run of the same pipeline: one seed, the middle of each
grid without selection, a few dozen steps.
"""

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.experiments.train import report
from neuron_fabric.experiments.train.catalogue import EXPERIMENTS, SEEDS, SPLITS, TASKS, UNIFORM
from neuron_fabric.experiments.train.harness import TASK_DEFAULTS, RunConfig, train
from neuron_fabric.experiments.train.models import GROUPS
from neuron_fabric.experiments.train.policies import AGGREGATIONS, POLICIES

__all__ = ["UNIFORM", "SPLITS", "EXPERIMENTS", "SEEDS", "plan", "run_all", "main"]

#: --quick: steps per task.
QUICK_STEPS = {"digits": 30, "pairs": 30}


def _single_thread_env():
    """One XLA thread per process: the experiments run ``--jobs`` processes
    side by side, one per core (read by XLA when the backend starts)."""
    os.environ["XLA_FLAGS"] = " ".join(filter(None, [
        os.environ.get("XLA_FLAGS", ""),
        "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"]))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _job(cfg):
    start = time.perf_counter()
    result = train(RunConfig(**cfg), progress=False)
    result["seconds"] = time.perf_counter() - start
    return result


def _run_jobs(configs, jobs, desc):
    """Run every config, longest task first; results in the order given."""
    from tqdm import tqdm  # deferred: tqdm (train extra)
    order = sorted(range(len(configs)), key=lambda i: -TASK_DEFAULTS[configs[i]["task"]]["steps"])
    results = [None] * len(configs)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool, \
            tqdm(total=len(configs), desc=desc) as bar:
        futures = {pool.submit(_job, configs[i]): i for i in order}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            bar.update(1)
    return results


def _config(task, policy, lr, seed, quick):
    cfg = RunConfig(task, policy, lr, seed=seed,
                    steps=QUICK_STEPS[task] if quick else None,
                    evals=3 if quick else 20)
    return asdict(cfg)


def _middle(grid):
    return grid[(len(grid) - 1) // 2]


def tune(jobs, quick):
    """Learning rate per task and aggregation, chosen on the validation split.

    Returns ``(rates, trials)``: ``rates[task][aggregation]`` and the list of
    every tried rate with its validation accuracy.
    """
    if quick:
        rates = {t: {a: _middle(agg.lr_grid) for a, agg in AGGREGATIONS.items()} for t in TASKS}
        return rates, []
    configs = [_config(t, a, {g: lr for g in GROUPS}, 0, quick)
               for t in TASKS for a, agg in AGGREGATIONS.items() for lr in agg.lr_grid]
    results = _run_jobs(configs, jobs, "learning rates")
    trials = [dict(task=c["task"], aggregation=c["policy"], lr=c["lr"]["backbone"], val=r["val"])
              for c, r in zip(configs, results)]
    rates = {t: {} for t in TASKS}
    for t in TASKS:
        for a in AGGREGATIONS:
            mine = [x for x in trials if x["task"] == t and x["aggregation"] == a]
            rates[t][a] = max(mine, key=lambda x: x["val"])["lr"]   # first maximum: smaller rate
    return rates, trials


def plan(rates, seeds, quick):
    """The distinct runs every experiment needs, as RunConfig dicts."""
    configs, seen = [], set()
    for task, policies in EXPERIMENTS.values():
        for name in policies:
            lr = {g: rates[task][POLICIES[name].groups[g]] for g in GROUPS}
            for seed in seeds:
                if (task, name, seed) not in seen:
                    seen.add((task, name, seed))
                    configs.append(_config(task, name, lr, seed, quick))
    return configs


def run_all(out, jobs=2, quick=False):
    """Tune, run every experiment and write the reports into ``out``."""
    _single_thread_env()
    start = time.perf_counter()
    rates, trials = tune(jobs, quick)
    seeds = SEEDS[:1] if quick else SEEDS
    configs = plan(rates, seeds, quick)
    runs = _run_jobs(configs, jobs, "runs")
    return report.write(out, runs=runs, rates=rates, trials=trials, seeds=seeds,
                        quick=quick, wall_seconds=time.perf_counter() - start, jobs=jobs)


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.experiments.train.experiments",
                        description="Run the training experiments and write the reports.")
    ap.add_argument("--out", default="build/reports", help="report folder (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=2, help="processes (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="seconds-long smoke run of the pipeline")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, not {args.jobs}")
    paths = run_all(args.out, args.jobs, args.quick)
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
