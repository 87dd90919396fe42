"""cocotb testbench of the datapath core ``neuron_fabric_datapath``: the
pieces; the tests are :mod:`.cocotb_datapath`.

Bus models
----------
``DatapathInSource`` drives the input stream (prefix ``in``: data, tag and
the per-line configuration fields) and ``DatapathOutSink`` takes the output
stream (prefix ``out``); both are cocotbext-axi streams, so
``set_pause_generator`` gives ``in_valid`` gaps and ``out_ready``
backpressure.  :class:`HandshakeMonitor` records every beat that crosses a
valid/ready interface together with the index of the clock edge it crossed
on.

Checks
------
:class:`DatapathScoreboard` holds the golden response of every accepted
line and compares each output line with the oldest one: order, tag, data, and the
latency (exactly STAGES edges with ``out_ready`` held high, at least STAGES
otherwise).  :meth:`DatapathTB.check_in_ready` watches that ``in_ready`` is
high in every cycle after the first clock edge out of reset in which
``out_ready`` is high.

Parameters
----------
LINE_BITS and the field widths come from the DUT's port widths.  WORKERS and
STAGES do not show in the ports of the exported Verilog, so the runner
passes them as ``workers`` and ``stages`` in its ``params``
(:func:`~neuron_fabric.sim.toolchain.bench_params`); ``seed`` and ``lines``
set the random seed and the number of lines per test.  All are read when a
test starts, never at import.
"""

import logging
import random

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotb.utils import get_sim_time
from cocotbext.axi.stream import define_stream

from neuron_fabric.host import golden
from neuron_fabric.contract.facts import Format, GateKind, Mode

from neuron_fabric.sim.toolchain import bench_params

__all__ = ["DatapathInSource", "DatapathOutSink", "HandshakeMonitor", "DatapathScoreboard",
           "DatapathTB", "random_config", "pauses"]

CONFIG_FIELDS = ("mode", "format", "gate_kind", "gate_mask", "gate_threshold")

DatapathInBus, DatapathInTransaction, DatapathInSource, _, _ = define_stream(
    "DatapathIn", signals=["valid", "ready", "data", "tag", *CONFIG_FIELDS])
DatapathOutBus, DatapathOutTransaction, _, DatapathOutSink, _ = define_stream(
    "DatapathOut", signals=["valid", "ready", "data", "tag"])

CLOCK_NS = 10


def pauses(probability, rng):
    """Endless generator of pause flags, each True with ``probability``."""
    while True:
        yield rng.random() < probability


def random_config(rng, workers, lanes, bad_fraction=0.0):
    """A random configuration of contract section 2 (the PATTERN mask half the
    time from random P, K and phase, half the time random); with
    ``bad_fraction`` probability one field is pushed out of its range
    instead."""
    if rng.random() < 0.5:
        period = rng.randint(1, 15)
        keep = golden.gate_pattern(lanes, period, rng.randint(0, period),
                                   rng.randint(0, period - 1))
        mask = sum(int(bit) << i for i, bit in enumerate(keep))
    else:
        mask = rng.getrandbits(lanes)
    cfg = {
        "mode": rng.choice(list(Mode)),
        "format": rng.choice(list(Format)),
        "gate_kind": rng.choice(list(GateKind)),
        "gate_mask": mask,
        "gate_threshold": rng.randint(0, workers),
    }
    if rng.random() < bad_fraction:
        field, value = rng.choice([("format", 3), ("gate_threshold", rng.randint(workers + 1, 31))])
        cfg[field] = value
    return cfg


def _valid_config(cfg, workers):
    try:
        golden.check_config(workers, cfg["mode"], cfg["format"], cfg["gate_kind"],
                            threshold=cfg["gate_threshold"])
    except ValueError:
        return False
    return True


