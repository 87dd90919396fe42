"""What the request pipeline hands on (``hdl/top/request_layout.py``): the
class of each M2S Req opcode against the table of contract 4.2 (written
out here with the contract's encodings), the layouts' fields against
contract 4.4 and section 5, and a read's in-flight entry in the Amaranth
simulator."""

import random

import pytest
from amaranth import Module, Shape, Signal

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.hdl.top.cfg import CfgLayout
from neuron_fabric.hdl.top.request_layout import (Kind, ReadCfgLayout, ReadEntryLayout,
                                                  RequestLayout, answered_here, classify,
                                                  read_entry)
from neuron_fabric.sim.amaranth_sim import run_testbenches

#: contract 4.2, M2S Req: MemRd 0001 and MemRdData 0010 read; MemInv 0000
#: and MemInvNT 1001 get NDR Cmp; MemSpecRd 1000 no response; any other
#: NDR Cmp and STATUS.UNSUPPORTED.
CONTRACT_REQ = {0b0001: "read", 0b0010: "read", 0b0000: "cmp", 0b1001: "cmp", 0b1000: "drop"}
KINDS = {"read": Kind.READ, "cmp": Kind.CMP, "drop": Kind.DROP, "unsupported": Kind.UNSUPPORTED}


def _widths(layout):
    return {name: Shape.cast(field.shape).width for name, field in layout}


def test_classify_every_opcode_as_the_contract():
    m = Module()
    opcode = Signal(4)
    kind, here = classify(m, opcode), Signal()
    m.d.comb += here.eq(answered_here(kind))

    async def bench(ctx):
        for op in range(16):
            ctx.set(opcode, op)
            what = CONTRACT_REQ.get(op, "unsupported")
            assert ctx.get(kind) == KINDS[what], bin(op)
            # answered by the top itself (NDR Cmp, no memory access)
            assert ctx.get(here) == int(what in ("cmp", "unsupported")), bin(op)

    run_testbenches(m, bench, clock=False)
    assert len(set(KINDS.values())) == 4


@pytest.mark.parametrize("profile", ["full", "paper"])
def test_layouts(profile):
    params = TopParams(line_bits=128, workers=8, stages=2, regions=2, max_outstanding=16,
                       profile=profile)
    # contract 4.4: mode [1:0], format [3:2], gate kind [4], threshold [20:16];
    # section 5 (the hierarchy feature, full profile only): layout [5],
    # operand [7:6], total [30:21]
    cfg = {"mode": 2, "format": 2, "gate_kind": 1, "threshold": 5}
    if profile == "full":
        cfg.update(layout=1, operand=2, total=10)
    assert _widths(ReadCfgLayout(params)) == cfg
    # the request for issue: a 16-bit tag, the line address (52 bits less
    # the 4 offset bits of a 16-byte line), the AXI ID (16 places: 4 bits)
    assert _widths(RequestLayout(params)) == {"kind": 2, "tag": 16, "addr": 48, "id": 4,
                                              "mode": 2}
    entry = _widths(ReadEntryLayout(params))
    extra = {"permute": 1} if profile == "full" else {}
    assert {k: v for k, v in entry.items() if k != "limits"} == \
        {"tag": 16, "cfg": sum(cfg.values()), "mask": 128 // 8, **extra}
    assert ("limits" in entry) == (profile == "full")


@pytest.mark.parametrize("profile", ["full", "paper"])
def test_read_entry_copies_the_cfg_and_forms_permute(profile):
    params = TopParams(line_bits=64, workers=4, stages=2, regions=1, max_outstanding=4,
                       profile=profile)
    m = Module()
    tag, mask = Signal(16), Signal(params.lanes)
    cfg = Signal(CfgLayout)
    layout = ReadEntryLayout(params)
    limits = Signal(Shape.cast(layout["limits"].shape).width) if profile == "full" else None
    entry = read_entry(m, params, tag, cfg, mask, limits)
    out = Signal(layout)
    m.d.comb += out.eq(entry)
    rng = random.Random(profile)

    async def bench(ctx):
        for _ in range(200):
            values = {name: rng.getrandbits(Shape.cast(field.shape).width)
                      for name, field in CfgLayout}
            t, k = rng.getrandbits(16), rng.getrandbits(params.lanes)
            for name, v in values.items():
                ctx.set(cfg[name], v)
            ctx.set(tag, t)
            ctx.set(mask, k)
            if limits is not None:
                lim = rng.getrandbits(len(limits))
                ctx.set(limits, lim)
            got = ctx.get(out)
            assert (got.tag, got.mask) == (t, k)
            for name, _ in ReadCfgLayout(params):
                assert getattr(got.cfg, name) == values[name], name
            if profile == "full":
                # worker-major SIGNS lines of a G-Binary or G-Ternary read
                # reach the core element-major (contract section 5.2)
                assert got.permute == int(values["layout"] == 1 and values["operand"] == 0 and
                                          values["mode"] >= 2), values
                assert got.limits == lim

    run_testbenches(m, bench, clock=False)
