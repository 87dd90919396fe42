"""The pilots' command line (``python -m neuron_fabric.experiments.pilots``,
``make pilots``): every pilot, then ``pilots.md``, ``pilots.json`` and the
plots."""

import json
import pathlib
import time

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.experiments.pilots.markdown import report
from neuron_fabric.experiments.pilots.plots import plot_ladder_and_late, plot_recovery
from neuron_fabric.experiments.pilots.runs import run_pilots
from neuron_fabric.experiments import single_thread_env

__all__ = ["main"]


def _parser():
    ap = ArgumentParser(prog="python -m neuron_fabric.experiments.pilots",
                        description="The control-plane pilots: pilots.md, pilots.json, plots.")
    ap.add_argument("--out", default="build/reports", help="output folder")
    ap.add_argument("--quick", action="store_true", help="one seed, short runs (smoke test)")
    ap.add_jobs()
    return ap


@guarded
def main(argv=None):
    ap = _parser()
    args = ap.parse_args(argv)
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
