"""Formal checks of the datapath core with SymbiYosys (specs in
``neuron_fabric.sim.formal_datapath``; jobs written under ``build/formal/``)."""

import shutil
import sys
import pathlib

import pytest

from neuron_fabric.sim import formal_datapath


def _check(kind, line_bits, workers, stages):
    if shutil.which("yowasp-sby", path=str(pathlib.Path(sys.executable).parent)) is None:
        pytest.skip("yowasp-sby is not installed")
    passed, log = formal_datapath.run_sby(
        formal_datapath.write_job(kind, line_bits, workers, stages))
    assert passed, log[-4000:]


@pytest.mark.parametrize("line_bits,workers,stages", [
    (64, 4, 1),
    pytest.param(64, 8, 1, marks=pytest.mark.slow),
    pytest.param(64, 16, 1, marks=pytest.mark.slow),
])
def test_lane_equals_reference(line_bits, workers, stages):
    """Every lane of a line equals contract section 2, for every input and
    every configuration in range (IDENTITY/BYPASS: for any fields)."""
    _check("lane", line_bits, workers, stages)


@pytest.mark.parametrize("line_bits,workers,stages", [
    (64, 4, 1),
    (64, 4, 3),
    pytest.param(64, 8, 6, marks=pytest.mark.slow),
])
def test_handshake_against_ideal_model(line_bits, workers, stages):
    """No line lost, duplicated or reordered under any in_valid/out_ready
    pattern; in_ready follows out_ready; exact latency when not stalled."""
    _check("handshake", line_bits, workers, stages)
