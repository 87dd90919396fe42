"""The register map of :mod:`.regmap` as files for software: a C header and JSON.

Both are written from :class:`~.regmap.RegisterMap`, the one source, for one
parameter set (CAPS0/CAPS1 hold the parameters, and REGIONS sets how many
region registers exist).

C header (:func:`c_header`), every value an unsigned constant:

- ``NF_REG_<NAME>_OFFSET``, ``NF_REG_<NAME>_RESET``, ``NF_REG_<NAME>_ACCESS``
  (``NF_ACCESS_RO``, ``NF_ACCESS_RW`` or ``NF_ACCESS_RW1C``) for every register;
- ``NF_<NAME>_<FIELD>_SHIFT``, ``_WIDTH``, ``_MASK`` (in place) and ``_RESET``
  (the field's value at reset) for every field;
- for the register arrays, ``NF_REG_COUNTER_LO_OFFSET(j)``,
  ``NF_REG_REGION_CFG_OFFSET(r)`` ... and their fields without the index
  (``NF_REGION_CFG_MODE_SHIFT``);
- the build's parameters (``NF_LINE_BITS`` ...), the CFG encodings
  (``NF_MODE_GBINARY``, ``NF_FORMAT_SIGN`` ...) and the counter numbers
  (``NF_COUNTER_WRITES``);
- ``NF_FIELD_GET(NF_<NAME>_<FIELD>, value)`` and
  ``NF_FIELD_PUT(NF_<NAME>_<FIELD>, value, field_value)``.

JSON (:func:`json_text`): the parameters and, per register, its name,
offset, access, kind, description, index, constant value, reset and fields
(name, lsb, width, mask, reset, description).  :func:`from_json` reads it
back into :class:`~.regmap.Register` objects.

Command line: ``neuron-fabric-regmap --header F
--json F [--line-bits ...]`` (or ``python -m neuron_fabric.contract.regmap_files``);
``neuron-fabric-export --regmap`` writes both
beside the Verilog.
"""

import json
import pathlib
import re
import sys
from dataclasses import replace

from neuron_fabric.contract.cli import ArgumentParser, guarded, write_error
from neuron_fabric.contract.facts import (TOP_MODULE, Format, GateKind, Layout, Mode,
                                          Operand, TopParams)
from neuron_fabric.contract.regmap import (ADDR_BITS, COUNTERS, DATA_BITS, ID_VALUE,
                                           VERSION_MAJOR, VERSION_MINOR, Field, Register,
                                           RegisterMap)

__all__ = ["HEADER_NAME", "JSON_NAME", "JSON_FORMAT", "ACCESS_CODES", "c_header", "json_data",
           "json_text", "from_json", "write_files", "main"]

#: File names of the header and the JSON beside the exported Verilog.
HEADER_NAME = "neuron_fabric_regs.h"
JSON_NAME = "neuron_fabric_regs.json"
#: The JSON's ``format`` key and version.
JSON_FORMAT = "neuron-fabric-regmap"
JSON_VERSION = 1

#: The C code of each access kind.
ACCESS_CODES = {"RO": 0, "RW": 1, "RW1C": 2}

#: The CFG fields that hold an encoding, and the encoding.
_ENCODINGS = {"MODE": Mode, "FORMAT": Format, "GATE_KIND": GateKind, "LAYOUT": Layout,
              "OPERAND": Operand}

#: A register of an array: its group name and index (``REGION3_CFG``:
#: ``REGION_CFG``, 3).
_ARRAY = re.compile(r"^(COUNTER|REGION)(\d+)_(\w+)$")

_PARAMS = ("line_bits", "workers", "stages", "regions", "max_outstanding", "profile")


def _field_reset(register, field):
    """A field's value at reset (a constant's fields hold its value)."""
    return field.get(register.reset)


def _describe(params):
    return (f"LINE_BITS={params.line_bits} WORKERS={params.workers} STAGES={params.stages} "
            f"REGIONS={params.regions} MAX_OUTSTANDING={params.max_outstanding} "
            f"profile={params.profile}")


def _hex(value):
    return f"0x{value:08X}u"


def _c_comment(text):
    return text.replace("*/", "* /")


def _define(name, value, comment=None):
    line = f"#define {name:<44} {value}"
    return line + (f"  /* {_c_comment(comment)} */" if comment else "")