def expected_line(data, line_bits, workers, cfg):
    """Golden response to one line, or None where contract leaves it open
    (out-of-range fields in a transforming mode)."""
    if cfg["mode"] in (Mode.BYPASS, Mode.IDENTITY):
        return data
    if not _valid_config(cfg, workers):
        return None
    lines = golden.lines_from_ints([data], line_bits)
    mask = np.array([(cfg["gate_mask"] >> i) & 1 for i in range(line_bits // workers)], dtype=bool)
    out = golden.transform(lines, workers, cfg["mode"], cfg["format"], cfg["gate_kind"],
                           threshold=cfg["gate_threshold"], gate_mask=mask)
    return golden.lines_to_ints(out)[0]


def _unsigned(handle):
    """Unsigned value of a signal (1-bit handles give a ``Logic``)."""
    value = handle.value
    return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)


def _edge_index():
    return round(get_sim_time("ns") / CLOCK_NS)


class HandshakeMonitor:
    """Record ``(edge, {field: value})`` for every beat on a valid/ready
    interface, sampled at the rising edge it crosses on, and hand each to
    ``callback``."""

    def __init__(self, clock, valid, ready, fields, callback):
        self.clock, self.valid, self.ready = clock, valid, ready
        self.fields = fields
        self.callback = callback
        self.edges = []
        cocotb.start_soon(self._run())

    @property
    def count(self):
        return len(self.edges)

    async def _run(self):
        edge = RisingEdge(self.clock)
        while True:
            await edge
            if self.valid.value == 1 and self.ready.value == 1:
                self.edges.append(_edge_index())
                self.callback(self.edges[-1], {name: _unsigned(handle)
                                              for name, handle in self.fields.items()})


class DatapathScoreboard:
    """In-order scoreboard: every accepted line must come out once, in
    order, with its tag and golden data, after the right latency."""

    def __init__(self, stages, log):
        self.stages = stages
        self.exact_latency = True
        self.log = log
        self.pending = []
        self.errors = []
        self.checked = 0

    def accepted(self, edge, tag, expected):
        self.pending.append((edge, tag, expected))

    def left(self, edge, tag, data):
        if not self.pending:
            self._error(f"edge {edge}: line with tag {tag:#06x} came out but none is pending")
            return
        in_edge, exp_tag, exp_data = self.pending.pop(0)
        latency = edge - in_edge
        if tag != exp_tag:
            self._error(f"edge {edge}: tag {tag:#06x}, expected {exp_tag:#06x}")
        if exp_data is not None and data != exp_data:
            self._error(f"edge {edge}, tag {tag:#06x}: data {data:#x}, expected {exp_data:#x}")
        if latency < self.stages or (self.exact_latency and latency != self.stages):
            self._error(f"edge {edge}, tag {tag:#06x}: latency {latency}, STAGES = {self.stages}")
        self.checked += 1

    def _error(self, message):
        self.log.error(message)
        self.errors.append(message)


class DatapathTB:
    """Clock, reset, bus models, monitors and scoreboard around the DUT."""

    def __init__(self, dut):
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        self.log.setLevel(logging.INFO)
        self.line_bits = len(dut.in_data)
        params = bench_params()
        self.workers, self.stages = params["workers"], params["stages"]
        assert self.line_bits % self.workers == 0, (self.line_bits, self.workers)
        self.rng = random.Random(params.get("seed", 1))
        self.lines = params.get("lines", 200)
        self.tag_mask = (1 << len(dut.in_tag)) - 1
        self.in_ready_errors = []
        self.live_edge = None

        Clock(dut.clk, CLOCK_NS, unit="ns").start()
        self.source = DatapathInSource(DatapathInBus.from_prefix(dut, "in"), dut.clk, dut.rst)
        self.sink = DatapathOutSink(DatapathOutBus.from_prefix(dut, "out"), dut.clk, dut.rst)
        self.scoreboard = DatapathScoreboard(self.stages, self.log)
        self.configs = {}
        self.in_monitor = HandshakeMonitor(
            dut.clk, dut.in_valid, dut.in_ready,
            {"data": dut.in_data, "tag": dut.in_tag,
             **{name: getattr(dut, f"in_{name}") for name in CONFIG_FIELDS}},
            self._accepted)
        self.out_monitor = HandshakeMonitor(
            dut.clk, dut.out_valid, dut.out_ready,
            {"data": dut.out_data, "tag": dut.out_tag}, self._left)
        cocotb.start_soon(self.check_in_ready())

    def _accepted(self, edge, beat):
        cfg = {name: beat[name] for name in CONFIG_FIELDS}
        expected = expected_line(beat["data"], self.line_bits, self.workers, cfg)
        self.scoreboard.accepted(edge, beat["tag"], expected)

    def _left(self, edge, beat):
        self.scoreboard.left(edge, beat["tag"], beat["data"])

    async def check_in_ready(self):
        """in_ready must be high in every cycle after the first clock edge
        with rst low in which out_ready is high (values sampled at the edge
        that ends the cycle)."""
        edge = RisingEdge(self.dut.clk)
        while True:
            await edge
            if self.dut.rst.value == 1:
                self.live_edge = None
                continue
            if self.live_edge is None:
                self.live_edge = _edge_index()
                continue
            if self.dut.out_ready.value == 1 and self.dut.in_ready.value != 1:
                message = f"edge {_edge_index()}: in_ready low while out_ready is high"
                self.log.error(message)
                self.in_ready_errors.append(message)

    def set_idle_generator(self, probability):
        if probability:
            self.source.set_pause_generator(pauses(probability, self.rng))

    def set_backpressure_generator(self, probability):
        self.scoreboard.exact_latency = not probability
        if probability:
            self.sink.set_pause_generator(pauses(probability, self.rng))

    async def reset(self):
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 4)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)

    def random_beat(self, bad_fraction):
        cfg = random_config(self.rng, self.workers, self.line_bits // self.workers, bad_fraction)
        return DatapathInTransaction(data=self.rng.getrandbits(self.line_bits),
                                     tag=self.rng.getrandbits(16) & self.tag_mask, **cfg)

    async def drain(self, sent):
        """Wait for every line to come out; fail if the core stops."""
        limit = 50 * (sent + self.stages + 10)
        for _ in range(limit):
            if self.out_monitor.count >= sent and self.source.idle():
                break
            await RisingEdge(self.dut.clk)
        await ClockCycles(self.dut.clk, self.stages + 4)

    def finish(self, sent):
        sb = self.scoreboard
        assert not self.in_ready_errors, self.in_ready_errors[:5]
        assert not sb.errors, sb.errors[:5]
        assert self.in_monitor.count == sent, \
            f"{self.in_monitor.count} lines accepted, {sent} sent"
        assert self.out_monitor.count == sent, \
            f"{self.out_monitor.count} lines out, {sent} sent (lost or duplicated)"
        assert sb.checked == sent and not sb.pending
