"""The exported Verilog of the datapath core under cocotb
(``neuron_fabric.sim.cocotb_datapath``), with Verilator and Icarus.

One Verilog export and one simulator build per parameter set; the cocotb
module's tests (random lines under every combination of in_valid gaps and
out_ready backpressure, and a back-to-back run) all run on that build.
"""

import pytest

from neuron_fabric.contract.paths import BUILD
from neuron_fabric.sim.toolchain import available_simulators, run_cocotb
from neuron_fabric.contract.facts import DATAPATH_MODULE

#: (LINE_BITS, WORKERS, STAGES, lines per cocotb test)
PARAMS = [
    (64, 4, 1, 400),
    (512, 8, 5, 200),
    (1024, 16, 8, 120),
]


def _simulator(name):
    if name not in available_simulators():
        pytest.skip(f"{name} is not installed")
    return name


def run(export_datapath, simulator, line_bits, workers, stages, lines, seed=1):
    source = export_datapath(line_bits, workers, stages)
    build_dir = BUILD / "cocotb" / "datapath" / f"L{line_bits}_W{workers}_S{stages}" / simulator
    return run_cocotb(sources=[source], toplevel=DATAPATH_MODULE,
                      test_module="neuron_fabric.sim.cocotb_datapath", simulator=simulator,
                      build_dir=build_dir,
                      params=dict(workers=workers, stages=stages, seed=seed, lines=lines))


# Verilator compiles the wide exports slowly (minutes: cocotb makes every
# net public), while Icarus runs them in seconds; so the wide sets are
# Verilator runs only in the slow set, the widest only in the long one
# (test_icarus runs the same bench on the same export).
@pytest.mark.parametrize("line_bits,workers,stages,lines", [
    PARAMS[0],
    pytest.param(*PARAMS[1], marks=pytest.mark.slow),
    pytest.param(*PARAMS[2], marks=pytest.mark.long),
])
def test_verilator(export_datapath, line_bits, workers, stages, lines):
    assert run(export_datapath, _simulator("verilator"), line_bits, workers, stages, lines) == 5


@pytest.mark.parametrize("line_bits,workers,stages,lines", PARAMS)
def test_icarus(export_datapath, line_bits, workers, stages, lines):
    assert run(export_datapath, _simulator("icarus"), line_bits, workers, stages, lines) == 5
