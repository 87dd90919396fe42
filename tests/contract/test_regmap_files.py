"""The register map as a C header and as JSON (``contract/regmap_files.py``).

The header is compiled with the machine's C compiler; a small C program
built from it prints every macro's value, and those values are checked
against :class:`~neuron_fabric.contract.regmap.RegisterMap` (the one source)
and against the JSON written beside it.  A few offsets and fields are also
checked against the values contract section 4.4 spells out.
"""

import json
import re
import shutil
import subprocess

import pytest

from neuron_fabric.contract import regmap_files
from neuron_fabric.contract.facts import (Format, GateKind, Layout, Mode, Operand, TopParams,
                                          profile_named)
from neuron_fabric.contract.regmap import COUNTERS, RegisterMap, cfg_encode

CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler")

PARAM_SETS = [
    TopParams(),
    TopParams(line_bits=64, workers=4, stages=1, regions=0, max_outstanding=4, profile="paper"),
    TopParams(line_bits=1024, workers=16, stages=8, regions=1, max_outstanding=256),
    TopParams(regions=16, profile="paper"),
]
IDS = [p.tag() for p in PARAM_SETS]
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror"]


def _array(name):
    """``(group, index)`` of an array register (``REGION3_CFG``: ``REGION_CFG``, 3)."""
    m = re.match(r"^(COUNTER|REGION)(\d+)_(\w+)$", name)
    return (f"{m.group(1)}_{m.group(3)}", int(m.group(2))) if m else (None, None)


def _program(rmap):
    """C source printing, one per line, ``key value`` for every macro the
    header promises for ``rmap``; keys are built here from the naming rules,
    not read from the header."""
    lines = []

    def show(key, expr):
        lines.append(f'    printf("%s %lu\\n", "{key}", (unsigned long)({expr}));')

    for reg in rmap.registers:
        for what in ("OFFSET", "RESET", "ACCESS"):
            show(f"{reg.name}.{what}", f"NF_REG_{reg.name}_{what}")
        for f in reg.fields:
            for what in ("SHIFT", "WIDTH", "MASK", "RESET"):
                show(f"{reg.name}.{f.name}.{what}", f"NF_{reg.name}_{f.name.upper()}_{what}")
        group, index = _array(reg.name)
        if group:
            show(f"{reg.name}.ARRAY", f"NF_REG_{group}_OFFSET({index})")
            for f in reg.fields:
                for what in ("SHIFT", "WIDTH", "MASK"):
                    show(f"{reg.name}.{f.name}.ARRAY_{what}",
                         f"NF_{group}_{f.name.upper()}_{what}")
    p = rmap.params
    for name in ("LINE_BITS", "WORKERS", "STAGES", "REGIONS", "MAX_OUTSTANDING"):
        show(f"param.{name}", f"NF_{name}")
    show(f"param.profile_{p.profile}", f"NF_PROFILE_{p.profile.upper()}")
    for enum, prefix in ((Mode, "MODE"), (Format, "FORMAT"), (GateKind, "GATE_KIND"),
                         (Layout, "LAYOUT"), (Operand, "OPERAND")):
        for member in enum:
            show(f"enum.{prefix}.{member.name}", f"NF_{prefix}_{member.name}")
    for j, name in enumerate(COUNTERS):
        show(f"counter.{name}", f"NF_COUNTER_{name.upper()}")
    # the get/put helpers on a CFG word
    word = cfg_encode(mode=Mode.GTERNARY, format=Format.SIGN, period=7, keep=5, threshold=3)
    show("get.mode", f"NF_FIELD_GET(NF_DEFAULT_CFG_MODE, {word}u)")
    show("get.keep", f"NF_FIELD_GET(NF_DEFAULT_CFG_KEEP, {word}u)")
    show("put.period", f"NF_FIELD_PUT(NF_DEFAULT_CFG_PERIOD, {word}u, 12u)")
    return "\n".join(["#include <stdio.h>", '#include "neuron_fabric_regs.h"',
                      "int main(void)", "{", *lines, "    return 0;", "}", ""])


