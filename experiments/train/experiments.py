"""The training experiments of ``make train`` / ``make train-full``:
learning-rate selection, then the paper's Fig. 4, Fig. 5, Table 5 and
Table 6 on our tasks.

    python -m neuron_fabric.experiments.train.experiments [--out build/reports] [--jobs 2] [--quick | --full]

1. *Learning rates*: for each task and each aggregation the experiments
   use, every rate of its grid (``make train``: the two middle rates of
   the hard task's grids) on seed 0, the aggregation on every group, the
   contract's encoding; the rate with the best final *validation*
   accuracy is kept (the test split is never looked at).  The abstaining
   encoding uses the rate chosen for the contract's.
2. *Runs* (:mod:`.catalogue`; seeds 0-2, ``--full`` 0-4; ``--jobs``
   processes, submitted in plan order, results kept in that order): every
   policy of every experiment, each low-bit policy under both encodings
   of a zero (:data:`.catalogue.ENCODINGS`).  The FP32 runs probe Table 5
   on the same gradients (:mod:`.probe`) at 10%, 30% and 60% of training.
3. :mod:`.report` writes ``training.md``, ``training.json`` and the plots.

``--quick`` is a smoke run of the same pipeline: one seed, the middle of each
grid without selection, a few dozen steps.
"""

import json
import multiprocessing
import pathlib
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, replace

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.experiments.threads import single_thread_env
from neuron_fabric.experiments.train import report
from neuron_fabric.experiments.train.catalogue import (
    ENCODINGS,
    EXPERIMENTS,
    SEEDS,
    SPLITS,
    TASKS,
    UNIFORM,
    experiments_for,
)
from neuron_fabric.experiments.train.harness import RunConfig, train
from neuron_fabric.experiments.train.models import GROUPS
from neuron_fabric.experiments.train.policies import POLICIES, lr_grid
from neuron_fabric.experiments.train.probe import PROBE_AT

__all__ = ["UNIFORM", "SPLITS", "EXPERIMENTS", "SEEDS", "TASKS", "tune", "plan", "run_key",
           "run_all", "main"]

#: --quick: steps per task.
QUICK_STEPS = {"digits": 30, "pairs": 30, "pairs-hard": 8}



def _job(cfg):
    start = time.perf_counter()
    result = train(RunConfig(**cfg), progress=False)
    result["seconds"] = time.perf_counter() - start
    return result


def _cost(cfg):
    return cfg["steps"] * cfg["batch"] * (50 if cfg.get("wide") else 1)


#: Where :func:`_run_jobs` appends each finished run (one JSON a line), so
#: that an interrupted ``make train`` keeps what it finished.
PARTIAL = None


def _run_jobs(configs, jobs, desc):
    """Run every config, costliest first (a stable order: ties keep the
    plan's); results in the order given.  Each run is single-threaded and
    deterministic, so the order only changes the wall time.  Each finished
    run is also appended to :data:`PARTIAL` when set."""
    from tqdm import tqdm  # deferred: tqdm (train extra)
    configs = [asdict(RunConfig(**c).resolved()) for c in configs]
    order = sorted(range(len(configs)), key=lambda i: -_cost(configs[i]))
    results = [None] * len(configs)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool, \
            tqdm(total=len(configs), desc=desc) as bar:
        futures = {pool.submit(_job, configs[i]): i for i in order}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            if PARTIAL is not None:
                with open(PARTIAL, "a") as f:
                    f.write(json.dumps(dict(desc=desc, **results[futures[fut]])) + "\n")
            bar.update(1)
    return results


#: Steps of the hard-task experiments when ``--hard-steps`` is given (None:
#: each experiment's own).
HARD_STEPS = None


def _config(exp, policy, lr, seed, quick, encoding="negative", probe=False):
    steps = QUICK_STEPS[exp.task] if quick else exp.steps
    if HARD_STEPS and exp.task == "pairs-hard" and not quick:
        steps = HARD_STEPS
    cfg = RunConfig(exp.task, policy, lr, seed=seed, steps=steps, batch=exp.batch,
                    evals=3 if quick else 20, encoding=encoding,
                    probe_at=PROBE_AT if probe else (),
                    probe_steps=2 if quick else RunConfig.probe_steps, **exp.model)
    return asdict(cfg)


def run_key(cfg):
    """What identifies a run in a plan: task, policy, encoding, batch, seed."""
    return (cfg["task"], cfg["policy"], cfg["encoding"], cfg["batch"], cfg["seed"])


