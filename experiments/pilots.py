"""The paper's control-plane pilots (section 8, Fig. 6, Fig. 3d) on our tasks.

A training loop with the control plane in it: each step the plane applies
its due mode changes (region CFG writes through the driver), the workers'
gradients are aggregated by the gradient runtime through a device (the
transaction-level model here; the RTL under cocotb in
:mod:`neuron_fabric.sim.cocotb_train`), and the plane takes the step's
trace, loss and, on FP32 steps, the cosine diagnostics.

Pilots (``python -m neuron_fabric.experiments.pilots``, ``make pilots``):

* learning rates: each mode on every group (fixed, no control plane, no
  fault), the easy task, seed 0, every rate of :data:`LR_GRID`; the rate
  with the best final *validation* accuracy is kept (:func:`tune_rates`).
* ``recovery`` (Fig. 6): the easy task, seeds :data:`SEEDS`, four traces:
  always-FP32, always-G-Binary, FP32-default (admission) and
  G-Binary-default (recovery), all with the same fault window on the
  low-bit path (:data:`DEVICE_FAULT`: a fraction of the sign bits flipped
  in device memory after every write, :class:`~neuron_fabric.host.
  fault_injection.BitFlipPort`).  The FP32 path never reads the device, so
  a return to FP32 can help.
* ``label-noise`` (negative control): the same traces with a window of
  random labels instead (:data:`DEGRADATION`), which FP32 cannot fix: what
  a Supervisor alarm costs when returning to FP32 does not help.
* ``ladder``: the hard task with the live ladder against fixed splits.
* ``late`` (Fig. 3d, in the loop): G-Binary-default with the device fault
  and every mode write applied ``k`` steps late.

Writes ``pilots.md``, ``pilots.json`` and ``pilots_*.png`` (see
``docs/control.md`` and the README for the keys).
"""

import asyncio
import json
import multiprocessing
import pathlib
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace

import jax
import jax.numpy as jnp
import numpy as np

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import TopParams
from neuron_fabric.experiments.threads import single_thread_env
from neuron_fabric.experiments.train import models
from neuron_fabric.experiments.train.harness import batch_indices, lr_factor, step_functions
from neuron_fabric.experiments.train.models import GROUPS
from neuron_fabric.experiments.train.policies import cosine
from neuron_fabric.experiments.train.tasks import load_task
from neuron_fabric.host import golden
from neuron_fabric.host.control import (
    FP32,
    LOW_BIT_MODES,
    MODE_POLICY,
    Commander,
    CommanderConfig,
    ControlPlane,
    Predictor,
    Supervisor,
    SupervisorConfig,
    TraceRecord,
)
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.host.fault_injection import BitFlipPort
from neuron_fabric.host.runtime import GradientRuntime

__all__ = ["Degradation", "DeviceFault", "LoopConfig", "DEGRADATION", "DEVICE_FAULT", "LR",
           "LR_GRID", "PILOT_COMMANDER", "RTL_CONFIG", "loop_config_to_json",
           "loop_config_from_json", "PAPER", "train_loop", "run_on_model", "tune_rates",
           "main"]

#: The paper's section 8 figures.
PAPER = {
    "recovery": {"low_bit_share": 0.8111, "traffic_ratio": 0.214, "accuracy": (90.87, 1.04)},
    "ladder": {"backbone": "gternary", "head": FP32},
    "late_10ms_pct_max": 0.04,
}


@dataclass(frozen=True)
class Degradation:
    """An injected degradation window: steps ``start <= s < stop`` train on
    labels of which a fraction ``noise`` is replaced by uniformly random
    classes (a corrupted data shard; the paper names no mechanism)."""
    start: int
    stop: int
    noise: float = 1.0


@dataclass(frozen=True)
class DeviceFault:
    """A fault window on the low-bit path: at steps ``start <= s < stop``
    each bit the runtime writes into device memory is flipped with
    probability ``fraction`` (:class:`BitFlipPort`).  Above 0.5 the
    stored votes lean to the opposite of the workers' signs, so G-Binary
    climbs the loss."""
    start: int
    stop: int
    fraction: float = 0.75


#: The label-noise window (negative control): a tenth of the easy task's
#: 300 steps, after the warm-up and admission (steps 150..179), half the
#: labels random.
DEGRADATION = Degradation(150, 180, 0.5)
#: The recovery pilot's window: the same steps, three in four stored sign
#: bits flipped.
DEVICE_FAULT = DeviceFault(150, 180, 0.75)