def _expected(rmap):
    """What the program must print, from the register map's objects."""
    out = {}
    codes = {"RO": 0, "RW": 1, "RW1C": 2}
    for reg in rmap.registers:
        out[f"{reg.name}.OFFSET"] = reg.offset
        out[f"{reg.name}.RESET"] = reg.reset
        out[f"{reg.name}.ACCESS"] = codes[reg.access]
        for f in reg.fields:
            out[f"{reg.name}.{f.name}.SHIFT"] = f.lsb
            out[f"{reg.name}.{f.name}.WIDTH"] = f.width
            out[f"{reg.name}.{f.name}.MASK"] = f.mask
            out[f"{reg.name}.{f.name}.RESET"] = f.get(reg.reset)
        if _array(reg.name)[0]:
            out[f"{reg.name}.ARRAY"] = reg.offset
            for f in reg.fields:
                out[f"{reg.name}.{f.name}.ARRAY_SHIFT"] = f.lsb
                out[f"{reg.name}.{f.name}.ARRAY_WIDTH"] = f.width
                out[f"{reg.name}.{f.name}.ARRAY_MASK"] = f.mask
    p = rmap.params
    out.update({"param.LINE_BITS": p.line_bits, "param.WORKERS": p.workers,
                "param.STAGES": p.stages, "param.REGIONS": p.regions,
                "param.MAX_OUTSTANDING": p.max_outstanding, f"param.profile_{p.profile}": 1})
    for enum, prefix in ((Mode, "MODE"), (Format, "FORMAT"), (GateKind, "GATE_KIND"),
                         (Layout, "LAYOUT"), (Operand, "OPERAND")):
        for member in enum:
            out[f"enum.{prefix}.{member.name}"] = int(member)
    for j, name in enumerate(COUNTERS):
        out[f"counter.{name}"] = j
    word = cfg_encode(mode=Mode.GTERNARY, format=Format.SIGN, period=7, keep=5, threshold=3)
    cfg = rmap["DEFAULT_CFG"]
    out["get.mode"] = cfg.field("mode").get(word)
    out["get.keep"] = cfg.field("keep").get(word)
    out["put.period"] = cfg.field("period").put(word, 12)
    return out


