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

from neuron_fabric.hdl.export import top_verilog, write_verilog
from neuron_fabric.host.facts import TOP_MODULE, TopParams
from neuron_fabric.sim.toolchain import BUILD, available_simulators, run_cocotb

SMALL = TopParams(line_bits=64, workers=4, stages=2, regions=4, max_outstanding=4)
DEFAULT_WIDTH = TopParams(line_bits=512, workers=8, stages=5, regions=4, max_outstanding=16)

#: Rounds of control operations and request batches per run (Icarus is
#: several times slower per cycle).
BATCHES = {"verilator": 60, "icarus": 30}

needs_icarus = pytest.mark.skipif("icarus" not in available_simulators(),
                                  reason="iverilog not installed")


def run_device_diff(params, simulator, seed):
    src = write_verilog(BUILD / "cocotb" / "src" / params.tag() / "neuron_fabric.v",
                        top_verilog(line_bits=params.line_bits, workers=params.workers,
                                    stages=params.stages, regions=params.regions,
                                    max_outstanding=params.max_outstanding))
    return run_cocotb(sources=[src], toplevel=TOP_MODULE,
                      test_module="neuron_fabric.sim.cocotb_device", simulator=simulator,
                      build_dir=BUILD / "cocotb" / f"device_{simulator}_{params.tag()}",
                      params=dict(params.__dict__, seed=seed, batches=BATCHES[simulator]))


def test_default_width_verilator():
    assert run_device_diff(DEFAULT_WIDTH, "verilator", seed=12) == 1


@needs_icarus
@pytest.mark.parametrize("params, seed", [(SMALL, 11), (DEFAULT_WIDTH, 14)],
                         ids=["small", "default_width"])
def test_icarus(params, seed):
    assert run_device_diff(params, "icarus", seed) == 1
