"""Data-parallel training with torch.distributed: each process is one worker.

    torchrun --nproc-per-node 4 -m neuron_fabric.experiments.ddp.train --hook gbinary --out run.json

The harness's task and model (:mod:`neuron_fabric.experiments.train`): the
``digits`` or ``pairs`` task, the small CNN (:mod:`.model`, the harness's
initial weights), ``batch`` examples per process and step, the harness's
batch order (rank ``k`` takes the ``k``-th slice of the global batch), its
cosine learning-rate decay and SGD with momentum 0.9 applied as the
harness applies it (each group's direction scaled by its rate, then the
optimiser at rate 1).  The NEURON-Fabric hooks take the paper's raw sign
step (``FabricConfig(scale=False)``, a direction in [-1, 1] at its own
rate ``--lr-low``) unless ``--drop-in`` asks for the hook's default: a
direction at the gradient's scale and the FP32 rate for every step, what a
plain FP32 script gets when it only registers the hook.  The gradient of
each process goes through the chosen communication hook:

=============  ==================================================================
``--hook``     aggregation
=============  ==================================================================
``fp32``       ``allreduce_hook`` (PyTorch's default)
``powersgd``   PyTorch's PowerSGD hook (rank 1, error feedback, 10 FP32 steps)
``gbinary``    NEURON-Fabric, G-Binary (SIGN) on both groups
``gternary``   NEURON-Fabric, G-Ternary (2-of-3 PATTERN gate, SIGN) on both groups
``split``      NEURON-Fabric, G-Binary backbone + FP32 head, after ``--warmup`` FP32 steps
``control``    NEURON-Fabric with the control plane live (Predictor, Commander,
               Supervisor on rank 0; their decisions on every rank)
=============  ==================================================================

Rank 0 writes the result (``--out``, JSON): test and validation accuracy,
time per step, the hook's time per step, bytes gloo sent per step and rank
(measured: ``/proc/self/io`` ``wchar``, the bytes the process handed to
write calls, i.e. its sockets: nothing else writes during a step), the
bytes a pool would move, and the hook's events.  Seeds and thread counts
are fixed (one thread per process), so a rerun gives the same accuracies.
"""

import gc
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel as DDP

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.host.control import FP32, CommanderConfig, SupervisorConfig
from neuron_fabric.contract.facts import Layout
from neuron_fabric.experiments.train.harness import TASK_DEFAULTS, batch_indices, lr_factor
from neuron_fabric.experiments.train.policies import TUNED_LR
from neuron_fabric.experiments.train.tasks import load_task
from neuron_fabric.host.ddp.control import RankControl
from neuron_fabric.host.ddp.hook import FabricConfig, FabricState, fabric_hook
from neuron_fabric.host.ddp.launch import init_from_env
from neuron_fabric.experiments.ddp.model import CNN, groups

__all__ = ["HOOKS", "run", "main"]

HOOKS = ("fp32", "powersgd", "gbinary", "gternary", "split", "control")

#: The control plane's Commander for these runs: the pilots' calibration
#: (cos_min 0.1, :data:`neuron_fabric.experiments.pilots.PILOT_COMMANDER`).
COMMANDER = CommanderConfig(cos_min={"gbinary": 0.1, "gternary": 0.1})


def _wchar():
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _accuracy(model, x, y):
    with torch.no_grad():
        return float((model(torch.from_numpy(x)).argmax(1).numpy() == y).mean())


def _lr(task, hook, lr_fp32, lr_low, drop_in=False):
    """The rate of FP32 steps and of low-bit steps: with ``drop_in`` the hook
    returns directions at the gradient's scale and every step takes the
    FP32 rate; otherwise the paper's raw sign step takes its own rate."""
    lr_fp32 = lr_fp32 or TUNED_LR[task]["fp32"]
    if drop_in:
        lr_low = lr_fp32
    elif lr_low is None:
        lr_low = TUNED_LR[task]["gternary" if hook == "gternary" else "gbinary"]
    return {FP32: lr_fp32, "low": lr_low}


