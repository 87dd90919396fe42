"""cocotb testbench of the datapath core with the hierarchy extension,
``neuron_fabric_hierarchy`` (``hdl/hierarchy/unit.py``; contract sections 3 and 5):
the pieces; the test is :mod:`.cocotb_hierarchy_unit`.

The wrapper has the core's flat ports and ``in_layout``, ``in_operand``,
``in_total``.  Random lines of every operand (SIGNS, COUNTS4, COUNTS8),
layout, mode, format and gate go in under ``in_valid`` gaps and
``out_ready`` backpressure; the in-order scoreboard of
:mod:`.tb_datapath` checks each output line against the golden model
(:func:`expected_line`), its tag, and its latency (exactly STAGES edges with
``out_ready`` held high).

The runner passes ``workers``, ``stages``, ``profile``, ``seed`` and
``lines`` in its ``params`` (:func:`~neuron_fabric.sim.toolchain.bench_params`).
The line generator and :func:`expected_line` are also what the Amaranth
simulation of the wrapper checks against (``tests/hdl/top/test_hierarchy_rtl.py``).
"""

import logging
import random

import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi.stream import define_stream

from neuron_fabric.host import golden
from neuron_fabric.contract.facts import (COUNT_LANE_BITS, PROFILES, Format, GateKind, Layout, Mode,
                                          Operand)
from neuron_fabric.contract.regmap import cfg_check, cfg_encode, count_total_max

from neuron_fabric.sim.tb_datapath import CLOCK_NS, DatapathScoreboard, HandshakeMonitor, pauses
from neuron_fabric.sim.toolchain import bench_params

__all__ = ["random_line", "expected_line", "FIELDS"]

#: Per-line input fields besides the line and the tag.
FIELDS = ("mode", "format", "gate_kind", "gate_mask", "gate_threshold", "layout", "operand",
          "total")

HierarchyInBus, HierarchyInTransaction, HierarchyInSource, _, _ = define_stream(
    "HierarchyIn", signals=["valid", "ready", "data", "tag", *FIELDS])
HierarchyOutBus, _, _, HierarchyOutSink, _ = define_stream(
    "HierarchyOut", signals=["valid", "ready", "data", "tag"])

HIERARCHY = ("hierarchy",)


