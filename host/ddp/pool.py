"""The shared CXL pool, emulated two ways behind one interface.

A pool holds the lines of one controller's memory that the ranks write and
read.  Each window is a run of lines; each line is cut into ``slots``
segments of ``S = LINE_BYTES / slots`` bytes, segment ``k`` owned by member
``k`` (contract section 5: worker-major sign lines, one segment per worker;
count lines, one segment per contributor).  A member writes only its own
segment of each line (what its MemWrPtl carries); after a barrier among
the members (the caller's), :meth:`read` returns whole lines.

* :class:`ShmPool`, ranks on one host: one ``multiprocessing.shared_memory``
  buffer per pool that every member writes its own segment into directly,
  as CXL.mem stores would.  The block has two copies of the address space
  used on alternate calls (:meth:`begin`), so a rank that runs ahead
  writes the copy nobody can still be reading: it passed the barrier of
  the previous call, which every member reached after its reads of the
  call before.
* :class:`GatherPool`, ranks on several hosts: the members all-gather their
  segments (``torch.distributed.all_gather`` in the members' group) and
  every rank assembles the lines itself.

Slots no member owns hold constant bytes (``fill``): 0 by default, and
the padding workers of a controller with fewer ranks than workers.

:class:`Pools` opens a rank's pools: its controller's pool of sign lines
and, with several controllers, the pool of the level-2 count lines.
"""

import secrets
import socket
from dataclasses import dataclass
from multiprocessing import resource_tracker, shared_memory

import numpy as np
import torch
import torch.distributed as dist

__all__ = ["Window", "ShmPool", "GatherPool", "Pools"]


@dataclass(frozen=True)
class Window:
    """``lines`` lines from byte ``offset`` of a pool (the device address)."""
    offset: int
    lines: int


class _Pool:
    def __init__(self, line_bytes, slots, fill=None):
        if line_bytes % slots:
            raise ValueError(f"{slots} slots do not divide a {line_bytes}-byte line")
        self.line_bytes = line_bytes
        self.slots = slots
        self.seg = line_bytes // slots
        self.fill = dict(fill or {})
        self.calls = 0

    def begin(self):
        """Start a call: every member calls it before its writes."""
        self.calls += 1

    def _segment(self, data, lines):
        data = np.asarray(data, dtype=np.uint8).reshape(lines, self.seg)
        return data

    def _filled(self, lines):
        out = np.zeros((lines, self.line_bytes), dtype=np.uint8)
        for slot, value in self.fill.items():
            out[:, slot * self.seg:(slot + 1) * self.seg] = value
        return out


class ShmPool(_Pool):
    """One host's shared-memory pool.

    Parameters
    ----------
    name : str
        The shared-memory block's name (the same on every member).
    size : int
        Bytes of the address space (both copies are allocated: ``2 * size``).
    create : bool
        True on the one rank that creates the block (and fills the constant
        slots of every window with :meth:`prefill`); the others attach after
        a barrier.
    """

    def __init__(self, name, size, line_bytes, slots, *, create, fill=None):
        super().__init__(line_bytes, slots, fill)
        self.size = size
        self.name = name
        self._owner = create
        if create:
            self._shm = shared_memory.SharedMemory(name=name, create=True, size=2 * size)
            self._shm.buf[:2 * size] = bytes(2 * size)
        else:
            self._shm = shared_memory.SharedMemory(name=name)
            # Python 3.11 registers an attached block with the resource tracker,
            # which would unlink it when this process exits: only its creator may.
            resource_tracker.unregister(self._shm._name, "shared_memory")
        self._mem = np.ndarray((2 * size,), dtype=np.uint8, buffer=self._shm.buf)

    @staticmethod
    def new_name():
        return f"nf_{secrets.token_hex(6)}"

    def prefill(self, window):
        """Write the constant slots of ``window`` in both copies (creator only)."""
        if self.fill:
            for copy in (0, 1):
                self._lines(window, copy)[:] = self._filled(window.lines)

    def _lines(self, window, copy):
        start = copy * self.size + window.offset
        return self._mem[start:start + window.lines * self.line_bytes].reshape(
            window.lines, self.line_bytes)

    def _copy(self, window):
        return self.calls % 2

    def write(self, window, slot, data):
        """Member ``slot`` stores its segment of every line of ``window``."""
        lines = self._lines(window, self._copy(window))
        lines[:, slot * self.seg:(slot + 1) * self.seg] = self._segment(data, window.lines)
        return window.lines * self.seg

    def skip(self, window):
        """This rank writes nothing to ``window`` this call."""

    def read(self, window):
        """The whole lines of ``window`` (a copy), after the members' barrier."""
        return self._lines(window, self._copy(window)).copy()

    def close(self):
        self._mem = None
        self._shm.close()
        if self._owner:
            self._shm.unlink()


