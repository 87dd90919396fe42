"""Fig. 7's G-Binary rows at the three read sizes (models/commtime.py),
worked by hand: the same 1-bit write, read back as 1 bit (the paper's
count), as a W-bit lane (today's contract) or as 2 bits (the packed view)."""

import pytest

from neuron_fabric.models import commtime
from neuron_fabric.models.envelope.params import GiB


def test_three_read_sizes_of_one_write():
    fp32_ms = 2 * 1.5e9 * 4 / (128 * GiB) * 1e3       # FP32 written and read back
    t = commtime.allreduce_times_ms(1.5e9, exposure_pct=0.0)
    assert t["G-Binary (CXL-side)"] == pytest.approx(fp32_ms * 2 / 64)
    # 8 workers: W 8, so 1 + 8 bits an element; the packed view 1 + 2.
    assert t["G-Binary (CXL-side), today's read: a W-bit lane an element"] == \
        pytest.approx(fp32_ms * 9 / 64)
    assert t["G-Binary (CXL-side), packed view: 2 bits an element"] == \
        pytest.approx(fp32_ms * 3 / 64)
    # 6 workers still take W 8 (two spare slots); 10 take W 16 (1 + 16 bits).
    six = commtime.allreduce_times_ms(1.5e9, 0.0, commtime.CommParams(gpus=6))
    ten = commtime.allreduce_times_ms(1.5e9, 0.0, commtime.CommParams(gpus=10))
    key = "G-Binary (CXL-side), today's read: a W-bit lane an element"
    assert six[key] == pytest.approx(fp32_ms * 9 / 64)
    assert ten[key] == pytest.approx(fp32_ms * 17 / 64)


@pytest.mark.parametrize("ranks, workers", [(1, 4), (2, 4), (3, 8), (5, 16), (7, 16), (8, 8),
                                            (9, None), (12, 16), (16, 16), (17, None)])
def test_controller_workers(ranks, workers):
    # The DDP hook's rule (models/controllers.py): one slot a worker for an even
    # count, two for an odd one (so 3 take 6 slots, W 8); W the smallest of
    # 4, 8, 16 that holds them; an odd 9 needs 18 slots, and no W holds 17.
    if workers is None:
        with pytest.raises(ValueError, match=f"{ranks} ranks"):
            commtime.controller_workers(ranks)
    else:
        assert commtime.controller_workers(ranks) == workers
