"""Verilog from an Amaranth component, as ``amaranth.back.verilog`` writes
it, with the two changes the project's Yosys flow needs (:func:`convert`)."""

import re

from amaranth._toolchain.yosys import find_yosys
from amaranth.back import rtlil

__all__ = ["convert"]


def convert(design, name, keep_flops=True):
    """Verilog text of the component ``design`` as module ``name``: Amaranth's
    RTLIL, written by the Yosys Amaranth runs (as ``amaranth.back.verilog``
    does), with two changes.

    Each flip-flop whose output is a register the gateware marks ``keep``
    (copies of one value that synthesis must keep apart) carries ``keep``
    itself (:func:`_keep_flops`): the Verilog writes ``(* keep = 32'd1 *)``
    before that register's ``always`` block, and Yosys' ``proc`` gives the
    mark to the flip-flop it builds from the block, so ``opt_merge`` keeps
    equal copies apart in any flow reading the Verilog.  (A ``keep`` on the
    register's declaration alone keeps the wire, not the flip-flop.)
    ``keep_flops=False`` leaves the marks out (the text as Amaranth's own
    ``write_verilog`` would write it, for comparison).

    Amaranth names a wire after each element of an
    array-shaped value (``regions[2]``, ``regions[2].base``); those are
    aliases of bits of other signals, and are given private names
    (``$alias<n>``) before the Verilog is written, because Yosys 0.70's ABC9
    mapping (``synth_ecp5``) aborts on some netlists whose public wire names
    hold brackets (an assertion in ``abc_ops_reintegrate``).

    The ``always @*`` blocks run once at time 0 in any simulator
    (:func:`_time_zero_trigger`)."""
    text = _private_aliases(rtlil.convert(design, name=name, emit_src=False))
    if keep_flops:
        text = _keep_flops(text)
    yosys = find_yosys(lambda version: version >= (0, 40))
    script = [f"read_rtlil <<rtlil\n{text}\nrtlil", "proc -nomux -norom", "memory_collect",
              "write_verilog -norename"]
    return _time_zero_trigger(yosys.run(["-q", "-"], "\n".join(script), ignore_warnings=True))


#: The trigger Yosys' ``write_verilog`` declares in each module that has
#: ``always @*`` blocks: ``reg \$auto$verilog_backend.cc:<line>:dump_module$<n>  = 0;``.
_TRIGGER = re.compile(r"^(\s*)reg (\\\$auto\$verilog_backend\.cc:\d+:dump_module\$\d+ ) = 0;$",
                      re.M)


def _time_zero_trigger(text):
    """``text`` (Verilog) with each module's time-0 trigger a net.

    An ``always @*`` block waits for a change of what it reads before it
    runs first, so a block whose inputs are constants or registers that
    keep their initial values never runs: its outputs stay X.  Yosys reads
    a trigger of its own in every such block (``if (trigger) begin end``),
    declared ``reg trigger = 0``; but a variable's initialiser makes no
    event under SystemVerilog's rules (Icarus ``-g2012``), so the outputs
    stayed X from time 0 on (an ``s2m_drs_valid`` of X with ``rst`` high).
    As a net with a declaration assignment (a continuous assignment) the
    trigger changes from X to 0 at time 0 in Verilog and SystemVerilog
    alike, and every block runs once.  Synthesis sees the same constant."""
    return _TRIGGER.sub(r"\1wire \2 = 1'h0;", text)


#: An RTLIL identifier holding a bracket (a whole token: a slice of a wire
#: is written apart from its name, ``\x [3:0]``).
_BRACKETED = re.compile(r"(?<=[\s{])\\[^\s\[]*\[[^\s]*")


def _private_aliases(text):
    """``text`` (RTLIL) with each public identifier holding a bracket
    renamed to a private ``$alias<n>``."""
    names = {}
    return _BRACKETED.sub(lambda m: names.setdefault(m.group(0), f"$alias{len(names)}"), text)


#: The first token of an RTLIL line; the wire's or cell's name on its line.
_LINE = re.compile(r"^\s*(\S+)(?:.*\s(\S+))?\s*$")
#: An identifier in an RTLIL signal expression (``\\x [3:0]``, ``{ $1 \\y }``).
_IDENTIFIER = re.compile(r"(?<![^\s{])[\\$][^\s{}\[]+")


def _keep_flops(text):
    """``text`` (RTLIL) with ``attribute \\keep 1`` on every cell whose ``Q``
    output (a flip-flop's) holds a bit of a wire of the same module marked
    ``keep``: what ``setattr -set keep 1 w:* a:keep %i %ci1:+[Q]`` selects
    in Yosys.  Everything else is left as it is."""
    lines = text.split("\n")
    kept, attributes, cell, marked = set(), [], None, set()
    for n, line in enumerate(lines):
        m = _LINE.match(line)
        word = m.group(1) if m else ""
        if word == "module":
            kept = set()
        if word == "attribute":
            attributes.append(line.split()[1:])
            continue
        if word == "wire" and any(a[0] == "\\keep" and a[1:] != ["0"] for a in attributes):
            kept.add(m.group(2))
        elif word == "cell":
            cell = (n, any(a[0] == "\\keep" for a in attributes))
        elif word == "connect" and cell is not None and line.split()[1] == "\\Q":
            if not cell[1] and kept.intersection(_IDENTIFIER.findall(line.split(None, 2)[2])):
                marked.add(cell[0])
        elif word == "end":
            cell = None
        attributes = []
    return "\n".join(f"{line[:len(line) - len(line.lstrip())]}attribute \\keep 1\n{line}"
                     if n in marked else line for n, line in enumerate(lines))