def _register_hook(args, ddp, parts, store):
    """Register ``args.hook`` on ``ddp``; returns the NEURON-Fabric hook's
    state (None for PyTorch's own hooks)."""
    if args.hook == "fp32":
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
        return None
    if args.hook == "powersgd":
        psgd = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=1,
                                           start_powerSGD_iter=10, random_seed=args.seed)
        ddp.register_comm_hook(psgd, powerSGD_hook.powerSGD_hook)
        return None
    policies = {"gbinary": {"backbone": "gbinary", "head": "gbinary"},
                "gternary": {"backbone": "gternary", "head": "gternary"},
                "split": {"backbone": "gbinary", "head": FP32},
                "control": {"backbone": FP32, "head": FP32}}[args.hook]
    config = FabricConfig(ranks_per_controller=args.ranks_per_controller,
                          layout=Layout[args.layout.upper().replace("-", "_")],
                          pool=args.pool, warmup_steps=args.warmup,
                          timeout_s=args.timeout,
                          **({} if args.drop_in else dict(scale=False)))
    state = FabricState(parts, policies, config, store=store)
    if args.hook == "control":
        RankControl(state, COMMANDER, SupervisorConfig())
    ddp.register_comm_hook(state, fabric_hook)
    return state


def run(args, rank, world, store):
    """Train as ``args`` says (the parsed command line); every rank returns
    its result (rank 0's is the job's)."""
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    task = load_task(args.task, args.seed)
    steps = args.steps or TASK_DEFAULTS[args.task]["steps"]
    batch = args.batch
    model = CNN(args.seed, task.image_shape, task.classes, tuple(args.channels), args.hidden)
    ddp = DDP(model, bucket_cap_mb=args.bucket_mb)
    parts = groups(model)
    lrs = _lr(args.task, args.hook, args.lr_fp32, args.lr_low, args.drop_in)
    state = _register_hook(args, ddp, parts, store)
    opt = torch.optim.SGD(model.parameters(), lr=1.0, momentum=0.9)
    group_of = {id(p): g for g, ps in parts.items() for p in ps}
    order = batch_indices(len(task.y_train), world * batch, args.seed)
    x_all = torch.from_numpy(task.x_train)
    y_all = torch.from_numpy(task.y_train.astype(np.int64))
    rows, events_seen = [], 0
    for step in range(steps):
        idx = next(order)[rank * batch:(rank + 1) * batch]
        if state is not None:
            state.begin_step(step)
        modes = dict(state.modes) if state is not None else \
            {g: (FP32 if args.hook in ("fp32", "powersgd") else None) for g in parts}
        w0, t0 = _wchar(), time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(ddp(x_all[idx]), y_all[idx])
        loss.backward()
        t1 = time.perf_counter()
        factor = lr_factor(step, steps)
        with torch.no_grad():
            for p in model.parameters():
                g = group_of[id(p)]
                p.grad.mul_((lrs[FP32] if modes[g] == FP32 else lrs["low"]) * factor)
        opt.step()
        t2 = time.perf_counter()
        sent = _wchar() - w0
        if state is not None and state.control is not None:
            state.control.record(loss.item(), t1 - t0 - state.last_hook_s)
        row = dict(step=step, loss=loss.item(), step_s=t2 - t0, backward_s=t1 - t0,
                   gloo_bytes=sent, modes=modes)
        if state is not None:
            tr = state.last_traffic
            row.update(hook_s=state.last_hook_s, hook_cpu_s=state.last_hook_cpu_s,
                       pool_write=tr.pool_write,
                       pool_read=tr.pool_read, fp32_elements=tr.fp32_elements,
                       low_elements=tr.low_elements)
            for e in state.events[events_seen:]:
                if rank == 0 and args.verbose:
                    print(f"step {e.step}: {e.kind} {e.modes} {e.detail}", flush=True)
            events_seen = len(state.events)
        rows.append(row)
    result = dict(config=vars(args), world=world, steps=steps, rows=rows,
                  test=_accuracy(model, task.x_test, task.y_test),
                  val=_accuracy(model, task.x_val, task.y_val),
                  parameters=sum(p.numel() for p in model.parameters()),
                  group_sizes={g: sum(p.numel() for p in ps) for g, ps in parts.items()})
    if state is not None:
        result.update(events=[vars(e) for e in state.events], pool=state.pool_kind,
                      workers=state.workers, controllers=state.controllers)
        state.close()
    return result


