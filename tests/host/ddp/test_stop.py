"""A rank that stops mid-step: every other rank fails with an error naming it
after the process group's timeout (10 s here) and a 3 s census, never hangs
(the job is killed, and the test fails, if a rank is still running at 300 s)."""

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
