"""cocotb tests of the exported top ``neuron_fabric`` on Verilator and Icarus.

Verilator runs 10,000 random requests at LINE_BITS 512 / WORKERS 8 and
4,000 at LINE_BITS 64 / WORKERS 4 (``-m slow``); Icarus, about 7x slower
per cycle and 20x at 512 bits, runs the whole bench at 64 bits with 1,000;
``-m long`` (``make test-long``) runs the whole bench on Icarus at both
widths with 10,000.  The cocotb tests are in ``sim/cocotb_top.py``.
"""

import pytest

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.sim.toolchain import available_simulators

from neuron_fabric.sim.tb_top import SMALL_TOP as SMALL

MAIN = TopParams(line_bits=512, workers=8, stages=5, regions=8, max_outstanding=32)


@pytest.fixture
def run_top(run_top_bench):
    def run(params, simulator, random_count, testcase=None, seed=1, suffix=None):
        suffix = suffix or testcase
        name = f"top_{simulator}_{params.tag()}" + (f"_{suffix}" if suffix else "")
        return run_top_bench(params, simulator, "neuron_fabric.sim.cocotb_top", name,
                             testcase=testcase, random=random_count, seed=seed)
    return run


def test_main_config_verilator(run_top):
    assert run_top(MAIN, "verilator", 10_000) >= 10


@pytest.mark.skipif("icarus" not in available_simulators(), reason="iverilog not installed")
def test_small_config_icarus(run_top):
    assert run_top(SMALL, "icarus", 1_000, seed=3) >= 10


@pytest.mark.long
@pytest.mark.skipif("icarus" not in available_simulators(), reason="iverilog not installed")
def test_small_config_icarus_long(run_top):
    assert run_top(SMALL, "icarus", 10_000, seed=3) >= 10


@pytest.mark.slow
def test_small_config_verilator(run_top):
    assert run_top(SMALL, "verilator", 4_000, seed=2) >= 10


@pytest.mark.long
@pytest.mark.skipif("icarus" not in available_simulators(), reason="iverilog not installed")
def test_main_config_icarus_long(run_top):
    assert run_top(MAIN, "icarus", 10_000, seed=5) >= 10
