"""End to end: torch.distributed training with the hook (4 processes, G-Binary,
the easy task) lands within 2 points of the in-process harness (JAX, 4
virtual workers, the device model) with the same seed."""

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
