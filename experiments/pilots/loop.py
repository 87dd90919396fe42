"""The pilots' training loop: the control plane in it, the workers'
gradients through the gradient runtime and a device (:func:`train_loop`;
:func:`run_on_model` on the transaction-level model)."""

import asyncio
import time
from dataclasses import asdict, replace

import jax
import jax.numpy as jnp
import numpy as np

from neuron_fabric.contract.facts import TopParams
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
    ControlPlane,
    Predictor,
    Supervisor,
    SupervisorConfig,
    TraceRecord,
)
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.host.fault_injection import FaultPort
from neuron_fabric.host.runtime import GradientRuntime

__all__ = ["diagnostics", "train_loop", "run_on_model"]


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


async def _runtime(cfg, port, driver, sizes):
    """``(port, runtime, plane)``: the gradient runtime on ``port`` (behind a
    :class:`FaultPort` when ``cfg`` has a fault), and the control plane
    started on it (None when ``cfg.fixed`` sets the modes instead)."""
    if cfg.fault is not None:
        port = FaultPort(port, cfg.fault.make(), seed=[cfg.seed, 3],
                         workers=driver.params.workers)
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
    return port, rt, plane


def _eval_steps(cfg):
    """Steps after which the loop evaluates: ``cfg.evals`` along the run and
    each edge of the degradation and fault windows."""
    evals = {round(cfg.steps * (k + 1) / cfg.evals) for k in range(cfg.evals)}
    for window in (cfg.degradation, cfg.fault):
        if window is not None:
            evals |= {window.start, window.stop}
    return evals


def _totals(out, cfg, rt, port, plane, params):
    """``out`` with the run's totals after its last step (:func:`train_loop`)."""
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
    port, rt, plane = await _runtime(cfg, port, driver, sizes)
    batches = batch_indices(len(task.y_train), cfg.workers * cfg.batch, cfg.seed)
    noise_rng = np.random.default_rng([cfg.seed, 2])
    evals = _eval_steps(cfg)
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
    return _totals(out, cfg, rt, port, plane, params)


def run_on_model(cfg, params=TopParams(), progress=None):
    """:func:`train_loop` on the transaction-level device model."""
    dev = Device(params)
    return asyncio.run(train_loop(cfg, dev, Driver(dev, params), progress))
