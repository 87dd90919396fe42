"""Multi-hop All-Reduce timing (models/multihop.py) against
hand-computed cases and commtime's FP32 ring."""

import pytest

from neuron_fabric.models import commtime, multihop

# 1 kB/s links and 1 ms a step: times are easy to work by hand.
SLOW = commtime.CommParams(net_gb_s=1e-6, ring_step_us=1000.0)
META = 8 / 16 + 16 / 256


def test_ring_two_controllers_exact():
    # 800 coordinates, 2 chunks of 400.  Reduce-scatter: one step of one
    # controller's counts (0..8: 4 bits) = 200 B -> 0.2 s + 1 ms.  All-gather:
    # one step of the 1-bit sign = 50 B -> 0.05 s + 1 ms.
    r = multihop.ring(800, 2, 8, "exact", cp=SLOW)
    assert [s["bits_per_coord"] for s in r["steps"]] == [4, 1]
    assert [s["bytes"] for s in r["steps"]] == [200, 50]
    assert r["seconds"] == pytest.approx(0.252)
    assert r["bytes_per_controller"] == 250


def test_ring_widening_counts():
    # 4 controllers of 8: reduce-scatter chunks hold counts of 8, 16, 24
    # workers: 4, 5, 5 bits; all-gather 3 x 1 bit.  Chunk 1000 coordinates.
    r = multihop.ring(4000, 4, 8, "exact", cp=SLOW)
    assert [s["bits_per_coord"] for s in r["steps"]] == [4, 5, 5, 1, 1, 1]
    assert r["bytes_per_controller"] == 1000 * (4 + 5 + 5 + 3) / 8
    assert r["seconds"] == pytest.approx(1000 * 17 / 8 / 1000 + 6e-3)


def test_ring_dq_and_mom():
    dq = multihop.ring(4000, 4, 8, "dq-grad", bits=4, cp=SLOW)
    assert [s["bits_per_coord"] for s in dq["steps"]] == [4 + META] * 6
    mom = multihop.ring(4000, 4, 8, "mom", cp=SLOW)
    assert mom["bytes_per_controller"] == 1000 * 6 / 8


def test_ring_fp32_matches_commtime():
    """FP32 through the ring: commtime's 2 (N-1)/N S/B + 2 (N-1) alpha."""
    for n_ctrl in (2, 8, 16):
        cp = commtime.CommParams(gpus=n_ctrl)
        theirs = commtime.allreduce_times_ms(1.5e9, 0.0, cp)["FP32 ring All-Reduce (network)"]
        assert multihop.ring(1.5e9, n_ctrl, 8, "fp32", cp=cp)["seconds"] * 1e3 == \
            pytest.approx(theirs)


def test_tree_by_hand():
    # 4 controllers of 8, fan-in 2: depth 2.  Up: level 1 parents take 2
    # messages of 100 coordinates of 4-bit counts (0..8) = 100 B; level 2, 2
    # messages of 5-bit counts (0..16) = 125 B.  Down: 2 levels of 2 x 1-bit
    # messages = 25 B each.  Each level one step latency.
    r = multihop.tree(100, 4, 2, 8, "exact", cp=SLOW)
    assert [(x["phase"], x["level"], x["bits_per_coord"], x["bytes"]) for x in r["levels"]] == [
        ("reduce", 1, 4, 100), ("reduce", 2, 5, 125), ("broadcast", 2, 1, 25),
        ("broadcast", 1, 1, 25)]
    assert r["seconds"] == pytest.approx(0.275 + 4e-3)
    assert r["bytes_per_parent_link"] == 275


def test_tree_needs_power_of_fanin():
    with pytest.raises(ValueError, match="power"):
        multihop.tree(100, 6, 2, 8, "exact")
    with pytest.raises(ValueError, match="at least 2"):
        multihop.ring(100, 1, 8, "exact")
    with pytest.raises(ValueError, match="unknown scheme"):
        multihop.ring(100, 4, 8, "nope")
