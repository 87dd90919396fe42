"""``make ddp``: the training script under torchrun for every hook and process
count -> ``build/reports/ddp.{md,json}``, ``ddp.png`` (the hooks' speed is
``make race``'s: :mod:`.race`).

    python -m neuron_fabric.experiments.ddp.report [--quick] [--out build/reports]

Each run is ``torchrun --nproc-per-node N -m neuron_fabric.experiments.ddp.train``
on 127.0.0.1 (``GLOO_SOCKET_IFNAME=lo``), bounded by a timeout.  The quick
form (smoke test) runs 2 processes, 30 steps.
"""

import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.host.ddp.launch import child_env
from neuron_fabric.experiments.ddp.tables import LABELS, by_kind, event_lines, speed_lines, table
from neuron_fabric.experiments.ddp.train import HOOKS, summary

__all__ = ["run_torchrun", "main"]

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torchrun(nproc, argv, timeout_s=900):
    """One torchrun job of ``nproc`` processes; rank 0's result (dict)."""
    with tempfile.TemporaryDirectory(prefix="nf-ddp-") as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
               "--master-addr", "127.0.0.1", "--master-port", str(_free_port()),
               "-m", "neuron_fabric.experiments.ddp.train", *argv, "--out", out]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, env=child_env(), capture_output=True, text=True,
                              timeout=timeout_s)
        if proc.returncode or not os.path.exists(out):
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                               f"{proc.stderr[-3000:]}")
        with open(out) as f:
            result = json.load(f)
        result["wall_s"] = time.monotonic() - t0
        return result


def _runs(quick):
    procs = (2,) if quick else (2, 3, 4, 8)
    steps = ["--steps", "30"] if quick else []
    runs = []
    for n in procs:
        for hook in HOOKS:
            extra = ["--warmup", "20"] if hook == "split" else []
            if quick and hook == "split":
                extra = ["--warmup", "5"]
            runs.append(dict(kind="train", procs=n, hook=hook,
                             argv=["--hook", hook, "--task", "digits", *steps, *extra]))
        # the hook's defaults in an FP32 script: the FP32 optimiser and rate
        runs.append(dict(kind="train", procs=n, hook="drop-in",
                         argv=["--hook", "gbinary", "--drop-in", "--task", "digits", *steps]))
    return runs


def _row(run, result):
    s = summary(result)
    n = result["parameters"]
    return dict(kind=run["kind"], procs=run["procs"], hook=run["hook"], label=LABELS[run["hook"]],
                test=result["test"], val=result["val"], parameters=n,
                step_ms=1e3 * s["step_s"], hook_ms=1e3 * s["hook_s"],
                hook_cpu_ms=1e3 * s.get("hook_cpu_s", float("nan")),
                gloo_bytes=s["gloo_bytes"], pool_write=s["pool_write"], pool_read=s["pool_read"],
                fp32_pool_bytes=8 * n, low_share=s["low_share"],
                events=result.get("events", []), pool=result.get("pool"),
                workers=result.get("workers"), wall_s=result["wall_s"],
                steps=result["steps"])


def report(rows, bench, out, quick):
    out.mkdir(parents=True, exist_ok=True)
    train, speed, base = by_kind(rows)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    md = ["# NEURON-Fabric in PyTorch DDP", "",
          "`torchrun --nproc-per-node N -m neuron_fabric.experiments.ddp.train --hook H` on the easy "
          "task (digits, the harness's CNN and initial weights, 16 examples per process and "
          f"step{', 30 steps (quick form)' if quick else ', 300 steps'}, seed 0), gloo on "
          "127.0.0.1, one thread per process, all processes on this machine's 2 cores "
          f"(load average {load:.1f} at the end).", "",
          "Time per step: forward, backward (with the hook) and the optimiser step, mean over "
          "the steps after the first 5; the hook's time, wall and (in brackets) its thread's "
          "CPU time: the rest of the wall time is waiting for the other ranks (with N "
          "processes on 2 shared cores, mostly for a core).  Gloo bytes: what each process handed to its "
          "sockets in a step (`/proc/self/io` wchar; the shared-memory pool moves its "
          "segments through memory, not gloo).  Pool bytes: what a CXL pool would move for "
          "the rank: its 1-bit segments written, the W-bit response lanes read.", "",
          *table(train, base, os.cpu_count()), ""]
    md += [*event_lines(train), "## Pack and decode", "", *speed_lines(speed, bench), ""]
    (out / "ddp.md").write_text("\n".join(md))
    (out / "ddp.json").write_text(json.dumps(dict(rows=rows, bench=bench, quick=quick,
                                                  load_average=load, cpus=os.cpu_count()),
                                             indent=1))
    _plot(train, out / "ddp.png")


def _plot(rows, path):
    import matplotlib  # deferred: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: matplotlib
    hooks = [h for h in (*HOOKS, "drop-in") if any(r["hook"] == h for r in rows)]
    procs = sorted({r["procs"] for r in rows})
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    width = 0.8 / len(procs)
    for i, n in enumerate(procs):
        get = lambda k: [next((r[k] for r in rows if r["hook"] == h and r["procs"] == n), 0)
                         for h in hooks]
        x = np.arange(len(hooks)) + i * width
        axes[0].bar(x, [100 * v for v in get("test")], width, label=f"{n} processes")
        axes[1].bar(x, get("step_ms"), width, label=f"{n} processes")
        axes[2].bar(x, [max(v, 1) for v in get("gloo_bytes")], width, label=f"{n} processes")
    for ax, title in zip(axes, ("test accuracy (%)", "ms per step", "gloo bytes per step "
                                                                     "and rank (log)")):
        ax.set_xticks(np.arange(len(hooks)) + width * (len(procs) - 1) / 2)
        ax.set_xticklabels(hooks, rotation=30)
        ax.set_title(title)
    axes[0].set_ylim(80, 100)
    axes[2].set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.experiments.ddp.report")
    ap.add_argument("--quick", action="store_true", help="2 processes, 30 steps (smoke test)")
    ap.add_argument("--out", default="build/reports")
    ap.add_argument("--timeout", type=float, default=900.0, help="per torchrun job, s")
    a = ap.parse_args(argv)
    out = pathlib.Path(a.out) / ("quick" if a.quick else "")
    rows = []
    for run in _runs(a.quick):
        t0 = time.monotonic()
        result = run_torchrun(run["procs"], run["argv"], a.timeout)
        rows.append(_row(run, result))
        print(f"{run['kind']} {run['hook']} x{run['procs']}: test {100 * result['test']:.2f} %, "
              f"{rows[-1]['step_ms']:.2f} ms a step ({time.monotonic() - t0:.0f} s)", flush=True)
    bench_path = pathlib.Path(a.out) / "ddp_bench.json"
    bench = json.loads(bench_path.read_text()) if bench_path.exists() else None
    report(rows, bench, out, a.quick)
    print(f"wrote {out / 'ddp.md'}")


if __name__ == "__main__":
    main()
