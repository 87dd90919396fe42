"""Smoke test of the generic-synthesis flow, the GE model and the report:
the smallest width of the paper profile through each, into a scratch
reports folder.  Sanity only; the targets are measured by `make report`."""

import json
import os
import subprocess
import sys

import pytest

from neuron_fabric.contract.paths import REPO


def run(script, reports, *args):
    env = dict(os.environ, NEURON_FABRIC_REPORTS=str(reports))
    proc = subprocess.run([sys.executable, "-m", f"neuron_fabric.synth.{script}", *args],
                          cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def reports():
    path = REPO / "build" / "test_flow" / "synth"
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_generic_synthesis_ge_and_report(reports):
    run("generic", reports, "--line-bits", "64", "--profiles", "paper", "--jobs", "1")
    rows = json.loads((reports / "synth.json").read_text())
    assert len(rows) == 1
    row = rows[0]
    assert (row["profile"], row["line_bits"], row["workers"], row["stages"]) == \
        ("paper", 64, 8, 5)
    assert 0 < row["registers"] < row["cells"]
    assert row["logic_cells"] == row["cells"] - row["registers"]
    # At least the 64 data bits pass through each of the five registers.
    assert row["registers"] >= 64 * 5
    assert 0 < row["levels"] < 50
    assert len(row["levels_per_stage"]) == 5 and max(row["levels_per_stage"]) <= row["levels"]
    for ext in ("csv", "md"):
        assert (reports / f"synth.{ext}").read_text().count("paper") >= 1

    run("ge", reports)
    ge = json.loads((reports / "ge.json").read_text())[0]
    assert ge["ge"] > row["cells"] * 0.5
    assert 0 < ge["area_mm2"] < 1
    assert 0 < ge["energy_pj_per_line"] < 100
    assert 0 < ge["stage_delay_ps"] < 2000
    assert ge["slack_ps_2ghz"] == pytest.approx(500 - ge["stage_delay_ps"])
    assert "proxy" in (reports / "ge.md").read_text().lower()

    run("report", reports)
    text = (reports / "hardware.md").read_text()
    assert "184.88" in text and "make synth" in text
    for png in ("cells_vs_width.png", "fmax_vs_width.png", "fmax_slack_vs_stages.png"):
        assert (reports / png).read_bytes()[:4] == b"\x89PNG"


def test_ge_weights_are_nand2_equivalents():
    from neuron_fabric.synth import ge
    assert ge.cell_ge("$_NAND_") == 1.0
    assert ge.cell_ge("$_NOT_") < ge.cell_ge("$_NAND_") < ge.cell_ge("$_XOR_")
    assert ge.cell_ge("$_DFF_P_") < ge.cell_ge("$_DFFE_PP_") < ge.cell_ge("$_SDFFCE_PP0P_")
    assert ge.AREA_PER_GE_UM2 * 24716 == pytest.approx(4943, rel=1e-6)
