"""What the ranks of the software vote's tests run (loaded by file path in each child)."""

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from neuron_fabric.host.ddp.software_vote import VoteState, vote_hook

#: Parameter shapes of the DDP case (a matrix and a bias, 1,177 elements:
#: not a multiple of 64, so the last word is padded).
SHAPES = ((37, 29), (104,))


def gradient(rank, n, seed=0):
    """Rank ``rank``'s gradient: normal values with about 10 % exact zeros."""
    rng = np.random.default_rng([seed, rank, n])
    g = rng.standard_normal(n).astype(np.float32)
    g[rng.random(n) < 0.1] = 0.0
    return g


class Given(torch.nn.Module):
    """Parameters whose gradients are what ``forward`` is handed."""

    def __init__(self):
        super().__init__()
        self.ps = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(s)) for s in SHAPES])

    def forward(self, grads):
        return sum((p * g).sum() for p, g in zip(self.ps, grads))


def votes(rank, world, store, sizes):
    """The vote of :func:`gradient` at each size called directly, then
    through DDP (:data:`SHAPES`), with the bytes each sent."""
    state = VoteState()
    direct = []
    for n in sizes:
        before = state.sent
        d = state.vote(torch.from_numpy(gradient(rank, n)))
        direct.append(dict(n=n, vote=d.numpy().copy(), sent=state.sent - before))
    model = Given()
    ddp = DDP(model)
    ddp.register_comm_hook(VoteState(), vote_hook)
    total = sum(int(np.prod(s)) for s in SHAPES)
    flat = torch.from_numpy(gradient(rank, total))
    grads, at = [], 0
    for s in SHAPES:
        k = int(np.prod(s))
        grads.append(flat[at:at + k].reshape(s))
        at += k
    ddp(grads).backward()
    hooked = np.concatenate([p.grad.numpy().reshape(-1) for p in model.ps])
    return dict(direct=direct, hooked=hooked, hooked_n=total)
