"""The hook's options refused when they are built (host/ddp/config.py), no
process group needed: a configuration the hook cannot serve is an error
naming the parameter, never a fault at the first step."""

import pytest

from neuron_fabric.host.ddp.config import FabricConfig, check_line_bits, controller_workers


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
