"""The pilots' training loop with a fault on the low-bit path: reproducible
run to run, confined to its window, and invisible to the FP32 path."""

import json

import pytest

from neuron_fabric.experiments import pilots
from neuron_fabric.experiments.pilots import DeviceFault, LoopConfig, run_on_model
from neuron_fabric.experiments.train.models import GROUPS

TINY = dict(steps=12, channels=(2, 4), hidden=8, evals=2)


def _run(**kw):
    r = run_on_model(LoopConfig(**TINY, **kw))
    r.pop("params")
    r.pop("step_s")
    return r


def test_a_faulty_run_is_reproducible_and_confined_to_its_window():
    fixed = {g: "gbinary" for g in GROUPS}
    fault = DeviceFault(4, 8, 0.75)
    first, again = _run(fixed=fixed, fault=fault), _run(fixed=fixed, fault=fault)
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)
    clean = _run(fixed=fixed)
    assert first["flipped"] > 0 and clean["flipped"] == 0
    # the loss of step s is computed before step s's update: equal through step 4
    assert first["loss"][:5] == clean["loss"][:5]
    assert first["loss"][5] != clean["loss"][5]
    # evaluations at both edges of the window, with validation accuracy
    assert {4, 8} <= {c["step"] for c in first["curve"]}
    assert all("val" in c for c in first["curve"])


def test_the_fp32_path_never_sees_the_fault():
    fixed = {g: "fp32" for g in GROUPS}
    faulty, clean = _run(fixed=fixed, fault=DeviceFault(2, 10, 1.0)), _run(fixed=fixed)
    assert faulty["flipped"] == 0
    assert faulty["loss"] == clean["loss"]


def test_quick_rates_and_the_config_round_trip():
    rates, trials = pilots.tune_rates(quick=True)
    assert trials == [] and set(rates) == set(pilots.LR_GRID)
    assert all(rates[m] in pilots.LR_GRID[m] for m in rates)
    cfg = LoopConfig(**TINY, fault=DeviceFault(1, 3, 0.5))
    assert pilots.loop_config_from_json(pilots.loop_config_to_json(cfg)) == cfg


@pytest.mark.parametrize("bad", [-0.1, 1.1])
def test_fault_fraction_is_checked(bad):
    with pytest.raises(ValueError, match="fraction"):
        _run(fixed={g: "gbinary" for g in GROUPS}, fault=DeviceFault(0, 2, bad))


def test_a_subtle_fault_changes_the_run_only_from_its_start():
    fixed = {g: "gbinary" for g in GROUPS}
    clean = _run(fixed=fixed)
    for kind in ("stuck-lane", "stale-worker"):
        faulty = _run(fixed=fixed, fault=DeviceFault(4, 12, kind=kind))
        assert faulty["flipped"] > 0
        assert faulty["loss"][:5] == clean["loss"][:5] and faulty["loss"] != clean["loss"]
    with pytest.raises(ValueError, match="kind must be one of"):
        DeviceFault(0, 2, kind="melted")


def test_fault_metrics_by_hand():
    # Supervisor returns at steps 40 (before the fault at 100: a false
    # alarm) and 107 and 150 (the first after the start: delay 7).
    summary = dict(decisions=[dict(step=40, reason="Supervisor: loss"),
                              dict(step=60, reason="Commander: admission"),
                              dict(step=107, reason="Supervisor: loss"),
                              dict(step=150, reason="Supervisor: loss")],
                   final_accuracy=0.9, traffic_ratio=0.2, low_bit_share=0.5)
    m = pilots.fault_metrics(summary, 100)
    assert (m["detection_delay"], m["false_alarms"]) == (7, 1)
    quiet = dict(summary, decisions=[dict(step=60, reason="Commander: admission")])
    rows = pilots.faults.fault_rows({"stuck lane": {"t": {"0": summary, "1": quiet}}}, 100)
    assert rows[0]["detected"] == 1 and rows[0]["mean_delay"] == 7
    assert rows[0]["accuracy_mean"] == pytest.approx(90.0) and rows[0]["accuracy_std"] == 0.0
