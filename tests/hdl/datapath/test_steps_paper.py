"""The paper profile's steps (``hdl/datapath/steps_paper.py``): the four
steps between the input and one register in the Amaranth simulator,
against the golden model (contract section 2) with the features the paper
profile hard-wires away (COUNT format, PATTERN gate); and the full-adder
layers' column heights, worked out by hand."""

import pytest
from amaranth import Module, Signal

from neuron_fabric.contract.facts import PROFILES
from neuron_fabric.hdl.datapath.steps_paper import PaperSteps, layer_shape, reduce_columns
from neuron_fabric.sim.amaranth_sim import run_testbenches


@pytest.mark.parametrize("line_bits, workers", [(64, 4), (128, 8), (128, 16)])
def test_paper_steps_against_golden(check_step_set, line_bits, workers):
    n = check_step_set(PaperSteps, PROFILES["paper"], line_bits=line_bits, workers=workers,
                       group_bits=max(16, workers), skid=False)
    assert n >= 4 * 3 * 2 * 5


def test_layer_shape_hand_worked():
    """Eight bits of weight 1: a layer of two full adders leaves their two
    sums and the two bits left over of weight 1 and their two carries of
    weight 2; the next layer, one adder on the four of weight 1 (its sum and
    one left over) and its carry beside the two of weight 2."""
    assert layer_shape(8, 0) == [8]
    assert layer_shape(8, 1) == [4, 2]
    assert layer_shape(8, 2) == [2, 3]


@pytest.mark.parametrize("width", [3, 4, 7, 8, 16])
def test_reduce_columns_counts_the_bits(width):
    """The popcount of ``width`` bits from full-adder layers, every input."""
    m = Module()
    bits = Signal(width)

    def wire(value):
        sig = Signal(len(value))
        m.d.comb += sig.eq(value)
        return sig

    count = Signal(width.bit_length())
    m.d.comb += count.eq(reduce_columns(wire, [[bits[i] for i in range(width)]],
                                        width.bit_length()))

    async def bench(ctx):
        for v in (range(1 << width) if width <= 8 else [0, 0xFFFF, 0x8001, 0x1234, 0xF0F0]):
            ctx.set(bits, v)
            assert ctx.get(count) == bin(v).count("1"), v

    run_testbenches(m, bench, clock=False)