#: Learning rates tried per mode (:func:`tune_rates`): the harness's FP32
#: grid less its largest rate, and its sign grid less its largest.
LR_GRID = {FP32: (0.01, 0.03, 0.1), "gbinary": (1e-4, 3e-4, 1e-3),
           "gternary": (1e-4, 3e-4, 1e-3)}

#: Learning rate per mode, the default of :class:`LoopConfig`: what
#: :func:`tune_rates` chose on the validation split of the easy task in
#: ``make pilots`` (``learning_rates`` in pilots.json: final validation
#: accuracy FP32 0.01 / 0.03 / 0.1: 96.1 / 97.2 / 96.7 %, G-Binary 1e-4 /
#: 3e-4 / 1e-3: 96.9 / 95.8 / 93.6 %, G-Ternary 96.7 / 95.8 / 93.9 %).
#: ``make pilots`` tunes again and uses its own choice.
LR = {FP32: 0.03, "gbinary": 1e-4, "gternary": 1e-4}

#: The pilots' Commander: ``cos_min`` calibrated on FP32 warm-up cosines
#: (seed 0, 16 examples per worker): easy task backbone .14-.25, head
#: .11-.46; hard task backbone .18-.30, head .00-.02.  The paper's Table 5
#: values are about three times ours (larger per-worker batches), so its
#: 0.4 would admit nothing here; 0.1 admits both groups of the easy task
#: and the hard task's backbone, not its head.
PILOT_COMMANDER = CommanderConfig(cos_min={m: 0.1 for m in LOW_BIT_MODES})


@dataclass(frozen=True)
class LoopConfig:
    """One run of the loop.

    Parameters
    ----------
    task : str
        ``digits`` (easy) or ``pairs`` (hard).
    seed, steps, batch, workers :
        As the training harness; ``batch`` is per worker.
    lr : dict
        Learning rate per mode (:data:`LR`); a group's rate follows its
        current mode.
    channels, hidden :
        Model size (:func:`neuron_fabric.experiments.train.models.init`).
    fixed : dict or None
        ``{group: mode}`` with no control plane (the fixed-mode traces).
    default_mode, delay_steps :
        The control plane's Commander default and the late-update delay.
    degradation : Degradation or None
    fault : DeviceFault or None
        Sign bits flipped in device memory during a window.
    evals : int
        Validation and test-accuracy evaluations along the run (the
        per-epoch trace), plus one at each edge of the degradation and
        fault windows.
    commander, supervisor :
        Role configurations (their own defaults when None).
    """
    task: str = "digits"
    seed: int = 0
    steps: int = 300
    batch: int = 16
    workers: int = 8
    lr: dict = field(default_factory=lambda: dict(LR))
    channels: tuple = (16, 32)
    hidden: int = 64
    fixed: dict = None
    default_mode: str = FP32
    delay_steps: int = 0
    degradation: Degradation = None
    fault: DeviceFault = None
    evals: int = 20
    commander: CommanderConfig = PILOT_COMMANDER
    supervisor: SupervisorConfig = None


