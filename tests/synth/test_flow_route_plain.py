"""``python -m neuron_fabric.synth.route --plain``: ECP5 synthesis without the
flow's KEEP_FLOPS step (what an integrator's plain flow runs), cached under
a key of its own; the flow's own key is unchanged."""

import json
from types import SimpleNamespace

import pytest

from neuron_fabric.synth import ecp5, flowlib, route


def test_plain_synthesis_skips_keep_flops_under_its_own_key(tmp_path, monkeypatch):
    calls = []

    def synthesise(vfile, script, config, prefix, name, keep_flops=True):
        calls.append(keep_flops)
        out = tmp_path / f"netlist{len(calls)}.json"
        out.write_text(json.dumps({"modules": {"m": {"cells": {"c": {"type": "LUT4"}}}}}))
        return out

    monkeypatch.setattr(flowlib, "yosys_json", synthesise)
    monkeypatch.setattr(flowlib, "CACHE", tmp_path / "cache")
    vfile = tmp_path / "m.v"
    vfile.write_text("module m; endmodule\n")
    config = SimpleNamespace(module="m", name="m")
    ecfg = {"synth": "synth_ecp5 -top {top}"}
    _, stats, flow_key = ecp5.ecp5_netlist(config, vfile, dict(ecfg), "yosys x")
    _, _, plain_key = ecp5.ecp5_netlist(config, vfile, dict(ecfg, keep_flops=False), "yosys x")
    assert calls == [True, False] and stats["cell_types"] == {"LUT4": 1}
    assert flow_key == flowlib.digest(flowlib.CACHE_VERSION, vfile.read_text(),
                                      flowlib.KEEP_FLOPS, ecfg["synth"], "yosys x")
    assert plain_key != flow_key
    ecp5.ecp5_netlist(config, vfile, dict(ecfg, keep_flops=False), "yosys x")
    assert calls == [True, False]                       # the second plain run is cached


def test_block_routes_refuse_top_only(capsys):
    with pytest.raises(SystemExit) as exc:
        route.main(["--block", "csr", "--top-only"])
    assert exc.value.code == 2
    assert "drop --top-only" in capsys.readouterr().err
