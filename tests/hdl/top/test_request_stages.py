"""The request pipeline's geometry (``hdl/top/request_stages.py``), worked
out by hand from its docstrings for the address widths of every LINE_BITS,
and the signature of what the pipeline is told."""

import pytest
from amaranth.lib.wiring import Out

from neuron_fabric.contract.facts import LINE_BITS_CHOICES, TopParams
from neuron_fabric.hdl.top.request_stages import (AR_LEAD, ISSUE_LOOP, LeftSignature,
                                                  credit_windows, first_stage, idle_after,
                                                  join_stage, pipeline_depth)


@pytest.mark.parametrize("line_bits", LINE_BITS_CHOICES)
def test_geometry_hand_worked(line_bits):
    """A line address has 52 - log2(LINE_BYTES) bits: 45 to 49, so 23 to
    25 two-bit chunks, which two combines of four bring to two pairs: the
    first-match one-hot's copies sit in stage 1 + 2 + 3 = 6.  The address's
    residue track takes 1 + 4 + 2 = 7 cycles (12 or 13 four-bit leaves,
    four levels of pair sums), so the two meet in stage max(6 + 2, 7) = 8,
    and the entry is filled in stage 18.  Read issue taps stage
    18 - AR_LEAD = 15, so the credit windows are 15 + 5 reads and 15 + 7
    completions; ``idle`` is high 6 + 3 cycles after ``hold``."""
    params = TopParams(line_bits=line_bits, workers=4, stages=2)
    assert 45 <= 52 - params.offset_bits <= 49
    assert (first_stage(params), join_stage(params), pipeline_depth(params)) == (6, 8, 18)
    assert AR_LEAD == 3 and ISSUE_LOOP == {"read": 5, "cmp": 7}
    assert credit_windows(params) == {"read": 20, "cmp": 22}
    assert idle_after(params) == 9


def test_ar_lead_fills_the_entry_before_its_lookup():
    """The earliest lookup of a read's entry comes 4 cycles after issue
    takes the read and reads the table as it was the cycle before, so the
    stages from issue's tap to the entry's fill must be at most 3."""
    assert 0 < AR_LEAD <= 3


def test_left_signature():
    members = dict(LeftSignature().members.items())
    assert set(members) == {"read", "cmp"}
    assert all(member.flow == Out and member.shape == 1 for member in members.values())