def _low_bit_direction(grads, mode, line_bits):
    """The low-bit aggregate of ``grads`` (W, n) in software (golden model),
    for the warm-up diagnostics; nothing goes through the device."""
    p = MODE_POLICY[mode]
    w, n = grads.shape
    lines = golden.encode_signs(grads, line_bits)
    phase = golden.line_phase(np.arange(len(lines)), line_bits // w, p.period)
    out = golden.transform(lines, w, p.mode, p.format, p.gate_kind, p.period, p.keep,
                           p.threshold, phase)
    return golden.decode(out, w, p.format, n)


def diagnostics(grads, line_bits):
    """``{group: {mode: cosine}}`` of each low-bit aggregate with the FP32 mean."""
    return {g: {m: cosine(_low_bit_direction(v, m, line_bits), v.mean(axis=0))
                for m in LOW_BIT_MODES} for g, v in grads.items()}


def _labels(y, step, cfg, classes, rng):
    d = cfg.degradation
    if d is None or not d.start <= step < d.stop:
        return y
    flip = rng.random(y.shape) < d.noise
    return np.where(flip, rng.integers(0, classes, y.shape), y).astype(y.dtype)


async def train_loop(cfg, port, driver, progress=None):
    """Train ``cfg`` through the device behind ``port`` and ``driver``.

    Returns
    -------
    dict
        ``modes`` (per step, ``{group: mode}``), ``loss`` (per step),
        ``curve`` (``step``, ``val``, ``test``), ``test`` and ``val`` (final
        accuracies), ``flipped`` (bits the fault flipped),
        ``traffic`` (payload ratio total and per group), ``low_bit_share``,
        ``decisions``, ``faults``, ``params`` (final, numpy), ``step_s``.
    """
    task = load_task(cfg.task, cfg.seed)
    worker_grads, update, opt_init = step_functions(task.image_shape, task.classes,
                                                    tuple(cfg.channels), cfg.hidden)
    params = models.init(cfg.seed, task.image_shape, task.classes,
                         tuple(cfg.channels), cfg.hidden)
    state = opt_init(params)
    sizes = models.group_sizes(params)
    if cfg.fault is not None:
        port = BitFlipPort(port, cfg.fault.fraction, seed=[cfg.seed, 3])
    rt = await GradientRuntime.create(port, driver, sizes, {g: MODE_POLICY[FP32] for g in sizes})
    plane = None
    if cfg.fixed is None:
        cmd = Commander(GROUPS, replace(cfg.commander,
                                        default_mode=cfg.default_mode))
        plane = await ControlPlane(rt, driver, Predictor(), cmd,
                                   Supervisor(cfg.supervisor or SupervisorConfig()),
                                   delay_steps=cfg.delay_steps).start()
    else:
        for g, mode in cfg.fixed.items():
            await rt.set_policy(g, MODE_POLICY[mode])
    batches = batch_indices(len(task.y_train), cfg.workers * cfg.batch, cfg.seed)
    noise_rng = np.random.default_rng([cfg.seed, 2])
    evals = {round(cfg.steps * (k + 1) / cfg.evals) for k in range(cfg.evals)}
    for window in (cfg.degradation, cfg.fault):
        if window is not None:
            evals |= {window.start, window.stop}
    line_bits = driver.params.line_bits
    out = dict(modes=[], loss=[], curve=[])
    start = time.perf_counter()
    for step in range(cfg.steps):
        modes = await plane.before_step(step) if plane else dict(cfg.fixed)
        idx = next(batches)
        x = task.x_train[idx].reshape(cfg.workers, cfg.batch, *task.image_shape)
        y = _labels(task.y_train[idx], step, cfg, task.classes, noise_rng)
        if cfg.fault is not None:
            port.active = cfg.fault.start <= step < cfg.fault.stop
        t0 = time.perf_counter()
        loss, grads = worker_grads(params, x, y.reshape(cfg.workers, cfg.batch))
        grads = {g: np.asarray(v) for g, v in grads.items()}
        compute_s = time.perf_counter() - t0
        directions = await rt.step(grads)
        lr_now = lr_factor(step, cfg.steps)
        params, state = update(params, state, directions,
                               {g: jnp.float32(cfg.lr[modes[g]] * lr_now) for g in GROUPS})
        loss = float(loss)
        out["modes"].append(modes)
        out["loss"].append(loss)
        if plane:
            diag = diagnostics(grads, line_bits) if all(m == FP32 for m in modes.values()) \
                else None
            plane.after_step(TraceRecord(step, compute_s, tuple(sizes.items())), loss, diag)
        if step + 1 in evals:
            out["curve"].append(dict(step=step + 1,
                                     val=models.accuracy(params, task.x_val, task.y_val),
                                     test=models.accuracy(params, task.x_test, task.y_test)))
        if progress is not None:
            progress.update(1)
    out["step_s"] = (time.perf_counter() - start) / cfg.steps
    traffic = rt.traffic()
    out["traffic"] = {g: t.payload_ratio() for g, t in traffic.items()}
    out["test"] = out["curve"][-1]["test"]
    out["val"] = out["curve"][-1]["val"]
    out["flipped"] = port.flipped if cfg.fault is not None else 0
    out["low_bit_share"] = sum(any(m != FP32 for m in ms.values())
                               for ms in out["modes"]) / cfg.steps
    out["decisions"] = [dict(step=d.step, reason=d.reason, modes=d.modes)
                        for d in (plane.log if plane else [])]
    out["faults"] = [asdict(f) for f in (plane.faults if plane else [])]
    out["params"] = jax.tree_util.tree_map(np.asarray, params)
    return out


#: The RTL-in-the-loop run: the easy task on a small model (616 + 90
#: elements, a few lines a step; learning rates raised for its size), FP32
#: default with a short warm-up, a window of random labels at steps 20..24
#: for the Supervisor, a short cooldown: admission, return to FP32 and
#: re-admission in 40 steps.
RTL_CONFIG = LoopConfig(steps=40, channels=(2, 4), hidden=8, evals=4,
                        lr={FP32: 0.1, "gbinary": 3e-3, "gternary": 3e-3},
                        degradation=Degradation(20, 25, 1.0),
                        commander=replace(PILOT_COMMANDER, warmup_steps=5, diag_window=5),
                        supervisor=SupervisorConfig(min_samples=5, cooldown_steps=5))


def loop_config_to_json(cfg):
    """``cfg`` as JSON (for a simulator process)."""
    return json.dumps(asdict(cfg))


def loop_config_from_json(text):
    """Inverse of :func:`loop_config_to_json`."""
    d = json.loads(text)
    d["channels"] = tuple(d["channels"])
    if d["degradation"]:
        d["degradation"] = Degradation(**d["degradation"])
    if d.get("fault"):
        d["fault"] = DeviceFault(**d["fault"])
    c = d["commander"]
    d["commander"] = CommanderConfig(**{**c, "sensitive": tuple(c["sensitive"])})
    if d["supervisor"]:
        d["supervisor"] = SupervisorConfig(**d["supervisor"])
    return LoopConfig(**d)


def run_on_model(cfg, params=TopParams(), progress=None):
    """:func:`train_loop` on the transaction-level device model."""
    dev = Device(params)
    return asyncio.run(train_loop(cfg, dev, Driver(dev, params), progress))


# -- the pilots ---------------------------------------------------------------------

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


def _windows(quick):
    """``(label noise, device fault)`` windows."""
    if quick:
        return Degradation(60, 72, DEGRADATION.noise), DeviceFault(60, 72, DEVICE_FAULT.fraction)
    return DEGRADATION, DEVICE_FAULT



def _job(cfg):
    return _summary(run_on_model(cfg))


def _run(configs, jobs, progress, desc):
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
    results = _run(configs, jobs, progress, "pilot learning rates")
    trials = [dict(mode=next(iter(c.fixed.values())), lr=c.lr[next(iter(c.fixed.values()))],
                   val=r["final_val"]) for c, r in zip(configs, results)]
    rates = {m: max((t for t in trials if t["mode"] == m),
                    key=lambda t: t["val"])["lr"] for m in LR_GRID}   # first maximum: smaller
    return rates, trials


def _pilot_runs(quick, rates):
    """``(pilot, trace, cfg)`` for every run."""
    seeds = SEEDS[:1] if quick else SEEDS
    noise, fault = _windows(quick)
    easy = dict(_easy(quick), lr=dict(rates))
    runs = []
    for pilot, window in (("recovery", dict(fault=fault)),
                          ("label-noise", dict(degradation=noise))):
        for name, kw in RECOVERY_TRACES.items():
            for s in seeds:
                runs.append((pilot, name, LoopConfig(seed=s, **window, **easy, **kw)))
    hard = dict(task="pairs", steps=200 if quick else 600, lr=dict(rates))
    for s in LADDER_SEEDS[:1] if quick else LADDER_SEEDS:
        runs.append(("ladder", "live ladder", LoopConfig(seed=s, **hard)))
        for name, split in LADDER_SPLITS.items():
            runs.append(("ladder", name, LoopConfig(seed=s, fixed=split, **hard)))
    for k in LATE_DELAYS:
        for s in seeds:
            runs.append(("late", f"delay {k}", LoopConfig(seed=s, fault=fault,
                                                          default_mode="gbinary",
                                                          delay_steps=k, **easy)))
    return runs


def run_pilots(quick=False, progress=True, jobs=1):
    """Every pilot; returns ``{pilot: {trace: {seed: summary}}}`` plus
    ``learning_rates`` (``rates``, ``trials``) and ``windows``."""
    rates, trials = tune_rates(quick, jobs, progress)
    runs = _pilot_runs(quick, rates)
    results = _run([c for *_, c in runs], jobs, progress, "pilots")
    out = {}
    for (pilot, trace, cfg), summary in zip(runs, results):
        out.setdefault(pilot, {}).setdefault(trace, {})[str(cfg.seed)] = summary
    noise, fault = _windows(quick)
    out["learning_rates"] = dict(rates=rates, trials=trials)
    out["windows"] = dict(label_noise=asdict(noise), device_fault=asdict(fault))
    return out


def _stats(per_seed, key):
    """Mean and sample standard deviation (ddof 1, 0 for one seed) over seeds,
    as the training report gives them."""
    values = np.array([r[key] for r in per_seed.values()], dtype=float)
    return float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0


def _split_name(modes):
    return " + ".join(f"{m} {g}" for g, m in modes.items())


def _at(curve, step, key="test"):
    """Accuracy at ``step`` of a curve (None when not evaluated there)."""
    return next((c[key] for c in curve if c["step"] == step), None)


def _window_change(per_seed, window):
    """Mean test-accuracy change over the window (stop minus start), in points."""
    if window is None:
        return None
    deltas = [_at(r["curve"], window["stop"]) - _at(r["curve"], window["start"])
              for r in per_seed.values()
              if _at(r["curve"], window["start"]) is not None
              and _at(r["curve"], window["stop"]) is not None]
    return 100 * float(np.mean(deltas)) if deltas else None


def _first(decisions, prefix, after=-1):
    return next((d["step"] for d in decisions if d["reason"].startswith(prefix)
                 and d["step"] > after), None)


def _trace_table(traces, window):
    lines = ["| trace | low-bit steps | traffic vs FP32 | final accuracy (%) | "
             "change over the window (points) |", "|---|---:|---:|---:|---:|"]
    for trace, per_seed in traces.items():
        share, traffic, (acc, std) = (_stats(per_seed, "low_bit_share")[0],
                                      _stats(per_seed, "traffic_ratio")[0],
                                      _stats(per_seed, "final_accuracy"))
        change = _window_change(per_seed, window)
        lines.append(f"| {trace} | {100 * share:.2f}% | {traffic:.3f}x | "
                     f"{100 * acc:.2f} ± {100 * std:.2f} | "
                     f"{'' if change is None else f'{change:+.2f}'} |")
    return lines


def _per_seed_table(traces):
    """Final accuracy of each trace per seed; for the G-Binary-default trace
    the Supervisor's first return to FP32 and the re-admission after it."""
    seeds = sorted({s for per in traces.values() for s in per}, key=int)
    lines = ["| seed | " + " | ".join(traces) + " | gbinary-default: return to FP32 at step | "
             "re-admitted at step |", "|---:|" + "---:|" * (len(traces) + 2)]
    for s in seeds:
        cells = [f"{100 * traces[t][s]['final_accuracy']:.2f}" if s in traces[t] else ""
                 for t in traces]
        dec = traces.get("gbinary-default", {}).get(s, {}).get("decisions", [])
        back = _first(dec, "Supervisor")
        again = _first(dec, "Commander", back) if back is not None else None
        lines.append(f"| {s} | " + " | ".join(cells) + f" | {back if back is not None else '-'} | "
                     f"{again if again is not None else '-'} |")
    return lines


def _false_alarm(traces):
    """``(mean, std)`` points the G-Binary-default trace loses to always-G-Binary, per seed."""
    a, b = traces.get("gbinary-default"), traces.get("always-gbinary")
    if not a or not b:
        return None
    diffs = [100 * (a[s]["final_accuracy"] - b[s]["final_accuracy"]) for s in a if s in b]
    return float(np.mean(diffs)), float(np.std(diffs, ddof=1)) if len(diffs) > 1 else 0.0


def report(results):
    """pilots.md text."""
    windows = results.get("windows", {})
    lines = ["# Control-plane pilots", "",
             "Generated by `make pilots` (`python -m neuron_fabric.experiments.pilots`). "
             "Device: the transaction-level model (W = 8, 512-bit lines). Accuracy is test "
             "top-1, mean ± std (ddof 1) over seeds; traffic is the runtime's measured payload "
             "ratio (bytes up / FP32 bytes up); low-bit share is the fraction of steps on which "
             "any group took a low-bit path.", ""]
    lr = results.get("learning_rates")
    if lr:
        lines += ["Learning rates, chosen on the validation split (each mode fixed on every "
                  "group, easy task, seed 0, no fault): " +
                  ", ".join(f"{m} {r:g}" for m, r in lr["rates"].items()) +
                  (" (tried: " + "; ".join(f"{t['mode']} {t['lr']:g}: {100 * t['val']:.1f}%"
                                           for t in lr["trials"]) + ")" if lr["trials"]
                   else " (quick: the grid's middle, no selection)") + ".", ""]
    paper = PAPER["recovery"]
    fault = windows.get("device_fault")
    lines += ["## Recovery pilot (Fig. 6): easy task (digits), fault on the low-bit path", "",
              f"Fault window: steps {fault['start']}..{fault['stop'] - 1}, each sign bit the "
              f"runtime writes flipped in device memory with probability {fault['fraction']} "
              "(host/fault_injection.py). FP32 never reads the device." if fault else "", "",
              *_trace_table(results.get("recovery", {}), fault)]
    lines.append(f"| paper, G-Binary-default (CIFAR-10/ResNet-18) | "
                 f"{100 * paper['low_bit_share']:.2f}% | {paper['traffic_ratio']:.3f}x | "
                 f"{paper['accuracy'][0]:.2f} ± {paper['accuracy'][1]:.2f} | |")
    if results.get("recovery"):
        lines += ["", "Per seed (final test accuracy, %):", "",
                  *_per_seed_table(results["recovery"])]
    lines += ["", "![recovery trace](pilots_recovery.png)", ""]
    noise = results.get("label-noise")
    if noise:
        w = windows.get("label_noise")
        cost = _false_alarm(noise)
        lines += ["## Negative control: label noise", "",
                  f"Steps {w['start']}..{w['stop'] - 1} train on labels of which "
                  f"{w['noise']:.0%} are random: FP32 cannot fix that, so a Supervisor alarm "
                  "here is a false alarm.", "", *_trace_table(noise, w), "",
                  "Per seed (final test accuracy, %):", "", *_per_seed_table(noise), ""]
        if cost:
            lines += [f"A false alarm's cost: G-Binary-default minus always-G-Binary, "
                      f"{cost[0]:+.2f} ± {cost[1]:.2f} points over the seeds.", ""]
    ladder = results.get("ladder", {})
    if ladder:
        lines += ["## Live ladder on the hard task (pairs, 100 classes)", "",
                  "| policy | split chosen (per seed) | traffic vs FP32 | final accuracy (%) |",
                  "|---|---|---:|---:|"]
        for trace, per_seed in ladder.items():
            chosen = "; ".join(sorted({_split_name(r["modes"][-1]) for r in per_seed.values()}))
            acc, std = _stats(per_seed, "final_accuracy")
            lines.append(f"| {trace} | {chosen} | {_stats(per_seed, 'traffic_ratio')[0]:.4f}x | "
                         f"{100 * acc:.2f} ± {100 * std:.2f} |")
        lines += ["", f"Paper (CIFAR-100 live loop): {_split_name(PAPER['ladder'])}.", "",
                  "![ladder and late update](pilots_ladder_late.png)", ""]
    late = results.get("late", {})
    if late:
        lines += ["## Late mode update (Fig. 3d) in the loop", "",
                  "G-Binary-default with the device fault window; every mode write applied "
                  "k steps after the decision.", "",
                  "| delay k (steps) | low-bit steps | traffic vs FP32 | final accuracy (%) |",
                  "|---:|---:|---:|---:|"]
        for trace, per_seed in late.items():
            acc, std = _stats(per_seed, "final_accuracy")
            lines.append(f"| {trace.split()[-1]} | {100 * _stats(per_seed, 'low_bit_share')[0]:.2f}% | "
                         f"{_stats(per_seed, 'traffic_ratio')[0]:.3f}x | "
                         f"{100 * acc:.2f} ± {100 * std:.2f} |")
        lines += ["", "The paper's Fig. 3d measures the *time* a late update costs (a 10 ms late "
                  f"update adds < {PAPER['late_10ms_pct_max']}% step cost; `make envelope` "
                  "reproduces it); here it is what k late steps cost in accuracy and traffic.", ""]
    return "\n".join(lines)


def plot_recovery(results, path):
    """Per-epoch trace of each recovery trace (seed 0): loss per step, test
    accuracy, and each group's low-bit steps shaded."""
    import matplotlib  # deferred: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: matplotlib
    traces = results["recovery"]
    fig, axes = plt.subplots(len(traces), 1, figsize=(8, 2.2 * len(traces)), sharex=True)
    colours = {"gbinary": "tab:orange", "gternary": "tab:green"}
    for ax, (trace, per_seed) in zip(np.atleast_1d(axes), traces.items()):
        r = per_seed[min(per_seed)]
        steps = np.arange(len(r["loss"]))
        for row, g in enumerate(GROUPS):
            for mode, colour in colours.items():
                on = np.array([ms[g] == mode for ms in r["modes"]])
                ax.fill_between(steps, row / len(GROUPS), (row + 1) / len(GROUPS), where=on,
                                color=colour, alpha=0.25, step="post", linewidth=0,
                                transform=ax.get_xaxis_transform(),
                                label=f"{g} {mode}" if trace == next(iter(traces)) else None)
        ax.plot(steps, r["loss"], color="tab:blue", linewidth=0.6, label="loss")
        ax2 = ax.twinx()
        ax2.plot([c["step"] for c in r["curve"]], [c["test"] for c in r["curve"]], "k.-",
                 linewidth=1, label="test acc.")
        for other in sorted(per_seed, key=int)[1:]:
            o = per_seed[other]
            ax2.plot([c["step"] for c in o["curve"]], [c["test"] for c in o["curve"]], "-",
                     color="grey", linewidth=0.5, alpha=0.6)
        ax2.set_ylim(0, 1)
        w = results.get("windows", {}).get("device_fault") or asdict(DEVICE_FAULT)
        ax.axvspan(w["start"], w["stop"], color="red", alpha=0.08)
        ax.set_title(f"{trace}: low-bit {100 * r['low_bit_share']:.1f}% of steps, "
                     f"traffic {r['traffic_ratio']:.3f}x, acc. {100 * r['final_accuracy']:.1f}%",
                     fontsize=9)
        ax.set_ylabel("loss")
    np.atleast_1d(axes)[0].legend(fontsize=6, loc="upper right", ncol=3)
    np.atleast_1d(axes)[-1].set_xlabel("step (shading: lower half backbone, upper half head "
                                       "on a low-bit mode; red: device fault window;\n"
                                       "black: seed 0's test accuracy, grey: the other seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_ladder_and_late(results, path):
    """Two panels: accuracy against traffic for the live ladder and the fixed
    splits (hard task), and accuracy and traffic against the delay k of a
    late mode update (easy task); mean and std over seeds."""
    import matplotlib  # deferred: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: matplotlib
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for trace, per_seed in results.get("ladder", {}).items():
        acc, std = _stats(per_seed, "final_accuracy")
        traffic = _stats(per_seed, "traffic_ratio")[0]
        live = trace == "live ladder"
        left.errorbar(traffic, 100 * acc, yerr=100 * std, fmt="*" if live else "o",
                      markersize=12 if live else 6, capsize=3, label=trace)
    left.set_xscale("log")
    left.set_xlabel("traffic vs FP32 (measured payload)")
    left.set_ylabel("final test accuracy (%)")
    left.set_title("live ladder against fixed splits, hard task", fontsize=9)
    left.legend(fontsize=6)
    late = results.get("late", {})
    if late:
        ks = [int(t.split()[-1]) for t in late]
        acc = np.array([_stats(v, "final_accuracy") for v in late.values()])
        traffic = [_stats(v, "traffic_ratio")[0] for v in late.values()]
        right.errorbar(ks, 100 * acc[:, 0], yerr=100 * acc[:, 1], fmt="k.-", capsize=3,
                       label="accuracy")
        right.set_xlabel("mode write delayed by k steps")
        right.set_ylabel("final test accuracy (%)")
        other = right.twinx()
        other.plot(ks, traffic, "s--", color="tab:orange", label="traffic")
        other.set_ylabel("traffic vs FP32", color="tab:orange")
        right.set_title("late mode update in the loop, easy task", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.experiments.pilots",
                        description="The control-plane pilots: pilots.md, pilots.json, plots.")
    ap.add_argument("--out", default="build/reports", help="output folder")
    ap.add_argument("--quick", action="store_true", help="one seed, short runs (smoke test)")
    ap.add_argument("--jobs", type=int, default=2, help="processes (default %(default)s)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, not {args.jobs}")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    single_thread_env()
    results = run_pilots(args.quick, jobs=args.jobs)
    results["wall_seconds"] = time.perf_counter() - t0
    (out / "pilots.json").write_text(json.dumps(results, indent=1))
    plot_recovery(results, out / "pilots_recovery.png")
    plot_ladder_and_late(results, out / "pilots_ladder_late.png")
    (out / "pilots.md").write_text(report(results))
    print(f"wrote {out / 'pilots.md'}, pilots.json, pilots_recovery.png, pilots_ladder_late.png "
          f"in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
