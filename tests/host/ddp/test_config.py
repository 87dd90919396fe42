"""The hook's options refused when they are built (host/ddp/config.py), no
process group needed: a configuration the hook cannot serve is an error
naming the parameter, never a fault at the first step."""

import pytest

from neuron_fabric.host.ddp.config import (FabricConfig, check_line_bits, controller_slots,
                                           controller_workers, split_ranks)


@pytest.mark.parametrize("line_bits", [32, 100, 2048])
def test_a_width_outside_the_contract_is_refused(line_bits):
    with pytest.raises(ValueError, match=r"FabricConfig\.line_bits must be one of"):
        FabricConfig(line_bits=line_bits)


@pytest.mark.parametrize("line_bits", [64, 128, 256, 512, 1024])
@pytest.mark.parametrize("ranks", [2, 4, 6, 8, 10, 16])
def test_each_width_serves_whole_byte_segments_or_is_refused(line_bits, ranks):
    """A rank writes LINE_BITS / W bits of each line (its MemWrPtl): served
    when that is whole bytes, refused by name otherwise (only W 16 at 64 bits)."""
    workers = controller_workers(ranks)
    if line_bits // workers >= 8:
        check_line_bits(line_bits, ranks, workers)
    else:
        assert (line_bits, workers) == (64, 16)
        with pytest.raises(ValueError, match=r"FabricConfig\.line_bits=64 cannot serve"):
            check_line_bits(line_bits, ranks, workers)


@pytest.mark.parametrize("ranks, want", [(1, (4, 2)), (2, (4, 1)), (3, (8, 2)), (4, (4, 1)),
                                         (5, (16, 2)), (6, (8, 1)), (7, (16, 2)), (8, (8, 1)),
                                         (10, (16, 1)), (16, (16, 1))])
def test_slots_of_a_controller(ranks, want):
    """(W, copies): two slots a rank for an odd count, W the smallest that
    holds them, the spare slots an even number (they cancel in pairs)."""
    w, copies = controller_slots(ranks)
    assert (w, copies) == want and (w - copies * ranks) % 2 == 0


@pytest.mark.parametrize("ranks", [9, 11, 15])
def test_an_odd_controller_past_8_ranks_is_refused(ranks):
    with pytest.raises(ValueError, match="ranks_per_controller of at most 8"):
        controller_slots(ranks)


@pytest.mark.parametrize("world, want", [(2, 2), (3, 3), (7, 7), (9, 3), (15, 5), (16, 16),
                                         (18, 6), (24, 12), (32, 16), (48, 16), (11, 1)])
def test_a_job_splits_into_equal_controllers(world, want):
    r = split_ranks(world)
    assert r == want and world % r == 0
