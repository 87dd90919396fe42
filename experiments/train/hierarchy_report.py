"""``make hierarchy``: the multi-hop comparison study, training at 64 virtual
workers and the multi-hop timing, written to ``hierarchy.md``,
``hierarchy.json`` and ``hierarchy_*.png``.

    python -m neuron_fabric.experiments.train.hierarchy_report [--out build/reports] [--jobs 2] [--quick]

1. *Study* (:func:`neuron_fabric.host.hierarchy.compare`) on two gradient
   sources: real gradients (the harness's small CNN on ``digits`` after a
   short FP32 run of the harness, W 8, then :data:`REAL_POOL` workers of 2
   examples each at those parameters) for every hierarchy of at most
   :data:`REAL_POOL` workers, and synthetic correlated Gaussian gradients
   (:func:`neuron_fabric.host.hierarchy.synthetic_gradients`) for every
   hierarchy of W 8 / 16, fan-in 4 / 8 / 16, 1-3 hops.
2. *Timing* (:mod:`neuron_fabric.models.multihop`): ring and tree
   All-Reduce among N controllers, per scheme.
3. *Equal bits* (:func:`bit_sweep`): DynamiQ-style sums at b = 1, 2, 3,
   4, 8 bits per coordinate per hop, independent and correlated rounding,
   on vote counts (``dq-sign``) and on gradients (``dq-grad``), beside
   exact counts and majority of majorities, on the real and synthetic
   gradients of :data:`SWEEP_CONFIGS`.
4. *Training* (:mod:`.hierarchy`), for 2 and 16 examples per worker
   (:data:`SETTINGS`): learning rates on the validation split (seed 0),
   then seeds 0-2 at the chosen rate (seed 0's run is the tuning run
   itself: runs are deterministic).  The 2-a-worker setting adds the
   equal-bits sweep (:data:`.hierarchy.SWEEP_SCHEMES`, correlated
   rounding).

``--quick`` runs the same pipeline in seconds: few steps, small pools, one
hierarchy of each kind, one seed.

``hierarchy.json`` keys: ``study.<real|synthetic>`` (a list of rows:
``workers``, ``fanin``, ``hops``, ``total``, ``n``, and the metrics of
:func:`compare`), ``hardware`` (per hierarchy: count widths per hop and the
contract operand of each hop), ``timing`` (``ring`` and ``tree`` rows),
``sweep.<real|synthetic>`` (rows of :func:`compare` with ``rounding``, per
hierarchy of :data:`SWEEP_CONFIGS`), ``training`` (a list, one entry per
setting of :data:`SETTINGS`: ``batch``,
``steps``, ``rates``, ``trials``, ``schemes.<scheme>``: ``accuracy_mean``,
``accuracy_std`` (ddof 1), ``accuracies``, ``cosine``, ``curves``),
``setup``, ``wall_seconds``.
"""

import json
import multiprocessing
import pathlib
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict

import numpy as np

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.experiments.threads import single_thread_env
from neuron_fabric.experiments.train.tasks import load_task
from neuron_fabric.host import hierarchy as hy
from neuron_fabric.models import multihop

__all__ = ["CONFIGS", "REAL_POOL", "study", "timing", "train_all", "run_all", "main"]

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
SEEDS = (0, 1, 2)
TASK = "digits"
#: Hierarchies of the equal-bits sweep: 64 workers in one hop, 128 in two.
SWEEP_CONFIGS = ((8, 8, 1), (8, 4, 2))
#: Training settings: (examples per worker and step, steps).  2 a worker is
#: the harness's global batch of 128; 16 a worker (1,024 a step, 150 steps)
#: gives each worker's sign more signal.
SETTINGS = ((2, 300), (16, 150))

_SCHEME_LABEL = {
    "exact": "exact counts", "mom": "majority of majorities (1-bit)",
    "mom-ternary": "majority of majorities (ternary)", "dq-sign": "DynamiQ-style vote sums",
    "dq-grad": "DynamiQ-style gradient sums", "signofmean": "sign of FP32 mean (reference)",
    "fp32": "FP32",
}
#: Bits of the DynamiQ-style codes in the timing model (multihop's default).
TIME_BITS = 4


def _say(msg):
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


