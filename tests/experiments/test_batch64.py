"""make train-batch64: the runs it plans (from the module's docstring: FP32,
G-Binary under both encodings, the G-Binary split with zeros abstaining;
64 examples a worker, seed 0, make train's steps and rates) and its report
on a smoke run."""

import json

from neuron_fabric.experiments.train import batch64


def test_the_four_runs():
    runs = {(c["policy"], c["encoding"]): c for c in batch64.configs()}
    assert set(runs) == {("fp32", "negative"), ("gbinary", "negative"), ("gbinary", "abstain"),
                         ("gbinary-backbone+fp32-head", "abstain")}
    assert all(c["batch"] == 64 and c["seed"] == 0 and c["steps"] == 600
               and c["task"] == "pairs-hard" and c["wide"] == 1024 for c in runs.values())
    # the abstaining split: the backbone at the abstaining rate, the head at FP32's
    split = runs[("gbinary-backbone+fp32-head", "abstain")]["lr"]
    assert split == {"backbone": runs[("gbinary", "abstain")]["lr"]["backbone"],
                     "head": runs[("fp32", "negative")]["lr"]["head"]}


def test_smoke_report(tmp_path):
    paths = batch64.run(tmp_path, jobs=1, quick=True)
    data = json.loads(paths[0].read_text())
    assert data["quick"] and data["batch"] == 64 and len(data["runs"]) == 1
    assert data["runs"][0]["steps"] == 2
    assert "QUICK SMOKE RUN" in paths[1].read_text()
