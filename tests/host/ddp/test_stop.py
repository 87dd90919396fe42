"""A rank that stops mid-step: every other rank fails with an error naming it,
and only it, never hangs (the job is killed, and the test fails, if a rank
is still running at 300 s): 8 ranks, a 10 s timeout and a 3 s census, the
stopped rank crashing; 4 ranks, a 2 s timeout and the default census, the
stopped rank staying alive but out of the step.  The error's message states
the time that really passed."""

import re

import pytest

pytest.importorskip("torch", reason="the DDP hook needs torch (pip install -e '.[torch]')")

pytestmark = pytest.mark.xdist_group("ddp")


def test_every_other_rank_names_the_stopped_one(job):
    results = job(8)
    victim = results[5]
    assert not victim.ok
    for r in results:
        if r.rank == 5:
            continue
        assert r.ok, (r.rank, r.error, r.stderr[-2000:])
        stop = r.value["stop"]
        assert stop["missing"] == [5], stop
        assert "rank 5 did not take part" in stop["error"], stop["error"]


def test_short_timeout_names_exactly_the_stopped_rank(job):
    results = job(4)
    assert all(r.ok for r in results), [(r.rank, r.error, r.stderr[-2000:]) for r in results]
    assert results[2].value["stop"] == dict(stopped=2)
    for r in results:
        if r.rank == 2:
            continue
        stop = r.value["stop"]
        assert stop["missing"] == [2], stop
        assert "rank 2 did not take part" in stop["error"], stop["error"]
        # the time in the message is the time the rank spent in the failed step
        said = float(re.search(r"after (\d+\.\d) s", stop["error"]).group(1))
        assert said <= stop["after_s"] + 0.1 and said >= stop["after_s"] - 1.0, stop
