"""Virtual-worker training: JAX computes the workers' gradients, the gradient
runtime aggregates them through the device model, optax applies the update.

One step (paper section 4: one batch split across W virtual workers):

1. draw ``W * batch`` training examples and split them into W worker batches;
2. per-worker gradients by ``jax.vmap(jax.value_and_grad(loss))`` over the
   worker axis, flattened per parameter group to ``(W, n)``;
3. :meth:`GradientRuntime.step` aggregates every group (FP32 mean on the
   host, or packed signs through a :class:`~neuron_fabric.host.device.Device`);
4. each group's direction is scaled by its learning rate (cosine-decayed
   over the run) and fed to SGD with momentum 0.9; a group the policy
   updates scale-free (:attr:`.policies.Policy.scale_free`) goes through
   Adam instead, its rate applied to Adam's normalised step, so that its
   step per element is about the rate whatever the gradient's scale.

Results are deterministic per seed: the data split, the initial parameters
and the batch order all derive from it, and every computation is on the CPU.
"""

import asyncio
import math
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
import optax

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.experiments.train import models
from neuron_fabric.experiments.train.models import GROUPS
from neuron_fabric.experiments.train import probe
from neuron_fabric.experiments.train.policies import cosine, get_policy
from neuron_fabric.experiments.train.tasks import load_task
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.host.runtime import GradientRuntime

__all__ = ["RunConfig", "TASK_DEFAULTS", "MOMENTUM", "step_functions", "batch_indices",
           "lr_factor", "train"]

MOMENTUM = 0.9

#: Per-task defaults: steps and examples per worker and step (16 x W = 128 a step;
#: 36 epochs of digits, 15 of pairs, 5 of pairs-hard's 30,000 pairs).
TASK_DEFAULTS = {
    "digits": dict(steps=300, batch=16),
    "pairs": dict(steps=1200, batch=16),
    "pairs-hard": dict(steps=1200, batch=16),
}


@dataclass(frozen=True)
class RunConfig:
    """One training run.

    Parameters
    ----------
    task, policy : str
        Names in :data:`.tasks.TASKS` and :data:`.policies.POLICIES`.
    lr : dict of str to float
        Learning rate per parameter group.
    steps, batch : int or None
        Steps and per-worker batch size (task default when None).
    workers : int
        W, virtual workers (the device is built for it).
    evals : int
        Evaluations of validation and test accuracy along the run.
    diag_at, diag_steps : float, int
        Table 5 cosines are averaged over ``diag_steps`` steps from
        ``diag_at * steps`` on.
    channels, hidden, wide, norm :
        Model size (:func:`.models.init`): convolution channels, the
        width of the features the head reads, and of the extra dense layer
        before them (0: none); group normalisation before the ReLUs.
    encoding : str
        How a zero gradient becomes a bit on the low-bit paths
        (:mod:`neuron_fabric.host.encoding`: ``negative``, the contract's
        ``g > 0``; ``abstain``; ``alternate``).
    probe_at : tuple of float
        Fractions of training at which every aggregation is applied to the
        same per-worker gradients (:mod:`.probe`, Table 5 on the same
        gradients), ``probe_steps`` consecutive steps each; meant for FP32
        runs (the probe reads the run's own gradients).
    """
    task: str
    policy: str
    lr: dict
    seed: int = 0
    steps: int = None
    batch: int = None
    workers: int = 8
    evals: int = 20
    diag_at: float = 0.3
    diag_steps: int = 20
    channels: tuple = models.CHANNELS
    hidden: int = models.HIDDEN
    wide: int = 0
    norm: bool = False
    encoding: str = "negative"
    probe_at: tuple = ()
    probe_steps: int = probe.PROBE_STEPS

    def resolved(self):
        """This configuration with the task defaults filled in."""
        d = TASK_DEFAULTS[self.task]
        return RunConfig(**{**asdict(self), "steps": self.steps or d["steps"],
                            "batch": self.batch or d["batch"]})