def _middle(grid):
    return grid[(len(grid) - 1) // 2]


def _tuning_grid(task, agg, full):
    """The rates tried: the whole grid, or (``make train``, hard task) its two middle rates."""
    grid = lr_grid(task, agg)
    if full or task != "pairs-hard":
        return grid
    mid = (len(grid) - 1) // 2
    return grid[mid:mid + 2]


def _tuning_experiment(experiments, task):
    """The batch-16 experiment of ``task`` whose model the rates are tuned on."""
    return next(e for e in experiments.values() if e.task == task and e.batch == 16)


def tune(jobs, quick, experiments=EXPERIMENTS, full=False, select=True):
    """Learning rate per task and aggregation, chosen on the validation split.

    Returns ``(rates, trials, results)``: ``rates[task][aggregation]``, the
    list of every tried rate with its validation accuracy, and the tuning
    runs by :func:`run_key` (a seed-0 run at the chosen rate is that run).
    """
    tasks = list(dict.fromkeys(e.task for e in experiments.values()))
    needed = {t: sorted({POLICIES[p].rate_aggregation(g) for e in experiments.values()
                         if e.task == t for p in e.policies for g in GROUPS}) for t in tasks}
    if quick or not select:
        rates = {t: {a: _middle(lr_grid(t, a)) for a in needed[t]} for t in tasks}
        return rates, [], {}
    configs = [_config(_tuning_experiment(experiments, t), a, {g: lr for g in GROUPS}, 0,
                       quick, probe=a == "fp32")
               for t in tasks for a in needed[t] for lr in _tuning_grid(t, a, full)]
    results = _run_jobs(configs, jobs, "learning rates")
    trials = [dict(task=c["task"], aggregation=c["policy"], lr=c["lr"]["backbone"], val=r["val"])
              for c, r in zip(configs, results)]
    rates = {t: {} for t in tasks}
    for t in tasks:
        for a in needed[t]:
            mine = [x for x in trials if x["task"] == t and x["aggregation"] == a]
            rates[t][a] = max(mine, key=lambda x: x["val"])["lr"]   # first maximum: smaller rate
    by_key = {}
    for c, r in zip(configs, results):
        if c["lr"]["backbone"] == rates[c["task"]][c["policy"]]:
            by_key[run_key(c)] = r
    return rates, trials, by_key


def plan(rates, seeds, quick, experiments=EXPERIMENTS):
    """The distinct runs every experiment needs, as RunConfig dicts: every
    policy on every seed, a low-bit one under each of :data:`ENCODINGS`,
    FP32 with the same-gradient probes."""
    configs, seen = [], set()
    for exp in experiments.values():
        for name in exp.policies:
            pol = POLICIES[name]
            lr = {g: rates[exp.task][pol.rate_aggregation(g)] for g in GROUPS}
            mine = seeds if exp.seeds is None or len(seeds) == 1 else exp.seeds
            for enc in ENCODINGS if pol.low_bit else ENCODINGS[:1]:
                for seed in mine:
                    cfg = _config(exp, name, lr, seed, quick, enc, probe=name == "fp32")
                    if run_key(cfg) not in seen:
                        seen.add(run_key(cfg))
                        configs.append(cfg)
    return configs


def run_all(out, jobs=2, quick=False, full=False, seeds=None, select=True):
    """Tune, run every experiment and write the reports into ``out``
    (``seeds``: these seeds for every experiment instead of the catalogue's;
    ``select`` False: the middle of each grid, no selection)."""
    global PARTIAL
    single_thread_env()
    start = time.perf_counter()
    out_dir = pathlib.Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    PARTIAL = out_dir / "training_runs.partial.jsonl"
    PARTIAL.write_text("")
    experiments, default_seeds = experiments_for(full)
    if seeds is not None:
        experiments = {k: replace(e, seeds=None) for k, e in experiments.items()}
    seeds = tuple(seeds) if seeds is not None else default_seeds
    rates, trials, tuned = tune(jobs, quick, experiments, full, select)
    seeds = seeds[:1] if quick else seeds
    configs = plan(rates, seeds, quick, experiments)
    todo = [c for c in configs if run_key(c) not in tuned]
    done = dict(zip(map(run_key, todo), _run_jobs(todo, jobs, "runs")))
    runs = [tuned.get(run_key(c)) or done[run_key(c)] for c in configs]
    reduced = [what for what, on in (
        (f"seeds {list(seeds)} for every experiment", seeds != default_seeds and not quick),
        ("no learning-rate selection (the middle of each grid)", not select and not quick),
        (f"{HARD_STEPS} steps on the hard task", bool(HARD_STEPS) and not quick)) if on]
    return report.write(out, runs=runs, rates=rates, trials=trials, seeds=seeds,
                        quick=quick, wall_seconds=time.perf_counter() - start, jobs=jobs,
                        experiments=experiments, full=full, reduced=reduced)


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.experiments.train.experiments",
                        description="Run the training experiments and write the reports.")
    ap.add_argument("--out", default="build/reports", help="report folder (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=2, help="processes (default %(default)s)")
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="seconds-long smoke run of the pipeline")
    size.add_argument("--full", action="store_true",
                      help="every experiment (make train-full): 5 seeds, whole grids, batch 64")
    ap.add_argument("--seeds", type=int, nargs="+",
                    help="these seeds for every experiment (default: the catalogue's)")
    ap.add_argument("--no-select", action="store_true",
                    help="no learning-rate selection: the middle of each grid (a reduced run)")
    ap.add_argument("--hard-steps", type=int,
                    help="steps of the hard-task runs (default: the catalogue's, 1200)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, not {args.jobs}")
    global HARD_STEPS
    HARD_STEPS = args.hard_steps
    paths = run_all(args.out, args.jobs, args.quick, args.full, args.seeds, not args.no_select)
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
