"""Checkpoints: the hook's state saved with ``torch.save`` at step 3 of a
2-rank run (G-Binary after a 2-step warm-up, with error feedback) and
loaded into a fresh job of 2 processes (a new process group, new
parameters) gives, at steps 3 to 5, the same gradients as the run that went
on: the step, the modes and the residuals came back.  With a live control
plane, saved at step 2, before the Commander's admission decision (it
rests on the warm-up diagnostics of steps 0 and 1, one of them fed to
it before the checkpoint, the other saved with the state), the resumed
run makes the same decisions on the same steps: the admission at step 2,
the recovery after the non-finite loss at step 6, the re-admission (a
Commander built anew at the resumption would not admit at step 2)."""

import pathlib

import numpy as np
import pytest

pytest.importorskip("torch", reason="the DDP hook needs torch (pip install -e '.[torch]')")

HERE = pathlib.Path(__file__).parent

pytestmark = pytest.mark.xdist_group("ddp")


@pytest.fixture(scope="module")
def resumed(job):
    """The 2-rank job's runs that saved checkpoints, and a fresh 2-process
    job's resumptions of them: ``[(run, resumed)]`` per scenario key."""
    from neuron_fabric.host.ddp.launch import spawn
    first = job(2)
    assert all(r.ok for r in first), [(r.rank, r.error, r.stderr[-2000:]) for r in first]
    plan = [(key, name, dict(checkpoints=[r.value[key]["checkpoint"] for r in first]))
            for key, name in (("checkpoint", "resume"), ("live-checkpoint", "live_resume"))]
    again = spawn(f"{HERE / 'ranks.py'}:scenarios", 2, dict(plan=plan), timeout_s=180)
    assert all(r.ok for r in again), [(r.rank, r.error, r.stderr[-2000:]) for r in again]
    return {key: [(a.value[key], b.value[key]) for a, b in zip(first, again)]
            for key, _, _ in plan}


def _same_grads(run, value, first_step, rank):
    for step, (want, got) in enumerate(zip(run["grads"][-len(value["grads"]):],
                                           value["grads"])):
        for index, (a, b) in enumerate(zip(want, got)):
            np.testing.assert_array_equal(
                b, a, err_msg=f"rank {rank}, step {first_step + step}, parameter {index}")


def test_resume_in_a_fresh_process_group(resumed):
    for rank, (run, value) in enumerate(resumed["checkpoint"]):
        assert value["step"] == 6 and set(value["modes"].values()) == {"gbinary"}
        assert value["events"] == run["events"]
        _same_grads(run, value, 3, rank)


def test_resume_with_the_control_plane_live(resumed):
    for rank, (run, value) in enumerate(resumed["live-checkpoint"]):
        assert value["modes"] == run["modes"][2:]
        assert value["events"] == run["events"]
        assert any(e["kind"] == "re-admission" and e["step"] >= 2 for e in value["events"])
        _same_grads(run, value, 2, rank)
