"""Conformance of the exported datapath core to contract section 3 (cocotb).

Each parameter set is exported under build/conformance/, built and simulated
once per pytest session; every cocotb test of sim/conformance/datapath_section3.py is
reported as its own pytest item.
"""

import pytest

from neuron_fabric.sim.conformance.common import check_result, conformance_params, run_module_once

TESTS = [
    "ports_and_widths",
    "reset_in_ready_and_latency",
    "lanes_all_modes_formats_gates",
    "random_gaps_backpressure_scoreboard",
    "out_of_range_fields_do_not_disturb",
    "reset_mid_stream",
    "out_valid_does_not_wait_for_out_ready",
]

# (line_bits, workers, stages, simulator, slow)
CONFIGS = [
    (64, 4, 1, "verilator", False),
    (256, 8, 3, "verilator", False),
    (64, 4, 1, "icarus", False),
    (512, 16, 5, "verilator", True),
]

# Departures from the contract found by this bench, as strict expected failures:
# (config id or "*", test) -> reason.  Empty: the design meets every check here.
XFAIL = {}


def _cfg_id(c):
    return f"{c[0]}x{c[1]}s{c[2]}-{c[3]}"


@pytest.mark.parametrize("cfg,test", conformance_params(CONFIGS, TESTS, _cfg_id, XFAIL,
                                                       sim_index=3, slow_index=4))
def test_datapath_conformance(cfg, test):
    line_bits, workers, stages, sim, _ = cfg
    name = f"dp_{line_bits}_{workers}_{stages}"
    results = run_module_once(
        name=name,
        export_kwargs=dict(line_bits=line_bits, workers=workers, stages=stages),
        toplevel="neuron_fabric_datapath",
        sources=["neuron_fabric_datapath.v"],
        test_module="neuron_fabric.sim.conformance.datapath_section3",
        simulator=sim,
        params=dict(line_bits=line_bits, workers=workers, stages=stages, seed=7),
    )
    check_result(results, test, f"build/conformance/{name}/{sim}")
