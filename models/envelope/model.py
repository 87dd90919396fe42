r"""Event-driven memory-service model: streams, LLC filter, gated stacks.

A read travels

    stream --(LLC lookup)--> hit: back to the stream
                         \-> miss: stack k = interleave(address)
                               accept  (in-flight entry, request port)
                               gate    (one line per gate interval, FIFO)
                               memory  (gate interval + fixed latency)
                               front end, then the datapath if the mode
                               is not BYPASS
                             --> response to the stream

Each stream is a closed loop with ``window`` reads in flight: it issues its
next read the moment one returns.  Service is deterministic and FIFO, so
processing reads in issue order is an exact discrete-event simulation.

Exposed overhead
----------------
The *exposed overhead* of the datapath is the relative increase of the
completion time of a fixed batch of reads (every stream reads
``lines_per_stream`` lines) when every read passes through the datapath
versus when every read takes the BYPASS path, with identical traffic:

    overhead = (T_datapath - T_bypass) / T_bypass

In a latency-bound loop each read pays the datapath once, so the overhead
is ``d / RTT``; when the bandwidth gate is the bottleneck the datapath
latency overlaps queued service and only the last read pays it (the
paper's ``T_exposed = max(0, T_agg - T_overlap)``).
"""

import heapq
import math
from dataclasses import dataclass

import numpy as np

from neuron_fabric.models.envelope.params import ServiceParams

__all__ = ["RunResult", "simulate", "overhead_pct", "ModeSwitch"]


@dataclass(frozen=True)
class ModeSwitch:
    """A change of the mode latch at ``at_cycles`` (already including any
    telemetry delay): reads accepted from then on use the datapath iff
    ``datapath`` is true."""
    at_cycles: float
    datapath: bool


@dataclass(frozen=True)
class RunResult:
    completion_cycles: float
    reads: int
    misses: int
    datapath_reads: int
    mean_round_trip_cycles: float


def _miss_mask(n, fraction):
    """Which of ``n`` reads miss: misses spread evenly (Bresenham)."""
    j = np.arange(n + 1, dtype=np.float64)
    marks = np.floor(j * fraction + 1e-9)
    return (marks[1:] > marks[:-1]).tolist()


def _stack_of(p, lines_per_stream):
    """Stack index of every read, per stream (address interleaving)."""
    fp_lines = p.footprint_per_worker_bytes // p.line_bytes
    j = np.arange(lines_per_stream, dtype=np.int64)
    out = []
    for s in range(p.workers):
        addr = s * p.footprint_per_worker_bytes + (j % fp_lines) * p.line_bytes
        out.append(((addr // p.interleave_bytes) % p.stacks).tolist())
    return out


def simulate(p: ServiceParams, lines_per_stream: int, *, datapath: bool = True,
             switch: ModeSwitch | None = None) -> RunResult:
    """Run one batch and return its completion time (controller cycles).

    Parameters
    ----------
    p : ServiceParams
    lines_per_stream : int
        Reads each stream issues (the fixed batch).
    datapath : bool
        Mode latch at time 0: true for a low-bit mode (reads pass the
        datapath), false for BYPASS.
    switch : ModeSwitch, optional
        One later update of the mode latch (delayed mode updates).
    """
    if lines_per_stream < 1:
        raise ValueError(f"lines_per_stream must be >= 1, not {lines_per_stream!r}")
    d = float(p.datapath_cycles)
    gate = p.gate_cycles
    service = gate + p.fixed_cycles + p.front_end_cycles
    llc = p.llc_cycles
    req_gap = p.request_cycles
    cap = p.max_outstanding
    miss = _miss_mask(lines_per_stream, p.miss_fraction)
    stack_of = _stack_of(p, lines_per_stream)

    gate_free = [0.0] * p.stacks
    last_accept = [-math.inf] * p.stacks
    inflight = [[] for _ in range(p.stacks)]
    next_read = [0] * p.workers
    heap = []
    for s in range(p.workers):
        for j in range(min(p.window, lines_per_stream)):
            heap.append((0.0, s, j))
        next_read[s] = min(p.window, lines_per_stream)
    heapq.heapify(heap)

    switch_at = switch.at_cycles if switch else math.inf
    end = 0.0
    misses = on_reads = 0
    rtt_sum = 0.0
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        t, s, j = pop(heap)
        if miss[j]:
            misses += 1
            k = stack_of[s][j]
            accept = max(t + llc, last_accept[k] + req_gap)
            if cap is not None:
                slots = inflight[k]
                while slots and slots[0] <= accept:
                    pop(slots)
                if len(slots) >= cap:
                    accept = max(accept, pop(slots))
            last_accept[k] = accept
            start = max(accept, gate_free[k])
            gate_free[k] = start + gate
            on = switch.datapath if accept >= switch_at else datapath
            done = start + service + (d if on else 0.0)
            on_reads += on
            if cap is not None:
                push(inflight[k], done)
        else:
            done = t + llc
        rtt_sum += done - t
        if done > end:
            end = done
        n = next_read[s]
        if n < lines_per_stream:
            next_read[s] = n + 1
            push(heap, (done, s, n))
    reads = p.workers * lines_per_stream
    return RunResult(end, reads, misses, on_reads, rtt_sum / reads)


def overhead_pct(p: ServiceParams, lines_per_stream: int) -> float:
    """Exposed datapath overhead of one batch, in percent (see module doc)."""
    on = simulate(p, lines_per_stream, datapath=True).completion_cycles
    off = simulate(p, lines_per_stream, datapath=False).completion_cycles
    return 100.0 * (on - off) / off
