"""The hook's aggregate against the golden model, bit for bit, with 2 and 4
ranks (processes on 127.0.0.1): every mode, output format and gate, both
layouts, both pools."""

import pathlib

import numpy as np
import pytest

pytest.importorskip("torch", reason="the DDP hook needs torch (pip install -e '.[torch]')")

from neuron_fabric.contract.facts import Format, Layout  # noqa: E402

from neuron_fabric.host.ddp.launch import load_file  # noqa: E402

HERE = pathlib.Path(__file__).parent
oracle = load_file(HERE / "oracle.py")
ranks = load_file(HERE / "ranks.py")
CASES, POLICIES = oracle.CASES, oracle.POLICIES

pytestmark = pytest.mark.xdist_group("ddp")


@pytest.fixture(scope="module", params=[2, 4], ids=["2-ranks", "4-ranks"])
def exact(request, job):
    world = request.param
    results = job(world)
    bad = [r for r in results if not r.ok]
    assert not bad, [(r.rank, r.error, r.stderr[-2000:]) for r in bad]
    return world, [r.value["exact"] for r in results]


def _rank_grads(world, index, n):
    return np.stack([ranks.gradient(rank, 0, index, n) for rank in range(world)])


@pytest.mark.parametrize("case", range(len(CASES)),
                         ids=[f"m{p['mode']}f{p['format']}g{p['gate_kind']}P{p['period']}"
                              f"-L{c['layout']}-{c['pool']}" for p, c in CASES])
def test_aggregate_is_golden(exact, case):
    world, values = exact
    policy, config = CASES[case]
    orders = {tuple(o) for v in values for o in v[case]["order"]}
    assert len(orders) == 1
    first = oracle.first_elements(orders.pop(), ranks.SIZES, align=oracle.piece_align(config))
    for index, (_, n) in enumerate(ranks.SIZES):
        grads = _rank_grads(world, index, n)
        want = oracle.expected(grads, policy, Layout(config["layout"]),
                               first_element=first[index])
        for rank in range(world):
            got = values[rank][case]["grads"][0][index]
            assert got.dtype == np.float32
            np.testing.assert_array_equal(got, want, err_msg=f"rank {rank}, parameter {index}")
        if policy["format"] != Format.COUNT:
            np.testing.assert_array_equal(
                want, oracle.wide(grads, policy, first_element=first[index]))


def test_gbinary_is_the_majority_sign(exact):
    """Hand-worked rule for G-Binary SIGN: sgn(#positive - #non-positive)."""
    world, values = exact
    case = CASES.index((POLICIES[Format.SIGN], dict(layout=int(Layout.WORKER_MAJOR), pool="shm")))
    for index, (_, n) in enumerate(ranks.SIZES):
        votes = np.where(_rank_grads(world, index, n) > 0, 1, -1).sum(axis=0)
        np.testing.assert_array_equal(values[0][case]["grads"][0][index], np.sign(votes))


