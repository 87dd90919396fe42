"""The software majority vote against the golden model's G-Binary SIGN, on
2 and 4 processes (127.0.0.1): every rank's vote, called directly and as a
DDP hook, is the golden read of every rank's signs, zeros packed as the
contract packs them (0, non-positive); and a hand-worked vote."""

import pathlib

import numpy as np
import pytest

pytest.importorskip("torch", reason="the software vote needs torch (pip install -e '.[torch]')")

from neuron_fabric.contract.facts import Format, Mode  # noqa: E402
from neuron_fabric.host import golden  # noqa: E402
from neuron_fabric.host.ddp.launch import load_file, spawn  # noqa: E402
from neuron_fabric.host.ddp.software_vote import majority  # noqa: E402

HERE = pathlib.Path(__file__).parent
#: Element counts of the direct calls: below a word, a word and a bit, and more.
SIZES = (5, 65, 4096 + 13)


def _golden_sign(grads):
    """G-Binary SIGN of the rows' signs (1 = positive) by the golden model."""
    r, n = grads.shape
    resp = golden.transform_wide(grads > 0, Mode.GBINARY, Format.SIGN, line_bits=512)
    return golden.decode_counts(resp, Format.SIGN, n).astype(np.float32)


@pytest.fixture(scope="module", params=[2, 4], ids=["2-ranks", "4-ranks"])
def job(request):
    world = request.param
    results = spawn(f"{HERE / 'vote_ranks.py'}:votes", world, dict(sizes=SIZES), timeout_s=120)
    bad = [r for r in results if not r.ok]
    assert not bad, [(r.rank, r.error, r.stderr[-2000:]) for r in bad]
    return world, [r.value for r in results]


def _rank_grads(world, n):
    vote_ranks = load_file(HERE / "vote_ranks.py")
    return np.stack([vote_ranks.gradient(rank, n) for rank in range(world)])


def test_direct_vote_is_golden(job):
    world, values = job
    for i, n in enumerate(SIZES):
        want = _golden_sign(_rank_grads(world, n))
        for rank, v in enumerate(values):
            got = v["direct"][i]
            np.testing.assert_array_equal(got["vote"], want, err_msg=f"rank {rank}, n {n}")
            assert got["sent"] == (world - 1) * 8 * -(-n // 64)


def test_hooked_vote_is_golden(job):
    world, values = job
    want = _golden_sign(_rank_grads(world, values[0]["hooked_n"]))
    for rank, v in enumerate(values):
        np.testing.assert_array_equal(v["hooked"], want, err_msg=f"rank {rank}")


def test_ties_vote_zero_and_zeros_vote_non_positive():
    # Four ranks, elements 0..3 (hand-worked): signs (+,+,-,-) tie -> 0;
    # (+,+,+,0) -> +1; (0,0,+,-) -> -1 (a zero packs as 0, non-positive);
    # (+,+,0,0) tie -> 0.
    g = np.array([[1, 1, 0, 1], [1, 1, 0, 1], [-1, 1, 1, 0], [-1, 0, -1, 0]], np.float32)
    packed = np.zeros((4, 8), np.uint8)
    for k, row in enumerate(g):
        packed[k, 0] = sum(1 << j for j, x in enumerate(row) if x > 0)
    np.testing.assert_array_equal(majority(packed, 4), [0, 1, -1, 0])


def test_refuses_rows_that_cannot_hold_the_elements():
    with pytest.raises(ValueError, match="cannot hold 65"):
        majority(np.zeros((2, 8), np.uint8), 65)
