"""The multi-hop report's training (``make hierarchy``, see
:mod:`.report`): for each setting, learning rates on the
validation split, then every scheme on every seed, in spawned processes
(:func:`train_all`)."""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict

import numpy as np

from neuron_fabric.experiments import single_thread_env
from neuron_fabric.experiments.hierarchy.study import TASK, say

__all__ = ["SEEDS", "SETTINGS", "train_all"]

SEEDS = (0, 1, 2)
#: Training settings: (examples per worker and step, steps).  2 a worker is
#: the harness's global batch of 128; 16 a worker (1,024 a step, 150 steps)
#: gives each worker's sign more signal.
SETTINGS = ((2, 300), (16, 150))


def _job(run):
    from neuron_fabric.experiments.hierarchy.training import (  # deferred: JAX
        HopRun,
        train,
    )
    return train(HopRun(**run))


def _run_jobs(runs, jobs, what):
    """Every run, in ``jobs`` spawned processes (in this one when 1)."""
    results = [None] * len(runs)

    def done(k, i, res):
        results[i] = res
        r = runs[i]
        say(f"{what} {k}/{len(runs)}: {r['scheme']} lr {r['lr']:g} seed {r['seed']}: "
             f"val {100 * res['val']:.1f}% ({res['seconds']:.0f} s)")

    if jobs == 1:
        for k, run in enumerate(runs, 1):
            done(k, k - 1, _job(run))
        return results
    single_thread_env()
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = {pool.submit(_job, r): i for i, r in enumerate(runs)}
        for k, fut in enumerate(as_completed(futures), 1):
            done(k, futures[fut], fut.result())
    return results


def train_all(jobs=2, quick=False, seeds=None, select=True, settings=SETTINGS):
    """Every setting of :data:`SETTINGS`: rates on the validation split, then
    every scheme on every seed.  Returns a list, one dict per setting."""
    from neuron_fabric.experiments.hierarchy.training import (  # deferred: JAX
        LR_GRIDS,
        SWEEP_SCHEMES,
        TRAIN_SCHEMES,
        HopRun,
    )
    seeds = tuple(seeds) if seeds else (SEEDS[:1] if quick else SEEDS)
    out = []
    for batch, steps in settings:
        schemes = dict(TRAIN_SCHEMES, **(SWEEP_SCHEMES if batch == SETTINGS[0][0] else {}))
        # the sweep's schemes try the two middle rates of their grid
        grids = {s: LR_GRIDS[s][1:2] if quick or not select else
                 (LR_GRIDS[s][1:3] if s in SWEEP_SCHEMES else LR_GRIDS[s]) for s in schemes}
        steps = 6 if quick else steps
        what = f"{batch} a worker"
        cfg = dict(steps=steps, batch=batch, evals=2 if quick else 10)
        tune = [asdict(HopRun(TASK, s, lr, seed=0, **cfg)) for s in schemes
                for lr in grids[s]]
        tuned = _run_jobs(tune, jobs, f"learning rates ({what})")
        trials = [dict(scheme=r["scheme"], lr=r["lr"], val=res["val"])
                  for r, res in zip(tune, tuned)]
        rates = {s: max((t for t in trials if t["scheme"] == s),
                        key=lambda t: t["val"])["lr"]      # first maximum: the smaller rate
                 for s in schemes}
        rest = [asdict(HopRun(TASK, s, rates[s], seed=seed, **cfg))
                for s in schemes for seed in seeds if seed != 0]
        results = {(r["scheme"], r["lr"], 0): res for r, res in zip(tune, tuned)}
        for r, res in zip(rest, _run_jobs(rest, jobs, f"runs ({what})") if rest else []):
            results[(r["scheme"], r["lr"], r["seed"])] = res
        rows = {}
        for s, label in schemes.items():
            runs = [results[(s, rates[s], seed)] for seed in seeds]
            accs = [100 * r["test"] for r in runs]
            rows[s] = dict(label=label, lr=rates[s], accuracies=accs,
                              accuracy_mean=float(np.mean(accs)),
                              accuracy_std=float(np.std(accs, ddof=1)) if len(accs) > 1 else 0.0,
                              cosine=float(np.mean([r["cosine"] for r in runs])),
                              curves=[r["curve"] for r in runs],
                              seconds=[r["seconds"] for r in runs])
        out.append(dict(task=TASK, seeds=list(seeds), batch=batch, steps=steps, rates=rates,
                        trials=trials, schemes=rows))
    return out
