"""Verilog from an Amaranth component, as ``amaranth.back.verilog`` writes
it, with the one change the project's Yosys flow needs (:func:`convert`)."""

import re

from amaranth._toolchain.yosys import find_yosys
from amaranth.back import rtlil

__all__ = ["convert"]


def convert(design, name):
    """Verilog text of the component ``design`` as module ``name``: Amaranth's
    RTLIL, written by the Yosys Amaranth runs (as ``amaranth.back.verilog``
    does), with one change.  Amaranth names a wire after each element of an
    array-shaped value (``regions[2]``, ``regions[2].base``); those are
    aliases of bits of other signals, and are given private names
    (``$alias<n>``) before the Verilog is written, because Yosys 0.70's ABC9
    mapping (``synth_ecp5``) aborts on some netlists whose public wire names
    hold brackets (an assertion in ``abc_ops_reintegrate``)."""
    text = _private_aliases(rtlil.convert(design, name=name, emit_src=False))
    yosys = find_yosys(lambda version: version >= (0, 40))
    script = [f"read_rtlil <<rtlil\n{text}\nrtlil", "proc -nomux -norom", "memory_collect",
              "write_verilog -norename"]
    return yosys.run(["-q", "-"], "\n".join(script), ignore_warnings=True)


#: An RTLIL identifier holding a bracket (a whole token: a slice of a wire
#: is written apart from its name, ``\x [3:0]``).
_BRACKETED = re.compile(r"(?<=[\s{])\\[^\s\[]*\[[^\s]*")


def _private_aliases(text):
    """``text`` (RTLIL) with each public identifier holding a bracket
    renamed to a private ``$alias<n>``."""
    names = {}
    return _BRACKETED.sub(lambda m: names.setdefault(m.group(0), f"$alias{len(names)}"), text)
