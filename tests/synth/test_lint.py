"""Verilator lint of the exported datapath core (``neuron_fabric.sim.lint``)."""

import pytest

from neuron_fabric.sim import lint
from neuron_fabric.contract.paths import BUILD


@pytest.mark.parametrize("line_bits,workers,stages,profile", [
    (64, 4, 1, "full"),
    (512, 8, 5, "paper"),
])
def test_exported_datapath_lints_clean(export_datapath, line_bits, workers, stages, profile):
    passed, output = lint.lint_file(export_datapath(line_bits, workers, stages, profile))
    assert passed, output


def test_lint_catches_a_real_problem():
    """A warning kind that is not waived fails the lint."""
    folder = BUILD / "lint_selftest"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "undriven.v"
    path.write_text("module undriven(input wire a, output wire y);\n"
                    "  wire z;\n  assign y = a & z;\nendmodule\n")
    passed, output = lint.lint_file(path)
    assert not passed and "UNDRIVEN" in output


def test_every_waiver_has_a_reason():
    for kind, reason in lint.WAIVERS.items():
        assert kind.isupper() and len(reason) > 40, kind


def test_cli_reports_missing_files(tmp_path):
    assert lint.main([str(tmp_path)]) == 2
