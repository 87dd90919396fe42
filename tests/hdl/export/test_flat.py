# amaranth: UnusedElaboratable=no
"""The top's flat ports (``hdl/export/flat.py``): the names, directions and
widths of contract 4.1 (written out in ``conftest.py``), and the flat
ports wired to the top's interfaces: the ID, VERSION and CAPS2 registers read
through the ``s_axil_`` ports in the Amaranth simulator (contract 4.4)."""

import pytest
from amaranth.lib.wiring import In

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.hdl.export.flat import FlatTop, flat_names
from neuron_fabric.hdl.top.top import Top
from neuron_fabric.sim.amaranth_sim import run_testbenches

SMALL = TopParams(line_bits=64, workers=4, stages=1, regions=1, max_outstanding=4)


def _ports(named):
    out = {"clk": ("input", 1), "rst": ("input", 1)}
    for name, _, flow, shape in named:
        width = shape if isinstance(shape, int) else shape.width if hasattr(shape, "width") \
            else len(shape)
        out[name] = ("input" if flow == In else "output", width)
    return out


@pytest.mark.parametrize("params", [SMALL, TopParams(line_bits=256, workers=16, stages=3,
                                                     regions=0, max_outstanding=33)])
def test_flat_names_are_the_contract_ports(params, top_contract_ports):
    named = flat_names(Top(**params.__dict__).signature)
    assert len({name for name, _, _, _ in named}) == len(named)
    assert _ports(named) == top_contract_ports(params.line_bits, params.id_bits)


def test_flat_top_has_the_flat_ports_and_reaches_the_control_registers():
    dut = FlatTop(**SMALL.__dict__)
    assert dut.params == SMALL
    members = [(name, member.flow, member.shape) for name, member in dut.signature.members.items()]
    assert _ports([(n, None, f, s) for n, f, s in members]) == \
        _ports(flat_names(Top(**SMALL.__dict__).signature))

    async def read(ctx, addr):
        ctx.set(dut.s_axil_araddr, addr)
        ctx.set(dut.s_axil_arvalid, 1)
        ctx.set(dut.s_axil_rready, 1)
        await ctx.tick().until(dut.s_axil_arready)
        ctx.set(dut.s_axil_arvalid, 0)
        while True:
            _, _, valid, data, resp = await ctx.tick().sample(
                dut.s_axil_rvalid, dut.s_axil_rdata, dut.s_axil_rresp)
            if valid:
                return data, resp

    async def bench(ctx):
        await ctx.tick()
        assert await read(ctx, 0x000) == (0x4E464142, 0)      # ID, "NFAB"
        assert await read(ctx, 0x004) == (0x00020002, 0)      # VERSION 2.2
        # CAPS2 of the full profile: profile 0, the five features of 2.2 (bits 0..4)
        caps2, resp = await read(ctx, 0x018)
        assert (caps2 & 0xFF00001F, resp) == (0x0000001F, 0)
        # an unmapped offset: SLVERR, data 0
        assert await read(ctx, 0x0F0) == (0, 0b10)

    run_testbenches(dut, bench)
