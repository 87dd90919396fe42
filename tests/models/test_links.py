"""The link model (models/links.py): byte counts worked by hand from the
contract's geometry, held equal to the bytes a measured race moves (gloo's
message headers apart), and the times it charges on hand-worked links."""

import pytest

from neuron_fabric.models import links

MIB = 1 << 20


def test_bytes_by_hand_one_controller():
    n = 1 << 18                                   # 1 MiB of FP32 (512 x 512)
    # 8 workers, W 8: 64 elements a 512-bit line, 4096 lines; a worker writes
    # 8 bytes of each, reads whole lines (an 8-bit lane an element).
    b = links.peer_bytes("gbinary-shm", n, 8)
    assert (b["pool_write"], b["pool_read"]) == (4096 * 8, 4096 * 64)
    assert b["phases"] == [(4096 * 8, 8 * 4096), (4096 * 64, 8 * 4096)]
    # Packed view: 256 elements a response line (2 bits each), the source lines all read.
    p = links.peer_bytes("gbinary-packed", n, 8)
    assert p["pool_read"] == 1024 * 64 and p["phases"][1] == (1024 * 64, 8 * 4096)
    # The paper's 1-bit read: 512 elements a line.
    assert links.peer_bytes("gbinary-paper", n, 8)["pool_read"] == 512 * 64
    # Ring all-reduce: 2 (N-1)/N of the gradient each way; the vote: N-1 times n/8.
    assert links.peer_bytes("allreduce", n, 8)["net_sent"] == 2 * 7 / 8 * 4 * n
    assert links.peer_bytes("bf16", n, 8)["net_sent"] == 2 * 7 / 8 * 2 * n
    assert links.peer_bytes("vote", n, 8)["net_sent"] == 7 * n / 8
    # PowerSGD rank 4 on 512 x 512: P and Q of 512 x 4 floats all-reduced.
    assert links.peer_bytes("powersgd-4", n, 8)["net_sent"] == 2 * 2 * 7 / 8 * 4 * 512 * 4
    # The low-bit ring: 4-bit counts (9 values) and 1-bit signs, (N-1)/N each.
    assert links.peer_bytes("low-bit-ring", n, 8)["net_sent"] == 7 / 8 * n * 5 / 8


def test_bytes_by_hand_two_levels():
    n = 1 << 18
    # 64 workers, 4 controllers of 16 (W 16, COUNTS8 since W = 16): level-1 lines of
    # 32 elements; level-2 count lines of 16 elements (32-bit lanes) read whole,
    # a controller's first rank writing 8 of the 32 bits of each lane.
    b = links.peer_bytes("gbinary-shm", n, 64, controllers=4)
    l1, l2 = n // 32, n // 16
    assert b["pool_read"] == l1 * 64 + l2 * 64
    assert b["pool_write"] == l1 * 4 + l2 * 16 / 16
    assert b["phases"][2:] == [(l2 * 16, 4 * l2), (l2 * 64, 64 * l2)]


def test_an_odd_prime_job_splits_as_the_hook_does_by_hand():
    n = 1 << 18
    # 11 workers: the hook's controllers of 6 and 5 (docs/ddp.md), two slots a rank
    # (an odd world), so W 16 (12 slots) and COUNTS4 at level 2 (6 x 2 = 12 votes
    # at most a controller, 22 in all).  Level-1 lines of 32 elements, a rank's
    # segment 64 / 16 = 4 bytes; level-2 count lines of 16 elements, a controller's
    # first rank writing 4 of each lane's 32 bits: 2 writers over 11 ranks.
    assert links.Links().controllers_for(11) == 2
    b = links.peer_bytes("gbinary-shm", n, 11, controllers=2)
    l1, l2 = n // 32, n // 16
    assert b["pool_read"] == l1 * 64 + l2 * 64
    assert b["pool_write"] == pytest.approx(l1 * 4 + 2 * (l2 * 8) / 11)
    # the busiest controller serves 6 ranks' writes; every rank reads level 2
    assert b["phases"][0] == (l1 * 4, 6 * l1)
    assert b["phases"][2:] == [(l2 * 8, 2 * l2), (l2 * 64, 11 * l2)]


def test_controllers_refused_when_they_cannot_serve():
    with pytest.raises(ValueError, match="do not split into 3 controllers"):
        links.Links(controllers=3).controllers_for(64)
    with pytest.raises(ValueError, match="unknown peer"):
        links.peer_bytes("nccl", 1024, 8)


def test_times_by_hand():
    lk = links.Links()
    n = 16 * MIB // 4
    # FP32 ring on 100 Gb/s: 2 * 7/8 * 16 MiB / 12.5 GB/s + 14 * 5 us.
    want = 2 * 7 / 8 * 16 * MIB / 12.5e9 + 14 * 5e-6
    assert links.comm_time_s("allreduce", n, 8, lk, 100.0) == pytest.approx(want)
    # G-Binary, 8 workers, one controller at 200 MHz: each phase is 8 x 65,536 line
    # cycles (slower than the CXL link), plus the barrier and the 200 ns latency twice.
    lines = n // 64
    want = 8 * lines / 200e6 * 2 + 14 * 5e-6 + 2 * 200e-9
    assert links.comm_time_s("gbinary-shm", n, 8, lk) == pytest.approx(want)


def test_winners_runs():
    times = {"a": [1, 2, 3, 4], "b": [2, 2.5, 1, 1]}
    assert links.winners(times, [10, 20, 30, 40]) == [(10, 20, "a"), (30, 40, "b")]


@pytest.mark.parametrize("world", [2, pytest.param(4, marks=pytest.mark.long)])
def test_model_bytes_equal_the_measured_race(world):
    """The race's measured bytes per rank (one call of every peer at 64 KiB)
    against the model's: the pool bytes exactly; gloo's within its message
    headers and control notices (up to 1 KiB a collective and peer)."""
    pytest.importorskip("torch", reason="the race needs torch")
    from neuron_fabric.experiments.ddp.race_tables import PEERS
    from neuron_fabric.host.ddp.launch import spawn
    size = 64 * 1024
    results = spawn("neuron_fabric.experiments.ddp.race_rank:race", world,
                    dict(sizes=[size], peers=list(PEERS), repeats=1), timeout_s=120)
    bad = [r for r in results if not r.ok]
    assert not bad, [(r.rank, r.error, r.stderr[-2000:]) for r in bad]
    collectives = {"powersgd-1": 3, "powersgd-4": 3, "gbinary-gather": 2, "gternary-gather": 2}
    for peer in PEERS:
        model = links.peer_bytes(peer, size // 4, world)
        for r in results:
            got = r.value[(peer, size)][0]
            assert (got["pool_write"], got["pool_read"]) == \
                (model["pool_write"], model["pool_read"]), (peer, r.rank)
            for key, want in (("gloo_write", model["net_sent"]),
                              ("gloo_read", model["net_received"])):
                assert 0 <= got[key] - want <= 1024 * collectives.get(peer, 1) * (world - 1), \
                    (peer, r.rank, key, got[key], want)
