"""signSGD with majority vote in software: the peer that needs no device.

Every rank packs its gradient's signs as the contract packs a worker's
(section 2: bit 1 = positive, 0 = zero or negative; LSB first, the bytes of
:func:`~neuron_fabric.host.ddp.pack.pack_signs`), all-gathers the packed
bytes over ``torch.distributed`` and takes the vote itself: with ``c`` the
ranks whose bit is 1, the direction is ``sgn(2c - R)`` (a tie is 0), what a
controller's G-Binary SIGN read returns for the same ``R`` workers.

The count never leaves the packed form: the ``R`` rows of 64-bit words go
through a bit-sliced counter (``ceil(log2(R + 1))`` bit planes, a ripple of
half adders per row) and two bit-sliced comparisons give the positive and
the negative votes, which are unpacked once.  Each rank sends its
``n / 8`` bytes to the ``R - 1`` others and receives theirs.

    ddp.register_comm_hook(VoteState(), vote_hook)
"""

import numpy as np
import torch
import torch.distributed as dist

from neuron_fabric.host.ddp.pack import pack_signs

__all__ = ["VoteState", "vote_hook", "majority"]


def _count_planes(words):
    """Bit planes (LSB first) of the per-bit count of ones over the rows of
    ``words`` (``(R, m)`` uint64)."""
    planes = []
    for row in words:
        carry = row
        for b in range(len(planes)):
            planes[b], carry = planes[b] ^ carry, planes[b] & carry
        if carry.any():
            planes.append(carry.copy())
    return planes


def _greater(planes, k, m):
    """Bit mask of the bits whose count (``planes``) exceeds the constant ``k``."""
    gt = np.zeros(m, np.uint64)
    eq = np.full(m, np.uint64(0xFFFF_FFFF_FFFF_FFFF))
    if k >> len(planes):
        return gt
    for b in reversed(range(len(planes))):
        if (k >> b) & 1:
            eq &= planes[b]
        else:
            gt |= eq & planes[b]
            eq &= ~planes[b]
    return gt


def majority(packed, n):
    """The vote of the rows of ``packed`` (``(R, B)`` uint8, one rank's
    packed signs a row, ``B`` a multiple of 8) on the first ``n`` elements:
    a float32 array of ``sgn(2c - R)``."""
    packed = np.ascontiguousarray(packed, dtype=np.uint8)
    r, nbytes = packed.shape
    if nbytes % 8 or n > 8 * nbytes:
        raise ValueError(f"rows of {nbytes} bytes (a multiple of 8) cannot hold {n} elements")
    words = packed.view(np.uint64)
    planes = _count_planes(words)
    m = words.shape[1]
    if not planes:
        planes = [np.zeros(m, np.uint64)]
    pos = _greater(planes, r // 2, m)                     # 2c > R
    neg = ~_greater(planes, (r + 1) // 2 - 1, m)          # 2c < R
    bits = lambda mask: np.unpackbits(mask.view(np.uint8), bitorder="little", count=n)
    return bits(pos).view(np.int8).astype(np.float32) - bits(neg).view(np.int8)


class VoteState:
    """The software vote's state on one rank.

    Parameters
    ----------
    process_group : ProcessGroup, optional
        The voting ranks (WORLD by default).

    Members
    -------
    sent, received : int
        Packed-sign bytes this rank sent to and received from the others
        over all calls (``(R - 1)`` times its ``n / 8`` bytes each way).
    """

    def __init__(self, process_group=None):
        if not dist.is_initialized():
            raise RuntimeError("VoteState needs torch.distributed to be initialised")
        self.group = process_group or dist.group.WORLD
        self.world = dist.get_world_size(self.group)
        self.sent = self.received = 0

    def vote(self, grad):
        """The majority vote of every rank's ``grad`` (1-D float tensor of the
        same size on each), a float32 tensor in {-1, 0, +1}."""
        n = grad.numel()
        mine = torch.from_numpy(pack_signs(grad.reshape(-1), max(64, -(-n // 64) * 64)))
        parts = torch.empty((self.world, mine.numel()), dtype=torch.uint8)
        dist.all_gather(list(parts.unbind(0)), mine, group=self.group)
        self.sent += (self.world - 1) * mine.numel()
        self.received += (self.world - 1) * mine.numel()
        return torch.from_numpy(majority(parts.numpy(), n))


def vote_hook(state, bucket):
    """The DDP communication hook: ``ddp.register_comm_hook(VoteState(), vote_hook)``.
    The bucket's gradient is replaced by the vote (a direction in
    {-1, 0, +1}: scale it by the learning rate as for G-Binary SIGN)."""
    buf = bucket.buffer()
    buf.copy_(state.vote(buf))
    fut = torch.futures.Future()
    fut.set_result(buf)
    return fut
