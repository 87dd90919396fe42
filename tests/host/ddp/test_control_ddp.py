"""The control plane across ranks (4 processes): decisions reach every rank on
the same step, recovery events are hook state, a fault on one rank puts
every group on FP32 on every rank."""

import pathlib

import numpy as np
import pytest

pytest.importorskip("torch", reason="the DDP hook needs torch (pip install -e '.[torch]')")

from neuron_fabric.host.ddp.launch import load_file  # noqa: E402

HERE = pathlib.Path(__file__).parent
oracle = load_file(HERE / "oracle.py")
ranks = load_file(HERE / "ranks.py")

pytestmark = pytest.mark.xdist_group("ddp")

GBINARY = dict(mode=2, format=2, gate_kind=0, period=3, keep=2, threshold=0)


@pytest.fixture(scope="module")
def four(job):
    results = job(4)
    assert all(r.ok for r in results), [(r.rank, r.error, r.stderr[-2000:]) for r in results]
    return [r.value for r in results]


def _check_step(values, key, step, mode):
    """Every rank's gradients at ``step``: the FP32 mean, or the G-Binary
    majority of the golden model (bucket order as the hook saw it: the
    parameters in model order on the first step, reverse after DDP's rebuild)."""
    for index, (_, n) in enumerate(ranks.SIZES):
        grads = np.stack([ranks.gradient(r, step, index, n) for r in range(4)])
        for rank, v in enumerate(values):
            got = v[key]["grads"][step][index]
            if mode == "fp32":
                np.testing.assert_allclose(got, grads.mean(axis=0), rtol=1e-6, atol=1e-7)
            else:
                order = [0, 1, 2] if step == 0 else [2, 1, 0]
                want = oracle.expected(grads, GBINARY, 1,
                                       first_element=oracle.first_elements(
                                           order, ranks.SIZES, align=oracle.piece_align())[index])
                np.testing.assert_array_equal(got, want, err_msg=f"step {step} rank {rank}")


def test_mode_switches_on_the_same_step_everywhere(four):
    ref = four[0]["control"]
    for v in four[1:]:
        assert v["control"]["modes"] == ref["modes"]
        assert v["control"]["events"] == ref["events"]
    kinds = [e["kind"] for e in ref["events"]]
    assert kinds == ["admission", "recovery", "re-admission"], ref["events"]
    admitted, recovered, readmitted = (e["step"] for e in ref["events"])
    assert recovered == 7          # the non-finite loss of step 6, acted on before step 7
    for step, modes in enumerate(ref["modes"]):
        low = admitted <= step < recovered or step >= readmitted
        assert set(modes.values()) == ({"gbinary"} if low else {"fp32"}), (step, modes)
        _check_step(four, "control", step, "gbinary" if low else "fp32")


def test_write_fault_on_one_rank_puts_every_rank_on_fp32(four):
    for v in four:
        f = v["fault-write"]
        assert f["faulted"]
        assert [(e["kind"], e["step"]) for e in f["events"]] == [("warm-up end", 3),
                                                                  ("fault", 3)]
        assert "rank 1" in f["events"][1]["detail"] and "BusError" in f["events"][1]["detail"]
        assert all(set(m.values()) == {"fp32"} for m in f["modes"][4:])
    for step in range(6):               # warm-up, then the fault at the first low-bit step
        _check_step(four, "fault-write", step, "fp32")


@pytest.mark.parametrize("scenario", ["fault-read", "fault-read-view"])
def test_read_fault_on_one_rank_puts_every_rank_on_fp32(four, scenario):
    """Rank 1's memory fails its reads at step 3: it computes that read's
    response in software (every rank still gets the G-Binary aggregate of
    step 3) and reports the fault at the next barrier (step 4), from which
    every rank is on FP32; the same when the results are read through
    packed views (the software response is then the view's lines)."""
    for v in four:
        f = v[scenario]
        assert [(e["kind"], e["step"]) for e in f["events"]] == [("warm-up end", 2), ("fault", 4)]
        assert "rank 1" in f["events"][1]["detail"] and "read" in f["events"][1]["detail"]
        assert "PoisonError" in f["events"][1]["detail"]
    for step in range(6):
        _check_step(four, scenario, step, "gbinary" if step in (2, 3) else "fp32")
