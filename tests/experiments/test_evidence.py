"""make evidence: the rate search ends on an interior rate, the paired
intervals and verdicts against hand-worked numbers, the rates every row
takes, and the quick form end to end."""

import json

import numpy as np
import pytest

from neuron_fabric.experiments.train import evidence as ev


def test_the_search_walks_outward_until_the_best_rate_is_interior():
    # Validation accuracy peaks at 3e-2: from (1e-4, 3e-4, 1e-3) the search
    # adds 3e-3, 1e-2, 3e-2, 0.1 and stops (3e-2 now has a neighbour above).
    peak = np.log10(3e-2)
    tried = {}
    todo = [1e-4, 3e-4, 1e-3]
    while todo:
        for lr in todo:
            tried[lr] = -abs(np.log10(lr) - peak)
        todo = ev.next_rates(tried)
    assert sorted(tried) == [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1]


def test_the_search_stops_at_the_ladders_end_and_prefers_the_smaller_rate_on_a_tie():
    assert ev.next_rates({0.3: 0.5, 1.0: 0.9}) == []              # 1.0 ends the ladder
    assert ev.next_rates({1e-5: 0.9, 3e-5: 0.1}) == []
    assert ev.next_rates({1e-4: 0.5, 3e-4: 0.5, 1e-3: 0.2}) == [3e-5]  # tie: the smaller
    assert ev.next_rates({1e-4: 0.2, 3e-4: 0.5, 1e-3: 0.2}) == []


def test_paired_interval_by_hand():
    # differences 1, 2, 3, 4, 5: mean 3, s = sqrt(2.5), t(0.975, 4) = 2.776:
    # half width 2.776 * 1.5811 / sqrt(5) = 1.963
    ours = {str(s): 10.0 + s for s in range(1, 6)}
    ref = {str(s): 10.0 for s in range(1, 6)}
    d = ev.paired(ours, ref)
    assert d["mean"] == pytest.approx(3.0)
    assert d["hi"] - d["mean"] == pytest.approx(1.963, abs=1e-3)
    assert ev.verdict(1.5, d) == "agrees" and ev.verdict(0.5, d) == "does not agree"
    with pytest.raises(ValueError, match="no seed in common"):
        ev.paired({"1": 1.0}, {"2": 1.0})


def test_every_row_takes_the_rate_chosen_for_it():
    chosen = {("pairs-hard", "fp32", "negative", 32): 0.03,
              ("pairs-hard", "gbinary-backbone+fp32-head", "random", 32): 1e-4,
              ("pairs-hard", "gbinary", "random", 32): 3e-4}
    split = ev.Arm("pairs-hard", "gbinary-backbone+fp32-head", "random")
    ablation = ev.Arm("pairs-hard", "gbinary-backbone+fp32-head@low-bit-lr+adam", "random")
    uniform = ev.Arm("pairs-hard", "gbinary", "random")
    assert ev.tuning_key(ablation, 32) == ev.tuning_key(split, 32)
    assert ev._rates(ev.tuning_key(split, 32), chosen) == {"backbone": 1e-4, "head": 0.03}
    key = ("pairs-hard", ablation.policy, "random", 32)
    assert ev._rates(key, {**chosen, key: 1e-4}) == {"backbone": 1e-4, "head": 1e-4}
    assert ev._rates(ev.tuning_key(uniform, 32), chosen) == {"backbone": 3e-4, "head": 3e-4}


def test_tuning_and_reported_seeds_are_disjoint_and_every_arm_has_five_seeds():
    assert ev.TUNE_SEED not in ev.SEEDS and len(ev.SEEDS) >= 5
    assert all(a.encoding in ev.DEPLOYABLE + ("abstain",) for a in ev.HARD_ARMS)


@pytest.mark.long
def test_quick_run_writes_claims(tmp_path):
    path = ev.run(tmp_path, jobs=1, quick=True)
    data = json.loads(path.read_text())
    assert data["quick"] and data["claims"]
    assert {c["verdict"] for c in data["claims"]} <= set(ev.VERDICTS)


def _part(batch, pilots):
    diff = dict(mean=-1.0, lo=-2.0, hi=0.0, n=5, diffs=[-1.0] * 5)
    split = dict(label="G-Binary backbone + FP32 head", policy="gbinary-backbone+fp32-head",
                 encoding="random", accuracy={}, vs_fp32=diff)
    return dict(quick=False, jobs=1, seeds=[1, 2, 3, 4, 5], batches=[batch], wall_seconds=60.0,
                group_sizes={"pairs-hard": {"backbone": 10, "head": 1}},
                tuning=[dict(batch=batch, interior=True)], pilots=pilots,
                rows={"pairs-hard": {str(batch): {"gbinary-backbone+fp32-head@random": split}}})


def test_parts_of_disjoint_batch_sizes_merge_into_one_evidence(tmp_path):
    # The paper's split gap, -1.34, lies inside [-2, 0]: "agrees" at both batch sizes.
    paths = []
    for batch, pilots in ((16, {"fault_rows": []}), (64, {})):
        paths.append(tmp_path / f"part{batch}.json")
        paths[-1].write_text(json.dumps(_part(batch, pilots)))
    data = json.loads(ev.merge(paths, tmp_path).read_text())
    assert data["batches"] == [16, 64] and set(data["rows"]["pairs-hard"]) == {"16", "64"}
    assert len(data["tuning"]) == 2 and data["wall_seconds"] == 120.0
    assert [(q["batches"], q["wall_seconds"], q["pilots"]) for q in data["parts"]] == \
        [([16], 60.0, True), ([64], 60.0, False)]
    assert data["pilots"] == {"fault_rows": []}
    split = [c for c in data["claims"] if c["claim"].startswith("Table 6: G-Binary backbone")]
    assert [(c["batch"], c["verdict"]) for c in split] == [(16, "agrees"), (64, "agrees")]


def test_a_regime_where_fp32_does_not_train_tests_nothing(tmp_path):
    # FP32 at 1.2% on the 100-class task (chance 1%): the split's interval
    # [-2, 0] holds the paper's -1.34, but the verdict is "not tested".
    part = _part(16, {})
    part["rows"]["pairs-hard"]["16"]["fp32"] = dict(accuracy_mean=1.2)
    path = tmp_path / "part.json"
    path.write_text(json.dumps(part))
    split = [c for c in json.loads(ev.merge([path], tmp_path).read_text())["claims"]
             if c["claim"].startswith("Table 6: G-Binary backbone")]
    assert split[0]["verdict"] == "not tested in a comparable regime"
    assert "FP32 reaches 1.2%" in split[0]["reason"]
    assert ev.untrained({"pairs-hard": {"16": {"fp32": dict(accuracy_mean=40.0)}}},
                        "pairs-hard", 16) is None
