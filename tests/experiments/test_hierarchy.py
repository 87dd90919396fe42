"""``make hierarchy``'s entry point at tiny sizes (experiments/hierarchy)."""

import json

import pytest

from neuron_fabric.host import hierarchy as hy


@pytest.mark.slow
def test_report_smoke(tmp_path):
    from neuron_fabric.experiments.hierarchy import report
    paths = report.run_all(tmp_path, jobs=1, quick=True)
    names = {p.name for p in paths}
    assert {"hierarchy.json", "hierarchy.md", "hierarchy_disagreement.png",
            "hierarchy_timing.png", "hierarchy_training.png", "hierarchy_bits.png"} <= names
    r = json.loads((tmp_path / "hierarchy.json").read_text())
    real = r["study"]["real"]
    assert {row["scheme"] for row in real} == set(hy.SCHEMES)
    assert all(row["disagreement"] == 0 for row in real if row["scheme"] == "exact")
    # (8, 8, 1) is the contract's two-level case: checked through the count path
    assert any(row["contract_checked"] for row in real if row["total"] == 64)
    assert [t["batch"] for t in r["training"]] == [2, 16]
    base = {"fp32", "exact", "mom", "mom-ternary", "dq-grad", "signofmean"}
    sweep = {f"dq-{v}-b{b}" for v in ("sign", "grad") for b in (1, 2, 3, 4, 8)}
    assert set(r["training"][0]["schemes"]) == base | sweep
    assert set(r["training"][1]["schemes"]) == base
    rows = r["sweep"]["real"]
    assert {(x["scheme"], x["bits"], x["rounding"]) for x in rows if x["scheme"] == "dq-grad"} \
        == {("dq-grad", b, rd) for b in (1, 2, 3, 4, 8) for rd in hy.ROUNDINGS}
    assert "Quick smoke run" in (tmp_path / "hierarchy.md").read_text()