def _field_lines(prefix, register, fields):
    out = []
    for f in fields:
        name = f"{prefix}_{f.name.upper()}"
        out += [_define(f"{name}_SHIFT", f"{f.lsb}u", f.doc),
                _define(f"{name}_WIDTH", f"{f.width}u"),
                _define(f"{name}_MASK", _hex(f.mask))]
        if register is not None:
            out.append(_define(f"{name}_RESET", _hex(_field_reset(register, f))))
    return out


def _arrays(params):
    """``{group: (first offset, stride, count, the first register)}`` of the
    register arrays: counters, and regions when the build has any.  The
    stride is read off a map with two regions when the build has one."""
    rmap = RegisterMap(replace(params, regions=max(params.regions, 2)))
    out = {}
    for reg in rmap.registers:
        m = _ARRAY.match(reg.name)
        if not m or int(m.group(2)) != 0:
            continue
        kind, word = m.group(1), m.group(3)
        count = len(COUNTERS) if kind == "COUNTER" else params.regions
        if not count:
            continue
        stride = rmap[f"{kind}1_{word}"].offset - reg.offset
        out[f"{kind}_{word}"] = (reg.offset, stride, count, reg)
    return out


def c_header(params=None):
    """The C header of the register map of ``params`` (a
    :class:`~.facts.TopParams`; default the default build)."""
    params = params or TopParams()
    rmap = RegisterMap(params)
    guard = "NEURON_FABRIC_REGS_H"
    out = [
        f"/* Control registers of {TOP_MODULE}: {_describe(params)}.",
        " * Generated from contract/regmap.py (neuron-fabric-export --regmap); do not edit.",
        " * AXI4-Lite, 32-bit data, 12-bit byte address.  Offsets are in bytes. */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "/* Build parameters (also in CAPS0 and CAPS1). */",
        _define("NF_LINE_BITS", f"{params.line_bits}u"),
        _define("NF_WORKERS", f"{params.workers}u"),
        _define("NF_STAGES", f"{params.stages}u"),
        _define("NF_REGIONS", f"{params.regions}u"),
        _define("NF_MAX_OUTSTANDING", f"{params.max_outstanding}u"),
        _define(f"NF_PROFILE_{params.profile.upper()}", "1u", "the build's feature profile"),
        _define("NF_REG_DATA_BITS", f"{DATA_BITS}u"),
        _define("NF_REG_ADDR_BITS", f"{ADDR_BITS}u"),
        _define("NF_ID_VALUE", _hex(ID_VALUE), "ASCII NFAB"),
        _define("NF_VERSION_MAJOR", f"{VERSION_MAJOR}u"),
        _define("NF_VERSION_MINOR", f"{VERSION_MINOR}u"),
        "",
        "/* Access kinds (NF_REG_<NAME>_ACCESS). */",
        *(_define(f"NF_ACCESS_{name}", f"{code}u") for name, code in ACCESS_CODES.items()),
        "",
        "/* A field's value in a register value, and a register value with a field replaced:",
        " * NF_FIELD_GET(NF_DEFAULT_CFG_MODE, v), NF_FIELD_PUT(NF_DEFAULT_CFG_MODE, v, NF_MODE_GBINARY). */",
        "#define NF_FIELD_GET(field, value) \\",
        "    ((((unsigned long)(value)) & field##_MASK) >> field##_SHIFT)",
        "#define NF_FIELD_PUT(field, value, field_value) \\",
        "    ((((unsigned long)(value)) & ~(unsigned long)field##_MASK) | \\",
        "     ((((unsigned long)(field_value)) << field##_SHIFT) & field##_MASK))",
        "",
        "/* CFG encodings (contract sections 2 and 5). */",
    ]
    for field, enum in _ENCODINGS.items():
        out += [_define(f"NF_{field}_{member.name}", f"{int(member)}u") for member in enum]
    out += ["", "/* Counter numbers (COUNTERj_LO/HI). */"]
    out += [_define(f"NF_COUNTER_{name.upper()}", f"{j}u") for j, name in enumerate(COUNTERS)]
    out += [_define("NF_COUNTERS", f"{len(COUNTERS)}u")]
    for reg in rmap.registers:
        out += ["", f"/* {reg.name} ({reg.access}): {_c_comment(reg.doc)} */",
                _define(f"NF_REG_{reg.name}_OFFSET", f"0x{reg.offset:03X}u"),
                _define(f"NF_REG_{reg.name}_RESET", _hex(reg.reset)),
                _define(f"NF_REG_{reg.name}_ACCESS", f"NF_ACCESS_{reg.access}")]
        out += _field_lines(f"NF_{reg.name}", reg, reg.fields)
    arrays = _arrays(params)
    if arrays:
        out += ["", "/* Register arrays: offset of entry i, and the fields of every entry. */"]
    for group, (first, stride, count, reg) in arrays.items():
        index = "j" if group.startswith("COUNTER") else "r"
        out += ["", _define(f"NF_REG_{group}_OFFSET({index})",
                            f"(0x{first:03X}u + 0x{stride:X}u * (unsigned)({index}))",
                            f"{index} = 0..{count - 1}")]
        out += _field_lines(f"NF_{group}", None, reg.fields)
    out += ["", f"#endif /* {guard} */", ""]
    return "\n".join(out)


