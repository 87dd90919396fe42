"""What each rank of ``make race`` runs (:func:`race`, a :func:`~neuron_fabric.host.ddp.launch.spawn`
target): every peer on one gradient per size, called as DDP calls a
communication hook, on a one-bucket stand-in (:class:`Bucket`).

The gradient of a size is one square FP32 matrix (PowerSGD compresses
matrices only), the same normal values on a rank at every repeat.  Before
each call the ranks meet at a barrier; the call is timed from the hook's
entry to its future's value, in wall seconds (``perf_counter``) and in the
process's CPU seconds (``process_time``: gloo's threads included), and its
bytes are counted: what the process handed to and took from its sockets
(``TCP_INFO`` of each of its TCP sockets: payload bytes sent and received)
and, for a pool, what the rank wrote to and read from it.  The seconds
spent in the device model's reads (``Device.read_lines``: the emulated
device's work, which real hardware does not charge to the host) are
recorded apart.  The peers run in a rotated order at each repeat, so no
peer always follows the same one.
"""

import os
import socket
import struct
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

from neuron_fabric.contract.facts import Mode, TopParams
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.host.ddp.hook import FabricConfig, FabricState, fabric_hook
from neuron_fabric.host.ddp.pool import ShmPool, Window
from neuron_fabric.host.ddp.replica import run_untimed
from neuron_fabric.host.ddp.software_vote import VoteState, vote_hook
from neuron_fabric.experiments.ddp.race_tables import PEERS

__all__ = ["PEERS", "Bucket", "PoolFP32", "race"]

#: Calls before the timed ones: PowerSGD compresses from its second call.
WARMUP = {"powersgd-1": 2, "powersgd-4": 2}


class Bucket:
    """A DDP bucket of one parameter: what the hooks call on ``GradBucket``."""

    def __init__(self, buf, param):
        self._buf, self._param = buf, param

    def buffer(self):
        return self._buf

    def set_buffer(self, tensor):
        self._buf = tensor

    def gradients(self):
        return [self._buf.view(self._param.shape)]

    def parameters(self):
        return [self._param]

    def index(self):
        return 0

    def is_last(self):
        return True


