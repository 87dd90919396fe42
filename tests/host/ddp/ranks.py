"""What the ranks of the tests' jobs run (loaded by file path in each child)."""

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from neuron_fabric.host.ddp.hook import FabricConfig, FabricState, fabric_hook
from neuron_fabric.host.runtime import GroupPolicy

#: Parameter sizes of the test model, in ``model.parameters()`` order, and
#: each one's group: two backbone tensors around the head, so that DDP's
#: bucket (reverse order) holds two backbone pieces.
SIZES = (("backbone", 1000), ("head", 77), ("backbone", 300))


def gradient(rank, step, index, n, seed=0):
    """Rank ``rank``'s gradient of parameter ``index`` at ``step``: normal
    values with about 5 % exact zeros."""
    rng = np.random.default_rng([seed, rank, step, index])
    g = rng.standard_normal(n).astype(np.float32)
    g[rng.random(n) < 0.05] = 0.0
    return g


class Fixed(torch.nn.Module):
    """Parameters whose gradient is whatever ``forward`` is handed."""

    def __init__(self, sizes=SIZES):
        super().__init__()
        self.ps = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(n)) for _, n in sizes])

    def forward(self, grads):
        return sum((p * g).sum() for p, g in zip(self.ps, grads))


def _groups(model, sizes):
    out = {}
    for (name, _), p in zip(sizes, model.ps):
        out.setdefault(name, []).append(p)
    return out


def aggregate(rank, world, store, cases, steps=1, sizes=SIZES, seed=0):
    """For each case ``(policy fields, config fields)``: one DDP model with the
    hook, ``steps`` backward passes of :func:`gradient`; returns per case the
    parameters' ``.grad`` after each step (numpy) and the hook's traffic."""
    torch.manual_seed(0)
    out = []
    for policy, config in cases:
        model = Fixed(sizes)
        ddp = DDP(model)
        policy = GroupPolicy(**policy)
        state = FabricState(_groups(model, sizes), {g: policy for g, _ in sizes},
                            FabricConfig(**{"scale": False, **config}), store=store)
        order = []

        def hook(state, bucket):      # records DDP's order of the bucket's parameters
            index = {id(p): i for i, p in enumerate(model.ps)}
            order.append([index[id(p)] for p in bucket.parameters()])
            return fabric_hook(state, bucket)
        try:
            ddp.register_comm_hook(state, hook)
            per_step = []
            for step in range(steps):
                grads = [torch.from_numpy(gradient(rank, step, i, n, seed))
                         for i, (_, n) in enumerate(sizes)]
                ddp.zero_grad()
                ddp(grads).backward()
                per_step.append([p.grad.numpy().copy() for p in model.ps])
            out.append(dict(grads=per_step, order=order, traffic=vars(state.last_traffic),
                            pool=state.pool_kind, workers=state.workers,
                            events=[vars(e) for e in state.events]))
        finally:
            state.close()
    return out


def scenarios(rank, world, store, plan):
    """Run several scenarios in one job (each process imports torch once):
    ``plan`` is a list of ``(key, function name, kwargs)``; returns
    ``{key: result}``.  A scenario that raises ends the job."""
    out = {}
    for i, (key, name, kwargs) in enumerate(plan):
        out[key] = globals()[name](rank, world, store, **kwargs)
        if i + 1 < len(plan):
            dist.barrier()
    return out


def train(rank, world, store, argv):
    """The training script's run (``neuron_fabric.experiments.ddp.train``)."""
    from neuron_fabric.experiments.ddp.train import ddp_job
    result = ddp_job(rank, world, store, argv)
    return {k: v for k, v in result.items() if k != "rows"} | \
        dict(modes=[r["modes"] for r in result["rows"]])


def _fixed_model(sizes):
    model = Fixed(sizes)
    return model, DDP(model)


def _grads(rank, step, sizes, seed=0):
    return [torch.from_numpy(gradient(rank, step, i, n, seed)) for i, (_, n) in enumerate(sizes)]


