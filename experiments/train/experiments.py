"""The training experiments of ``make train`` / ``make train-full``:
learning-rate selection, then the paper's Fig. 4, Fig. 5, Table 5 and
Table 6 on our tasks.

    python -m neuron_fabric.experiments.train.experiments [--out build/reports] [--jobs 2] [--quick | --full]
    python -m neuron_fabric.experiments.train.experiments --select-only [--tasks pairs-hard]

1. *Learning rates* (:func:`tune`): for each task, each aggregation the
   experiments use and each encoding of a zero (every encoding has its own
   rate), every rate of its grid on seed 0; the rate with the best final
   *validation* accuracy is kept (the test split is never looked at).  A
   rate is tried on the aggregation applied to every group, or on a task
   of :data:`.policies.SPLIT_TUNED` on its split policy, the head at
   FP32's chosen rate (:func:`.policies.tuning_policy`).  ``make train``
   takes the hard task's rates from :data:`.policies.TUNED_LR`, which
   ``--select-only`` (``make train-rates``) chooses at ``make train``'s
   settings; ``make train-full`` selects them again at its own.
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
from neuron_fabric.experiments import single_thread_env
from neuron_fabric.experiments.train import report
from neuron_fabric.experiments.train.catalogue import (
    ENCODINGS,
    EXPERIMENTS,
    RECORDED,
    SEEDS,
    SPLITS,
    TASKS,
    UNIFORM,
    experiments_for,
)
from neuron_fabric.experiments.train.harness import RunConfig, train
from neuron_fabric.experiments.train.models import GROUPS
from neuron_fabric.experiments.train.policies import (
    AGGREGATIONS,
    POLICIES,
    lr_grid,
    rate_key,
    tuned_lr,
    tuning_policy,
)
from neuron_fabric.experiments.train.probe import PROBE_AT

__all__ = ["UNIFORM", "SPLITS", "EXPERIMENTS", "SEEDS", "TASKS", "tune", "plan", "run_key",
           "run_all", "select_only", "needed_rates", "main"]

#: --quick: steps per task.
QUICK_STEPS = {"digits": 30, "pairs": 30, "pairs-hard": 8}



def _job(cfg):
    start = time.perf_counter()
    result = train(RunConfig(**cfg), progress=False)
    result["seconds"] = time.perf_counter() - start
    return result


def _cost(cfg):
    return cfg["steps"] * cfg["batch"] * (50 if cfg.get("wide") else 1)


#: Where :func:`run_jobs` appends each finished run (one JSON a line), so
#: that an interrupted ``make train`` keeps what it finished.
PARTIAL = None


def run_jobs(configs, jobs, desc):
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


def _tuning_experiment(experiments, task):
    """The batch-16 experiment of ``task`` whose model the rates are tuned on."""
    return next(e for e in experiments.values() if e.task == task and e.batch == 16)


def needed_rates(experiments, task):
    """The ``(aggregation, encoding)`` pairs whose rates ``task``'s
    experiments use (an FP32-traffic aggregation under the contract's
    encoding only: it carries no bits)."""
    out = set()
    for e in experiments.values():
        if e.task != task:
            continue
        for name in e.policies:
            pol = POLICIES[name]
            for enc in ENCODINGS if pol.low_bit else ENCODINGS[:1]:
                for g in GROUPS:
                    a = pol.rate_aggregation(g)
                    out.add((a, enc if AGGREGATIONS[a].traffic != "fp32" else ENCODINGS[0]))
    if any(len(tuning_policy(task, a)[1]) < len(GROUPS) for a, _ in out):
        out.add(("fp32", ENCODINGS[0]))            # (a split is tuned at FP32's head rate)
    return sorted(out)


def _tuning_jobs(experiments, tasks, needed, rates, split_phase, quick):
    """``(task, key, rate, config)`` of every tuning run of one phase: the
    rates tried on the aggregation itself (first phase) or on its split
    policy, the head at FP32's chosen rate (second phase)."""
    out = []
    for t in tasks:
        for a, enc in needed[t]:
            policy, groups = tuning_policy(t, a)
            if (len(groups) < len(GROUPS)) != split_phase:
                continue
            for lr in lr_grid(t, a):
                rate = {g: lr if g in groups else rates[t]["fp32"] for g in GROUPS}
                cfg = _config(_tuning_experiment(experiments, t), policy, rate, 0, quick, enc,
                              probe=policy == "fp32")
                out.append((t, rate_key(a, enc), lr, cfg))
    return out


