"""Verilog from an Amaranth component (``hdl/export/convert.py``): the
module has the name asked for and the component's ports, and no public
wire name holds a bracket (Amaranth names a wire after each element of an
array-shaped value; those become private ``$alias<n>`` names)."""

import re

from amaranth import Module
from amaranth.back import rtlil
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.hdl.export.convert import _private_aliases, convert

REGION = data.StructLayout({"base": 4, "limit": 4})


class _Probe(wiring.Component):
    """An array-shaped input, elements of which drive the output."""

    def __init__(self):
        super().__init__({"regions": In(data.ArrayLayout(REGION, 3)), "sel": In(2),
                          "out": Out(5)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.out.eq(self.regions[self.sel].base + self.regions[2].limit)
        return m


def _ports(text, module):
    body = text[text.index(f"module {module}("):]
    body = body[:body.index("endmodule")]
    return {name: (direction, int(msb) + 1 if msb else 1) for direction, msb, name in
            re.findall(r"^\s*(input|output)\s+(?:wire\s+|reg\s+)?(?:\[(\d+):0\]\s*)?(\w+)\s*;",
                       body, re.M)}


def test_convert_names_the_module_and_keeps_the_ports():
    text = convert(_Probe(), "nf_probe_top")
    assert re.search(r"^module nf_probe_top\(", text, re.M)
    assert _ports(text, "nf_probe_top") == {"regions": ("input", 24), "sel": ("input", 2),
                                             "out": ("output", 5)}
    # (Amaranth's own RTLIL has bracketed names here, so the rename is at work)
    assert re.search(r"\\regions\[\d\]", rtlil.convert(_Probe(), name="p", emit_src=False))
    assert not re.search(r"\\[^\s\[]*\[", text), "a public name holds a bracket"


def test_private_aliases_hand_worked():
    text = ("  wire width 8 \\regions[2]\n"
            "  wire width 4 \\regions[2].base\n"
            "  connect \\x [3:0] \\regions[2].base\n"
            "  connect { \\regions[2] } \\y\n")
    assert _private_aliases(text) == ("  wire width 8 $alias0\n"
                                      "  wire width 4 $alias1\n"
                                      "  connect \\x [3:0] $alias1\n"
                                      "  connect { $alias0 } \\y\n")
