"""The FuseSoC generator of the IP (``neuron_fabric_gen`` in ``neuron_fabric.core``).

FuseSoC runs ``python3 hdl/export/fusesoc_gen.py INPUT.yml`` in an empty
folder of its own; INPUT is FuseSoC's generator input (GAPI 1.0: ``vlnv``,
``files_root``, ``parameters``).  The parameters are those of
``neuron-fabric-export``, in upper case, each optional (the defaults of
contract section 1):

``LINE_BITS``, ``WORKERS``, ``STAGES``, ``REGIONS``, ``MAX_OUTSTANDING``
    integers; ``PROFILE`` ``full`` or ``paper``; ``NO_TOP`` true for the
    datapath core alone.

The generator checks them (a bad one fails the run with one line naming
it), exports the Verilog into the folder (``neuron_fabric.v``, the
self-contained CXL.mem top, and ``neuron_fabric_datapath.v``, the core on
its own), writes the register map beside it (``neuron_fabric_regs.h``,
``neuron_fabric_regs.json``), the lint waivers scoped to the exported files
(``neuron_fabric.vlt``) and the build's widths (``neuron_fabric_params.vh``),
and writes ``<name>.core`` (CAPI2, named by ``vlnv``) listing those files:
fileset ``rtl`` (the waivers, the parameter header and the top, or the core
with ``NO_TOP``), ``datapath`` (the core) and ``regmap`` (the header and
JSON, file type ``user``); target ``default`` is ``rtl`` and ``regmap``
with the top level set.

The Python that runs it (``python3`` on PATH) needs neuron-fabric and
PyYAML installed (the wheel with its ``fusesoc`` extra), of the release
the core belongs to: it says so in one line otherwise.  In a source
checkout the exports go through the checkout's Verilog cache
(``build/cache/verilog``), as ``make verilog`` does.
"""

import pathlib
import re
import sys
from importlib.metadata import PackageNotFoundError, version

try:
    import yaml

    from neuron_fabric.contract.cli import guarded
    from neuron_fabric.contract.facts import (DATAPATH_MODULE, DEFAULTS, PROFILES, TOP_MODULE,
                                              TopParams)
    from neuron_fabric.contract.paths import REPO, VERILOG_CACHE
    from neuron_fabric.contract.regmap_files import HEADER_NAME, JSON_NAME, write_files
    from neuron_fabric.hdl.export.integration import (PARAMS_HEADER_NAME, WAIVER_NAME,
                                                      params_header, waiver_config)
    from neuron_fabric.hdl.export.verilog import (cached_verilog, datapath_verilog, top_verilog,
                                                  write_verilog)
except ModuleNotFoundError as exc:           # (run by FuseSoC: one line, not a traceback)
    sys.exit(f"neuron_fabric_gen: error: the python3 on PATH ({sys.executable}) cannot import "
             f"{exc.name}: install neuron-fabric and PyYAML into it (pip install "
             f"'neuron_fabric-<version>-py3-none-any.whl[fusesoc]', or `make venv` in a "
             f"checkout and activate .venv)")

__all__ = ["PARAMETERS", "GeneratorError", "read_parameters", "core_text", "generate",
           "check_package", "main"]

#: The core this generator belongs to, when FuseSoC runs it from the core's
#: folder (``hdl/export/fusesoc_gen.py`` under the folder of ``neuron_fabric.core``).
CORE_FILE = pathlib.Path(__file__).resolve().parents[2] / "neuron_fabric.core"

#: The generator's parameters: name -> (TopParams field, type, default).
PARAMETERS = {
    "LINE_BITS": ("line_bits", int, DEFAULTS["line_bits"]),
    "WORKERS": ("workers", int, DEFAULTS["workers"]),
    "STAGES": ("stages", int, DEFAULTS["stages"]),
    "REGIONS": ("regions", int, DEFAULTS["regions"]),
    "MAX_OUTSTANDING": ("max_outstanding", int, DEFAULTS["max_outstanding"]),
    "PROFILE": ("profile", str, "full"),
    "NO_TOP": (None, bool, False),
}


class GeneratorError(ValueError):
    """A generator input the export cannot take."""