def _run_program(tmp_path, params):
    regmap_files.write_files(tmp_path, params)
    source = tmp_path / "show.c"
    source.write_text(_program(RegisterMap(params)))
    exe = tmp_path / "show"
    proc = subprocess.run([CC, *CFLAGS, "-I", str(tmp_path), "-o", str(exe), str(source)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    printed = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return {key: int(value) for key, value in (line.split() for line in printed.splitlines())}


@needs_cc
@pytest.mark.parametrize("params", PARAM_SETS, ids=IDS)
def test_header_compiles_alone(tmp_path, params):
    """The header alone is a clean C99 translation unit (and C++ too)."""
    header = tmp_path / regmap_files.HEADER_NAME
    header.write_text(regmap_files.c_header(params))
    unit = tmp_path / "unit.c"
    unit.write_text(f'#include "{header.name}"\nint nf_unused;\n')
    proc = subprocess.run([CC, "-fsyntax-only", *CFLAGS, "-I", str(tmp_path), str(unit)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_no_macro_is_defined_twice():
    for params in PARAM_SETS:
        names = re.findall(r"^#define (\w+)", regmap_files.c_header(params), re.M)
        dup = sorted({n for n in names if names.count(n) > 1})
        assert not dup, dup


@needs_cc
@pytest.mark.parametrize("params", PARAM_SETS, ids=IDS)
def test_c_program_prints_the_register_map(tmp_path, params):
    printed = _run_program(tmp_path, params)
    rmap = RegisterMap(params)
    assert printed == _expected(rmap)
    # the same numbers as the JSON written beside the header
    data = json.loads((tmp_path / regmap_files.JSON_NAME).read_text())
    for reg in data["registers"]:
        assert printed[f"{reg['name']}.OFFSET"] == reg["offset"]
        assert printed[f"{reg['name']}.RESET"] == reg["reset"]
        for f in reg["fields"]:
            key = f"{reg['name']}.{f['name']}"
            assert (printed[f"{key}.SHIFT"], printed[f"{key}.WIDTH"], printed[f"{key}.MASK"],
                    printed[f"{key}.RESET"]) == (f["lsb"], f["width"], f["mask"], f["reset"])
    # ID, VERSION, CAPS0..2, DEFAULT_CFG, STATUS; the counters; five a region
    # (BASE_LO/HI, LIMIT_LO/HI, CFG), and three more with the packed view
    # (VIEW, SOURCE_LO/HI, contract section 6.4)
    per_region = 5 + 3 * profile_named(params.profile).has("packed_view")
    assert len(data["registers"]) == 7 + 2 * len(COUNTERS) + per_region * params.regions


@needs_cc
def test_header_matches_contract_section_4_4(tmp_path):
    """Values contract section 4.4 (docs/contract.md) writes out, not read
    from the register map."""
    printed = _run_program(tmp_path, TopParams(regions=8))
    assert printed["ID.RESET"] == 0x4E464142
    assert printed["STATUS.OFFSET"] == 0x014 and printed["STATUS.ACCESS"] == 2
    assert printed["DEFAULT_CFG.OFFSET"] == 0x010
    assert printed["COUNTER5_HI.OFFSET"] == 0x0AC
    assert printed["REGION7_LIMIT_HI.OFFSET"] == 0x1F0
    assert printed["REGION3_CFG.enable.MASK"] == 0x80000000
    # reset: BYPASS, COUNT, PATTERN, P = 3, K = 2, T = 0
    assert printed["DEFAULT_CFG.RESET"] == (3 << 8) | (2 << 12)
    assert printed["CAPS0.RESET"] == 512 | (8 << 16) | (5 << 24)
    # CAPS2 (version 2.2): the full profile (0) with format_margin .. hierarchy
    assert printed["CAPS2.OFFSET"] == 0x018
    assert printed["CAPS2.RESET"] & 0xFF00001F == 0x1F
    assert printed["CAPS2.hierarchy.SHIFT"] == 4 and printed["CAPS2.profile.SHIFT"] == 24


@pytest.mark.parametrize("params", PARAM_SETS, ids=IDS)
def test_json_round_trips_to_the_register_map(params):
    read_params, registers = regmap_files.from_json(regmap_files.json_text(params))
    assert read_params == params
    assert registers == RegisterMap(params).registers


def test_json_rejects_other_files():
    with pytest.raises(ValueError, match="not a neuron-fabric-regmap file"):
        regmap_files.from_json(json.dumps({"format": "something else"}))


def test_cli_writes_both_files(tmp_path, capsys):
    header, data = tmp_path / "a" / "regs.h", tmp_path / "b" / "regs.json"
    assert regmap_files.main(["--regions", "3", "--profile", "paper", "--header", str(header),
                              "--json", str(data)]) == 0
    params = TopParams(regions=3, profile="paper")
    assert header.read_text() == regmap_files.c_header(params)
    assert regmap_files.from_json(data.read_text())[0] == params


@pytest.mark.parametrize("argv,message", [
    (["--regions", "17", "--json", "x"], "REGIONS must be in 0..16, not 17"),
    (["--line-bits", "64"], "give --header FILE, --json FILE or both"),
])
def test_cli_errors_are_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        regmap_files.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_cli_write_errors_are_one_line(tmp_path, capsys):
    """An output that cannot be written is the user's error (exit 2, one
    line naming it), not an internal error."""
    plain = tmp_path / "plain"
    plain.write_text("")
    for argv, message in ((["--json", str(plain / "regs.json")],
                           f"{str(plain)!r} is a file, not a folder"),
                          (["--header", str(tmp_path)], "Is a directory")):
        with pytest.raises(SystemExit) as exc:
            regmap_files.main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_cli_version_and_help_describe_it(capsys):
    from importlib.metadata import version
    with pytest.raises(SystemExit) as exc:
        regmap_files.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"neuron-fabric-regmap {version('neuron-fabric')}"
    with pytest.raises(SystemExit):
        regmap_files.main(["--help"])
    out = capsys.readouterr().out
    for option in ("--line-bits N", "--profile", "--header FILE", "--json FILE"):
        line = next(line for line in out.splitlines() if line.strip().startswith(option))
        assert len(line.strip()) > len(option) + 10, line      # (help text beside it)
