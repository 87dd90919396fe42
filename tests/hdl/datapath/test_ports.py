"""What enters and leaves the datapath core (``hdl/datapath/ports.py``):
the payload layouts against the port table of contract section 3, and a
line cut into groups with each lane's mask bit in its lane's group
(Amaranth simulator)."""

import random

import pytest
from amaranth import Module, Shape, Signal

from neuron_fabric.hdl.datapath.pipeline import Geometry
from neuron_fabric.hdl.datapath.ports import InputLayout, LineIn, OutputLayout
from neuron_fabric.sim.amaranth_sim import run_testbenches


def _widths(layout):
    return {name: Shape.cast(f.shape).width for name, f in layout}


@pytest.mark.parametrize("line_bits, workers", [(64, 4), (512, 8), (1024, 16)])
def test_layouts_follow_contract_section_3(line_bits, workers):
    # in_data, in_gate_mask (E), in_tag 16, in_mode 2, in_format 2,
    # in_gate_kind 1, in_gate_threshold 5; out_data, out_tag 16
    assert _widths(InputLayout(line_bits=line_bits, lanes=line_bits // workers)) == {
        "line": line_bits, "gate_mask": line_bits // workers, "tag": 16, "mode": 2,
        "format": 2, "gate_kind": 1, "gate_threshold": 5}
    assert _widths(OutputLayout(line_bits=line_bits)) == {"line": line_bits, "tag": 16}


@pytest.mark.parametrize("line_bits, workers, group_bits", [(64, 4, 16), (128, 8, 32),
                                                            (64, 16, 16)])
def test_line_in_groups_keep_each_lanes_mask_bit(line_bits, workers, group_bits):
    lanes = line_bits // workers
    geometry = Geometry(line_bits, workers, group_bits)
    m = Module()
    payload = Signal(InputLayout(line_bits=line_bits, lanes=lanes))
    line = LineIn.from_payload(payload, geometry)
    per_group = group_bits // workers
    assert len(line.data) == len(line.mask) == line_bits // group_bits
    outs = []
    for g, (d, k) in enumerate(zip(line.data, line.mask)):
        sd, sk = Signal(len(d), name=f"d{g}"), Signal(len(k), name=f"k{g}")
        m.d.comb += [sd.eq(d), sk.eq(k)]
        outs.append((sd, sk))
    rng = random.Random(line_bits)

    async def bench(ctx):
        for _ in range(20):
            data, mask = rng.getrandbits(line_bits), rng.getrandbits(lanes)
            ctx.set(payload.line, data)
            ctx.set(payload.gate_mask, mask)
            for g, (sd, sk) in enumerate(outs):
                # lane i (bits [i*W, (i+1)*W)) and its mask bit i, in group
                # i // (lanes a group)
                for j in range(per_group):
                    i = g * per_group + j
                    assert (ctx.get(sd) >> (j * workers)) % (1 << workers) == \
                        (data >> (i * workers)) % (1 << workers), (g, j)
                    assert ctx.get(sk) >> j & 1 == mask >> i & 1, (g, j)

    run_testbenches(m, bench, clock=False)
