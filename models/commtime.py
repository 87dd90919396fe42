"""Fig. 7: modelled time of one gradient All-Reduce, by path.

Assumptions (each a named parameter of :class:`CommParams`):

* ``gpus`` = 8 data-parallel workers (the paper's eight virtual workers).
* FP32 ring All-Reduce over the scale-out network: reduce-scatter then
  all-gather, ``2 (N-1)/N * S / B_net + 2 (N-1) * alpha`` with
  ``B_net`` = 50 GB/s per GPU (one 400 Gb/s NIC) and ``alpha`` = 5 us
  per ring step.
* FP32 in-network aggregation (SHARP/SwitchML-like): every GPU sends its
  gradient once and receives the reduced one, full duplex: ``S / B_net``.
* FP32 through CXL pooled memory without controller aggregation: every
  GPU writes its FP32 gradient over its CXL link and reads the reduced one
  back: ``2 S / B_cxl`` with ``B_cxl`` = 128 GiB/s (the paper's CXL
  bandwidth).  For GPT-2 XL (1.5e9) this is exactly the paper's 87.31 ms.
* CXL-side G-Binary / G-Ternary (NEURON-Fabric): the same write-then-read
  over the CXL link, with the packed payload of ``bits`` per element from
  :data:`neuron_fabric.models.traffic.BITS_PER_ELEMENT` each way (the
  paper's count: a 1-bit read), times ``1 + exposure``
  where ``exposure`` is the datapath's exposed overhead at the full-LLC-
  miss anchor (conservative: bulk transfers with deep queues would hide
  it).  Aggregation happens at one point (single hop), so the payload
  does not widen on the way.
* What the contract's read returns, G-Binary beside the paper's 1-bit
  read: today a W-bit lane per element (``W`` of one controller for
  ``gpus`` workers, the DDP hook's rule: :func:`controller_workers`, from
  :mod:`.controllers`; a 1-bit write and a W-bit read), and the packed
  result view (contract section 6: a 1-bit write and a 2-bit read).  Our
  G-Ternary writes and reads what G-Binary does.
* Low-bit ring (multi-hop, as in DynamiQ's setting): partial sign counts
  widen as they travel; reduce-scatter carries ``ceil(log2(N+1))``-bit
  counts and all-gather the 1-bit result, over the network.

Only the gradient-communication component is modelled; these are not
training-step speedups.  Encoding cost on the GPU is not counted.
"""

import math
from dataclasses import dataclass

from neuron_fabric.models.controllers import controller_workers
from neuron_fabric.models.traffic import BITS_PER_ELEMENT

from neuron_fabric.models.envelope.params import GiB

__all__ = ["CommParams", "PAPER_GPT2XL_MS", "PACKED_VIEW_BITS", "controller_workers",
           "allreduce_times_ms"]

#: Bits a packed result view returns per element (contract section 6.2).
PACKED_VIEW_BITS = 2

#: The paper's Fig. 7 / section 9 values for GPT-2 XL, in ms.
PAPER_GPT2XL_MS = {
    "G-Binary (CXL-side)": 2.77,
    "G-Ternary (CXL-side)": 4.38,
    "FP32 collectives": (87.31, 228.00),
}


@dataclass(frozen=True)
class CommParams:
    gpus: int = 8
    net_gb_s: float = 50.0          # per-GPU network bandwidth, GB/s (400 Gb/s)
    ring_step_us: float = 5.0       # per-step latency of a ring collective
    cxl_gib_s: float = 128.0        # per-GPU CXL link bandwidth (paper default)


def allreduce_times_ms(params, exposure_pct, cp=CommParams(), bits=BITS_PER_ELEMENT):
    """Time of one All-Reduce of ``params`` gradient elements, per path, in ms."""
    n = cp.gpus
    s = params * bits["fp32"] / 8
    net = cp.net_gb_s * 1e9
    cxl = cp.cxl_gib_s * GiB
    ring_latency = 2 * (n - 1) * cp.ring_step_us * 1e-6
    expose = 1 + exposure_pct / 100
    count_bits = math.ceil(math.log2(n + 1))
    low_ring = (n - 1) / n * params * (count_bits + bits["gbinary"]) / 8 / net + ring_latency
    times = {
        "FP32 ring All-Reduce (network)": 2 * (n - 1) / n * s / net + ring_latency,
        "FP32 in-network aggregation": s / net,
        "FP32 via CXL pooled memory": 2 * s / cxl,
        "G-Binary ring (multi-hop, widening counts)": low_ring,
        "G-Binary (CXL-side)": 2 * params * bits["gbinary"] / 8 / cxl * expose,
        "G-Ternary (CXL-side)": 2 * params * bits["gternary"] / 8 / cxl * expose,
        "G-Binary (CXL-side), today's read: a W-bit lane an element":
            params * (bits["gbinary"] + controller_workers(n)) / 8 / cxl * expose,
        "G-Binary (CXL-side), packed view: 2 bits an element":
            params * (bits["gbinary"] + PACKED_VIEW_BITS) / 8 / cxl * expose,
    }
    return {k: v * 1e3 for k, v in times.items()}
