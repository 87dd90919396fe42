"""cocotb test of the datapath core with the hierarchy extension,
``neuron_fabric_hierarchy`` (run by tests/hdl/top/test_hierarchy_rtl.py), on
the bench of :mod:`neuron_fabric.sim.tb_hierarchy`.

Parameters (the runner's ``params``): ``workers``, ``stages``, ``profile``,
``seed`` and ``lines`` (see :mod:`.tb_hierarchy`).
"""

import cocotb

from neuron_fabric.sim.tb_hierarchy import HierarchyTB


@cocotb.parametrize(idle=[0.0, 0.3], backpressure=[0.0, 0.4])
async def run_random_lines(dut, idle, backpressure):
    """Random lines of every operand, layout and configuration under
    ``in_valid`` gaps and ``out_ready`` backpressure."""
    await HierarchyTB(dut).run(idle, backpressure)