def random_line(rng, line_bits, workers):
    """One input beat's fields (``line``, ``tag`` and :data:`FIELDS`): every
    operand and layout, mode, format and gate; ``total`` and T in range for
    the operand but for a few lines with one field pushed out of range; a
    third of the count lines with ``total`` twice lane 0's count (a tie)."""
    operand = rng.choice([Operand.SIGNS, Operand.COUNTS4, Operand.COUNTS8])
    if operand == Operand.SIGNS:
        total, threshold = 0, rng.randint(0, workers)
    else:
        total = rng.randint(1, count_total_max(operand))
        threshold = rng.randint(0, min(total, 31))
    beat = dict(line=rng.getrandbits(line_bits), tag=rng.getrandbits(16),
                mode=rng.choice(list(Mode)), format=rng.choice(list(Format)),
                gate_kind=rng.choice(list(GateKind)), gate_threshold=threshold,
                layout=rng.choice(list(Layout)), operand=operand, total=total,
                gate_mask=rng.getrandbits(line_bits // workers))
    if operand != Operand.SIGNS and rng.random() < 0.3:
        _tie_lane0(beat, line_bits, rng)
    if rng.random() < 0.05:
        field, value = rng.choice([("format", 3), ("gate_threshold", 31), ("total", 0),
                                   ("operand", 3)])
        beat[field] = value
    return beat


def _tie_lane0(beat, line_bits, rng):
    """Set ``total`` to twice the count of lane 0 (a = 0 there) when the
    operand allows it, so that SIGN and the MARGIN gate see a tie."""
    lines = golden.lines_from_ints([beat["line"]], line_bits)
    counts = golden.transform_counts(lines, beat["operand"], 1, Mode.GBINARY,
                                     layout=beat["layout"])
    total = 2 * int(golden.decode_counts(counts, Format.COUNT)[0])
    if 1 <= total <= count_total_max(beat["operand"]):
        beat["total"], beat["gate_threshold"] = total, rng.randint(0, min(total, 31))


def _in_range(beat, workers):
    """The line's fields are a CFG value a hierarchy build accepts."""
    value = cfg_encode(beat["mode"], beat["format"], beat["gate_kind"],
                       threshold=beat["gate_threshold"], layout=beat["layout"],
                       operand=beat["operand"], total=beat["total"])
    return cfg_check(value, workers, HIERARCHY) is None


def _mask(value, lanes):
    return np.array([(value >> i) & 1 for i in range(lanes)], dtype=bool)


def expected_line(beat, line_bits, workers, profile):
    """The golden response to one beat (an int), or None where the contract
    leaves it open (a field out of range in a transforming mode).
    ``profile`` a :class:`~neuron_fabric.contract.facts.Profile`."""
    data = beat["line"]
    if beat["mode"] in (Mode.BYPASS, Mode.IDENTITY):
        return data
    if not _in_range(beat, workers):
        return None
    fmt, kind, _, _ = profile.effective(beat["format"], beat["gate_kind"], 3, 2)
    lines = golden.lines_from_ints([data], line_bits)
    common = dict(threshold=beat["gate_threshold"], layout=beat["layout"])
    if beat["operand"] == Operand.SIGNS:
        out = golden.transform(lines, workers, beat["mode"], fmt, kind,
                               gate_mask=_mask(beat["gate_mask"], line_bits // workers), **common)
    else:
        out = golden.transform_counts(lines, beat["operand"], beat["total"], beat["mode"], fmt,
                                      kind, gate_mask=_mask(beat["gate_mask"],
                                                            line_bits // COUNT_LANE_BITS),
                                      **common)
    return golden.lines_to_ints(out)[0]


class HierarchyTB:
    """Clock, bus models, monitors and the in-order scoreboard around the DUT."""

    def __init__(self, dut):
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        self.line_bits = len(dut.in_data)
        params = bench_params()
        self.workers, self.stages = params["workers"], params["stages"]
        self.profile = PROFILES[params.get("profile", "full")]
        self.rng = random.Random(params.get("seed", 1))
        self.lines = params.get("lines", 100)
        Clock(dut.clk, CLOCK_NS, unit="ns").start()
        self.source = HierarchyInSource(HierarchyInBus.from_prefix(dut, "in"), dut.clk, dut.rst)
        self.sink = HierarchyOutSink(HierarchyOutBus.from_prefix(dut, "out"), dut.clk, dut.rst)
        self.scoreboard = DatapathScoreboard(self.stages, self.log)
        self.in_monitor = HandshakeMonitor(
            dut.clk, dut.in_valid, dut.in_ready,
            {"line": dut.in_data, "tag": dut.in_tag,
             **{name: getattr(dut, f"in_{name}") for name in FIELDS}}, self._accepted)
        self.out_monitor = HandshakeMonitor(
            dut.clk, dut.out_valid, dut.out_ready,
            {"data": dut.out_data, "tag": dut.out_tag},
            lambda edge, beat: self.scoreboard.left(edge, beat["tag"], beat["data"]))

    def _accepted(self, edge, beat):
        self.scoreboard.accepted(edge, beat["tag"],
                                 expected_line(beat, self.line_bits, self.workers, self.profile))

    async def run(self, idle, backpressure):
        if idle:
            self.source.set_pause_generator(pauses(idle, self.rng))
        self.scoreboard.exact_latency = not backpressure
        if backpressure:
            self.sink.set_pause_generator(pauses(backpressure, self.rng))
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 4)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)
        for _ in range(self.lines):
            beat = random_line(self.rng, self.line_bits, self.workers)
            await self.source.send(HierarchyInTransaction(
                data=beat.pop("line"), **beat))
        for _ in range(50 * (self.lines + self.stages + 10)):
            if self.out_monitor.count >= self.lines and self.source.idle():
                break
            await RisingEdge(self.dut.clk)
        await ClockCycles(self.dut.clk, self.stages + 4)
        sb = self.scoreboard
        assert not sb.errors, sb.errors[:5]
        assert self.in_monitor.count == self.lines == self.out_monitor.count, \
            (self.in_monitor.count, self.out_monitor.count, self.lines)
        assert sb.checked == self.lines and not sb.pending
