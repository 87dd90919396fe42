"""Conformance of the exported top ``neuron_fabric`` to contract section 4 (cocotb).

Each parameter set is exported under build/conformance/, built and simulated
once per pytest session; every cocotb test of the section modules of
sim/conformance/ (``TOP_MODULES``) is reported as its own pytest item.
"""

import ast
import pathlib

import pytest

from neuron_fabric.sim.conformance import TOP_MODULES
from neuron_fabric.sim.conformance.common import check_result, conformance_params, run_module_once
from neuron_fabric.sim.tb_top import SMALL_TOP

ROOT = pathlib.Path(__file__).resolve().parents[3]

TESTS = [
    "ports_and_widths",
    "csr_reset_values",
    "csr_rw_wstrb_reserved",
    "csr_bad_cfg_writes",
    "csr_ro_and_unmapped",
    "csr_status_rw1c",
    "req_opcodes",
    "rwd_opcodes",
    "axi_error_responses",
    "counters_and_snapshot",
    "region_selection_and_phase",
    "bypass_vs_lowbit_latency",
    "read_after_write",
    "devload_idle",
    "random_mixed_traffic",
    "csr_write_applies_after_bvalid",
    "random_mixed_with_errors",
    "phase_large_addresses",
    "config_captured_at_accept",
    "devload_full_table",
    "view_registers_and_refusals",
    "view_reads_and_bursts",
]

# (line_bits, workers, stages, regions, max_outstanding, simulator, slow); the
# parameter sets are the other benches' small and default tops (one export
# and one build a simulator with them)
_SMALL = (SMALL_TOP.line_bits, SMALL_TOP.workers, SMALL_TOP.stages, SMALL_TOP.regions,
          SMALL_TOP.max_outstanding)
CONFIGS = [
    (*_SMALL, "icarus", False),
    (*_SMALL, "verilator", True),
    (512, 8, 5, 8, 32, "verilator", True),     # the default top: one build with test_top_sim
]

# Departures from the contract found by this bench, as strict expected failures:
# (config id or "*", test) -> reason.  Empty: the design meets every check here.
XFAIL = {}


def _cfg_id(c):
    return f"{c[0]}x{c[1]}s{c[2]}r{c[3]}o{c[4]}-{c[5]}"


@pytest.mark.parametrize("cfg,test", conformance_params(CONFIGS, TESTS, _cfg_id, XFAIL,
                                                       sim_index=5, slow_index=6))
def test_top_conformance(cfg, test):
    line_bits, workers, stages, regions, max_out, sim, _ = cfg
    name = f"top_{line_bits}_{workers}_{stages}_{regions}_{max_out}"
    results = run_module_once(
        name=name,
        export_kwargs=dict(line_bits=line_bits, workers=workers, stages=stages,
                           regions=regions, max_outstanding=max_out, top=True),
        toplevel="neuron_fabric",
        sources=["neuron_fabric.v"],
        test_module=list(TOP_MODULES),
        simulator=sim,
        params=dict(line_bits=line_bits, workers=workers, stages=stages,
                    regions=regions, max_outstanding=max_out, seed=3,
                    # the export is the full profile, which implements the
                    # hierarchy extension (contract section 5)
                    hierarchy=True),
    )
    check_result(results, test, f"build/conformance/{name}/{sim}")


def _conformance_tests(module):
    """The cocotb tests a section module defines (``@conformance_test``), read from its source."""
    path = ROOT / (module.replace("neuron_fabric.", "").replace(".", "/") + ".py")
    tree = ast.parse(path.read_text())
    return [node.name for node in tree.body if isinstance(node, ast.AsyncFunctionDef)
            and any(getattr(d, "id", None) == "conformance_test" for d in node.decorator_list)]


def test_every_section_test_is_reported():
    """TESTS names exactly the cocotb tests of the section modules, once each."""
    found = [name for module in TOP_MODULES for name in _conformance_tests(module)]
    assert sorted(found) == sorted(TESTS)


def test_the_benches_stay_clean_room():
    """No conformance module imports the project's golden model, facts or register map."""
    banned = ("neuron_fabric.host", "neuron_fabric.contract.facts", "neuron_fabric.contract.regmap")
    bad = []
    for path in sorted((ROOT / "sim" / "conformance").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{path.name}: {n}" for n in names if n.startswith(banned)]
    assert not bad
