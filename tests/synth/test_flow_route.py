"""Smoke test of the ECP5 route flow: the smallest width of the paper
profile, one seed, no timing-driven placement, into a scratch reports
folder.  Sanity only; the targets are measured by `make route`."""

import json
import os
import subprocess
import sys

from neuron_fabric.contract.paths import REPO


def _smoke(script):
    """Run ``synth/<script>.py`` on the smallest paper-profile configuration
    at low effort; return the folder its reports went to."""
    reports = REPO / "build" / "test_flow" / script
    reports.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, NEURON_FABRIC_REPORTS=str(reports))
    proc = subprocess.run(
        [sys.executable, "-m", f"neuron_fabric.synth.{script}", "--line-bits", "64",
         "--profiles", "paper", "--smoke", "--jobs", "1"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return reports


def test_route_smoke():
    reports = _smoke("route")
    rows = json.loads((reports / "route.json").read_text())
    assert len(rows) == 1
    row = rows[0]
    assert (row["profile"], row["line_bits"], row["stages"]) == ("paper", 64, 5)
    assert 10 < row["fmax_mhz"] < 2000
    assert row["lut4"] > 0 and row["ff"] >= 64 * 5
    summary = (reports / "route.csv").read_text().splitlines()
    assert summary[0].startswith("profile,line_bits") and len(summary) == 2
    assert "fmax_median" in (reports / "route.md").read_text()


def test_endpoints_smoke():
    """`make endpoints` on the smallest width: every flip-flop input is
    classified once, the counts add up, and a class's arrivals are ordered."""
    reports = _smoke("endpoints")
    rows = json.loads((reports / "endpoints.json").read_text())
    assert len(rows) == 1
    row = rows[0]
    assert (row["profile"], row["line_bits"], row["stages"]) == ("paper", 64, 5)
    assert 10 < row["fmax_mhz"] < 2000
    # Every flip-flop has a clock enable and at least the 64 x 5 data bits
    # have a data input, so there are more inputs than flip-flops.
    assert row["endpoints"] > 2 * 64 * 5
    assert row["endpoints"] == sum(c["endpoints"] for c in row["classes"])
    assert row["endpoints"] == sum(g["endpoints"] for g in row["groups"])
    assert row["late"] == sum(c["late"] for c in row["classes"])
    classes = {c["class"]: c for c in row["classes"]}
    assert "clock enable" in classes and "LUT4 -> FF (DI)" in classes
    for c in row["classes"]:
        assert 0 < c["median_ns"] <= c["worst_ns"] < 50
    assert "out_data" in {g["group"] for g in row["groups"]}
    for c in row["classes"]:
        assert sum(c["histogram"]) == c["endpoints"]
    assert "## paper profile, 64 bits" in (reports / "endpoints.md").read_text()


def test_endpoint_classes():
    """Driver/sink port pairs map to the documented classes, and register
    names lose their copy index."""
    from neuron_fabric.synth import endpoints
    assert endpoints.classify("F", "DI") == "LUT4 -> FF (DI)"
    assert endpoints.classify("F", "M") == "LUT4 -> FF (M)"
    assert endpoints.classify("OFX", "M") == "wide LUT -> FF (M)"
    assert endpoints.classify("Q", "M") == "FF -> FF"
    assert endpoints.classify("F", "CE") == "clock enable"
    assert endpoints.classify("F", "LSR") == "set/reset"
    assert endpoints.group_of("\\s3_margin_drop_g4_TRELLIS_FF_Q_1") == "s3_margin_drop"
    assert endpoints.group_of("s1_pattern_on_t16_TRELLIS_FF_Q") == "s1_pattern_on"
    assert endpoints.group_of("out_data_TRELLIS_FF_Q_65") == "out_data"
    assert endpoints.group_of("valid_2_g3_1_TRELLIS_FF_Q") == "valid chain"
    assert endpoints.group_of("out_valid_4_line_TRELLIS_FF_Q") == "valid chain"
    assert endpoints.group_of("\\$1221_TRELLIS_FF_Q") == "(unnamed)"
    assert endpoints.group_of("sig$266_TRELLIS_FF_Q") == "(unnamed)"