class GatherPool(_Pool):
    """Several hosts: the members' segments all-gathered.

    Parameters
    ----------
    group : ProcessGroup
        The members' process group, member ``k`` being the group's rank ``k``.
    members : int
        Members of ``group``.
    owner : dict of int to list of int, optional
        The slots each member's segment goes to (the same segment in each);
        by default member ``k`` owns slot ``k``.  A member that owns none
        still takes part in the all-gather.  The other slots hold ``fill``.
    """

    def __init__(self, group, members, line_bytes, slots, fill=None, owner=None):
        super().__init__(line_bytes, slots, fill)
        self.group = group
        self.members = members
        self.owner = owner or {k: [k] for k in range(members)}
        self._mine = {}
        self.sent = 0

    def prefill(self, window):
        pass

    def write(self, window, slot, data):
        self._mine[window.offset] = self._segment(data, window.lines)
        return window.lines * self.seg

    def skip(self, window):
        self._mine[window.offset] = None

    def read(self, window):
        mine = self._mine.pop(window.offset, None)
        seg = torch.from_numpy(np.ascontiguousarray(
            mine if mine is not None else np.zeros((window.lines, self.seg), np.uint8)))
        parts = [torch.empty_like(seg) for _ in range(self.members)]
        dist.all_gather(parts, seg, group=self.group)
        self.sent += (self.members - 1) * seg.numel()
        out = self._filled(window.lines)
        for k, part in enumerate(parts):
            for slot in self.owner.get(k, ()):
                out[:, slot * self.seg:(slot + 1) * self.seg] = part.numpy()
        return out

    def close(self):
        pass


class Pools:
    """A rank's pools: ``level1`` (its controller's sign lines, one slot per
    worker) and ``level2`` (the level-2 count lines, one slot per
    controller; None with one controller), opened alike by every rank of
    ``group`` (a collective).

    Parameters
    ----------
    group : ProcessGroup
        The job's ranks, in the order of ``split``: local rank ``i`` of
        controller ``c`` is the job's rank ``split.first(c) + i``.
    split : ControllerSplit
        How the ranks share controllers
        (:func:`~neuron_fabric.models.controllers.plan_controllers`): local rank ``i`` owns worker slots ``i*copies .. (i+1)*copies - 1``.
    fill : dict of int to int
        The constant byte of each spare worker slot.
    kind : str
        ``"shm"``, ``"gather"`` or ``"auto"`` (shm when every rank is on one host).
    line_bytes, size1, size2 : int
        LINE_BYTES and the bytes of the level-1 and level-2 address spaces.
    windows1 : iterable of Window
        The level-1 windows, whose spare slots the creator fills.
    contributors : int
        Slots of a level-2 count line (the operand's N).

    Across hosts, the level-2 counts of equal controllers are all-gathered
    among the ranks of one local index (every rank of a controller holds its
    counts); with unequal controllers some local indices are missing from
    the smaller ones, so the whole job gathers and each controller's slot
    takes its first rank's segment.
    """

    def __init__(self, group, split, fill, kind, *, line_bytes, size1, size2, windows1,
                 contributors):
        world = dist.get_world_size(group)
        rank = dist.get_rank(group)
        controller, local = split.locate(rank)
        copies, workers, controllers = split.copies, split.workers, split.controllers
        if kind == "auto":
            names = [None] * world
            dist.all_gather_object(names, socket.gethostname(), group=group)
            kind = "shm" if len(set(names)) == 1 else "gather"
        self.kind = kind
        self.level2 = None
        ranks = dist.get_process_group_ranks(group) if group is not dist.group.WORLD \
            else list(range(world))
        if kind == "gather":
            # Every rank takes part in creating every subgroup, in the same order.
            members = [dist.new_group(ranks[split.first(k):split.first(k) + size])
                       for k, size in enumerate(split.sizes)] if controllers > 1 else [group]
            size = split.sizes[controller]
            self.level1 = GatherPool(members[controller], size, line_bytes, workers, fill,
                                     {k: list(range(k * copies, (k + 1) * copies))
                                      for k in range(size)})
            if controllers > 1 and split.equal:
                peers = [dist.new_group([ranks[split.first(k) + i] for k in range(controllers)])
                         for i in range(split.sizes[0])]
                self.level2 = GatherPool(peers[local], controllers, line_bytes, contributors)
            elif controllers > 1:
                self.level2 = GatherPool(group, world, line_bytes, contributors,
                                         owner={split.first(k): [k] for k in range(controllers)})
            return
        box = [[ShmPool.new_name() for _ in range(controllers + 1)] if rank == 0 else None]
        dist.broadcast_object_list(box, src=ranks[0], group=group)
        names = box[0]
        if local == 0:
            self.level1 = ShmPool(names[controller], size1, line_bytes, workers, create=True,
                                  fill=fill)
            for window in windows1:
                self.level1.prefill(window)
        if rank == 0 and controllers > 1:
            self.level2 = ShmPool(names[-1], size2, line_bytes, contributors, create=True)
        dist.barrier(group=group)
        if local != 0:
            self.level1 = ShmPool(names[controller], size1, line_bytes, workers, create=False,
                                  fill=fill)
        if controllers > 1 and rank != 0:
            self.level2 = ShmPool(names[-1], size2, line_bytes, contributors, create=False)
        dist.barrier(group=group)

    def begin(self):
        """Start a call on every pool (before the writes of a bucket)."""
        for pool in (self.level1, self.level2):
            if pool is not None:
                pool.begin()

    def close(self):
        """Release the shared memory (after the last step, on every rank)."""
        for pool in (self.level1, self.level2):
            if pool is not None:
                pool.close()
        self.level1 = self.level2 = None
