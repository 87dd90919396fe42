"""What the ranks of the tests' jobs run (loaded by file path in each child)."""

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from neuron_fabric.host.ddp.hook import FabricConfig, FabricState, fabric_hook
from neuron_fabric.host.facts import Layout
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
                            FabricConfig(**config), store=store)
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
    for key, name, kwargs in plan:
        out[key] = globals()[name](rank, world, store, **kwargs)
        dist.barrier()
    return out
