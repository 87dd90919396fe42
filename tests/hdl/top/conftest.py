"""Shared pytest helpers of the top's tests."""

import pytest

from neuron_fabric.contract.facts import TOP_MODULE
from neuron_fabric.contract.paths import BUILD
from neuron_fabric.sim.toolchain import export_top, run_cocotb


def _run_top_bench(params, simulator, test_module, build_name, testcase=None, **bench):
    """Export the top for ``params`` (``TopParams``) and run the cocotb bench
    ``test_module`` on it; the bench reads ``params`` and ``bench``."""
    src = export_top(params, BUILD / "cocotb" / "src" / params.tag() / "neuron_fabric.v")
    return run_cocotb(sources=[src], toplevel=TOP_MODULE, test_module=test_module,
                      simulator=simulator, build_dir=BUILD / "cocotb" / build_name,
                      testcase=testcase, params=dict(params.__dict__, **bench))


@pytest.fixture(scope="session")
def run_top_bench():
    """``run_top_bench(params, simulator, test_module, build_name, testcase=None,
    **bench)``: the number of cocotb tests that ran (each run fails on a failed test)."""
    return _run_top_bench
