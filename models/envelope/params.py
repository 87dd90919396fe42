"""Named parameters of the memory-service model, with the paper's defaults.

Every quantity the timing envelope depends on lives in :class:`ServiceParams`.
The defaults are the paper's default configuration (section 4, "Default
configuration"; section 3, "Datapath") except where marked *assumption*:
those the paper does not state and we had to choose, each with its reason.

Time inside the model is counted in controller cycles (floats); the
``*_ns`` parameters are converted with ``controller_ghz``.
"""

from dataclasses import dataclass, replace

__all__ = ["KiB", "MiB", "GiB", "ServiceParams", "ANCHOR", "LLC_POLICIES", "TOP_FRONT_END_CYCLES"]

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

#: How the LLC filter turns footprint versus capacity into a miss fraction.
LLC_POLICIES = ("lru", "random", "miss")


@dataclass(frozen=True)
class ServiceParams:
    """One configuration of the memory-service model.

    Parameters
    ----------
    workers : int, default 8
        Request streams (the paper's virtual workers), each a closed loop.
    window : int, default 1
        Outstanding line reads per stream. *Assumption*: the paper's
        "1-request stream" has one read in flight; a stream issues its next
        read the moment a response returns.
    line_bytes : int, default 64
        Cache-line size (the 512-bit CXL response granularity).
    bandwidth_gib_s : float, default 128
        CXL bandwidth of one controller stack, in GiB/s. The per-line
        bandwidth gate spaces line services ``line_bytes / bandwidth`` apart.
    fixed_latency_ns : float, default 200
        Fixed memory-access latency from a line's service slot to its data
        at the controller's response port.
    llc_bytes : int, default 8 MiB
        Shared last-level cache capacity.
    llc_latency_ns : float, default 20
        *Assumption* (not in the paper): LLC lookup time, paid by a hit and,
        on the way to the controller, by a miss. 20 ns is a typical
        server-class LLC hit latency. The paper's single-stream 1.11 %
        implies a round trip of 2.5 ns / 1.11 % = 225 ns, i.e. about 25 ns
        on top of the 200 ns fixed latency, which is consistent with it.
    llc_policy : str, default "lru"
        ``"lru"``: streams sweep their footprints in address order, so an
        LRU cache holds everything when the total footprint fits and
        nothing when it does not (the cyclic-sweep worst case; this is why
        the paper's 16 MiB footprint over an 8 MiB LLC is a *full* miss).
        ``"random"``: a fraction ``min(1, llc/footprint)`` of reads hits
        (random replacement under uniform reuse).
        ``"miss"``: every read misses (forced full-LLC-miss).
    footprint_per_worker_bytes : int, default 2 MiB
        Active gradient-buffer footprint of one stream; each stream sweeps
        its own region in line order.
    controller_ghz : float, default 2.0
        Controller clock; the datapath delay is counted in these cycles.
    datapath_cycles : int, default 5
        Latency of the low-bit datapath, added to every read whose mode is
        not BYPASS. The datapath is pipelined (one line per cycle).
    port_cycles_per_line : float, default 1
        *Assumption*: a stack returns at most one 512-bit line per
        controller cycle on either path (bypass or datapath), so the
        effective gate interval is ``max(line/bandwidth, port)``. At the
        defaults the port (128 GB/s = 119 GiB/s at 2 GHz) is slightly
        slower than the 128 GiB/s link: 1 cycle instead of 0.93.
    stacks : int, default 1
        Controller stacks. Each has its own bandwidth gate and queue.
    interleave_bytes : int, default 256
        Address-interleave granularity across stacks. *Assumption*: 256 B,
        the finest interleave granularity of CXL 2.0 HDM decoders.
    front_end_cycles : float, default 0
        Controller latency outside the fixed memory latency (request
        decode, response formatting). Zero for the paper's model, whose
        200 ns already covers the memory path; ``TOP_FRONT_END_CYCLES``
        (measured from one bypass read) when the model stands in for our RTL.
    max_outstanding : int or None, default None
        In-flight reads a stack can hold; a read waits for a free entry.
        ``None``: unlimited (the paper's model); our RTL has 32.
    request_cycles : float, default 0
        Minimum spacing between reads accepted by one stack (its request
        port). Zero for the paper's model; 1 for our RTL (one M2S request
        per cycle).
    """
    workers: int = 8
    window: int = 1
    line_bytes: int = 64
    bandwidth_gib_s: float = 128.0
    fixed_latency_ns: float = 200.0
    llc_bytes: int = 8 * MiB
    llc_latency_ns: float = 20.0
    llc_policy: str = "lru"
    footprint_per_worker_bytes: int = 2 * MiB
    controller_ghz: float = 2.0
    datapath_cycles: float = 5
    port_cycles_per_line: float = 1.0
    stacks: int = 1
    interleave_bytes: int = 256
    front_end_cycles: float = 0.0
    max_outstanding: int | None = None
    request_cycles: float = 0.0

    def __post_init__(self):
        for name in ("workers", "window", "line_bytes", "stacks", "interleave_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        for name in ("bandwidth_gib_s", "controller_ghz"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)!r}")
        for name in ("fixed_latency_ns", "llc_latency_ns", "datapath_cycles",
                     "port_cycles_per_line", "front_end_cycles", "request_cycles"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, not {getattr(self, name)!r}")
        if self.llc_policy not in LLC_POLICIES:
            raise ValueError(f"llc_policy must be one of {LLC_POLICIES}, not {self.llc_policy!r}")
        if self.footprint_per_worker_bytes < self.line_bytes:
            raise ValueError("footprint_per_worker_bytes must hold at least one line, "
                             f"not {self.footprint_per_worker_bytes!r}")
        if self.max_outstanding is not None and self.max_outstanding < 1:
            raise ValueError(f"max_outstanding must be >= 1 or None, not {self.max_outstanding!r}")

    def with_(self, **changes):
        """A copy with ``changes`` applied (validated again)."""
        return replace(self, **changes)

    # -- derived quantities, in controller cycles ----------------------------

    def cycles(self, ns):
        return ns * self.controller_ghz

    @property
    def link_cycles_per_line(self):
        """Bandwidth-gate interval of the CXL link alone."""
        seconds = self.line_bytes / (self.bandwidth_gib_s * GiB)
        return seconds * 1e9 * self.controller_ghz

    @property
    def gate_cycles(self):
        """Effective per-line service interval of one stack."""
        return max(self.link_cycles_per_line, self.port_cycles_per_line, self.request_cycles)

    @property
    def fixed_cycles(self):
        return self.cycles(self.fixed_latency_ns)

    @property
    def llc_cycles(self):
        return self.cycles(self.llc_latency_ns)

    @property
    def miss_round_trip_cycles(self):
        """Unloaded round trip of one missing read in BYPASS (no datapath)."""
        return self.llc_cycles + self.front_end_cycles + self.gate_cycles + self.fixed_cycles

    @property
    def footprint_bytes(self):
        """Total active footprint of all streams."""
        return self.workers * self.footprint_per_worker_bytes

    @property
    def miss_fraction(self):
        """Fraction of reads the LLC filter passes to the controller."""
        if self.llc_policy == "miss":
            return 1.0
        ratio = self.footprint_bytes / self.llc_bytes
        if self.llc_policy == "lru":
            return 1.0 if ratio > 1 else 0.0
        return max(0.0, 1.0 - 1.0 / ratio)


#: Our top's own BYPASS read latency outside the memory, in controller
#: cycles: 24 cycles from a request's acceptance to its DRS being taken with
#: a memory answering the cycle after each address, less that cycle
#: (docs/top.md, Latency and rate; 15 before the top was pipelined for
#: 300 MHz: the request pipeline's region residues and gate mask, the read
#: path's registered ports; 22 before the region compares went to 2-bit
#: chunks).  ``front_end_cycles`` when the model stands in
#: for our RTL; ``make envelope-rtl`` measures it again on every run.
TOP_FRONT_END_CYCLES = 23

#: The paper's measured exposed-cost anchor: eight workers, 2 MiB each,
#: 16 MiB active footprint over an 8 MiB LLC (full LLC miss).
ANCHOR = ServiceParams()