def _hardware(h):
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
        _say(f"study {i + 1}/{len(configs)}: {h.label()} ({', '.join(s for s, _ in sources)})")
    return out


def bit_sweep(pool, configs=SWEEP_CONFIGS, n_synth=4096):
    """Rows of :func:`compare` at every b of the sweep, both roundings, for
    every hierarchy of ``configs``: real gradients (first K of ``pool``)
    and synthetic ones."""
    from neuron_fabric.experiments.train.hierarchy import BIT_SWEEP  # deferred: JAX
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
        _say(f"equal-bits sweep {i + 1}/{len(configs)}: {h.label()}")
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


# -- training ----------------------------------------------------------------------

def _job(run):
    from neuron_fabric.experiments.train.hierarchy import (  # deferred: JAX
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
        _say(f"{what} {k}/{len(runs)}: {r['scheme']} lr {r['lr']:g} seed {r['seed']}: "
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
    from neuron_fabric.experiments.train.hierarchy import (  # deferred: JAX
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


# -- report ------------------------------------------------------------------------

def _table(header, rows):
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
        ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def _timed(scheme):
    """The label of a timed scheme."""
    return _scheme(dict(scheme=scheme, bits=TIME_BITS if scheme.startswith("dq") else None))


def _scheme(row):
    label = _SCHEME_LABEL[row["scheme"]]
    return f"{label}, b = {row['bits']}" if row.get("bits") else label


def _hops(row):
    return " / ".join(f"{p:g}" + (f"+{m:g}" if m else "") for p, m in row["hop_bits"])


def _study_table(rows):
    out = _table(["hierarchy", "K", "n", "ties", "scheme", "disagree (all)",
                  "disagree (no tie)", "vs sign of mean", "cos to mean",
                  "bits/coord per hop (0..)", "sum"],
                 [[f"W {r['workers']}, fan-in {r['fanin']}, {r['hops']} hop(s)", r["total"],
                   r["n"], f"{100 * r['ties']:.1f}%", _scheme(r),
                   f"{100 * r['disagreement']:.2f}%", f"{100 * r['disagreement_decided']:.2f}%",
                   f"{100 * r['disagreement_mean_sign']:.2f}%", f"{r['cosine']:.3f}",
                   _hops(r), f"{r['bits_per_coord']:.2f}"] for r in rows])
    return out


def _hardware_table(hw):
    return _table(["hierarchy", "K", "exact count bits per hop (0..)", "b = 4 holds",
                   "b = 8 holds", "contract operand per hop (1..)"],
                  [[f"W {w}, fan-in {f}, {h} hop(s)", w * f ** h,
                    " / ".join(str(int(x)) for x in d["widths"]),
                    "yes" if d["b4"] else "no", "yes" if d["b8"] else "no",
                    "; ".join(f"hop {k}: " + (op or f"none ({why})")
                              for k, (op, why) in enumerate(zip(d["operands"], d["why"]), 1))]
                   for (w, f, h), d in ((tuple(map(int, k.split("-"))), v)
                                        for k, v in hw.items())])


def _timing_tables(t):
    ms = lambda s: f"{1e3 * s:.2f}"      # noqa: E731
    rings = sorted({r["controllers"] for r in t["ring"]})
    ring = _table(["scheme"] + [f"ring N={c} (ms)" for c in rings],
                  [[_timed(s)] + [ms(r["seconds"]) for r in t["ring"] if r["scheme"] == s]
                   for s in dict.fromkeys(r["scheme"] for r in t["ring"])])
    trees = list(dict.fromkeys((r["fanin"], r["controllers"]) for r in t["tree"]))
    tree = _table(["scheme"] + [f"tree fan-in {f}, N={c} (ms)" for f, c in trees],
                  [[_timed(s)] + [ms(r["seconds"]) for r in t["tree"] if r["scheme"] == s]
                   for s in dict.fromkeys(r["scheme"] for r in t["tree"])])
    return ring, tree, _traffic_table(t)


def _traffic_table(t, ring_n=8, tree_at=(8, 64)):
    """Bits per coordinate on each step (DynamiQ's accounting) and bytes
    per controller, ring of ``ring_n`` and one tree (the largest ring and
    the last tree timed when those were not)."""
    if ring_n not in {r["controllers"] for r in t["ring"]}:
        ring_n = max(r["controllers"] for r in t["ring"])
    if tree_at not in {(r["fanin"], r["controllers"]) for r in t["tree"]}:
        tree_at = (t["tree"][-1]["fanin"], t["tree"][-1]["controllers"])
    rows = []
    for s in dict.fromkeys(r["scheme"] for r in t["ring"]):
        ring = next(r for r in t["ring"] if r["scheme"] == s and r["controllers"] == ring_n)
        tree = next(r for r in t["tree"] if r["scheme"] == s
                    and (r["fanin"], r["controllers"]) == tree_at)
        half = len(ring["bits_per_step"]) // 2
        rows.append([_timed(s),
                     " / ".join(f"{b:.3g}" for b in ring["bits_per_step"][:half]),
                     f"{ring['bits_per_step'][-1]:.3g}",
                     f"{ring['bytes_per_controller'] / 1e6:.1f}",
                     " / ".join(f"{b:.3g}" for b in tree["bits_per_level"]),
                     f"{tree['bytes_per_parent_link'] / 1e6:.1f}"])
    return _table(["scheme", f"ring N={ring_n}: reduce-scatter bits/coord per step",
                   "all-gather bits/coord", "MB sent per controller",
                   f"tree fan-in {tree_at[0]}, N={tree_at[1]}: bits/coord per level (up)",
                   "MB through the busiest parent link"], rows)


def _training_table(tr):
    fp32 = tr["schemes"]["fp32"]["accuracy_mean"]
    return _table(["scheme", "lr (val.)", "test accuracy (%)", "vs FP32 (points)",
                   "cos to FP32 mean"],
                  [[r["label"], f"{r['lr']:g}", f"{r['accuracy_mean']:.2f} ± {r['accuracy_std']:.2f}",
                    f"{r['accuracy_mean'] - fp32:+.2f}", f"{r['cosine']:.3f}"]
                   for r in tr["schemes"].values()])


def _save(plt, fig, ax, path):
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _hop_total(row):
    return sum(row["hop_bits_top"])


def _bits_plot(plt, out, sweep, training):
    """Disagreement with the exact majority and training accuracy against
    bits per coordinate on the top hop, each scheme a line or a point."""
    fig, axes = plt.subplots(1, 3 if training else 2, figsize=(15 if training else 10, 4.2))
    for ax, source in zip(axes, ("real", "synthetic")):
        rows = [r for r in sweep[source] if (r["workers"], r["fanin"], r["hops"]) == (8, 8, 1)]
        for i, (scheme, rounding) in enumerate([(s, r) for s in ("dq-sign", "dq-grad")
                                                for r in hy.ROUNDINGS]):
            pts = sorted((_hop_total(r), 100 * r["disagreement_decided"]) for r in rows
                         if r["scheme"] == scheme and r["rounding"] == rounding)
            if pts:
                ax.plot(*zip(*pts), "o-" if rounding == "correlated" else "s--", ms=4,
                        color=f"C{i // 2}", alpha=1 if rounding == "correlated" else 0.6,
                        label=f"{_SCHEME_LABEL[scheme]}, {rounding}")
        for j, scheme in enumerate(("exact", "mom", "mom-ternary")):
            for r in rows:
                if r["scheme"] == scheme:
                    ax.plot(_hop_total(r), 100 * r["disagreement_decided"], "*", ms=11,
                            color=f"C{j + 2}", label=_SCHEME_LABEL[scheme])
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bits per coordinate on the hop (payload + scales)")
        ax.set_title(f"{source} gradients, W 8 x fan-in 8 (64 workers)", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("sign disagreement with the exact majority,\nnon-tie coordinates (%)")
    axes[0].legend(fontsize=6)
    if training:
        ax = axes[2]
        tr = training[0]
        for i, v in enumerate(("sign", "grad")):
            pts = sorted((int(k.split("-b")[1]) + hy.META_BITS, r["accuracy_mean"], r["accuracy_std"])
                         for k, r in tr["schemes"].items() if k.startswith(f"dq-{v}-b"))
            if pts:
                x, y, e = zip(*pts)
                ax.errorbar(x, y, yerr=e, fmt="o-", capsize=3, color=f"C{i}",
                            label=f"DynamiQ-style {'vote' if v == 'sign' else 'gradient'} sums, "
                                  "correlated")
        for j, (scheme, bits) in enumerate((("exact", hy.partial_bits("exact", 8)[0]),
                                            ("mom", 1.0), ("mom-ternary", 1.58))):
            r = tr["schemes"].get(scheme)
            if r:
                ax.errorbar(bits, r["accuracy_mean"], yerr=r["accuracy_std"], fmt="*", ms=11,
                            capsize=3, color=f"C{j + 2}", label=_SCHEME_LABEL[scheme])
        if "fp32" in tr["schemes"]:
            ax.axhline(tr["schemes"]["fp32"]["accuracy_mean"], color="k", lw=0.8, ls=":",
                       label="FP32 (32 bits)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bits per coordinate on the hop (payload + scales)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"training, {tr['task']}, 8 x 8 workers, {tr['batch']} examples a worker",
                     fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    path = out / "hierarchy_bits.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _sweep_table(rows):
    return _table(["hierarchy", "source", "scheme", "rounding", "b", "bits/coord on the top hop",
                   "disagree (no tie)", "vs sign of mean", "cos to mean"],
                  [[f"W {r['workers']} x {r['fanin']}^{r['hops']}", src, _SCHEME_LABEL[r["scheme"]],
                    r["rounding"] or "", r["bits"] or "", f"{_hop_total(r):.2f}",
                    f"{100 * r['disagreement_decided']:.2f}%",
                    f"{100 * r['disagreement_mean_sign']:.2f}%", f"{r['cosine']:.3f}"]
                   for src, rs in rows.items() for r in rs])


def _plots(out, result):
    import matplotlib  # deferred: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: matplotlib
    paths = []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, source in zip(axes, ("real", "synthetic")):
        rows = [r for r in result["study"][source] if r["workers"] == 8]
        keys = [k for k in dict.fromkeys((r["scheme"], r["bits"]) for r in rows)
                if k[0] != "exact"]
        for color, key in enumerate(keys):
            for fanin, marker in zip(sorted({r["fanin"] for r in rows}), "os^"):
                pts = sorted((r["total"], 100 * r["disagreement_decided"]) for r in rows
                             if (r["scheme"], r["bits"]) == key and r["fanin"] == fanin)
                if pts:
                    ax.plot(*zip(*pts), marker=marker, ms=4, color=f"C{color}",
                            label=_scheme(dict(scheme=key[0], bits=key[1]))
                            if fanin == rows[0]["fanin"] else None)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("workers K (W 8; fan-in 4 o, 8 s, 16 ^; 1-3 hops along a line)")
        ax.set_title(f"{source} gradients")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("sign disagreement with the exact majority,\nnon-tie coordinates (%)")
    paths.append(_save(plt, fig, axes[0], out / "hierarchy_disagreement.png"))

    t = result["timing"]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for s in dict.fromkeys(r["scheme"] for r in t["ring"]):
        pts = [(r["controllers"], 1e3 * r["seconds"]) for r in t["ring"] if r["scheme"] == s]
        ax.plot(*zip(*pts), "o-", ms=3, label=_timed(s))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("controllers N in the ring (W 8 workers each)")
    ax.set_ylabel(f"ring All-Reduce time of {t['n']:.2g} coordinates (ms)")
    ax.set_ylim(top=12 * max(r["seconds"] for r in t["ring"]) * 1e3)    # room for the legend
    paths.append(_save(plt, fig, ax, out / "hierarchy_timing.png"))

    sweep = result.get("sweep")
    if sweep:
        paths.append(_bits_plot(plt, out, sweep, result.get("training")))

    settings = result.get("training")
    if settings:
        fig, axes = plt.subplots(1, len(settings), figsize=(5.5 * len(settings), 4.2),
                                 squeeze=False)
        for ax, tr in zip(axes[0], settings):
            for s, r in tr["schemes"].items():
                steps = [p["step"] for p in r["curves"][0]]
                acc = np.array([[100 * p["test"] for p in c] for c in r["curves"]])
                ax.plot(steps, acc.mean(axis=0), "-", label=f"{r['label']} (lr {r['lr']:g})")
            ax.set_xlabel("step")
            ax.set_title(f"{tr['task']}, 8 x 8 workers, {tr['batch']} examples a worker")
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel("test accuracy (%), mean over seeds")
        paths.append(_save(plt, fig, axes[0][-1], out / "hierarchy_training.png"))
    return paths


def _markdown(r):
    lines = ["# Multi-hop aggregation: exact counts, majority of majorities, DynamiQ-style "
             "partial sums", "",
             f"{'Quick smoke run (not results). ' if r['quick'] else ''}"
             f"{'REDUCED training: ' + '; '.join(r['reduced']) + '. ' if r.get('reduced') else ''}"
             f"Generated by `make hierarchy` in {r['wall_seconds']:.0f} s "
             "(python -m neuron_fabric.experiments.train.hierarchy_report). "
             "Method and reading: docs/hierarchy.md.", "",
             "## Which hierarchies the exact counts fit", "",
             "Exact count widths per hop (hop 0: a worker's sign), whether every forwarded count "
             "fits b = 4 / b = 8 bits, and which contract operand carries each hop (a 32-bit "
             "count lane holds fan-in x b bits; COUNTS4 totals up to 120, COUNTS8 up to 1020).",
             ""]
    lines += _hardware_table(r["hardware"])
    s = r["setup"]
    lines += ["", "## Study: real gradients", "",
              f"The harness's CNN on `{TASK}` after a {s['real_steps']}-step FP32 run "
              f"(W 8, validation accuracy {100 * s['real_val']:.1f}%); worker k's gradient on "
              f"{REAL_BATCH} training examples at those parameters; the first K of "
              f"{s['real_pool']} workers; n = {s['real_n']} coordinates (both groups). "
              f"{100 * s['real_zero']:.1f}% of the workers' gradient entries are exactly 0 "
              "(ReLU units and border pixels that two examples leave untouched); a 0 votes "
              "negative, as the sign lines pack it (> 0), which is why the majority sign "
              "and the sign of the mean disagree so often here. "
              "Ties: the exact vote is 0 when exactly half the workers are positive; "
              "'disagree (all)' counts a coordinate whose scheme sign differs (-1/0/+1 "
              "as values), 'no tie' the same over coordinates where the exact vote is not 0. "
              "Bits per coordinate per hop: payload+metadata, upward only.", ""]
    lines += _study_table(r["study"]["real"])
    lines += ["", "## Study: synthetic correlated Gaussian gradients", "",
              f"Synthetic, not from training: `synthetic_gradients(K, n, rho={SYNTH_RHO})`: "
              "a shared mean per coordinate (correlation rho between two workers), "
              f"log-normal scale per group of {hy.GROUP}; n = 2^24 / K within {SYNTH_N}.", ""]
    lines += _study_table(r["study"]["synthetic"])
    ring, tree, traffic = _timing_tables(r["timing"])
    t = r["timing"]
    lines += ["", "## Timing: All-Reduce among N controllers", "",
              f"{t['n']:.3g} coordinates, W {t['workers']} workers per controller, "
              "models/commtime.py's link (50 GB/s, 5 us per step); "
              "models/multihop.py. Ring: reduce-scatter with partial results that widen "
              "(exact) or stay b bits + metadata (DynamiQ-style), then all-gather of the "
              "result. Tree: whole messages stored and forwarded, no pipelining.", ""]
    lines += ring + [""] + tree + ["", "Traffic, bits per coordinate per step (payload + "
                                   "scale metadata, DynamiQ's accounting):", ""] + traffic
    if r.get("sweep"):
        lines += ["", "## Equal bits: DynamiQ-style sums at b = 1, 2, 3, 4, 8", "",
                  "Each hop's partial sums re-quantized to b bits (plus the 8-bit group and "
                  "16-bit super-group scales), with independent or the seed's correlated "
                  "rounding (`host/hierarchy.py`), on vote counts and on gradients, beside "
                  "exact counts (their width grows a hop) and majority of majorities "
                  "(1 or 1.58 bits). Plot: `hierarchy_bits.png`.", ""]
        lines += _sweep_table(r["sweep"])
    for tr in r.get("training") or []:
        lines += ["", f"## Training at 64 virtual workers (8 controllers x 8 workers), "
                  f"{tr['batch']} examples a worker", "",
                  f"`{tr['task']}`, {tr['steps']} steps, {tr['batch']} examples per worker and "
                  f"step ({64 * tr['batch']} a step), seeds {tr['seeds']}, test accuracy "
                  "mean ± std (ddof 1); " +
                  ("rates: the second of each grid, not selected. "
                   if any("no learning-rate" in x for x in r.get("reduced", ()))
                   else "rates chosen on the validation split (seed 0). ") +
                  "Cosine: the direction against the FP32 mean, 20 steps from 30% of the run.", ""]
        lines += _training_table(tr)
        lines += ["", "Rates tried (validation accuracy, seed 0):", ""]
        lines += _table(["scheme", "lr", "val (%)"],
                        [[x["scheme"], f"{x['lr']:g}", f"{100 * x['val']:.2f}"]
                         for x in tr["trials"]])
    lines += ["", "Plots: " + ", ".join(f"`{p}`" for p in r["plots"]), ""]
    return "\n".join(lines)


def run_all(out, jobs=2, quick=False, train=True, seeds=None, select=True, batches=None):
    """Study, timing and training; write the report into ``out``; return the paths."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    configs = ((8, 4, 1), (8, 8, 1), (8, 4, 2)) if quick else CONFIGS
    pool_size = 64 if quick else REAL_POOL
    real_steps = 3 if quick else REAL_STEPS
    _say(f"real gradients: {real_steps}-step FP32 harness run, {pool_size} workers")
    pool, real_val = real_pool(pool_size, real_steps)
    result = dict(quick=quick, study=study(configs, pool, synth_cap=512 if quick else None),
                  sweep=bit_sweep(pool, SWEEP_CONFIGS[:1] if quick else SWEEP_CONFIGS,
                                  512 if quick else 4096),
                  hardware={f"{w}-{f}-{h}": _hardware(hy.MultiHopTree(w, f, h))
                            for w, f, h in configs})
    _say("timing")
    result["timing"] = timing(rings=(2, 4, 8), trees=((4, 16), (8, 8))) if quick else timing()
    if train:
        settings = tuple(x for x in SETTINGS if batches is None or x[0] in batches)
        result["training"] = train_all(jobs, quick, seeds, select, settings)
        result["reduced"] = [what for what, on in (
            (f"seeds {list(seeds or ())}", bool(seeds)),
            ("no learning-rate selection (the second rate of each grid)", not select),
            (f"examples per worker {sorted(batches or ())} only", batches is not None)) if on]
    result["setup"] = dict(real_steps=real_steps, real_val=real_val, real_pool=pool_size,
                           real_n=int(pool.shape[1]), real_zero=float(np.mean(pool == 0)),
                           synth_rho=SYNTH_RHO, group=hy.GROUP,
                           supergroup=hy.SUPERGROUP, meta_bits=hy.META_BITS)
    result["wall_seconds"] = time.perf_counter() - start
    result["plots"] = [p.name for p in _plots(out, result)]
    paths = [out / "hierarchy.json", out / "hierarchy.md"]
    paths[0].write_text(json.dumps(result, indent=1, default=str) + "\n")
    paths[1].write_text(_markdown(result))
    return paths + [out / p for p in result["plots"]]


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.experiments.train.hierarchy_report",
                        description="Multi-hop comparison study, training at 64 workers, "
                                    "multi-hop timing.")
    ap.add_argument("--out", default="build/reports", help="report folder (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=2, help="training processes (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="seconds-long smoke run of the pipeline")
    ap.add_argument("--no-train", action="store_true", help="study and timing only")
    ap.add_argument("--seeds", type=int, nargs="+", help="training seeds (default 0 1 2)")
    ap.add_argument("--no-select", action="store_true",
                    help="no learning-rate selection: the second rate of each grid (reduced)")
    ap.add_argument("--batch", type=int, nargs="+", choices=[b for b, _ in SETTINGS],
                    help="train only these examples-per-worker settings")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, not {args.jobs}")
    for path in run_all(args.out, args.jobs, args.quick, train=not args.no_train,
                        seeds=args.seeds, select=not args.no_select, batches=args.batch):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
