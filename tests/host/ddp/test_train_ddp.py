"""End to end: torch.distributed training with the hook (4 processes, G-Binary,
the easy task) lands within 2 points of the in-process harness (JAX, 4
virtual workers, the device model) with the same seed; and the hook as a
drop-in (its defaults, the FP32 optimiser and rate for every step)
converges (2 processes)."""

import pytest

pytest.importorskip("torch", reason="the DDP hook needs torch (pip install -e '.[torch]')")
pytest.importorskip("jax", reason="the in-process harness needs JAX")

pytestmark = pytest.mark.xdist_group("ddp")


def test_ddp_training_matches_the_harness(job):
    from neuron_fabric.experiments.train import RunConfig, train
    from neuron_fabric.experiments.train.policies import tuned_lr
    results = job(4)
    assert all(r.ok for r in results), [(r.rank, r.error, r.stderr[-2000:]) for r in results]
    ddp = results[0].value["train"]
    assert all(set(m.values()) == {"gbinary"} for m in ddp["modes"])
    lr = tuned_lr("digits", "gbinary")
    ref = train(RunConfig(task="digits", policy="gbinary", lr={"backbone": lr, "head": lr},
                          seed=0, workers=4), progress=False)
    assert abs(ddp["test"] - ref["test"]) <= 0.02, (ddp["test"], ref["test"])
    assert ddp["test"] > 0.9


def test_drop_in_converges_at_the_fp32_rate(job):
    results = job(2)
    assert all(r.ok for r in results), [(r.rank, r.error, r.stderr[-2000:]) for r in results]
    run = results[0].value["drop-in"]
    assert all(set(m.values()) == {"gbinary"} for m in run["modes"])
    assert run["config"]["lr_low"] is None and run["config"]["drop_in"]
    assert run["test"] > 0.9, run["test"]
