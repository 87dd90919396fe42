"""More than one controller (contract section 5.4): 8 ranks as 2 controllers of
4, whose exact level-1 counts a level-2 count read combines, give bit for bit
what one controller of all 8 gives, and what the golden model gives."""

import pathlib

import numpy as np
import pytest

from neuron_fabric.contract.facts import Format

pytest.importorskip("torch", reason="the DDP hook needs torch (pip install -e '.[torch]')")

from neuron_fabric.host.ddp.launch import load_file  # noqa: E402

HERE = pathlib.Path(__file__).parent
oracle = load_file(HERE / "oracle.py")
ranks = load_file(HERE / "ranks.py")

pytestmark = pytest.mark.xdist_group("ddp")


@pytest.fixture(scope="module")
def eight(job):
    """Per rank that finished: ``{scenario: value}`` (rank 5 stops in the
    job's last scenario, test_stop.py, and returns nothing)."""
    results = job(8)
    done = {r.rank: r.value for r in results if r.ok}
    assert set(done) == set(range(8)) - {5}, [(r.rank, r.error, r.stderr[-2000:])
                                              for r in results if r.rank != 5]
    return done


@pytest.mark.parametrize("case", range(len(oracle.HIERARCHY_CASES)))
def test_two_controllers_equal_one(eight, case):
    policy, _ = oracle.HIERARCHY_CASES[case]
    for rank, value in eight.items():
        two, one = value["two-controllers"][case], value["one-controller"][case]
        assert two["workers"] == 4 and one["workers"] == 8
        for a, b in zip(two["grads"][0], one["grads"][0]):
            np.testing.assert_array_equal(a, b, err_msg=f"rank {rank}")
    value = next(iter(eight.values()))["two-controllers"][case]
    first = oracle.first_elements(value["order"][0], ranks.SIZES,
                                  align=oracle.piece_align(controllers=2))
    for index, (_, n) in enumerate(ranks.SIZES):
        grads = np.stack([ranks.gradient(r, 0, index, n) for r in range(8)])
        want = oracle.expected(grads, policy, 0, first_element=first[index])
        np.testing.assert_array_equal(value["grads"][0][index], want)
        np.testing.assert_array_equal(want, oracle.wide(grads, policy, first_element=first[index]))


@pytest.mark.parametrize("case", range(2))
def test_two_controllers_at_64_bits(eight, case):
    """Level 1 at 64 bits (W 4: 16 elements a line) and level 2 (2 count lanes
    a line): the golden aggregate over all 8 ranks, no fault."""
    policy, _ = oracle.HIERARCHY_CASES[case]
    value = next(iter(eight.values()))["two-controllers-64"][case]
    assert value["events"] == []
    first = oracle.first_elements(value["order"][0], ranks.SIZES, align=64 // 4)
    for index, (_, n) in enumerate(ranks.SIZES):
        grads = np.stack([ranks.gradient(r, 0, index, n) for r in range(8)])
        np.testing.assert_array_equal(
            value["grads"][0][index],
            oracle.expected(grads, policy, 0, line_bits=64, first_element=first[index]))


def test_level2_bytes(eight):
    """Each rank writes its 1-bit segment at level 1; a controller's first rank
    also writes its 4-bit counts at level 2; every rank reads both levels."""
    lanes1, lanes2 = 512 // 4, 512 // 32
    lines1 = sum(-(-n // lanes1) for _, n in ranks.SIZES)
    lines2 = sum(-(-n // lanes2) for _, n in ranks.SIZES)
    for rank, value in eight.items():
        t = value["two-controllers"][0]["traffic"]
        leader = rank % 4 == 0
        assert t["pool_write"] == lines1 * lanes1 // 8 + (lines2 * 64 // 8 if leader else 0)
        assert t["pool_read"] == (lines1 + lines2) * 64


@pytest.mark.parametrize("case", range(len(oracle.ODD_LEVEL2_CASES)))
def test_two_controllers_of_one_rank(job, case):
    """2 controllers of 1 rank (W 4: one slot a rank, the 3 spare slots at
    0), combined by the level-2 count read of 2 votes: the golden vote over
    the 2 ranks alone, in every format."""
    results = job(2)
    assert all(r.ok for r in results), [(r.rank, r.error, r.stderr[-2000:]) for r in results]
    policy, _ = oracle.ODD_LEVEL2_CASES[case]
    values = [r.value["odd-level2"][case] for r in results]
    assert [v["workers"] for v in values] == [4, 4] and values[0]["events"] == []
    first = oracle.first_elements(values[0]["order"][0], ranks.SIZES,
                                  align=oracle.piece_align(controllers=2))
    for index, (_, n) in enumerate(ranks.SIZES):
        grads = np.stack([ranks.gradient(r, 0, index, n) for r in range(2)])
        want = oracle.wide(grads, policy, first_element=first[index])
        for rank, v in enumerate(values):
            np.testing.assert_array_equal(v["grads"][0][index], want,
                                          err_msg=f"rank {rank}, parameter {index}")


def _check_unequal(values, policy, sizes, workers):
    """Every rank's gradients against :func:`oracle.hierarchy` over the real
    ranks (the contract's two levels) and, where a gated COUNT lane is not
    involved, the golden vote over the ranks alone (``oracle.wide``)."""
    world = sum(sizes)
    assert [v["workers"] for v in values] == [workers] * world and values[0]["events"] == []
    first = oracle.first_elements(values[0]["order"][0], ranks.SIZES,
                                  align=oracle.piece_align(controllers=len(sizes)))
    for index, (_, n) in enumerate(ranks.SIZES):
        grads = np.stack([ranks.gradient(r, 0, index, n) for r in range(world)])
        want = oracle.hierarchy(grads, sizes, policy, first_element=first[index])
        for rank, v in enumerate(values):
            np.testing.assert_array_equal(v["grads"][0][index], want,
                                          err_msg=f"rank {rank}, parameter {index}")
        if policy["format"] != Format.COUNT or world % 2 == 0:
            np.testing.assert_array_equal(want, oracle.wide(grads, policy,
                                                            first_element=first[index]))


@pytest.mark.parametrize("world, case", [(w, c) for w, cases in oracle.UNEQUAL_CASES.items()
                                         for c in range(len(cases))])
def test_unequal_controllers_are_the_majority_of_the_real_ranks(job, world, case):
    """Controllers of 2 + 1 ranks (an odd world size: two slots a rank, W 4)
    and of 3 + 1 (one slot a rank, W 4, the controller of 3 with a spare
    slot at 0): every rank gets the contract's two-level aggregate over the real
    ranks, so no spare slot votes."""
    results = job(world)
    policy, config = oracle.UNEQUAL_CASES[world][case]
    assert all(r.ok for r in results), [(r.rank, r.error, r.stderr[-2000:]) for r in results]
    _check_unequal([r.value["unequal"][case] for r in results], policy,
                   config["ranks_per_controller"], 4)


@pytest.mark.long
@pytest.mark.parametrize("case", range(len(oracle.ELEVEN_CASES)))
def test_eleven_ranks_split_by_themselves(job, case):
    """11 ranks, no ``ranks_per_controller``: 6 + 5 ranks on two controllers
    of W 16 (two slots a rank), the level-2 count read over the 11."""
    policy, _ = oracle.ELEVEN_CASES[case]
    results = job(11)
    assert all(r.ok for r in results), [(r.rank, r.error, r.stderr[-2000:]) for r in results]
    _check_unequal([r.value["default-split"][case] for r in results], policy, (6, 5), 16)
