"""The exposed overhead of the low-bit read at the STAGES each profile's core
closes at 2 GHz in the GE model: which STAGES, and the envelope model's
Table 4 at that many datapath cycles."""

import json

import pytest

from neuron_fabric.contract.facts import DATAPATH_MODULE, TOP_MODULE
from neuron_fabric.sim.envelope import report as envelope_report
from neuron_fabric.synth import flowlib, ge

# The envelope's anchor by hand (tests/sim/test_envelope.py): a
# latency-bound read waits 40 + 1 + 400 cycles, and a d-cycle datapath
# adds d of them.
RTT = 40 + 1 + 400


def _ge_row(profile, stages, slack, module=DATAPATH_MODULE):
    return dict(module=module, profile=profile, line_bits=512, workers=8, stages=stages,
                slack_ps_2ghz=slack)


def test_closing_stages_are_the_fewest_with_positive_slack(tmp_path, monkeypatch):
    monkeypatch.setattr(flowlib, "REPORTS", tmp_path)
    rows = [_ge_row("paper", 1, -10.0), _ge_row("paper", 2, 5.0), _ge_row("paper", 3, 90.0),
            _ge_row("full", 1, -320.0), _ge_row("full", 2, 0.0), _ge_row("full", 3, 70.0),
            _ge_row("full", 1, 999.0, TOP_MODULE)]
    (tmp_path / "ge.json").write_text(json.dumps(rows))
    got = ge.closing_stages(["full", "paper"], 512, 8, compute=False)
    assert got == {"full": {"stages": 3, "slack_ps_2ghz": 70.0, "source": "ge.json"},
                   "paper": {"stages": 2, "slack_ps_2ghz": 5.0, "source": "ge.json"}}
    # A profile whose rows are missing is left out when nothing may be synthesised.
    assert ge.closing_stages(["full"], 1024, 8, compute=False) == {}


def test_envelope_exposure_at_the_closing_stages(tmp_path):
    closing = {"paper": {"stages": 1, "slack_ps_2ghz": 20.0, "source": "ge.json"},
               "full": {"stages": 2, "slack_ps_2ghz": 20.0, "source": "ge.json"}}
    result = envelope_report.build(tmp_path, quick=True, closing=closing)
    closed = result["closed_stages"]
    for profile, c in closing.items():
        assert closed[profile]["stages"] == c["stages"]
        assert closed[profile]["single_stream_pct"] == \
            pytest.approx(100 * c["stages"] / RTT, rel=1e-6)
        assert closed[profile]["full_llc_miss_pct"] == \
            pytest.approx(100 * c["stages"] / RTT, rel=1e-3)
    assert result["single_stream_pct"] == pytest.approx(100 * 5 / RTT, rel=1e-6)
    text = (tmp_path / "envelope.md").read_text()
    assert "paper profile, 1 cycle (+20 ps) (%)" in text
    assert "full profile, 2 cycles (+20 ps) (%)" in text
    assert "| full LLC miss | 1.67 | 1.13 | 0.45 | 0.23 |" in text


def test_ge_without_a_synthesis_report_says_what_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(flowlib, "REPORTS", tmp_path)
    assert ge.main([]) == 2
    assert capsys.readouterr().err.strip() == "no build/reports/synth.json: run `make synth` first"
