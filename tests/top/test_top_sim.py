"""cocotb tests of the exported top ``neuron_fabric`` on Verilator and Icarus.

Each configuration runs 10,000 random requests: LINE_BITS 512 / WORKERS 8
on Verilator, LINE_BITS 64 / WORKERS 4 on Icarus.  ``-m slow`` adds each
configuration on the other simulator (Icarus is about 7x slower).  The cocotb tests are in
``sim/cocotb_top.py``.
"""

import pytest

from neuron_fabric.hdl.export import top_verilog, write_verilog
from neuron_fabric.host.facts import TopParams
from neuron_fabric.sim.toolchain import BUILD, available_simulators, run_cocotb
from neuron_fabric.host.facts import TOP_MODULE

MAIN = TopParams(line_bits=512, workers=8, stages=5, regions=8, max_outstanding=32)
SMALL = TopParams(line_bits=64, workers=4, stages=2, regions=2, max_outstanding=4)


def run_top(params, simulator, random_count, testcase=None, seed=1):
    name = f"top_{simulator}_{params.tag()}" + (f"_{testcase}" if testcase else "")
    build_dir = BUILD / "cocotb" / name
    src = write_verilog(BUILD / "cocotb" / "src" / params.tag() / "neuron_fabric.v",
                        top_verilog(line_bits=params.line_bits, workers=params.workers,
                                    stages=params.stages, regions=params.regions,
                                    max_outstanding=params.max_outstanding))
    return run_cocotb(sources=[src], toplevel=TOP_MODULE,
                      test_module="neuron_fabric.sim.cocotb_top", simulator=simulator,
                      build_dir=build_dir, testcase=testcase,
                      params=dict(params.__dict__, random=random_count, seed=seed))


def test_main_config_verilator():
    assert run_top(MAIN, "verilator", 10_000) >= 10


@pytest.mark.skipif("icarus" not in available_simulators(), reason="iverilog not installed")
def test_small_config_icarus():
    assert run_top(SMALL, "icarus", 10_000, seed=3) >= 10


@pytest.mark.slow
def test_small_config_verilator():
    assert run_top(SMALL, "verilator", 10_000, seed=2) >= 10


@pytest.mark.slow
@pytest.mark.skipif("icarus" not in available_simulators(), reason="iverilog not installed")
def test_main_config_icarus():
    assert run_top(MAIN, "icarus", 10_000, seed=5) >= 10
