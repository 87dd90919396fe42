"""Training with the RTL in the loop: the same loop, runtime and control plane
against the exported top under Verilator and against the device model end
with bit-identical weights (cocotb module ``neuron_fabric.sim.cocotb_train``;
every DRS response is also checked by the top testbench's scoreboard)."""

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.experiments.pilots import RTL_CONFIG
from neuron_fabric.sim.cocotb_train import run_train_rtl

#: Small and quick to build: the default top at 64-bit lines (101 lines a
#: step for the small model), the top tests/sim/test_envelope_rtl.py builds
#: (one export and one build with it).
PARAMS = TopParams(line_bits=64)


def test_training_on_the_rtl_is_bit_identical_to_the_device_model(tmp_path):
    result = run_train_rtl(PARAMS, RTL_CONFIG, tmp_path / "train_rtl.json")
    assert result["identical"]
    assert result["steps"] >= 30
    assert len(result["mode_changes"]) >= 2
