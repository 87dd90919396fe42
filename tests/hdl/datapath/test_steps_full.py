"""The steps of every profile but the paper's (``hdl/datapath/steps_full.py``):
the four steps between the input and one register (behind the output
skid) in the Amaranth simulator, against the golden model (contract
section 2) with the features a profile hard-wires away; and the lane value
and chunk split against contract section 2 and their docstrings."""

import pytest

from neuron_fabric.contract.facts import PROFILES, Format
from neuron_fabric.hdl.datapath.steps_full import FullSteps, chunk_sizes, lane_value

FULL = PROFILES["full"]


@pytest.mark.parametrize("line_bits, workers, profile", [
    (64, 4, FULL), (128, 8, FULL), (128, 16, FULL),
    (64, 8, FULL.without("gate_margin")), (64, 4, FULL.without("format_sign")),
    (64, 8, FULL.without("format_margin"))])
def test_full_steps_against_golden(check_step_set, line_bits, workers, profile):
    def make(geometry, wire):
        return FullSteps(geometry, profile, wire)
    check_step_set(make, profile, line_bits=line_bits, workers=workers,
                   group_bits=max(32, workers), skid=True, seed=workers)


@pytest.mark.parametrize("workers", [4, 8, 16])
def test_lane_value_is_the_contracts_output_lane(workers):
    """COUNT c, MARGIN 2c - W and SIGN sgn(2c - W), W-bit two's complement."""
    for c in range(workers + 1):
        a = 2 * c - workers
        sign = (a > 0) - (a < 0)
        assert lane_value(Format.COUNT, c, workers) == c
        assert lane_value(Format.MARGIN, c, workers) == a % (1 << workers)
        assert lane_value(Format.SIGN, c, workers) == sign % (1 << workers)


@pytest.mark.parametrize("workers", [4, 8, 16])
def test_chunk_sizes_split_the_lane(workers):
    sizes = chunk_sizes(workers)
    assert sum(sizes) == workers
    if workers == 8:
        # step B reads each chunk's count in at most five bits (0..5, 0..3)
        assert sum(n.bit_length() for n in sizes) <= 5
