"""cocotb bench: the exported top behind a latency- and bandwidth-gated AXI
memory, driven by closed-loop read streams (the envelope model's traffic).

Run by :mod:`neuron_fabric.sim.envelope.rtl`, which passes the
configurations as ``configs`` in the runner's ``params``
(:func:`~neuron_fabric.sim.toolchain.bench_params`) and reads the
measurements back from the JSON file ``out``.  Every configuration is run three times: one read in
BYPASS (the round trip the model calibrates its front end from), the batch
in BYPASS and the batch in G-Binary, the mode set through DEFAULT_CFG over
AXI4-Lite.

Timing convention: signals are sampled at the falling edge, when they are
settled and equal to what the next rising edge will see; inputs are driven
right after a rising edge.  ``now`` counts rising edges.
"""

import collections
import json

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from neuron_fabric.contract.facts import Mode
from neuron_fabric.contract.facts import TopParams
from neuron_fabric.contract.regmap import RegisterMap, cfg_encode

from neuron_fabric.sim.toolchain import bench_params

MEM_RD = 0b0001


class GatedAxiMemory:
    """AXI4 read slave: AR always accepted, one line served per ``gate``
    cycles in arrival order, its R beat offered ``gate + latency`` cycles
    after its service slot (the model's bandwidth gate and fixed latency)."""

    def __init__(self, latency, gate):
        self.latency = latency
        self.gate = gate
        self.next_slot = 0
        self.pending = collections.deque()

    def accept(self, now, arid, araddr):
        slot = max(now, self.next_slot)
        self.next_slot = slot + self.gate
        self.pending.append((slot + self.gate + self.latency, arid, araddr))

    def head(self, now):
        """The beat to offer for a handshake at edge ``now``, or None."""
        if self.pending and self.pending[0][0] <= now:
            return self.pending[0]
        return None


class ReadStreams:
    """``workers`` closed loops, ``window`` reads each in flight; a stream
    re-issues ``lookup`` cycles after a response (the LLC lookup of a miss)."""

    def __init__(self, workers, window, lines, lookup):
        self.lookup = lookup
        self.left = [lines] * workers
        self.queue = collections.deque()        # (ready edge, stream, address)
        self.inflight = {}
        self.tag = 0
        self.sent = [0] * workers
        for s in range(workers):
            for _ in range(min(window, lines)):
                self._issue(s, 0)

    def _issue(self, s, now):
        if self.left[s]:
            self.left[s] -= 1
            addr = (s << 24) | (self.sent[s] << 6)
            self.sent[s] += 1
            self.queue.append((now + self.lookup, s, addr))

    def next_request(self, now):
        if self.queue and self.queue[0][0] < now:
            return self.queue[0]
        return None

    def accepted(self):
        _, s, _ = self.queue.popleft()
        tag = self.tag
        self.tag = (self.tag + 1) & 0xFFFF
        self.inflight[tag] = s
        return tag

    def responded(self, tag, now):
        self._issue(self.inflight.pop(tag), now)

    @property
    def done(self):
        return not self.queue and not self.inflight and not any(self.left)