def tune(jobs, quick, experiments=EXPERIMENTS, select=True, recorded=()):
    """Learning rate per task, aggregation and encoding, chosen on the
    validation split (seed 0, every rate of the grid), or for the tasks of
    ``recorded``, the rates a selection recorded (:data:`.policies.TUNED_LR`).

    Returns ``(rates, trials, results)``: ``rates[task][rate_key]``, the
    list of every tried rate with its validation accuracy, and the tuning
    runs by :func:`run_key` (a seed-0 run at the chosen rate is that run).
    """
    tasks = list(dict.fromkeys(e.task for e in experiments.values()))
    needed = {t: needed_rates(experiments, t) for t in tasks}
    if quick or not select:
        rates = {t: {rate_key(a, enc): _middle(lr_grid(t, a)) for a, enc in needed[t]}
                 for t in tasks}
        return rates, [], {}
    rates = {t: {rate_key(a, enc): tuned_lr(t, a, enc) for a, enc in needed[t]}
             if t in recorded else {} for t in tasks}
    trials, by_key = [], {}
    selected = [t for t in tasks if t not in recorded]
    for split_phase in (False, True):
        plan_ = _tuning_jobs(experiments, selected, needed, rates, split_phase, quick)
        if not plan_:
            continue
        results = run_jobs([cfg for *_, cfg in plan_], jobs,
                            "learning rates" + (" (on the splits)" if split_phase else ""))
        mine = [dict(task=t, aggregation=key, policy=cfg["policy"], lr=lr, val=r["val"])
                for (t, key, lr, cfg), r in zip(plan_, results)]
        trials += mine
        for t, key in dict.fromkeys((x["task"], x["aggregation"]) for x in mine):
            tried = [x for x in mine if x["task"] == t and x["aggregation"] == key]
            rates[t][key] = max(tried, key=lambda x: x["val"])["lr"]  # first maximum: smaller rate
        for (t, key, lr, cfg), r in zip(plan_, results):
            if lr == rates[t][key]:
                by_key[run_key(cfg)] = r
    return rates, trials, by_key


def plan(rates, seeds, quick, experiments=EXPERIMENTS):
    """The distinct runs every experiment needs, as RunConfig dicts: every
    policy on every seed, a low-bit one under each of :data:`ENCODINGS`
    (each at its own tuned rate), FP32 with the same-gradient probes."""
    configs, seen = [], set()
    for exp in experiments.values():
        for name in exp.policies:
            pol = POLICIES[name]
            mine = seeds if exp.seeds is None or len(seeds) == 1 else exp.seeds
            for enc in ENCODINGS if pol.low_bit else ENCODINGS[:1]:
                lr = pol.rates(rates[exp.task], enc)
                for seed in mine:
                    cfg = _config(exp, name, lr, seed, quick, enc, probe=name == "fp32")
                    if run_key(cfg) not in seen:
                        seen.add(run_key(cfg))
                        configs.append(cfg)
    return configs


def _begin(out, stem):
    """One thread per process, the folder ``out`` made, and each finished
    run appended to ``<stem>.partial.jsonl`` there (:data:`PARTIAL`)."""
    global PARTIAL
    single_thread_env()
    out_dir = pathlib.Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    PARTIAL = out_dir / f"{stem}.partial.jsonl"
    PARTIAL.write_text("")
    return out_dir


