"""Checkpoints: the hook's state saved with ``torch.save`` at step 3 of a
2-rank run (G-Binary after a 2-step warm-up, with error feedback) and
loaded into a fresh job of 2 processes (a new process group, new
parameters) gives, at steps 3 to 5, the same gradients as the run that went
on: the step, the modes and the residuals came back."""

import pathlib

import numpy as np
import pytest

pytest.importorskip("torch", reason="the DDP hook needs torch (pip install -e '.[torch]')")

HERE = pathlib.Path(__file__).parent

pytestmark = pytest.mark.xdist_group("ddp")


def test_resume_in_a_fresh_process_group(job):
    from neuron_fabric.host.ddp.launch import spawn
    first = job(2)
    assert all(r.ok for r in first), [(r.rank, r.error, r.stderr[-2000:]) for r in first]
    runs = [r.value["checkpoint"] for r in first]
    resumed = spawn(f"{HERE / 'ranks.py'}:resume", 2,
                    dict(checkpoints=[run["checkpoint"] for run in runs]), timeout_s=120)
    assert all(r.ok for r in resumed), [(r.rank, r.error, r.stderr[-2000:]) for r in resumed]
    for run, r in zip(runs, resumed):
        value = r.value
        assert value["step"] == 6 and set(value["modes"].values()) == {"gbinary"}
        assert value["events"] == run["events"]
        for step, (want, got) in enumerate(zip(run["grads"], value["grads"])):
            for index, (a, b) in enumerate(zip(want, got)):
                np.testing.assert_array_equal(b, a, err_msg=f"rank {r.rank}, step {3 + step}, "
                                                            f"parameter {index}")