def control(rank, world, store, steps=14, nan_at=6, sizes=SIZES):
    """The control plane live: admission after a 2-step warm-up, a non-finite
    loss at ``nan_at`` (the Supervisor's recovery), re-admission after the
    cooldown.  Returns per step the modes and the gradients, and the events."""
    model, ddp, state = _live(store, sizes)
    try:
        return _live_steps(rank, model, ddp, state, range(steps), nan_at, sizes)
    finally:
        state.close()


def _live(store, sizes):
    """A model, its DDP and a hook state with a live control plane."""
    from neuron_fabric.host.control import CommanderConfig, SupervisorConfig
    from neuron_fabric.host.ddp.control import RankControl
    model, ddp = _fixed_model(sizes)
    state = FabricState(_groups(model, sizes), {g: "fp32" for g, _ in sizes},
                        FabricConfig(scale=False), store=store)
    RankControl(state, CommanderConfig(warmup_steps=2, diag_window=2,
                                       cos_min={"gbinary": -1.0, "gternary": -1.0}),
                SupervisorConfig(min_samples=2, cooldown_steps=2))
    ddp.register_comm_hook(state, fabric_hook)
    return model, ddp, state


def _live_steps(rank, model, ddp, state, steps, nan_at, sizes, save_at=None):
    """The steps ``steps`` of the live scenario (the checkpoint's bytes
    taken before step ``save_at``)."""
    import io
    modes, grads, saved = [], [], None
    for step in steps:
        if step == save_at:
            buf = io.BytesIO()
            torch.save({"hook": state}, buf)
            saved = buf.getvalue()
        state.begin_step(step)
        modes.append(dict(state.modes))
        ddp.zero_grad()
        ddp(_grads(rank, step, sizes)).backward()
        grads.append([p.grad.numpy().copy() for p in model.ps])
        state.control.record(float("nan") if step == nan_at else 1.0, 0.01)
    return dict(modes=modes, grads=grads, events=[vars(e) for e in state.events],
                checkpoint=saved)


def fault(rank, world, store, kind, victim=1, at_step=3, steps=6, sizes=SIZES,
          packed_view=None):
    """G-Binary after a 2-step FP32 warm-up; rank ``victim``'s device fails at
    ``at_step``: ``kind`` "write" (its region CFG writes answer SLVERR, so
    the warm-up's end cannot be programmed: at_step must be the warm-up
    length) or "read" (its memory answers every read with an error);
    ``packed_view`` as the hook's option (True: the results read through
    packed views)."""
    model, ddp = _fixed_model(sizes)
    state = FabricState(_groups(model, sizes), {g: "gbinary" for g, _ in sizes},
                        FabricConfig(warmup_steps=at_step if kind == "write" else 2,
                                     scale=False, packed_view=packed_view),
                        store=store)
    try:
        ddp.register_comm_hook(state, fabric_hook)
        modes, grads = [], []
        for step in range(steps):
            if rank == victim and step == at_step - 1 and kind == "write":
                async def refuse(offset, value, strb=0xF):
                    return False
                state.replicas.port1.device.write = refuse
            if rank == victim and step == at_step and kind == "read":
                state.replicas.port1.device.faults.read_lines.update(range(0, 1 << 12))
            state.begin_step(step)
            modes.append(dict(state.modes))
            ddp.zero_grad()
            ddp(_grads(rank, step, sizes)).backward()
            grads.append([p.grad.numpy().copy() for p in model.ps])
        return dict(modes=modes, grads=grads, events=[vars(e) for e in state.events],
                    faulted=state.faulted)
    finally:
        state.close()