class PoolFP32:
    """FP32 through the pool the G-Binary path uses, with the transport held
    equal: each rank stores its FP32 gradient in its own segment of each
    64-byte line (``64 / R`` bytes, ``16 / R`` values), the ranks meet at one
    small all-reduce, and each rank reads the lines through the device
    model's BYPASS read (the lines as stored) and adds the ``R`` segments."""

    def __init__(self, n, rank, world, line_bits=512):
        self.rank, self.world, self.n = rank, world, n
        self.lb = line_bits // 8
        if self.lb % (4 * world):
            raise ValueError(f"{world} ranks do not split a {self.lb}-byte line into floats")
        self.per_line = self.lb // world // 4
        self.window = Window(0, -(-n // self.per_line))
        names = [ShmPool.new_name()]
        dist.broadcast_object_list(names, src=0)
        size = self.window.lines * self.lb
        if rank == 0:
            self.pool = ShmPool(names[0], size, self.lb, world, create=True)
        dist.barrier()
        if rank != 0:
            self.pool = ShmPool(names[0], size, self.lb, world, create=False)
        params = TopParams(line_bits=line_bits)
        self.device = Device(params)
        run_untimed(Driver(self.device, params).set_default(Mode.BYPASS))
        self.flag = torch.zeros(1)
        self.traffic = dict(pool_write=0, pool_read=0)

    def communicate(self, bucket):
        buf = bucket.buffer()
        self.pool.begin()
        mine = np.zeros(self.window.lines * self.per_line, np.float32)
        mine[:self.n] = buf.numpy()
        written = self.pool.write(self.window, self.rank, mine.view(np.uint8))
        dist.all_reduce(self.flag)
        lines = self.pool.read(self.window)
        self.device.poke(0, lines)
        resp = run_untimed(self.device.read_lines(0, self.window.lines))
        total = resp.view(np.float32).reshape(self.window.lines, self.world, self.per_line).sum(1)
        buf.copy_(torch.from_numpy(total.reshape(-1)[:self.n])).div_(self.world)
        self.traffic = dict(pool_write=written, pool_read=resp.size)
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut

    def close(self):
        self.pool.close()


#: Offsets in Linux's ``struct tcp_info`` of ``tcpi_bytes_received``,
#: ``tcpi_bytes_sent`` and ``tcpi_bytes_retrans`` (u64 each; Linux 4.19 and
#: later).  Sent bytes are counted less the retransmitted ones, which a
#: loaded machine adds even on loopback.
_TCP_RECEIVED, _TCP_SENT, _TCP_RETRANS, _TCP_INFO_BYTES = 128, 200, 208, 232


def _tcp_bytes():
    """Bytes this process's TCP sockets have sent (retransmissions apart)
    and received in all (``TCP_INFO``: what gloo moved, whatever system call
    it used)."""
    sent = received = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                continue
            with socket.socket(fileno=os.dup(int(fd))) as s:
                info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_BYTES)
        except OSError:           # not a TCP socket, or closed meanwhile
            continue
        if len(info) >= _TCP_RETRANS + 8:
            received += struct.unpack_from("Q", info, _TCP_RECEIVED)[0]
            sent += struct.unpack_from("Q", info, _TCP_SENT)[0] - \
                struct.unpack_from("Q", info, _TCP_RETRANS)[0]
    return sent, received


class _DeviceClock:
    """Seconds of this thread's CPU spent in ``Device.read_lines``."""

    def __init__(self):
        self.seconds = 0.0
        inner = Device.read_lines
        clock = self

        async def read_lines(device, addr, count):
            t0 = time.thread_time()
            try:
                return await inner(device, addr, count)
            finally:
                clock.seconds += time.thread_time() - t0
        Device.read_lines = read_lines


def _peer(name, n, rank, world, param):
    """``(state, hook, pool traffic of the last call, close)`` of peer ``name``."""
    if name in ("allreduce", "fp16", "bf16"):
        hook = {"allreduce": default_hooks.allreduce_hook, "fp16": default_hooks.fp16_compress_hook,
                "bf16": default_hooks.bf16_compress_hook}[name]
        return None, hook, None, None
    if name.startswith("powersgd"):
        state = powerSGD_hook.PowerSGDState(process_group=None,
                                            matrix_approximation_rank=int(name[-1]),
                                            start_powerSGD_iter=2, random_seed=0)
        return state, powerSGD_hook.powerSGD_hook, None, None
    if name == "vote":
        return VoteState(), vote_hook, None, None
    if name == "fp32-pool":
        state = PoolFP32(n, rank, world)
        return state, lambda s, b: s.communicate(b), lambda: state.traffic, state.close
    mode, pool = name.split("-")
    # W-bit lanes read back, whether or not the full profile has the packed
    # view: the link model charges the view's 2-bit read from these runs
    state = FabricState({"g": [param]}, {"g": mode}, FabricConfig(pool=pool, packed_view=False))

    def traffic():
        t = state.last_traffic
        if t.low_elements != n or t.fp32_elements:
            raise RuntimeError(f"{name}: the call took the FP32 path ({t})")
        return dict(pool_write=t.pool_write, pool_read=t.pool_read)
    return state, fabric_hook, traffic, state.close


def race(rank, world, store, sizes, peers, repeats, seed=0, progress=False):
    """Every peer of ``peers`` at every size of ``sizes`` (FP32 bytes of the
    gradient, square matrices), ``repeats`` timed calls each, interleaved.
    Returns ``{(peer, size): [call, ...]}``, a call being a dict of
    ``wall_s``, ``cpu_s``, ``device_s``, ``gloo_write``, ``gloo_read``,
    ``pool_write``, ``pool_read``."""
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    device = _DeviceClock()
    out = {}
    for size in sizes:
        side = int(round((size // 4) ** 0.5))
        if side * side * 4 != size:
            raise ValueError(f"{size} bytes is not a square matrix of FP32")
        rng = np.random.default_rng([seed, rank, size])
        grad = torch.from_numpy(rng.standard_normal(side * side).astype(np.float32))
        param = torch.nn.Parameter(torch.zeros(side, side))
        built = {p: _peer(p, side * side, rank, world, param) for p in peers}
        calls = {p: [] for p in peers}
        for p, (state, hook, _, _) in built.items():
            for _ in range(WARMUP.get(p, 1)):
                hook(state, Bucket(grad.clone(), param)).wait()
        for rep in range(repeats):
            order = list(peers[rep % len(peers):]) + list(peers[:rep % len(peers)])
            for p in order:
                state, hook, traffic, _ = built[p]
                bucket = Bucket(grad.clone(), param)
                dist.barrier()
                dev0 = device.seconds
                w0, r0 = _tcp_bytes()
                t0, c0 = time.perf_counter(), time.process_time()
                hook(state, bucket).wait()
                t1, c1 = time.perf_counter(), time.process_time()
                w1, r1 = _tcp_bytes()
                call = dict(wall_s=t1 - t0, cpu_s=c1 - c0, device_s=device.seconds - dev0,
                            gloo_write=w1 - w0, gloo_read=r1 - r0,
                            pool_write=0, pool_read=0)
                if traffic is not None:
                    call.update(traffic())
                calls[p].append(call)
            if progress and rank == 0:
                print(f"  {world} ranks, {size:,} B: repeat {rep + 1}/{repeats}", flush=True)
        dist.barrier()
        for p, (_, _, _, close) in built.items():
            if close is not None:
                close()
        for p in peers:
            out[(p, size)] = calls[p]
    return out