def test_pool_bytes(exact):
    """A rank writes 1 bit per element (its segment, whole lines) and reads the
    lines' W-bit lanes; the pool kind is the one asked for; through the
    all-gather a rank sends its segment to each of the other ranks."""
    world, values = exact
    w = oracle.workers_for(world)
    lanes = 512 // w
    lines = sum(-(-n // lanes) for _, n in ranks.SIZES)
    for case, (policy, config) in enumerate(CASES):
        read = sum(oracle.read_lines(n, policy, config, w) for _, n in ranks.SIZES)
        for rank in range(world):
            v = values[rank][case]
            assert v["pool"] == config["pool"]
            assert v["workers"] == w
            assert v["traffic"]["pool_write"] == lines * lanes // 8
            assert v["traffic"]["pool_read"] == read * 64
            assert v["traffic"]["low_elements"] == sum(n for _, n in ranks.SIZES)
            gathered = (world - 1) * lines * lanes // 8 if config["pool"] == "gather" else 0
            assert v["traffic"]["gathered"] == gathered


def test_error_feedback(job):
    """Each rank packs the signs of p = g + e, e = p - mean|p| sign(p) of the
    step before (per parameter: each is its own run of the bucket here)."""
    values = [r.value["options"][0] for r in job(2)]
    for index, (_, n) in enumerate(ranks.SIZES):
        e = np.zeros((2, n), np.float32)
        for step in range(3):
            p = np.stack([ranks.gradient(r, step, index, n) for r in range(2)]) + e
            e = p - np.abs(p).mean(axis=1, keepdims=True) * np.sign(p)
            want = np.sign(np.where(p > 0, 1, -1).sum(axis=0)).astype(np.float32)
            for rank in range(2):
                np.testing.assert_array_equal(values[rank]["grads"][step][index], want)


def test_scale(job):
    """The majority sign times the ranks' mean of mean|g| over the run."""
    values = [r.value["options"][1] for r in job(2)]
    for step in range(3):
        for index, (_, n) in enumerate(ranks.SIZES):
            g = np.stack([ranks.gradient(r, step, index, n) for r in range(2)])
            want = np.sign(np.where(g > 0, 1, -1).sum(axis=0)) * np.abs(g).mean(axis=1).mean()
            for rank in range(2):
                np.testing.assert_allclose(values[rank]["grads"][step][index], want, rtol=1e-6)


@pytest.mark.parametrize("case", range(len(oracle.WIDTH_CASES)),
                         ids=[f"L{c['line_bits']}-layout{c['layout']}-m{p['mode']}f{p['format']}"
                              for p, c in oracle.WIDTH_CASES])
def test_every_line_width_is_golden(job, case):
    """64 to 1024 bits a line, windows of odd line counts included: the
    golden aggregate on both ranks, and no fault (no fall-back to FP32)."""
    policy, config = oracle.WIDTH_CASES[case]
    values = [r.value["widths"][case] for r in job(2)]
    assert [v["events"] for v in values] == [[], []]
    line_bits = config["line_bits"]
    first = oracle.first_elements(values[0]["order"][0], ranks.SIZES,
                                  align=oracle.piece_align(config))
    for index, (_, n) in enumerate(ranks.SIZES):
        want = oracle.expected(_rank_grads(2, index, n), policy, Layout(config["layout"]),
                               line_bits=line_bits, first_element=first[index])
        for rank, v in enumerate(values):
            np.testing.assert_array_equal(v["grads"][0][index], want,
                                          err_msg=f"rank {rank}, parameter {index}")


@pytest.mark.parametrize("case", range(len(oracle.ODD_CASES)),
                         ids=[f"m{p['mode']}f{p['format']}g{p['gate_kind']}P{p['period']}"
                              f"-L{c['layout']}-{c['pool']}" for p, c in oracle.ODD_CASES])
def test_odd_world_is_the_majority_of_the_real_ranks(job, case):
    """3 ranks, each voting in two of W 8 slots beside one cancelling pair:
    the golden read of those slots, and (SIGN, MARGIN) the golden vote over
    the 3 ranks alone, so the spare slots take no part in it."""
    results = job(3)
    assert all(r.ok for r in results), [(r.rank, r.error, r.stderr[-2000:]) for r in results]
    values = [r.value["odd"][case] for r in results]
    policy, config = oracle.ODD_CASES[case]
    assert [v["workers"] for v in values] == [8] * 3 and values[0]["events"] == []
    first = oracle.first_elements(values[0]["order"][0], ranks.SIZES,
                                  align=oracle.piece_align(config))
    for index, (_, n) in enumerate(ranks.SIZES):
        grads = _rank_grads(3, index, n)
        want = oracle.expected(grads, policy, Layout(config["layout"]), first_element=first[index])
        for rank, v in enumerate(values):
            np.testing.assert_array_equal(v["grads"][0][index], want,
                                          err_msg=f"rank {rank}, parameter {index}")
        if policy["format"] != Format.COUNT:
            np.testing.assert_array_equal(
                want, oracle.wide(grads, policy, first_element=first[index]))


@pytest.mark.parametrize("case", range(len(oracle.VIEW_CASES)),
                         ids=[f"m{p['mode']}f{p['format']}g{p['gate_kind']}P{p['period']}"
                              f"-L{c['layout']}-{c['pool']}-view{int(c['packed_view'])}"
                              for p, c in oracle.VIEW_CASES])
def test_packed_view_is_golden(job, case):
    """A controller with the packed view (contract section 6): the SIGN-format
    groups read 2 bits an element and give the golden aggregate; a rank's
    round trip is its 1-bit segment up and the view's lines down (3 bits an
    element at W 4 against FP32's 64), lanes for a COUNT group or without
    the view."""
    policy, config = oracle.VIEW_CASES[case]
    values = [r.value["views"][case] for r in job(2)]
    assert [v["events"] for v in values] == [[], []]
    first = oracle.first_elements(values[0]["order"][0], ranks.SIZES,
                                  align=oracle.piece_align(config))
    w = oracle.workers_for(2)
    read = sum(oracle.read_lines(n, policy, config, w) for _, n in ranks.SIZES)
    for index, (_, n) in enumerate(ranks.SIZES):
        want = oracle.expected(_rank_grads(2, index, n), policy, Layout(config["layout"]),
                               first_element=first[index])
        for rank, v in enumerate(values):
            np.testing.assert_array_equal(v["grads"][0][index], want,
                                          err_msg=f"rank {rank}, parameter {index}")
    for v in values:
        assert v["traffic"]["pool_read"] == read * 64