class EnvelopeBench:
    def __init__(self, dut):
        self.dut = dut
        self.line_bytes = len(dut.m_axi_rdata) // 8
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.regs = RegisterMap(TopParams())

    async def reset(self):
        d = self.dut
        for name, value in (("m2s_req_valid", 0), ("m2s_rwd_valid", 0), ("s2m_drs_ready", 1),
                            ("s2m_ndr_ready", 1), ("m_axi_arready", 1), ("m_axi_rvalid", 0),
                            ("m_axi_rresp", 0), ("m_axi_rlast", 1), ("m_axi_awready", 1),
                            ("m_axi_wready", 1), ("m_axi_bvalid", 0), ("m_axi_bresp", 0)):
            getattr(d, name).value = value
        d.rst.value = 1
        for _ in range(4):
            await RisingEdge(d.clk)
        d.rst.value = 0
        await RisingEdge(d.clk)

    async def csr_read(self, name):
        return await self.axil.read_dword(self.regs[name].offset)

    async def set_mode(self, mode):
        """Write DEFAULT_CFG, then wait until the top accepts requests again
        (after a control write the request pipeline admits nothing for a few
        cycles while its copy of the configuration follows), so a batch's
        first request is not held by the write."""
        await self.axil.write_dword(self.regs["DEFAULT_CFG"].offset, cfg_encode(mode=mode))
        await FallingEdge(self.dut.clk)
        while self.dut.m2s_req_ready.value != 1:
            await FallingEdge(self.dut.clk)
        await RisingEdge(self.dut.clk)

    async def run_batch(self, workers, window, lines, latency, gate, lookup, limit=2_000_000):
        """Edges from the start of the batch to its last DRS response."""
        d = self.dut
        mem = GatedAxiMemory(latency, gate)
        streams = ReadStreams(workers, window, lines, lookup)
        now, last = 0, 0
        offered = {"req": None, "r": None}
        d.m2s_req_opcode.value = MEM_RD

        def offer(key, item, valid, payload):
            """Drive ``valid`` and (when there is an item) ``payload``'s
            ``(signal, value)`` pairs, only when the offered item changes."""
            if item is not offered[key]:
                offered[key] = item
                valid.value = item is not None
                for signal, value in (payload(item) if item is not None else ()):
                    signal.value = value

        def drive():
            """Offer, for the handshake at edge ``now + 1``, the oldest
            request ready by then and the memory's next due R beat."""
            offer("req", streams.next_request(now + 1), d.m2s_req_valid,
                  lambda req: ((d.m2s_req_addr, req[2]), (d.m2s_req_tag, streams.tag)))
            offer("r", mem.head(now + 1), d.m_axi_rvalid,
                  lambda beat: ((d.m_axi_rid, beat[1]), (d.m_axi_rdata, (
                      beat[2] * 0x9E3779B97F4A7C15) % (1 << (8 * self.line_bytes)))))

        drive()
        while not streams.done:
            await FallingEdge(d.clk)
            req_fire = offered["req"] is not None and d.m2s_req_ready.value == 1
            ar = (int(d.m_axi_arid.value), int(d.m_axi_araddr.value)) \
                if d.m_axi_arvalid.value == 1 else None
            r_fire = offered["r"] is not None and d.m_axi_rready.value == 1
            drs_tag = int(d.s2m_drs_tag.value) if d.s2m_drs_valid.value == 1 else None
            await RisingEdge(d.clk)
            now += 1
            if ar is not None:
                mem.accept(now, *ar)
            if r_fire:
                mem.pending.popleft()
            if req_fire:
                streams.accepted()
            if drs_tag is not None:
                streams.responded(drs_tag, now)
                last = now
            drive()
            assert now < limit, "batch did not finish"
        return last


@cocotb.test()
async def envelope_batches(dut):
    params = bench_params()
    configs = params["configs"]
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    bench = EnvelopeBench(dut)
    await bench.reset()
    caps0, caps1 = await bench.csr_read("CAPS0"), await bench.csr_read("CAPS1")
    results = {"stages": (caps0 >> 24) & 0xF, "max_outstanding": (caps1 >> 8) & 0xFFFF,
               "configs": []}
    for cfg in configs:
        timing = {k: cfg[k] for k in ("latency", "gate", "lookup")}
        await bench.set_mode(Mode.BYPASS)
        single = await bench.run_batch(1, 1, 1, **timing)
        bypass = await bench.run_batch(cfg["workers"], cfg["window"], cfg["lines"], **timing)
        await bench.set_mode(Mode.GBINARY)
        single_gb = await bench.run_batch(1, 1, 1, **timing)
        gbinary = await bench.run_batch(cfg["workers"], cfg["window"], cfg["lines"], **timing)
        results["configs"].append(dict(cfg, single_bypass=single, single_gbinary=single_gb,
                                       bypass=bypass, gbinary=gbinary))
        dut._log.info("%s: bypass %d, G-Binary %d edges", cfg["name"], bypass, gbinary)
    with open(params["out"], "w") as f:
        json.dump(results, f, indent=2)
