"""The pilots' runs: the learning rates tuned on the validation split
(:func:`tune_rates`), every pilot's traces and seeds (:func:`run_pilots`),
run in spawned processes."""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict

from neuron_fabric.experiments.pilots.config import (
    DEGRADATION,
    DEVICE_FAULT,
    LR,
    LR_GRID,
    Degradation,
    DeviceFault,
    LoopConfig,
)
from neuron_fabric.experiments.pilots.faults import fault_rows, fault_runs
from neuron_fabric.experiments.pilots.loop import run_on_model
from neuron_fabric.experiments.train.models import GROUPS
from neuron_fabric.host.control import FP32

__all__ = ["SEEDS", "LADDER_SEEDS", "LADDER_TASK", "RECOVERY_TRACES", "LADDER_SPLITS",
           "LATE_DELAYS", "tune_rates", "run_pilots", "run_summaries", "windows"]

#: Seeds of every pilot (the recovery pilot's spread exceeds 2 points).
SEEDS = (0, 1, 2, 3, 4)
#: Seeds of the ladder pilot (the hard task, longer runs).
LADDER_SEEDS = (0, 1, 2)

RECOVERY_TRACES = {
    "always-fp32": dict(fixed={g: FP32 for g in GROUPS}),
    "always-gbinary": dict(fixed={g: "gbinary" for g in GROUPS}),
    "fp32-default": dict(default_mode=FP32),
    "gbinary-default": dict(default_mode="gbinary"),
}

#: The ladder pilot's task: ``pairs``, the hard task without the
#: corruptions of ``pairs-hard`` (the pilots' small model learns it in 600
#: steps).
LADDER_TASK = "pairs"

#: The hard task's fixed splits beside the live ladder.
LADDER_SPLITS = {
    "fp32": {"backbone": FP32, "head": FP32},
    "gbinary": {"backbone": "gbinary", "head": "gbinary"},
    "gternary": {"backbone": "gternary", "head": "gternary"},
    "gbinary-backbone+fp32-head": {"backbone": "gbinary", "head": FP32},
    "gternary-backbone+fp32-head": {"backbone": "gternary", "head": FP32},
}

LATE_DELAYS = (0, 2, 8, 32)


def _summary(result):
    """The per-run record kept in pilots.json."""
    return dict(low_bit_share=result["low_bit_share"], traffic_ratio=result["traffic"]["total"],
                final_accuracy=result["test"], final_val=result["val"],
                step_ms=1e3 * result["step_s"],
                modes=[{g: m for g, m in ms.items()} for ms in result["modes"]],
                loss=result["loss"], curve=result["curve"], decisions=result["decisions"],
                faults=result["faults"], flipped=result["flipped"])


def _easy(quick):
    return dict(task="digits", steps=120 if quick else 300)


def windows(quick):
    """``(label noise, device fault)`` windows."""
    if quick:
        return Degradation(60, 72, DEGRADATION.noise), DeviceFault(60, 72, DEVICE_FAULT.fraction)
    return DEGRADATION, DEVICE_FAULT


def _job(cfg):
    return _summary(run_on_model(cfg))


def run_summaries(configs, jobs, progress, desc):
    """Summaries of ``configs`` in their order, run in ``jobs`` spawned
    processes (one XLA thread each); every run is deterministic, so the
    order of completion changes nothing but the wall time."""
    from tqdm import tqdm  # deferred: tqdm (train extra)
    results = [None] * len(configs)
    bar = tqdm(total=len(configs), desc=desc, disable=not progress, mininterval=0.5)
    if jobs == 1:
        for i, cfg in enumerate(configs):
            results[i] = _job(cfg)
            bar.update(1)
    else:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            futures = {pool.submit(_job, cfg): i for i, cfg in enumerate(configs)}
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                bar.update(1)
    bar.close()
    return results


def tune_rates(quick=False, jobs=1, progress=True):
    """Learning rate per mode, chosen on the validation split: each mode
    fixed on every group, the easy task, seed 0, no fault, every rate of
    :data:`LR_GRID` (``quick``: the grid's middle, no selection).

    Returns ``(rates, trials)``."""
    if quick:
        return {m: grid[len(grid) // 2] for m, grid in LR_GRID.items()}, []
    configs = [LoopConfig(seed=0, fixed={g: mode for g in GROUPS},
                          lr={**LR, mode: lr}, **_easy(quick))
               for mode, grid in LR_GRID.items() for lr in grid]
    results = run_summaries(configs, jobs, progress, "pilot learning rates")
    trials = [dict(mode=next(iter(c.fixed.values())), lr=c.lr[next(iter(c.fixed.values()))],
                   val=r["final_val"]) for c, r in zip(configs, results)]
    rates = {m: max((t for t in trials if t["mode"] == m),
                    key=lambda t: t["val"])["lr"] for m in LR_GRID}   # first maximum: smaller
    return rates, trials


def _pilot_runs(quick, rates):
    """``(keys, cfg)`` for every run: ``keys`` the path of its summary in
    the results (pilot, [fault,] trace)."""
    seeds = SEEDS[:1] if quick else SEEDS
    noise, fault = windows(quick)
    easy = dict(_easy(quick), lr=dict(rates))
    runs = []
    for pilot, window in (("recovery", dict(fault=fault)),
                          ("label-noise", dict(degradation=noise))):
        for name, kw in RECOVERY_TRACES.items():
            for s in seeds:
                runs.append(((pilot, name), LoopConfig(seed=s, **window, **easy, **kw)))
    runs += [(("faults", name, trace), cfg)
             for name, trace, cfg in fault_runs(seeds, easy, fault.start)]
    hard = dict(task=LADDER_TASK, steps=200 if quick else 600, lr=dict(rates))
    for s in LADDER_SEEDS[:1] if quick else LADDER_SEEDS:
        runs.append((("ladder", "live ladder"), LoopConfig(seed=s, **hard)))
        for name, split in LADDER_SPLITS.items():
            runs.append((("ladder", name), LoopConfig(seed=s, fixed=split, **hard)))
    for k in LATE_DELAYS:
        for s in seeds:
            runs.append((("late", f"delay {k}"), LoopConfig(seed=s, fault=fault,
                                                            default_mode="gbinary",
                                                            delay_steps=k, **easy)))
    return runs


def run_pilots(quick=False, progress=True, jobs=1):
    """Every pilot; returns ``{pilot: {trace: {seed: summary}}}`` plus
    ``learning_rates`` (``rates``, ``trials``) and ``windows``."""
    rates, trials = tune_rates(quick, jobs, progress)
    runs = _pilot_runs(quick, rates)
    results = run_summaries([c for _, c in runs], jobs, progress, "pilots")
    out = {}
    for (keys, cfg), summary in zip(runs, results):
        node = out
        for key in keys:
            node = node.setdefault(key, {})
        node[str(cfg.seed)] = summary
    noise, fault = windows(quick)
    out["learning_rates"] = dict(rates=rates, trials=trials)
    out["windows"] = dict(label_noise=asdict(noise), device_fault=asdict(fault))
    out["ladder_task"] = LADDER_TASK
    out["fault_rows"] = fault_rows(out.get("faults", {}), fault.start)
    return out
