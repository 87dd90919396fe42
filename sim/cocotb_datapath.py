"""cocotb tests of the datapath core ``neuron_fabric_datapath`` (run by
tests/hdl/datapath/test_datapath_cocotb.py), on the bench of
:mod:`neuron_fabric.sim.tb_datapath`: its scoreboard checks every output
line against the golden model, its tag and its latency.

Parameters (the runner's ``params``): ``workers``, ``stages``, ``seed``,
``lines`` (see :mod:`.tb_datapath`).
"""

import cocotb

from neuron_fabric.sim.tb_datapath import DatapathTB


@cocotb.parametrize(idle=[0.0, 0.3], backpressure=[0.0, 0.4])
async def run_random_lines(dut, idle, backpressure):
    """Random lines and configurations (a few with out-of-range fields)
    under ``in_valid`` gaps and ``out_ready`` backpressure."""
    tb = DatapathTB(dut)
    tb.set_idle_generator(idle)
    tb.set_backpressure_generator(backpressure)
    await tb.reset()
    for _ in range(tb.lines):
        await tb.source.send(tb.random_beat(bad_fraction=0.05))
    await tb.drain(tb.lines)
    tb.finish(tb.lines)


@cocotb.test()
async def run_back_to_back(dut):
    """A line offered in every cycle, out_ready held high: one line per
    cycle, each after exactly STAGES edges, in_ready never drops."""
    tb = DatapathTB(dut)
    await tb.reset()
    for _ in range(tb.lines):
        await tb.source.send(tb.random_beat(bad_fraction=0.0))
    await tb.drain(tb.lines)
    tb.finish(tb.lines)
    for name, monitor in (("in", tb.in_monitor), ("out", tb.out_monitor)):
        first, last = monitor.edges[0], monitor.edges[-1]
        assert last - first == tb.lines - 1, \
            f"{name}: {tb.lines} lines crossed on edges {first}..{last}, not one per cycle"
