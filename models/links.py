"""The race of ``make race`` projected onto real links: communication time
per step of every peer, by gradient size, for N workers (one a host).

Each peer is charged its bytes per worker and step (:func:`peer_bytes`:
the formulas ``tests/models/test_links.py`` holds equal to the bytes the
race measured, gloo's message headers apart) at stated rates:

* **Ethernet ring**, ``ethernet_gbit_s`` per host (100 and 400 Gb/s), full
  duplex, and ``ring_step_us`` per message step (:class:`.commtime.CommParams`'s
  5 us): a ring all-reduce takes ``2 (N-1)`` steps, an all-gather ``N-1``.
  Time ``sent / B + steps * alpha``.  The software peers (PyTorch's hooks,
  the software vote) and the low-bit ring of :mod:`.commtime` (reduce-scatter
  of ``ceil(log2(N+1))``-bit counts, all-gather of the 1-bit result, the
  best a software vote can do) travel this way.
* **CXL pool**: every host has a CXL 2.0 x16 link (``cxl_gb_s`` each way,
  64 GB/s: PCIe 5.0's 32 GT/s on 16 lanes) to the controllers, and each
  controller serves one line per cycle at the top's routed Fmax
  (``fmax_mhz``, about 200 MHz: 512 bits a cycle, about 13 GB/s), a write
  (full or partial) or a read alike; its ``W`` ranks share it.  A pool step
  is a write phase, a barrier (a small all-reduce over the network:
  ``2 (N-1)`` steps of ``ring_step_us``), a read phase, and with several
  controllers a level-2 write, barrier and read (contract section 5.4); a
  phase takes ``max(bytes / cxl, lines / Fmax)`` plus the memory's fixed
  latency (:data:`.envelope.params.ANCHOR`'s 200 ns).
* **Gather pool**: the segments all-gathered over Ethernet (the software
  vote's bytes) and the lines read through the host's own controller.

The reads of the pool are counted three ways, each its own peer: today's
contract (a W-bit lane per element, 32-bit lanes at level 2), the packed
result view (contract section 6: 2 bits per element, ``B`` source lines a
response, so the controller still reads every source line), and the
paper's 1-bit read.  Encoding, decoding and the software's own arithmetic
are not counted: this is the wire and the controller, nothing else.
"""

import math
from dataclasses import dataclass

from neuron_fabric.contract.facts import COUNT_LANE_BITS, WORKERS_CHOICES, count_geometry
from neuron_fabric.models.controllers import balanced, plan_controllers
from neuron_fabric.models.commtime import PACKED_VIEW_BITS, CommParams
from neuron_fabric.models.envelope.params import ANCHOR

__all__ = ["Links", "PEERS", "peer_bytes", "comm_time_s", "winners"]

#: Every peer of the projection: name -> (label, transport).  The names of
#: the measured peers are the race's (``experiments/ddp/race_rank.py``).
PEERS = {
    "allreduce": ("FP32 ring all-reduce (allreduce_hook)", "ethernet"),
    "fp16": ("FP16 ring all-reduce (fp16/bf16_compress_hook)", "ethernet"),
    "powersgd-1": ("PowerSGD rank 1", "ethernet"),
    "powersgd-4": ("PowerSGD rank 4", "ethernet"),
    "vote": ("majority vote in software (all-gather of signs)", "ethernet"),
    "low-bit-ring": ("low-bit ring (counts reduce-scattered, signs all-gathered)", "ethernet"),
    "fp32-pool": ("FP32 through the pool (BYPASS read)", "cxl"),
    "gbinary-shm": ("NEURON-Fabric G-Binary/G-Ternary, W-bit lane read (today)", "cxl"),
    "gbinary-packed": ("NEURON-Fabric, packed view (2-bit read)", "cxl"),
    "gbinary-paper": ("NEURON-Fabric, the paper's 1-bit read", "cxl"),
    "gbinary-gather": ("NEURON-Fabric G-Binary, gather pool (all-gather + local read)", "gather"),
}

#: Measured peers that the projection charges as another's bytes.
SAME_BYTES = {"bf16": "fp16", "gternary-shm": "gbinary-shm", "gternary-gather": "gbinary-gather"}

#: Ranks a controller serves at most (W = 16).
MAX_RANKS = max(WORKERS_CHOICES)


@dataclass(frozen=True)
class Links:
    """The stated rates (see the module's text)."""
    ring_step_us: float = CommParams().ring_step_us
    cxl_gb_s: float = 64.0
    fmax_mhz: float = 200.0
    line_bytes: int = ANCHOR.line_bytes
    fixed_latency_ns: float = ANCHOR.fixed_latency_ns
    controllers: int = None       # None: as many as the DDP hook's split uses

    def controllers_for(self, n_workers):
        """Controllers of ``n_workers`` ranks: ``controllers``, which must
        split them into equal controllers of at most 16, or when None the
        DDP hook's own split (:func:`.controllers.plan_controllers`: the
        fewest that serve them, sizes differing by at most one rank)."""
        if self.controllers is None:
            return plan_controllers(n_workers, 8 * self.line_bytes).controllers
        c = self.controllers
        if n_workers % c or n_workers // c > MAX_RANKS:
            raise ValueError(f"{n_workers} workers do not split into {c} controllers of at "
                             f"most {MAX_RANKS}")
        return c


def _ring(n_workers, nbytes):
    """Bytes one worker sends (and receives) in a ring all-reduce of ``nbytes``."""
    return 2 * (n_workers - 1) * nbytes / n_workers