@lru_cache(maxsize=None)
def step_functions(image_shape, classes, channels=models.CHANNELS, hidden=models.HIDDEN, wide=0,
                   norm=False, scale_free=()):
    """Jitted functions of one model size and of the groups updated
    scale-free (``scale_free``: Adam, the rate applied after it), compiled
    once per process.

    Returns
    -------
    worker_grads : (params, xw, yw) -> (mean loss, {group: (W, n) gradients})
        ``xw``, ``yw``: a leading worker axis over the worker batches.
    update : (params, state, {group: direction}, {group: lr}) -> (params, state)
        SGD with momentum on the directions scaled by their group's rate
        (a ``scale_free`` group: Adam's step on the direction, times the rate).
    init : params -> optimiser state
    """
    params = models.init(0, image_shape, classes, channels, hidden, wide, norm)
    flat = models.Flattener(params)
    unknown = set(scale_free) - set(GROUPS)
    if unknown:
        raise ValueError(f"scale_free names no group: {sorted(unknown)}; groups are {GROUPS}")
    opt = optax.multi_transform(
        {"sgd": optax.sgd(1.0, momentum=MOMENTUM), "adam": optax.adam(1.0)},
        lambda tree: {g: jax.tree_util.tree_map(
            lambda _: "adam" if g in scale_free else "sgd", tree[g]) for g in tree})

    @jax.jit
    def worker_grads(params, xw, yw):
        losses, grads = jax.vmap(jax.value_and_grad(models.loss), in_axes=(None, 0, 0))(
            params, xw, yw)
        return jnp.mean(losses), {g: jax.vmap(lambda t: flat.flatten(t)[g])(grads)
                                  for g in GROUPS}

    @jax.jit
    def update(params, state, directions, lrs):
        scaled = flat.unflatten({g: directions[g] * (1.0 if g in scale_free else lrs[g])
                                 for g in GROUPS})
        updates, state = opt.update(scaled, state, params)
        updates = {g: jax.tree_util.tree_map(lambda u: u * lrs[g], updates[g])
                   if g in scale_free else updates[g] for g in GROUPS}
        return optax.apply_updates(params, updates), state

    return worker_grads, update, jax.jit(opt.init)


def batch_indices(n, size, seed):
    """Indices of successive batches: a fresh permutation of ``n`` every epoch."""
    rng = np.random.default_rng([seed, 1])
    order, pos = rng.permutation(n), 0
    while True:
        if pos + size > n:
            order, pos = rng.permutation(n), 0
        yield order[pos:pos + size]
        pos += size


def lr_factor(step, steps):
    """Cosine decay from 1 to 0 over the run."""
    return 0.5 * (1.0 + math.cos(math.pi * step / steps))


def _eval_steps(steps, evals):
    return sorted({round(steps * (k + 1) / evals) for k in range(evals)})


@dataclass
class _Diagnostics:
    """Running sums of the low-bit / FP32 cosines per group and global."""
    sums: dict = field(default_factory=lambda: {k: 0.0 for k in ("global",) + GROUPS})
    count: int = 0

    def add(self, directions, means):
        for g in GROUPS:
            self.sums[g] += cosine(directions[g], means[g])
        self.sums["global"] += cosine(np.concatenate([directions[g] for g in GROUPS]),
                                      np.concatenate([means[g] for g in GROUPS]))
        self.count += 1

    def result(self):
        return {k: v / self.count for k, v in self.sums.items()} if self.count else {}


