"""``make hierarchy``: the multi-hop comparison study, training at 64 virtual
workers and the multi-hop timing, written to ``hierarchy.md``,
``hierarchy.json`` and ``hierarchy_*.png``.

    python -m neuron_fabric.experiments.hierarchy.report [--out build/reports] [--jobs 2] [--quick]

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
4. *Training* (:mod:`.training`), for 2 and 16 examples per worker
   (:data:`SETTINGS`): learning rates on the validation split (seed 0),
   then seeds 0-2 at the chosen rate (seed 0's run is the tuning run
   itself: runs are deterministic).  The 2-a-worker setting adds the
   equal-bits sweep (:data:`.training.SWEEP_SCHEMES`, correlated
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

The parts, beside this module: :mod:`.study` (the study, the
equal-bits sweep, the timing), :mod:`.runs` (the training),
:mod:`.tables` (``hierarchy.md``) and :mod:`.plots`;
here, :func:`run_all` and the command line.
"""

import json
import pathlib
import time

import numpy as np

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.experiments.hierarchy.plots import write_plots
from neuron_fabric.experiments.hierarchy.runs import SETTINGS, train_all
from neuron_fabric.experiments.hierarchy.study import (CONFIGS, REAL_POOL, REAL_STEPS,
                                                       SWEEP_CONFIGS, SYNTH_RHO, bit_sweep,
                                                       hardware, real_pool, say, study, timing)
from neuron_fabric.experiments.hierarchy.tables import markdown
from neuron_fabric.host import hierarchy as hy

__all__ = ["CONFIGS", "REAL_POOL", "study", "timing", "train_all", "run_all", "main"]


def run_all(out, jobs=2, quick=False, train=True, seeds=None, select=True, batches=None):
    """Study, timing and training; write the report into ``out``; return the paths."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    configs = ((8, 4, 1), (8, 8, 1), (8, 4, 2)) if quick else CONFIGS
    pool_size = 64 if quick else REAL_POOL
    real_steps = 3 if quick else REAL_STEPS
    say(f"real gradients: {real_steps}-step FP32 harness run, {pool_size} workers")
    pool, real_val = real_pool(pool_size, real_steps)
    result = dict(quick=quick, study=study(configs, pool, synth_cap=512 if quick else None),
                  sweep=bit_sweep(pool, SWEEP_CONFIGS[:1] if quick else SWEEP_CONFIGS,
                                  512 if quick else 4096),
                  hardware={f"{w}-{f}-{h}": hardware(hy.MultiHopTree(w, f, h))
                            for w, f, h in configs})
    say("timing")
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
    result["plots"] = [p.name for p in write_plots(out, result)]
    paths = [out / "hierarchy.json", out / "hierarchy.md"]
    paths[0].write_text(json.dumps(result, indent=1, default=str) + "\n")
    paths[1].write_text(markdown(result))
    return paths + [out / p for p in result["plots"]]


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.experiments.hierarchy.report",
                        description="Multi-hop comparison study, training at 64 workers, "
                                    "multi-hop timing.")
    ap.add_argument("--out", default="build/reports", help="report folder (default %(default)s)")
    ap.add_jobs(what="training processes")
    ap.add_argument("--quick", action="store_true", help="seconds-long smoke run of the pipeline")
    ap.add_argument("--no-train", action="store_true", help="study and timing only")
    ap.add_argument("--seeds", type=int, nargs="+", help="training seeds (default 0 1 2)")
    ap.add_argument("--no-select", action="store_true",
                    help="no learning-rate selection: the second rate of each grid (reduced)")
    ap.add_argument("--batch", type=int, nargs="+", choices=[b for b, _ in SETTINGS],
                    help="train only these examples-per-worker settings")
    args = ap.parse_args(argv)
    for path in run_all(args.out, args.jobs, args.quick, train=not args.no_train,
                        seeds=args.seeds, select=not args.no_select, batches=args.batch):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