def read_parameters(parameters):
    """``(TopParams, no_top)`` from the generator's ``parameters`` mapping
    (missing names take their defaults); :class:`GeneratorError` names any
    unknown parameter or bad value."""
    parameters = dict(parameters or {})
    unknown = sorted(set(parameters) - set(PARAMETERS))
    if unknown:
        raise GeneratorError(f"unknown parameter {', '.join(unknown)} "
                             f"(known: {', '.join(PARAMETERS)})")
    values = {}
    for name, (field, kind, default) in PARAMETERS.items():
        value = parameters.get(name, default)
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise GeneratorError(f"{name} must be an integer, not {value!r}")
        if kind is str and value not in PROFILES:
            raise GeneratorError(f"{name} must be one of {', '.join(sorted(PROFILES))}, "
                                 f"not {value!r}")
        if kind is bool and not isinstance(value, bool):
            raise GeneratorError(f"{name} must be true or false, not {value!r}")
        values[name] = value
    try:
        params = TopParams(**{field: values[name] for name, (field, _, _) in PARAMETERS.items()
                              if field})
    except (TypeError, ValueError) as exc:
        raise GeneratorError(str(exc)) from None
    return params, values["NO_TOP"]


def check_package(core_file=CORE_FILE):
    """Raise :class:`GeneratorError` unless the installed neuron-fabric is
    the version of the core in ``core_file`` (its VLNV's version): the
    Verilog comes from the installed package, the core from its folder."""
    if not core_file.is_file():
        return
    match = re.search(r"^name:\s*\S+:(\S+)\s*$", core_file.read_text(), re.M)
    try:
        installed = version("neuron-fabric")
    except PackageNotFoundError:
        installed = None
    if match and installed != match.group(1):
        raise GeneratorError(f"the core {core_file} is version {match.group(1)}, but the "
                             f"neuron-fabric installed for {sys.executable} is "
                             f"{installed or 'no version'}: install the package of the same "
                             f"release")


def core_text(vlnv, params, no_top=False):
    """The CAPI2 text of the generated core: the files :func:`generate` writes."""
    top = DATAPATH_MODULE if no_top else TOP_MODULE
    filesets = {
        "rtl": {"files": [{WAIVER_NAME: {"file_type": "vlt"}},
                          {PARAMS_HEADER_NAME: {"file_type": "verilogSource",
                                                "is_include_file": True}},
                          {f"{top}.v": {"file_type": "verilogSource"}}]},
        "datapath": {"files": [{f"{DATAPATH_MODULE}.v": {"file_type": "verilogSource"}}]},
        "regmap": {"files": [{HEADER_NAME: {"file_type": "user"}},
                             {JSON_NAME: {"file_type": "user"}}]},
    }
    core = {
        "name": vlnv,
        "description": (f"NEURON-Fabric {top}: LINE_BITS={params.line_bits} "
                        f"WORKERS={params.workers} STAGES={params.stages} "
                        f"REGIONS={params.regions} MAX_OUTSTANDING={params.max_outstanding} "
                        f"profile={params.profile} (generated by neuron_fabric_gen)"),
        "filesets": filesets,
        "targets": {"default": {"filesets": ["rtl", "regmap"], "toplevel": top}},
    }
    return "CAPI=2:\n" + yaml.safe_dump(core, sort_keys=False)


def _export(function, **params):
    """``function(**params)``, through the checkout's Verilog cache when
    there is a checkout (an installed package has none: no cache)."""
    if (REPO / "pyproject.toml").is_file() and (REPO / "hdl").is_dir():
        return cached_verilog(function, VERILOG_CACHE, **params)
    return function(**params)


def generate(gapi, out_dir="."):
    """Export for the GAPI input ``gapi`` (a dict) into ``out_dir``; return
    the path of the core file written there."""
    check_package()
    params, no_top = read_parameters(gapi.get("parameters"))
    vlnv = gapi.get("vlnv")
    if not vlnv:
        raise GeneratorError("the generator input has no vlnv")
    out_dir = pathlib.Path(out_dir)
    core = dict(line_bits=params.line_bits, workers=params.workers, stages=params.stages,
                profile=params.profile)
    write_verilog(out_dir / f"{DATAPATH_MODULE}.v", _export(datapath_verilog, **core))
    if not no_top:
        write_verilog(out_dir / f"{TOP_MODULE}.v",
                      _export(top_verilog, regions=params.regions,
                              max_outstanding=params.max_outstanding, **core))
    write_files(out_dir, params)
    write_verilog(out_dir / WAIVER_NAME, waiver_config())
    write_verilog(out_dir / PARAMS_HEADER_NAME, params_header(params))
    name = vlnv.split(":")[2] if vlnv.count(":") >= 2 else "neuron_fabric"
    path = out_dir / f"{name}.core"
    path.write_text(core_text(vlnv, params, no_top))
    return path


@guarded(prog="neuron_fabric_gen")
def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: fusesoc_gen.py GENERATOR_INPUT.yml (run by FuseSoC)", file=sys.stderr)
        return 2
    try:
        gapi = yaml.safe_load(pathlib.Path(args[0]).read_text()) or {}
        path = generate(gapi)
    except GeneratorError as exc:
        print(f"neuron_fabric_gen: error: {exc}", file=sys.stderr)
        return 1
    print(f"neuron_fabric_gen: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
