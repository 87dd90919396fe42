"""The hook's options refused when they are built (host/ddp/config.py; how
the ranks share controllers: tests/models/test_controllers.py), no process
group needed: a configuration the hook cannot serve is an error naming the
parameter, never a fault at the first step."""

import pytest

from neuron_fabric.host.ddp.config import FabricConfig


@pytest.mark.parametrize("line_bits", [32, 100, 2048])
def test_a_width_outside_the_contract_is_refused(line_bits):
    with pytest.raises(ValueError, match=r"FabricConfig\.line_bits must be one of"):
        FabricConfig(line_bits=line_bits)


@pytest.mark.parametrize("bad", [0, (), (2, 0), "2"])
def test_ranks_per_controller_of_the_wrong_kind_is_refused(bad):
    with pytest.raises(ValueError, match=r"FabricConfig\.ranks_per_controller must be"):
        FabricConfig(ranks_per_controller=bad)


def test_ranks_per_controller_as_a_list():
    assert FabricConfig(ranks_per_controller=[2, 1]).ranks_per_controller == (2, 1)
