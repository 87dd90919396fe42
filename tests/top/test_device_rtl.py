"""The transaction-level device model against the exported top: the
differential test of ``sim/cocotb_device.py`` on Verilator at the default
width and on Icarus (when it is installed) at a small parameter set and at the
default width.

Verilator's build, not its run, is what costs here (about 40 s of CPU for
the small set and 60 s for the default width, against 10 to 15 s for a whole
Icarus run), so Verilator builds one set only, the default width, to keep
each simulator near a minute inside ``make test``.
"""

import pytest

from neuron_fabric.host.facts import TopParams
from neuron_fabric.sim.toolchain import available_simulators

SMALL = TopParams(line_bits=64, workers=4, stages=2, regions=4, max_outstanding=4)
DEFAULT_WIDTH = TopParams(line_bits=512, workers=8, stages=5, regions=4, max_outstanding=16)

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
@pytest.mark.parametrize("params, seed", [(SMALL, 11), (DEFAULT_WIDTH, 14)],
                         ids=["small", "default_width"])
def test_icarus(run_top_bench, params, seed):
    assert run_device_diff(run_top_bench, params, "icarus", seed) == 1
