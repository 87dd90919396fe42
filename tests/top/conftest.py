"""Shared pytest helpers of the top's tests."""

import pytest

from neuron_fabric.hdl.export import cached_verilog, top_verilog, write_verilog
from neuron_fabric.host.facts import TOP_MODULE
from neuron_fabric.sim.toolchain import BUILD, VERILOG_CACHE, run_cocotb


def _run_top_bench(params, simulator, test_module, build_name, testcase=None, **bench):
    """Export the top for ``params`` (``TopParams``) and run the cocotb bench
    ``test_module`` on it; the bench reads ``params`` and ``bench``."""
    src = write_verilog(BUILD / "cocotb" / "src" / params.tag() / "neuron_fabric.v",
                        cached_verilog(top_verilog, VERILOG_CACHE, line_bits=params.line_bits,
                                       workers=params.workers, stages=params.stages,
                                       regions=params.regions,
                                       max_outstanding=params.max_outstanding))
    return run_cocotb(sources=[src], toplevel=TOP_MODULE, test_module=test_module,
                      simulator=simulator, build_dir=BUILD / "cocotb" / build_name,
                      testcase=testcase, params=dict(params.__dict__, **bench))


@pytest.fixture(scope="session")
def run_top_bench():
    """``run_top_bench(params, simulator, test_module, build_name, testcase=None,
    **bench)``: the number of cocotb tests that ran (each run fails on a failed test)."""
    return _run_top_bench
