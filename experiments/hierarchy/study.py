"""The multi-hop report's study and timing (``make hierarchy``, see
:mod:`.report`): real and synthetic gradients through every
hierarchy (:func:`study`), the equal-bits sweep (:func:`bit_sweep`), the
hardware each hierarchy needs, and ring and tree All-Reduce time
(:func:`timing`)."""

import numpy as np

from neuron_fabric.experiments.train.tasks import load_task
from neuron_fabric.host import hierarchy as hy
from neuron_fabric.models import multihop

__all__ = ["CONFIGS", "REAL_POOL", "SWEEP_CONFIGS", "real_pool", "study", "bit_sweep", "timing"]

#: Hierarchies of the study: (W, fanin, hops).
CONFIGS = tuple((w, f, h) for w in (8, 16) for f in (4, 8, 16) for h in (1, 2, 3))
#: Workers of the real-gradient pool (the largest hierarchy studied on real gradients).
REAL_POOL = 1024
#: Examples per worker of the real-gradient pool (the training's 2 a step).
REAL_BATCH = 2
#: Steps of the FP32 harness run whose parameters give the real gradients
#: (30% of the harness's 300 digits steps, where Table 5's cosines are taken).
REAL_STEPS = 90
#: Coordinates of the synthetic gradients: ``2**24 / K`` within these bounds.
SYNTH_N = (256, 8192)
#: Correlation between two workers' synthetic gradients.
SYNTH_RHO = 0.01
#: Timing: coordinates (GPT-2 XL's 1.5e9, as commtime's Fig. 7), W, ring sizes, trees.
TIME_N = 1.5e9
TIME_W = 8
RING_N = (2, 4, 8, 16, 32, 64, 128)
TREES = ((4, 16), (4, 64), (8, 8), (8, 64), (16, 16))
TASK = "digits"
#: Hierarchies of the equal-bits sweep: 64 workers in one hop, 128 in two.
SWEEP_CONFIGS = ((8, 8, 1), (8, 4, 2))
#: Bits of the DynamiQ-style codes in the timing model (multihop's default).
TIME_BITS = 4


def say(msg):
    print(f"[hierarchy] {msg}", flush=True)


# -- study -------------------------------------------------------------------------

