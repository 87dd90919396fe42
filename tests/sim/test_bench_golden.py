"""Smoke run of `make bench` on a small buffer: it runs, covers every case and
writes a report that parses."""

import json

from neuron_fabric.sim import bench_golden


def test_bench_smoke(tmp_path, capsys):
    out = tmp_path / "bench.json"
    bench_golden.main(["--mib", "1", "--repeat", "1", "--out", str(out)])
    rows = json.loads(out.read_text())
    assert {(r["workers"], r["case"]) for r in rows} == {
        (w, case[0]) for w in (4, 8, 16) for case in bench_golden.CASES}
    assert all(r["seconds"] > 0 and r["gib_per_s"] > 0 for r in rows)
    assert "GiB/s" in capsys.readouterr().out