def run_all(out, jobs=2, quick=False, full=False, seeds=None, select=True):
    """Tune, run every experiment and write the reports into ``out``
    (``seeds``: these seeds for every experiment instead of the catalogue's;
    ``select`` False: the middle of each grid, no selection)."""
    start = time.perf_counter()
    _begin(out, "training_runs")
    experiments, default_seeds, recorded = experiments_for(full)
    if seeds is not None:
        experiments = {k: replace(e, seeds=None) for k, e in experiments.items()}
    seeds = tuple(seeds) if seeds is not None else default_seeds
    rates, trials, tuned = tune(jobs, quick, experiments, select, recorded)
    seeds = seeds[:1] if quick else seeds
    configs = plan(rates, seeds, quick, experiments)
    todo = [c for c in configs if run_key(c) not in tuned]
    done = dict(zip(map(run_key, todo), run_jobs(todo, jobs, "runs")))
    runs = [tuned.get(run_key(c)) or done[run_key(c)] for c in configs]
    reduced = [what for what, on in (
        (f"seeds {list(seeds)} for every experiment", seeds != default_seeds and not quick),
        ("no learning-rate selection (the middle of each grid)", not select and not quick),
        (f"{HARD_STEPS} steps on the hard task", bool(HARD_STEPS) and not quick)) if on]
    return report.write(out, runs=runs, rates=rates, trials=trials, seeds=seeds,
                        quick=quick, wall_seconds=time.perf_counter() - start, jobs=jobs,
                        experiments=experiments, full=full, reduced=reduced,
                        recorded=[] if quick or not select else list(recorded))


def select_only(out, tasks, jobs=2, quick=False):
    """Choose the rates of ``tasks`` at ``make train``'s settings (every
    encoding, the whole grids, seed 0); write ``learning_rates.{json,md}``
    into ``out`` and return the paths.  The JSON's ``rates`` are what
    :data:`.policies.TUNED_LR` records.  ``quick``: no runs, the middle of
    each grid (a smoke run of the command)."""
    start, out_dir = time.perf_counter(), _begin(out, "learning_rates")
    experiments = {k: e for k, e in EXPERIMENTS.items() if e.task in tasks}
    rates, trials, _ = tune(jobs, quick, experiments)
    data = dict(tasks=list(tasks), quick=quick, rates=rates, trials=trials,
                wall_seconds=time.perf_counter() - start, jobs=jobs)
    paths = [out_dir / "learning_rates.json", out_dir / "learning_rates.md"]
    paths[0].write_text(json.dumps(data, indent=1))
    paths[1].write_text("\n".join([
        "# Learning rates of `make train`'s recorded tasks", "",
        *(["QUICK SMOKE RUN, not results: no selection, the middle of each grid.", ""]
          if quick else []),
        f"`make train-rates` (tasks {', '.join(tasks)}; seed 0; {jobs} processes; wall time "
        f"{data['wall_seconds'] / 60:.1f} min). The rate with the best final validation "
        "accuracy is kept; copy `rates` into `experiments/train/policies.py:TUNED_LR`.", "",
        *report.rates_table(rates, trials), ""]))
    return paths


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.experiments.train.experiments",
                        description="Run the training experiments and write the reports.")
    ap.add_argument("--out", default="build/reports", help="report folder (default %(default)s)")
    ap.add_jobs()
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="seconds-long smoke run of the pipeline")
    size.add_argument("--full", action="store_true",
                      help="every experiment (make train-full): 5 seeds, whole grids, batch 64")
    ap.add_argument("--seeds", type=int, nargs="+",
                    help="these seeds for every experiment (default: the catalogue's)")
    ap.add_argument("--no-select", action="store_true",
                    help="no learning-rate selection: the middle of each grid (a reduced run)")
    ap.add_argument("--select-only", action="store_true",
                    help="only choose the learning rates of --tasks at make train's settings "
                         "(make train-rates) and write learning_rates.{json,md}")
    ap.add_argument("--tasks", nargs="+", choices=TASKS, default=list(RECORDED),
                    help="with --select-only: the tasks (default %(default)s)")
    ap.add_argument("--hard-steps", type=int,
                    help="steps of the hard-task runs (default: the catalogue's, 1200)")
    args = ap.parse_args(argv)
    if args.select_only and (args.full or args.seeds or args.no_select or args.hard_steps):
        ap.error("--select-only takes only --tasks, --jobs, --quick and --out")
    global HARD_STEPS
    HARD_STEPS = args.hard_steps
    paths = select_only(args.out, args.tasks, args.jobs, args.quick) if args.select_only \
        else run_all(args.out, args.jobs, args.quick, args.full, args.seeds, not args.no_select)
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