def real_pool(workers, steps, seed=0):
    """Per-worker gradients ``(workers, n)`` at the parameters of a
    ``steps``-step FP32 harness run on ``digits`` (W 8, the tuned FP32 rate),
    each worker on ``REAL_BATCH`` training examples."""
    from neuron_fabric.experiments.train.harness import (  # deferred: JAX
        RunConfig,
        batch_indices,
        step_functions,
        train,
    )
    from neuron_fabric.experiments.train.models import GROUPS  # deferred: JAX
    from neuron_fabric.experiments.train.policies import tuned_lr  # deferred: JAX
    lr = tuned_lr(TASK, "fp32")
    run = train(RunConfig(TASK, "fp32", {g: lr for g in GROUPS}, seed=seed, steps=steps,
                          evals=1), progress=False, keep_params=True)
    task = load_task(TASK, seed)
    worker_grads = step_functions(task.image_shape, task.classes)[0]
    batches = batch_indices(len(task.y_train), 128 * REAL_BATCH, seed + 1000)
    out = []
    for _ in range(-(-workers // 128)):
        idx = next(batches)
        xw = task.x_train[idx].reshape(128, REAL_BATCH, *task.image_shape)
        yw = task.y_train[idx].reshape(128, REAL_BATCH)
        grads = worker_grads(run["params"], xw, yw)[1]
        out.append(np.concatenate([np.asarray(grads[g]) for g in GROUPS], axis=1))
    return np.concatenate(out)[:workers], run["val"]


def _synth_n(total):
    return int(max(SYNTH_N[0], min(SYNTH_N[1], 2 ** 24 // total)))


def hardware(h):
    chain = hy.hardware_chain(h)
    return dict(widths=[hy.partial_bits("exact", 1 if k == 0 else h.below(k))[0]
                        for k in range(h.hops + 1)],
                operands=[op.name if op is not None else None for op, _, _ in chain],
                why=[why for _, _, why in chain],
                b4=all(h.below(k) <= 15 for k in range(1, h.hops + 1)),
                b8=all(h.below(k) <= 255 for k in range(1, h.hops + 1)))


def study(configs, pool, synth_cap=None):
    """Rows of :func:`compare` for every configuration: real gradients
    (the first K workers of ``pool``) where ``K <= len(pool)``, synthetic
    for all."""
    out = dict(real=[], synthetic=[])
    for i, (w, f, hops) in enumerate(configs):
        h = hy.MultiHopTree(w, f, hops)
        sources = []
        if pool is not None and h.total <= len(pool):
            sources.append(("real", pool[:h.total]))
        n = _synth_n(h.total) if synth_cap is None else synth_cap
        sources.append(("synthetic", hy.synthetic_gradients(h.total, n, SYNTH_RHO, seed=i)))
        for name, grads in sources:
            base = dict(workers=w, fanin=f, hops=hops, total=h.total, n=grads.shape[1],
                        ties=float(np.mean(hy.aggregate(h, grads, "exact") == 0)))
            check = None
            if all(op is not None for op, _, _ in hy.hardware_chain(h)):
                check = bool(np.array_equal(hy.contract_vote(h, grads),
                                            hy.aggregate(h, grads, "exact")))
                if not check:
                    raise AssertionError(f"{h.label()}: the contract's count path and the "
                                         "exact sums disagree")
            for row in hy.compare(h, grads, seed=i):
                out[name].append({**base, "contract_checked": check, **row})
        say(f"study {i + 1}/{len(configs)}: {h.label()} ({', '.join(s for s, _ in sources)})")
    return out


def bit_sweep(pool, configs=SWEEP_CONFIGS, n_synth=4096):
    """Rows of :func:`compare` at every b of the sweep, both roundings, for
    every hierarchy of ``configs``: real gradients (first K of ``pool``)
    and synthetic ones."""
    from neuron_fabric.experiments.hierarchy.training import BIT_SWEEP  # deferred: JAX
    out = dict(real=[], synthetic=[])
    for i, (w, f, hops) in enumerate(configs):
        h = hy.MultiHopTree(w, f, hops)
        sources = [("synthetic", hy.synthetic_gradients(h.total, n_synth, SYNTH_RHO, seed=100 + i))]
        if pool is not None and h.total <= len(pool):
            sources.insert(0, ("real", pool[:h.total]))
        for name, grads in sources:
            for row in hy.compare(h, grads, bits=BIT_SWEEP, seed=100 + i,
                                  roundings=hy.ROUNDINGS):
                out[name].append(dict(workers=w, fanin=f, hops=hops, total=h.total,
                                      n=grads.shape[1], hop_bits_top=row["hop_bits"][-1],
                                      **row))
        say(f"equal-bits sweep {i + 1}/{len(configs)}: {h.label()}")
    return out


# -- timing ------------------------------------------------------------------------

def timing(n=TIME_N, workers=TIME_W, rings=RING_N, trees=TREES):
    """Ring and tree All-Reduce time and traffic per scheme."""
    ring = [dict(scheme=s, controllers=c, seconds=r["seconds"],
                 bytes_per_controller=r["bytes_per_controller"],
                 bits_per_step=[x["bits_per_coord"] for x in r["steps"]])
            for s in multihop.TIMED for c in rings
            for r in [multihop.ring(n, c, workers, s, TIME_BITS)]]
    tree = [dict(scheme=s, fanin=f, controllers=c, seconds=r["seconds"],
                 bytes_per_parent_link=r["bytes_per_parent_link"],
                 bits_per_level=[x["bits_per_coord"] for x in r["levels"]
                                 if x["phase"] == "reduce"])
            for s in multihop.TIMED for f, c in trees
            for r in [multihop.tree(n, c, f, workers, s, TIME_BITS)]]
    return dict(n=n, workers=workers, ring=ring, tree=tree)