def summary(result, skip=5):
    """Per-step means over the steps after the first ``skip`` (bucket rebuild,
    first calls): step time, hook time, gloo bytes, pool bytes."""
    rows = result["rows"][skip:] or result["rows"]
    mean = lambda k: float(np.mean([r.get(k, 0) for r in rows]))
    return dict(step_s=mean("step_s"), hook_s=mean("hook_s"), hook_cpu_s=mean("hook_cpu_s"),
                gloo_bytes=mean("gloo_bytes"),
                pool_bytes=mean("pool_write") + mean("pool_read"),
                pool_write=mean("pool_write"), pool_read=mean("pool_read"),
                low_share=float(np.mean([any(m not in (FP32, None) for m in r["modes"].values())
                                         for r in result["rows"]])))


def parser():
    ap = ArgumentParser(prog="python -m neuron_fabric.experiments.ddp.train",
                        description="Data-parallel training with a NEURON-Fabric DDP hook "
                                    "(start it with torchrun).")
    ap.add_argument("--hook", choices=HOOKS, default="gbinary")
    ap.add_argument("--task", choices=("digits", "pairs"), default="digits")
    ap.add_argument("--steps", type=int, default=None, help="default: the harness's")
    ap.add_argument("--batch", type=int, default=16, help="examples per process and step")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr-fp32", type=float, default=None, help="default: the harness's tuned rate")
    ap.add_argument("--lr-low", type=float, default=None, help="default: the harness's tuned rate")
    ap.add_argument("--warmup", type=int, default=0, help="FP32 steps before the low-bit modes")
    ap.add_argument("--drop-in", action="store_true",
                    help="the hook's default (FabricConfig(scale=True)): directions at the "
                         "gradient's scale and the FP32 rate for every step, as a plain FP32 "
                         "script would run; without it, the paper's raw sign step "
                         "(scale=False) at its own --lr-low")
    ap.add_argument("--channels", type=int, nargs=2, default=(8, 16))
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--bucket-mb", type=float, default=25.0)
    ap.add_argument("--ranks-per-controller", type=int, default=None)
    ap.add_argument("--layout", choices=("worker-major", "element-major"), default="worker-major")
    ap.add_argument("--pool", choices=("auto", "shm", "gather"), default="auto")
    ap.add_argument("--timeout", type=float, default=60.0, help="process group timeout, s")
    ap.add_argument("--out", default=None, help="rank 0 writes the result here (JSON)")
    ap.add_argument("--verbose", action="store_true", help="rank 0 prints the hook's events")
    return ap


@guarded
def main(argv=None):
    args = parser().parse_args(argv)
    rank, world, store = init_from_env(args.timeout)
    try:
        result = run(args, rank, world, store)
        gc.collect()        # pending gloo work freed while Python is whole
        dist.barrier()      # every rank done before any tears its process group down
    finally:
        dist.destroy_process_group()
    if rank == 0:
        s = summary(result)
        print(f"{args.hook}: {world} processes, test accuracy {100 * result['test']:.2f} %, "
              f"{1e3 * s['step_s']:.2f} ms a step, {s['gloo_bytes'] / 1e3:.1f} kB gloo a step",
              flush=True)
        if args.out:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out, "w") as f:
                json.dump(result, f)


def ddp_job(rank, world, store, argv):
    """:func:`run` as a :func:`.launch.spawn` target (tests)."""
    return run(parser().parse_args(argv), rank, world, store)


if __name__ == "__main__":
    main()