def json_data(params=None):
    """The register map of ``params`` as a JSON-ready dict."""
    params = params or TopParams()
    rmap = RegisterMap(params)
    registers = []
    for reg in rmap.registers:
        entry = {"name": reg.name, "offset": reg.offset, "access": reg.access,
                 "kind": reg.kind, "doc": reg.doc, "index": reg.index,
                 "reset": reg.reset, "writable_mask": reg.writable_mask,
                 "fields": [{"name": f.name, "lsb": f.lsb, "width": f.width, "mask": f.mask,
                             "reset": _field_reset(reg, f), "doc": f.doc}
                            for f in reg.fields]}
        if reg.kind == "const":
            entry["value"] = reg.value
        registers.append(entry)
    return {"format": JSON_FORMAT, "format_version": JSON_VERSION, "module": TOP_MODULE,
            "version": {"major": VERSION_MAJOR, "minor": VERSION_MINOR},
            "params": {name: getattr(params, name) for name in _PARAMS},
            "data_bits": DATA_BITS, "addr_bits": ADDR_BITS, "registers": registers}


def json_text(params=None):
    """:func:`json_data` as indented JSON text."""
    return json.dumps(json_data(params), indent=1) + "\n"


def from_json(text):
    """``(params, registers)`` read back from :func:`json_text`'s text: a
    :class:`~.facts.TopParams` and the :class:`~.regmap.Register` list, in
    the JSON's order.  A constant's fields carry no reset of their own (the
    register's ``value`` holds it), as in :mod:`.regmap`."""
    data = json.loads(text)
    if data.get("format") != JSON_FORMAT:
        raise ValueError(f"not a {JSON_FORMAT} file (format {data.get('format')!r})")
    params = TopParams(**data["params"])
    registers = []
    for entry in data["registers"]:
        const = entry["kind"] == "const"
        fields = tuple(Field(f["name"], f["lsb"], f["width"], f["doc"],
                             0 if const else f["reset"]) for f in entry["fields"])
        registers.append(Register(entry["name"], entry["offset"], entry["access"],
                                  entry["kind"], entry["doc"], fields, index=entry["index"],
                                  value=entry.get("value", 0)))
    return params, registers


def write_files(out_dir, params=None):
    """Write :data:`HEADER_NAME` and :data:`JSON_NAME` of ``params`` into
    ``out_dir`` (made if missing); return their paths."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in ((HEADER_NAME, c_header(params)), (JSON_NAME, json_text(params))):
        path = out_dir / name
        path.write_text(text)
        paths.append(path)
    return paths


@guarded
def main(argv=None):
    p = ArgumentParser(prog="neuron-fabric-regmap", parameters=True,
                       description="Write the register map of one build of the top "
                                   "neuron_fabric (contract section 4.4) as a C header "
                                   "and as JSON, for software.")
    p.add_parameters(profile_help="feature profile of the build (CAPS2 names it)")
    p.add_argument("--header", metavar="FILE",
                   help="write the C header (NF_REG_<NAME>_OFFSET ...) to FILE")
    p.add_argument("--json", metavar="FILE", help="write the JSON to FILE")
    p.add_version()
    args = p.parse_args(argv)
    try:
        params = TopParams(**{name: getattr(args, name) for name in _PARAMS})
    except (TypeError, ValueError) as exc:
        p.error(str(exc))
    if not (args.header or args.json):
        p.error("give --header FILE, --json FILE or both")
    for path, text in ((args.header, c_header), (args.json, json_text)):
        if path:
            path = pathlib.Path(path)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text(params))
            except OSError as exc:
                p.error(f"cannot write {str(path)!r}: {write_error(path, exc)}")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
