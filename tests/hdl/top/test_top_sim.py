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


ICARUS = pytest.mark.skipif("icarus" not in available_simulators(),
                            reason="iverilog not installed")


@pytest.mark.parametrize("params,simulator,random_count,seed", [
    pytest.param(MAIN, "verilator", 10_000, 1, id="main-verilator"),
    pytest.param(SMALL, "icarus", 1_000, 3, id="small-icarus", marks=ICARUS),
    pytest.param(SMALL, "icarus", 10_000, 3, id="small-icarus-long",
                 marks=[ICARUS, pytest.mark.long]),
    pytest.param(SMALL, "verilator", 4_000, 2, id="small-verilator", marks=pytest.mark.slow),
    pytest.param(MAIN, "icarus", 10_000, 5, id="main-icarus-long",
                 marks=[ICARUS, pytest.mark.long]),
])
def test_random_requests(run_top, params, simulator, random_count, seed):
    """The bench's random requests all answered as the memory and golden
    models say (the bench asserts each response; at least 10 must run)."""
    assert run_top(params, simulator, random_count, seed=seed) >= 10
