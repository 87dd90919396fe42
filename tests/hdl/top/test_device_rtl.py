"""The transaction-level device model against the exported top: the
differential test of ``sim/cocotb_device.py`` on Verilator at the default
top and on Icarus (when it is installed) at a small parameter set (and at the
default top in ``make test-long``).

The simulators' builds of the 512-bit top, not the runs, are what cost here
(each near 100 s with the hierarchy extension), so the default top is the
one tests/hdl/top/test_top_sim.py, test_hierarchy_rtl.py and the conformance
bench build, and the small one is theirs too (``SMALL_TOP``): one build a
simulator serves them all.
"""

import pytest

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.sim.tb_top import SMALL_TOP
from neuron_fabric.sim.toolchain import available_simulators

#: The small top of every bench (one export and one build a simulator).
SMALL = SMALL_TOP
#: The default top, as tests/hdl/top/test_top_sim.py and test_hierarchy_rtl.py
#: build it: one build a simulator serves them all.
DEFAULT_WIDTH = TopParams()

#: Rounds of control operations and request batches per run (Icarus is
#: several times slower per cycle).
BATCHES = {"verilator": 60, "icarus": 30}

needs_icarus = pytest.mark.skipif("icarus" not in available_simulators(),
                                  reason="iverilog not installed")


def run_device_diff(run_top_bench, params, simulator, seed):
    return run_top_bench(params, simulator, "neuron_fabric.sim.cocotb_device",
                         f"device_{simulator}_{params.tag()}", seed=seed,
                         batches=BATCHES[simulator])


def test_default_width_verilator(run_top_bench):
    assert run_device_diff(run_top_bench, DEFAULT_WIDTH, "verilator", seed=12) == 1


@needs_icarus
@pytest.mark.parametrize("params, seed", [
    (SMALL, 11),
    # the default width under Icarus as well: make test-long (Verilator runs
    # it in make test, and Icarus runs the default top in test_top_sim.py)
    pytest.param(DEFAULT_WIDTH, 14, marks=pytest.mark.long)], ids=["small", "default_width"])
def test_icarus(run_top_bench, params, seed):
    assert run_device_diff(run_top_bench, params, "icarus", seed) == 1