def peer_bytes(peer, elements, n_workers, controllers=1, line_bytes=64):
    """Bytes one worker moves in one step of ``peer`` on a gradient of
    ``elements`` FP32 values (a square matrix, for PowerSGD): ``net_sent``,
    ``net_received`` (its all-reduces and all-gathers), ``pool_write``,
    ``pool_read`` (what its MemWr and MemRd carry, the race's pool bytes),
    and ``phases``: each pool phase as ``(bytes over the worker's CXL link,
    lines its busiest controller serves)``, every worker of the controller
    counted."""
    peer = SAME_BYTES.get(peer, peer)
    n, big_n = elements, n_workers
    out = dict(net_sent=0.0, pool_write=0.0, pool_read=0.0, phases=[])
    if peer in ("allreduce", "fp16"):
        out["net_sent"] = _ring(big_n, n * (4 if peer == "allreduce" else 2))
    elif peer.startswith("powersgd"):
        side = math.isqrt(n)
        out["net_sent"] = 2 * _ring(big_n, 4 * side * int(peer[-1]))   # P and Q
    elif peer == "vote":
        out["net_sent"] = (big_n - 1) * 8 * -(-n // 64)
    elif peer == "low-bit-ring":
        out["net_sent"] = (big_n - 1) / big_n * n * (math.ceil(math.log2(big_n + 1)) + 1) / 8
    elif peer == "fp32-pool":
        r = max(balanced(big_n, controllers))    # the busiest controller's ranks
        lines = -(-n // (line_bytes // r // 4))  # a controller's lines, R segments each
        out.update(pool_write=lines * line_bytes / r, pool_read=controllers * lines * line_bytes)
        out["phases"] = [(out["pool_write"], r * lines), (out["pool_read"], big_n * lines)]
    elif peer.startswith("gbinary"):
        _low_bit(out, peer, n, big_n, controllers, line_bytes)
    else:
        raise ValueError(f"unknown peer {peer!r}; known: {sorted(PEERS) + sorted(SAME_BYTES)}")
    out["net_received"] = out["net_sent"]
    return out


def _low_bit(out, peer, n, big_n, controllers, line_bytes):
    line_bits = 8 * line_bytes
    sizes = tuple(balanced(big_n, controllers))
    split = plan_controllers(big_n, line_bits, ranks_per_controller=sizes)   # the hook's
    r = max(sizes)                               # the busiest controller's ranks
    w = split.workers
    lines = -(-n // (line_bits // w))            # level-1 source lines
    read_bits = {"gbinary-packed": PACKED_VIEW_BITS, "gbinary-paper": 1}.get(peer)
    packed = lambda: -(-n * read_bits // line_bits) * line_bytes
    read = lines * line_bytes if read_bits is None else packed()
    # The packed view reads every source line (one burst a response line);
    # the paper's read is one line per response line.
    read_lines = read / line_bytes if peer == "gbinary-paper" else lines
    write = lines * line_bytes / w
    out.update(pool_write=write, pool_read=read)
    gather = peer == "gbinary-gather"
    if gather:     # the segments over the network; each host's own controller reads the lines
        out["net_sent"] = (r - 1) * write
        out["phases"] = [(lines * line_bytes, lines), (read, lines)]
    else:
        out["phases"] = [(write, r * lines), (read, r * read_lines)]
    if controllers > 1:
        count_bits, _ = count_geometry(split.operand)
        lines2 = -(-n // (line_bits // COUNT_LANE_BITS))
        read2 = lines2 * line_bytes if read_bits is None else packed()
        write2 = lines2 * line_bytes * count_bits / COUNT_LANE_BITS
        out["pool_write"] += write2 * controllers / big_n   # each controller's first rank
        #                                                       writes its counts
        out["pool_read"] += read2
        if gather:                               # the counts all-gathered across controllers
            out["net_sent"] += (controllers - 1) * write2
            out["phases"] += [(lines2 * line_bytes, lines2), (read2, lines2)]
        else:
            out["phases"] += [(write2, controllers * lines2),
                              (read2, big_n * (read2 / line_bytes if peer == "gbinary-paper"
                                               else lines2))]


def comm_time_s(peer, elements, n_workers, links=Links(), ethernet_gbit_s=100.0):
    """Seconds of one step's communication of ``peer`` (see the module's text)."""
    kind = PEERS[SAME_BYTES.get(peer, peer)][1]
    c = links.controllers_for(n_workers) if kind != "ethernet" else 1
    b = peer_bytes(peer, elements, n_workers, c, links.line_bytes)
    alpha = links.ring_step_us * 1e-6
    net = ethernet_gbit_s * 1e9 / 8
    if kind == "ethernet":
        steps = (1 if peer == "vote" else 2) * (n_workers - 1)
        if peer.startswith("powersgd"):
            steps *= 2                           # two all-reduces: P, then Q
        return b["net_sent"] / net + steps * alpha
    t = b["net_sent"] / net + (n_workers // c - 1 + c - 1) * alpha if kind == "gather" else 0.0
    cxl, hz = links.cxl_gb_s * 1e9, links.fmax_mhz * 1e6
    barrier = 2 * (n_workers - 1) * alpha        # before each read
    for i, (nbytes, lines) in enumerate(b["phases"]):
        t += max(nbytes / cxl, lines / hz) + links.fixed_latency_ns * 1e-9
        if i % 2 == 0:
            t += barrier
    return t


def winners(times, sizes):
    """The fastest peer at each size: ``times`` maps a peer to its times at
    ``sizes`` (ascending); a list of ``(first size, last size, peer)`` runs."""
    runs = []
    for i, size in enumerate(sizes):
        best = min(times, key=lambda p: times[p][i])
        if runs and runs[-1][2] == best:
            runs[-1] = (runs[-1][0], size, best)
        else:
            runs.append((size, size, best))
    return runs
