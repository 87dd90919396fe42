"""The exported top simulates cleanly from time 0: a testbench that declares
``reg rst = 1;`` and ties every input to a constant sees no X on any
output after the first clock edge, in Icarus (``-g2005`` and ``-g2012``)
and in Verilator; after ``rst`` falls the outputs are the idle values of
contract section 4 (every VALID low, the channels that accept ready).

The testbench is written from the export's port list
(:func:`~neuron_fabric.hdl.export.flat.flat_names`); each output is printed
at each of the first clock edges, and ``X`` in a printed value (Verilog's
``%b`` of an unknown bit) fails the test.
"""

import os
import re
import shutil
import subprocess

import pytest
from amaranth.lib.wiring import In

from neuron_fabric.contract.paths import BUILD, VERILOG_CACHE
from neuron_fabric.hdl.export.flat import flat_names
from neuron_fabric.hdl.export.verilog import cached_verilog, top_verilog
from neuron_fabric.hdl.top.top import Top
from neuron_fabric.sim.tb_top import SMALL_TOP
from neuron_fabric.sim.toolchain import verilator_env

WORK = BUILD / "tests" / "time_zero"
#: Edges printed; ``rst`` falls after edge RELEASE (one edge of reset is enough:
#: README, "Clock and reset").
EDGES, RELEASE = 8, 1


def _ports(params):
    out = []
    for name, _, flow, shape in flat_names(Top(**params.__dict__).signature):
        width = shape if isinstance(shape, int) else getattr(shape, "width", None) or len(shape)
        out.append((name, flow == In, width))
    return out


def _testbench(params):
    """A plain Verilog testbench: ``reg rst = 1;``, every input a constant
    (the readies 1, everything else 0), each output printed at each edge."""
    ports = _ports(params)
    lines = ["`timescale 1ns/1ps", "module tb;", "  reg clk = 0;", "  reg rst = 1;",
             "  always #5 clk = ~clk;"]
    for name, inward, width in ports:
        kind = "reg" if inward else "wire"
        value = " = 1'b1" if inward and name.endswith("ready") else " = 0" if inward else ""
        lines.append(f"  {kind} [{width - 1}:0] {name}{value};")
    connections = ", ".join(f".{n}({n})" for n in ["clk", "rst"] + [p[0] for p in ports])
    lines += [f"  neuron_fabric dut ({connections});", "  integer step;", "  initial begin",
              f"    for (step = 1; step <= {EDGES}; step = step + 1) begin",
              "      @(posedge clk); #1;",
              f"      if (step == {RELEASE}) rst = 0;"]
    lines += [f'      $display("%0d {name} %b", step, {name});'
              for name, inward, _ in ports if not inward]
    lines += ["    end", "    $finish;", "  end", "endmodule", ""]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def bench():
    WORK.mkdir(parents=True, exist_ok=True)
    top = WORK / "neuron_fabric.v"
    top.write_text(cached_verilog(top_verilog, VERILOG_CACHE, **SMALL_TOP.__dict__))
    tb = WORK / "tb.v"
    tb.write_text(_testbench(SMALL_TOP))
    return tb, top


def _values(output):
    """``{(edge, port): bits}`` from the testbench's printout."""
    found = re.findall(r"^(\d+) (\w+) ([01xzXZ]+)$", output, re.M)
    return {(int(edge), name): bits for edge, name, bits in found}


def _check(values):
    outputs = [name for name, inward, _ in _ports(SMALL_TOP) if not inward]
    assert len(values) == EDGES * len(outputs)
    unknown = sorted({name for (_, name), bits in values.items() if set(bits) - set("01")})
    assert not unknown, f"X or Z after the first edge on {unknown}"
    # idle after reset (contract 4.1-4.3): no VALID out, Req and RwD ready
    for name in outputs:
        if name.endswith("valid"):
            assert values[(EDGES, name)] == "0", name
    assert values[(EDGES, "m2s_req_ready")] == values[(EDGES, "m2s_rwd_ready")] == "1"


@pytest.mark.skipif(not shutil.which("iverilog"), reason="iverilog not installed")
@pytest.mark.parametrize("generation", ["2005", "2012"])
def test_icarus_sees_no_x_from_time_0(bench, generation):
    tb, top = bench
    vvp = WORK / f"tb{generation}.vvp"
    subprocess.run(["iverilog", f"-g{generation}", "-o", str(vvp), "-s", "tb", str(tb), str(top)],
                   check=True, capture_output=True, timeout=300)
    proc = subprocess.run(["vvp", "-n", str(vvp)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    _check(_values(proc.stdout))


@pytest.mark.long
def test_verilator_sees_the_same_values(bench):
    """Verilator has no X: its values must be Icarus' (the reset state is
    defined, not an accident of its initial values), with every variable
    starting at a random value (``--x-initial unique``)."""
    tb, top = bench
    env = dict(os.environ, **verilator_env())
    folder = WORK / "verilator"
    subprocess.run(["verilator", "--binary", "--timing", "-Wno-fatal", "--top-module", "tb",
                    "--x-initial", "unique", "--x-assign", "unique", "-Mdir", str(folder),
                    "-o", "tb", str(tb), str(top)],
                   check=True, capture_output=True, env=env, timeout=1800)
    proc = subprocess.run([str(folder / "tb"), "+verilator+rand+reset+2", "+verilator+seed+7"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    values = _values(proc.stdout)
    _check(values)
    vvp = WORK / "tb2012.vvp"
    if shutil.which("iverilog"):
        subprocess.run(["iverilog", "-g2012", "-o", str(vvp), "-s", "tb", str(tb), str(top)],
                       check=True, capture_output=True, timeout=300)
        icarus = subprocess.run(["vvp", "-n", str(vvp)], capture_output=True, text=True,
                                timeout=300)
        assert values == _values(icarus.stdout)
