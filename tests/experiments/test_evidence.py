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
