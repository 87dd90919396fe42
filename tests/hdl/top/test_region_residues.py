"""The region residues (``hdl/top/region_residues.py``) in the Amaranth
simulator: within ``refresh_cycles`` of a BASE change, each region's
residues are ``(-BASE) mod 8`` and ``(-BASE) mod q`` for each modulus, as
integer arithmetic gives them."""

import random

import pytest
from amaranth import Fragment, Shape

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.hdl.top.phase import MODULI
from neuron_fabric.hdl.top.region_residues import RegionResidues, ResidueLayout, refresh_cycles
from neuron_fabric.sim.amaranth_sim import run_testbenches


def test_residue_layout_holds_each_residue():
    layout = ResidueLayout()
    assert Shape.cast(layout["low"].shape).width == 3
    for q in MODULI:
        assert 1 << Shape.cast(layout[f"r{q}"].shape).width >= q


@pytest.mark.parametrize("regions", [1, 3])
def test_residues_follow_each_base(regions):
    params = TopParams(line_bits=64, workers=8, stages=2, regions=regions)
    dut = RegionResidues(params)
    width = 52 - params.offset_bits
    rng = random.Random(regions)
    bases = [0, (1 << width) - 1] + [rng.getrandbits(width) for _ in range(4)]

    def want(base):
        return {"low": (-base) % 8, **{f"r{q}": (-base) % q for q in MODULI}}

    async def bench(ctx):
        table = [rng.choice(bases) for _ in range(regions)]
        for step in range(4):
            for r, base in enumerate(table):
                ctx.set(dut.bases[r], base)
            await ctx.tick().repeat(refresh_cycles(params))
            for r, base in enumerate(table):
                got = ctx.get(dut.residues[r])
                assert {k: int(getattr(got, k)) for k in want(base)} == want(base), (r, base)
            # then one region's BASE changes
            table[step % regions] = rng.choice(bases)

    run_testbenches(dut, bench)


def test_no_regions_no_logic():
    dut = RegionResidues(TopParams(line_bits=64, workers=8, stages=2, regions=0))
    assert not Fragment.get(dut, None).statements
