"""Registers the RTL marks ``keep`` (:data:`~neuron_fabric.hdl.datapath.pipeline.KEEP`)
stay apart through the flow's synthesis (``synth/flowlib.py``,
``KEEP_FLOPS``), while equal registers without the mark are merged.

The oracle is the design itself: two copies of input ``a`` marked, two
copies of input ``b`` not, each copy driving an output of its own, so a
flow that keeps exactly the marked copies maps three flip-flops."""

import json
from types import SimpleNamespace

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.hdl.datapath.pipeline import KEEP
from neuron_fabric.hdl.export.convert import convert
from neuron_fabric.synth import flowlib


class _Copies(wiring.Component):
    a: In(1)
    b: In(1)
    y: Out(4)

    def elaborate(self, platform):
        m = Module()
        copies = [Signal(name=f"a_copy{k}", reset_less=True, attrs=KEEP) for k in range(2)] + \
                 [Signal(name=f"b_copy{k}", reset_less=True) for k in range(2)]
        m.d.sync += [c.eq(self.a) for c in copies[:2]] + [c.eq(self.b) for c in copies[2:]]
        m.d.comb += self.y.eq(sum((c << k) for k, c in enumerate(copies)))
        return m


def _flip_flops(script):
    work = flowlib.scratch_dir("keep-")
    vfile = work / "copies.v"
    vfile.write_text(convert(_Copies(), "copies"))
    out = flowlib.yosys_json(vfile, script, SimpleNamespace(module="copies"), "keep-",
                             "netlist.json")
    cells = json.loads(out.read_text())["modules"]["copies"]["cells"].values()
    return sum(1 for c in cells if c["type"] in ("TRELLIS_FF", "$_DFF_P_"))


def test_marked_copies_stay_apart_on_ecp5():
    assert _flip_flops(flowlib.settings()["ecp5"]["synth"]) == 3


def test_marked_copies_stay_apart_in_generic_synthesis():
    assert _flip_flops(flowlib.settings()["generic"]["script"]) == 3
