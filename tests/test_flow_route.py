"""Smoke test of the ECP5 route flow: the smallest width of the paper
profile, one seed, no timing-driven placement, into a scratch reports
folder.  Sanity only; the targets are measured by `make route`."""

import json
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent


def test_route_smoke():
    reports = REPO / "build" / "test_flow" / "route"
    reports.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, NEURON_FABRIC_REPORTS=str(reports))
    proc = subprocess.run(
        [sys.executable, str(REPO / "synth" / "route.py"), "--line-bits", "64",
         "--profiles", "paper", "--smoke", "--jobs", "1"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads((reports / "route.json").read_text())
    assert len(rows) == 1
    row = rows[0]
    assert (row["profile"], row["line_bits"], row["stages"]) == ("paper", 64, 5)
    assert 10 < row["fmax_mhz"] < 2000
    assert row["lut4"] > 0 and row["ff"] >= 64 * 5
    summary = (reports / "route.csv").read_text().splitlines()
    assert summary[0].startswith("profile,line_bits") and len(summary) == 2
    assert "fmax_median" in (reports / "route.md").read_text()
