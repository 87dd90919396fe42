"""The exported Verilog marks ``keep`` on the flip-flops behind the registers
the gateware keeps (``hdl/export/convert.py``), so that a plain flow,
``read_verilog`` then ``synth_ecp5`` without the project's ``KEEP_FLOPS``
step, keeps equal copies apart as the project's flow does (and the
project's flow, ``KEEP_FLOPS`` first, keeps them apart too, while equal
registers without the mark are merged).

Oracles: Yosys' own selection of ``KEEP_FLOPS`` (``synth/flowlib.py``) on the
Verilog without the marks; flip-flop counts of a design whose answer is
known; and the text without the marks (the export as before), from which
the marked text differs by added attribute lines only.
"""

import difflib
import json
from types import SimpleNamespace

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.hdl.datapath.pipeline import KEEP
from neuron_fabric.hdl.export.convert import _keep_flops, convert
from neuron_fabric.hdl.export.verilog import FlatDatapath
from neuron_fabric.synth import flowlib

MARK = "  (* keep = 32'd1 *)"


class _Copies(wiring.Component):
    """Two copies of ``a`` marked keep, two of ``b`` not, each driving its
    own output bit: a flow that keeps exactly the marked copies maps three
    flip-flops, one that keeps none two."""
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


def _flip_flops(text, script, keep_flops):
    work = flowlib.scratch_dir("keep-export-")
    vfile = work / "copies.v"
    vfile.write_text(text)
    out = flowlib.yosys_json(vfile, script, SimpleNamespace(module="copies"), "keep-export-",
                             "netlist.json", keep_flops=keep_flops)
    cells = json.loads(out.read_text())["modules"]["copies"]["cells"].values()
    return sum(1 for c in cells if c["type"] in ("TRELLIS_FF", "$_DFF_P_"))


def test_plain_ecp5_flow_keeps_the_marked_copies_apart():
    script = flowlib.settings()["ecp5"]["synth"]
    assert _flip_flops(convert(_Copies(), "copies"), script, keep_flops=False) == 3
    # the project's flow (KEEP_FLOPS first) keeps them apart as well
    assert _flip_flops(convert(_Copies(), "copies"), script, keep_flops=True) == 3
    # without the marks in the Verilog, only the flow's KEEP_FLOPS step keeps them
    unmarked = convert(_Copies(), "copies", keep_flops=False)
    assert _flip_flops(unmarked, script, keep_flops=False) == 2
    assert _flip_flops(unmarked, script, keep_flops=True) == 3


def test_plain_generic_flow_keeps_the_marked_copies_apart():
    script = flowlib.settings()["generic"]["script"]
    for keep_flops in (False, True):
        assert _flip_flops(convert(_Copies(), "copies"), script, keep_flops=keep_flops) == 3


def _core_texts():
    design = lambda: FlatDatapath(line_bits=64, workers=8, stages=5, profile="full")
    return (convert(design(), "neuron_fabric_datapath", keep_flops=False),
            convert(design(), "neuron_fabric_datapath"))


def test_marks_are_the_only_change_each_before_an_always_block():
    before, after = _core_texts()
    old, new = before.splitlines(), after.splitlines()
    added = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False) \
            .get_opcodes():
        if tag == "equal":
            continue
        assert tag == "insert", (tag, old[i1:i2], new[j1:j2])
        for j in range(j1, j2):
            assert new[j] == MARK
            follower = new[j + 1]
            assert follower.startswith("  always @(posedge "), follower
            added += 1
    assert added > 0
    assert "\n".join(line for line in new if line != MARK) == \
        "\n".join(line for line in old if line != MARK)


def _selected(vfile, script):
    """Q wires of the flip-flops that carry keep after ``script``."""
    work = vfile.parent
    out = work / (vfile.stem + ".sel")
    flowlib.yosys(f"read_verilog {flowlib.wasi_path(vfile)}; {script}; "
                  f"tee -q -o {flowlib.wasi_path(out)} select -list t:$dff a:keep %i "
                  f"%co1:+[Q] w:* %i", work / (vfile.stem + ".log"))
    return sorted(out.read_text().split())


def test_marked_flip_flops_are_those_keep_flops_selects():
    before, after = _core_texts()
    work = flowlib.scratch_dir("keep-select-")
    (work / "before.v").write_text(before)
    (work / "after.v").write_text(after)
    flow = _selected(work / "before.v", flowlib.KEEP_FLOPS)
    plain = _selected(work / "after.v", "proc")
    assert flow and plain == flow


RTLIL = r"""
module \a
  attribute \keep 1
  wire width 2 \k
  attribute \keep 0
  wire width 1 \z
  wire width 1 \n
  cell $dff $1
    connect \Q \k
  end
  cell $dff $2
    connect \Q { \n \k [0] }
  end
  cell $dff $3
    connect \Q \n
  end
  attribute \keep 1
  cell $dff $4
    connect \Q \k [1]
  end
  cell $dff $5
    connect \Q \z
  end
  cell $mem_v2 $6
    connect \RD_DATA \k
  end
end
module \b
  wire width 2 \k
  cell $dff $7
    connect \Q \k
  end
end
"""


def test_keep_flops_on_rtlil():
    text = _keep_flops(RTLIL)
    marked = []
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if line.strip().startswith("cell ") and lines[n - 1].strip() == "attribute \\keep 1":
            marked.append(line.split()[-1])
    assert marked == ["$1", "$2", "$4"]
    assert text.count("attribute \\keep 1") == RTLIL.count("attribute \\keep 1") + 2