def stop(rank, world, store, victim, at_step=2, steps=4, hang_s=60.0, timeout_s=10.0,
         census_s=None, crash=True, sizes=SIZES):
    """G-Binary training in which rank ``victim`` stops before its backward
    pass of ``at_step`` (it waits, at most ``hang_s`` seconds, until every
    other rank has noticed, then exits, or returns when not ``crash``):
    every other rank must raise RankLostError naming it, after the process
    group's ``timeout_s`` and the census (``census_s``, the config's
    default when None)."""
    import os
    import time
    from neuron_fabric.host.ddp.hook import RankLostError
    import datetime
    group = dist.new_group(list(range(world)), timeout=datetime.timedelta(seconds=timeout_s))
    model = Fixed(sizes)
    ddp = DDP(model, process_group=group)
    census = {} if census_s is None else dict(census_s=census_s)
    state = FabricState(_groups(model, sizes), {g: "gbinary" for g, _ in sizes},
                        FabricConfig(timeout_s=timeout_s, **census), process_group=group,
                        store=store)
    ddp.register_comm_hook(state, fabric_hook)
    t0 = None
    try:
        for step in range(steps):
            if rank == victim and step == at_step:
                # Stopped: until every other rank has noticed (its census key),
                # and as long again as their census waits for this one.
                deadline = time.monotonic() + hang_s
                others = [f"census/{at_step}/{r}" for r in range(world) if r != victim]
                while time.monotonic() < deadline and not store.check(others):
                    time.sleep(0.2)
                time.sleep(state.config.census_s + 1.0)
                if crash:
                    os._exit(3)
                return dict(stopped=at_step)
            t0 = time.monotonic()
            ddp.zero_grad()
            ddp(_grads(rank, step, sizes)).backward()
    except RankLostError as err:
        return dict(error=str(err), missing=list(err.missing), after_s=time.monotonic() - t0)
    finally:
        state.close()
    return dict(error=None)


def checkpoint(rank, world, store, save_at=3, steps=6, sizes=SIZES):
    """G-Binary with error feedback after a 2-step warm-up: the hook's state
    saved with ``torch.save`` before step ``save_at``, and the run goes on
    to ``steps``; returns the checkpoint's bytes and the gradients of the
    steps from ``save_at`` on."""
    import io
    model, ddp = _fixed_model(sizes)
    state = FabricState(_groups(model, sizes), {g: "gbinary" for g, _ in sizes},
                        FabricConfig(warmup_steps=2, error_feedback=True, scale=False),
                        store=store)
    ddp.register_comm_hook(state, fabric_hook)
    grads, saved = [], None
    try:
        for step in range(steps):
            if step == save_at:
                buf = io.BytesIO()
                torch.save({"hook": state}, buf)
                saved = buf.getvalue()
            ddp.zero_grad()
            ddp(_grads(rank, step, sizes)).backward()
            if step >= save_at:
                grads.append([p.grad.numpy().copy() for p in model.ps])
        return dict(checkpoint=saved, grads=grads, events=[vars(e) for e in state.events])
    finally:
        state.close()


def resume(rank, world, store, checkpoints, save_at=3, steps=6, sizes=SIZES):
    """A fresh job: rank ``rank``'s checkpoint loaded (``torch.load``),
    attached to a new model's parameters and process group, and the steps
    from ``save_at`` on; returns their gradients."""
    import io
    state = torch.load(io.BytesIO(checkpoints[rank]), weights_only=False)["hook"]
    model, ddp = _fixed_model(sizes)
    state.attach(_groups(model, sizes), store=store)
    ddp.register_comm_hook(state, fabric_hook)
    grads = []
    try:
        for step in range(save_at, steps):
            ddp.zero_grad()
            ddp(_grads(rank, step, sizes)).backward()
            grads.append([p.grad.numpy().copy() for p in model.ps])
        return dict(grads=grads, step=state.step, modes=dict(state.modes),
                    events=[vars(e) for e in state.events])
    finally:
        state.close()


def live_checkpoint(rank, world, store, save_at=2, steps=14, nan_at=6, sizes=SIZES):
    """The live control plane's scenario, the hook's state (with the plane)
    saved before step ``save_at`` (before the admission decision)."""
    model, ddp, state = _live(store, sizes)
    try:
        return _live_steps(rank, model, ddp, state, range(steps), nan_at, sizes, save_at)
    finally:
        state.close()


def live_resume(rank, world, store, checkpoints, save_at=2, steps=14, nan_at=6, sizes=SIZES):
    """A fresh job resuming :func:`live_checkpoint` from its checkpoint."""
    import io
    state = torch.load(io.BytesIO(checkpoints[rank]), weights_only=False)["hook"]
    model, ddp = _fixed_model(sizes)
    state.attach(_groups(model, sizes), store=store)
    ddp.register_comm_hook(state, fabric_hook)
    try:
        return _live_steps(rank, model, ddp, state, range(save_at, steps), nan_at, sizes)
    finally:
        state.close()
