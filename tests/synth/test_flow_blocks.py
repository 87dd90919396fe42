"""`python -m neuron_fabric.synth.route --block NAME`: one block of the top
routed alone.  Argument errors, the registered harness in Verilog, and one
real route of the smallest block into a scratch reports folder."""

import json

import pytest

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.contract.paths import REPO
from neuron_fabric.synth import blocks, flowlib, route

SMALL = TopParams(line_bits=64, workers=4, stages=1, regions=1, max_outstanding=4)


@pytest.mark.parametrize("argv, named", [
    (["--block", "alu"], "'alu'"),
    (["--block", "csr", "--top"], "--top"),
    (["--block", "csr", "--line-bits", "64"], "--line-bits"),
])
def test_block_argument_errors_are_one_line(argv, named, capsys):
    with pytest.raises(SystemExit) as exc:
        route.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "usage" not in err
    assert err.startswith("python -m neuron_fabric.synth.route: error: ") and named in err


@pytest.mark.parametrize("name", sorted(set(blocks.BLOCKS) - {"top"}))
def test_every_block_elaborates_with_its_ports_registered(name):
    text = blocks.block_verilog(blocks.Block.of(name, SMALL))
    assert "module nf_block(" in text
    # every input port is sampled by a register of the harness
    assert "port_" in text and "always @(posedge clk)" in text


def test_block_route_writes_its_own_report(monkeypatch, capsys):
    """A low-effort route of the in-flight table (about 10 s): its row goes to
    blocks.json beside the rows already there, never to route.json."""
    reports = REPO / "build" / "test_flow" / "blocks"
    reports.mkdir(parents=True, exist_ok=True)
    (reports / "route.json").unlink(missing_ok=True)
    (reports / "blocks.json").write_text(json.dumps([{"block": "csr", "seed": 9}]))
    monkeypatch.setattr(flowlib, "REPORTS", reports)
    assert route.main(["--block", "inflight", "--smoke", "--jobs", "1"]) == 0
    rows = json.loads((reports / "blocks.json").read_text())
    assert [(r["block"], r["seed"]) for r in rows] == [("csr", 9), ("inflight", 1)]
    row = rows[1]
    assert 10 < row["fmax_mhz"] < 2000 and row["lut4"] > 0 and row["ff"] > 0
    assert " -> " in row["critical_path"]
    assert not (reports / "route.json").exists()
    assert "inflight seed 1:" in capsys.readouterr().out


def test_block_endpoints_smoke(monkeypatch):
    """`endpoints --block`: the endpoint analysis of a block alone, every
    flip-flop input counted once, by class and by register group, and the
    harness's port registers among them."""
    from neuron_fabric.synth import endpoints
    reports = REPO / "build" / "test_flow" / "block_endpoints"
    reports.mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(flowlib, "REPORTS", reports)
    assert endpoints.main(["--block", "ndr", "--smoke", "--jobs", "1"]) == 0
    rows = json.loads((reports / "endpoints.json").read_text())
    assert len(rows) == 1 and rows[0]["block"] == "ndr"
    row = rows[0]
    assert row["endpoints"] == sum(c["endpoints"] for c in row["classes"])
    assert row["endpoints"] == sum(g["endpoints"] for g in row["groups"])
    # the NDR tag leaves through a harness register of its own
    assert any(g["group"] == "ndr_tag" for g in row["groups"])
    assert "## block `ndr` (ports registered)" in (reports / "endpoints.md").read_text()