async def _run(cfg, progress, keep_params):
    task = load_task(cfg.task, cfg.seed)
    policy = get_policy(cfg.policy)
    missing = set(GROUPS) - set(cfg.lr)
    if missing:
        raise ValueError(f"lr must give a rate for every group; missing {sorted(missing)}")
    model = (tuple(cfg.channels), cfg.hidden, cfg.wide, cfg.norm)
    worker_grads, update, opt_init = step_functions(task.image_shape, task.classes, *model,
                                                    scale_free=policy.scale_free)
    params = models.init(cfg.seed, task.image_shape, task.classes, *model)
    state = opt_init(params)
    dev = Device(TopParams(workers=cfg.workers))
    sizes = models.group_sizes(params)
    rt = await GradientRuntime.create(
        dev, Driver(dev, dev.params), sizes,
        {g: _encoded(policy.aggregation(g).group_policy(cfg.workers), cfg.encoding)
         for g in GROUPS})
    probes = {f"{f:g}": (int(f * cfg.steps), probe.ProbeSums()) for f in cfg.probe_at}
    probe_rts = await probe.probe_runtimes(sizes, cfg.workers) if probes else None
    batches = batch_indices(len(task.y_train), cfg.workers * cfg.batch, cfg.seed)
    evals = _eval_steps(cfg.steps, cfg.evals)
    diag_from = int(cfg.diag_at * cfg.steps)
    diag = _Diagnostics()
    curve = []
    bar = _progress(cfg, progress)
    for step in range(cfg.steps):
        idx = next(batches)
        xw = task.x_train[idx].reshape(cfg.workers, cfg.batch, *task.image_shape)
        yw = task.y_train[idx].reshape(cfg.workers, cfg.batch)
        loss, grads = worker_grads(params, xw, yw)
        grads = {g: np.asarray(v) for g, v in grads.items()}
        for at, sums in probes.values():
            if at <= step < at + cfg.probe_steps:
                await probe.probe_step(probe_rts, grads, sums)
        out = await rt.step(grads)
        directions = {g: policy.aggregation(g).finish(out[g]) for g in GROUPS}
        if diag_from <= step < diag_from + cfg.diag_steps:
            diag.add(directions, {g: grads[g].mean(axis=0) for g in GROUPS})
        lr_now = lr_factor(step, cfg.steps)
        params, state = update(params, state, directions,
                               {g: np.float32(cfg.lr[g] * lr_now) for g in GROUPS})
        if step + 1 in evals:
            curve.append(dict(step=step + 1, loss=float(loss),
                              val=models.accuracy(params, task.x_val, task.y_val),
                              test=models.accuracy(params, task.x_test, task.y_test)))
            bar.set_postfix(val=f"{curve[-1]['val']:.3f}", loss=f"{float(loss):.3f}")
        bar.update(1)
    bar.close()
    traffic = rt.traffic()
    await rt.close()
    return dict(config=asdict(cfg), policy_label=policy.label, curve=curve,
                val=curve[-1]["val"], test=curve[-1]["test"],
                diagnostics=diag.result(),
                probes={key: sums.result() for key, (_, sums) in probes.items()},
                traffic={name: dict(payload_ratio=t.payload_ratio(),
                                    round_trip_ratio=t.round_trip_ratio(),
                                    bytes_up=t.bytes_up, bytes_down=t.bytes_down)
                         for name, t in traffic.items()},
                group_sizes=models.group_sizes(params),
                **({"params": jax.tree_util.tree_map(np.asarray, params)} if keep_params else {}))


def _encoded(policy, encoding):
    """``policy`` with ``encoding`` on a low-bit path (FP32 has no bits)."""
    return replace(policy, encoding=encoding) if policy.low_bit else policy


def _progress(cfg, enabled):
    from tqdm import tqdm  # deferred: tqdm (train extra)
    return tqdm(total=cfg.steps, desc=f"{cfg.task}/{cfg.policy}/s{cfg.seed}",
                disable=not enabled, leave=False, mininterval=0.5)


def train(cfg, progress=True, keep_params=False):
    """Run ``cfg`` and return its result.

    Parameters
    ----------
    cfg : RunConfig
    progress : bool
        Show a tqdm bar.
    keep_params : bool
        Add the final parameters (numpy arrays) to the result as ``params``.

    Returns
    -------
    dict
        ``config``, ``policy_label``; ``curve`` (list of ``step``, ``loss``,
        ``val``, ``test`` accuracies); final ``val`` and ``test`` accuracy
        (fractions); ``diagnostics`` (cosine of the update direction with
        the FP32 mean: ``global``, ``backbone``, ``head``); ``probes``
        (fraction of training -> :func:`.probe.probe_step` rows, averaged
        over the probe steps; empty without ``probe_at``); ``traffic`` per
        group and ``total`` (``payload_ratio``, ``round_trip_ratio``,
        bytes); ``group_sizes``.
    """
    return asyncio.run(_run(cfg.resolved(), progress, keep_params))
