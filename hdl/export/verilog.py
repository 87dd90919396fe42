"""Export the design to self-contained Verilog (one file per parameter set).

Command line: ``neuron-fabric-export --help`` (or ``python -m
neuron_fabric.hdl.export.verilog``); ``make verilog`` calls it.
"""

import fcntl
import functools
import hashlib
import inspect
import json
import os
import pathlib
import sys
import tempfile

from neuron_fabric.contract.regmap_files import write_files as write_regmap_files
import amaranth
from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric import contract, hdl
from neuron_fabric.contract.cli import ArgumentParser, guarded, parameter_set, write_error
from neuron_fabric.contract.facts import (
    DATAPATH_MODULE,
    DEFAULTS,
    PROFILES,
    TOP_MODULE,
    TopParams,
)
from neuron_fabric.hdl.datapath import DatapathDesign
from neuron_fabric.hdl.export.convert import convert
from neuron_fabric.hdl.export.flat import FlatTop
from neuron_fabric.hdl.export.integration import (PARAMS_HEADER_NAME, WAIVER_NAME,
                                                  params_header, waiver_config)
from neuron_fabric.hdl.hierarchy.unit import HIERARCHY_MODULE, HierarchyUnit

__all__ = ["FlatDatapath", "FlatHierarchy", "convert", "datapath_verilog",
           "hierarchy_verilog", "top_verilog", "cache_entry", "cached_verilog", "write_verilog",
           "main"]


def _flat_port(direction, field):
    """The contract's name of a stream payload field: ``in_data`` for the
    line, else the field's name after the direction (``in_gate_mask``)."""
    return f"{direction}_{'data' if field == 'line' else field}"


class _FlatStreams(wiring.Component):
    """A design of two streams, ``i_stream`` in and ``o_stream`` out, under
    flat port names: ``in_valid``, ``in_ready``, ``in_<field>`` (the line as
    ``in_data``), and the same with ``out``.  :meth:`_build` puts the
    design's logic between the two streams."""

    def __init__(self, signature):
        self._signature = signature
        members = {}
        for direction, port, inward in self._streams(signature.create()):
            members[f"{direction}_valid"] = (In if inward else Out)(1)
            members[f"{direction}_ready"] = (Out if inward else In)(1)
            for field, value in port.payload.shape():
                members[_flat_port(direction, field)] = (In if inward else Out)(value.shape)
        super().__init__(members)

    @staticmethod
    def _streams(core):
        return [("in", core.i_stream, True), ("out", core.o_stream, False)]

    def _build(self, m, i_stream, o_stream):
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        core = self._signature.create()
        for direction, port, inward in self._streams(core):
            valid = getattr(self, f"{direction}_valid")
            ready = getattr(self, f"{direction}_ready")
            fields = [(port.payload[field], getattr(self, _flat_port(direction, field)))
                      for field, _ in port.payload.shape()]
            if inward:
                m.d.comb += [port.valid.eq(valid), ready.eq(port.ready),
                             *(inner.eq(flat) for inner, flat in fields)]
            else:
                m.d.comb += [valid.eq(port.valid), port.ready.eq(ready),
                             *(flat.eq(inner) for inner, flat in fields)]
        self._build(m, core.i_stream, core.o_stream)
        return m


class FlatDatapath(_FlatStreams):
    """The datapath core under the flat port names of contract section 3.

    The core's logic is built into this module between two internal
    streams (:meth:`DatapathDesign.build`), not held as a submodule, so
    the exported core is one module whose registers keep their names.

    Parameters
    ----------
    **params
        Those of :class:`~neuron_fabric.hdl.datapath.Datapath`.

    Members
    -------
    in_valid, in_ready, in_data, in_tag, in_mode, in_format, in_gate_kind, \
    in_gate_mask, in_gate_threshold, out_valid, out_ready, out_data, out_tag :
        The core's stream members and payload fields, by their contract
        names (``in_<field>``, the line as ``in_data``).
    """

    def __init__(self, **params):
        self._design = DatapathDesign.of(**params)
        super().__init__(self._design.signature)

    def _build(self, m, i_stream, o_stream):
        self._design.build(m, i_stream, o_stream)


class FlatHierarchy(_FlatStreams):
    """The core with the hierarchy extension
    (:class:`~neuron_fabric.hdl.hierarchy.unit.HierarchyUnit`) under the core's flat
    port names and ``in_layout``, ``in_operand``, ``in_total``.

    Parameters
    ----------
    **params
        Those of :class:`~neuron_fabric.hdl.datapath.Datapath`.
    """

    def __init__(self, **params):
        self._inner = HierarchyUnit(**params)
        super().__init__(self._inner.signature)

    def _build(self, m, i_stream, o_stream):
        inner = m.submodules.hierarchy = self._inner
        m.d.comb += [inner.i_stream.valid.eq(i_stream.valid),
                     i_stream.ready.eq(inner.i_stream.ready),
                     inner.i_stream.payload.eq(i_stream.payload),
                     o_stream.valid.eq(inner.o_stream.valid),
                     inner.o_stream.ready.eq(o_stream.ready),
                     o_stream.payload.eq(inner.o_stream.payload)]


def datapath_verilog(*, line_bits=DEFAULTS["line_bits"], workers=DEFAULTS["workers"],
                     stages=DEFAULTS["stages"], profile="full"):
    """Verilog text of the datapath core, module ``neuron_fabric_datapath``;
    ``profile`` a name or a :class:`~neuron_fabric.contract.facts.Profile`."""
    core = FlatDatapath(line_bits=line_bits, workers=workers, stages=stages, profile=profile)
    name = getattr(profile, "name", profile)
    header = (f"// {DATAPATH_MODULE}: LINE_BITS={line_bits} WORKERS={workers} "
              f"STAGES={stages} profile={name}\n"
              f"// Generated by neuron-fabric-export; do not edit.\n")
    return header + convert(core, DATAPATH_MODULE)


def hierarchy_verilog(*, line_bits=DEFAULTS["line_bits"], workers=DEFAULTS["workers"],
                      stages=DEFAULTS["stages"], profile="full"):
    """Verilog text of the core with the hierarchy extension, module
    ``neuron_fabric_hierarchy`` (its submodules in the same text)."""
    design = FlatHierarchy(line_bits=line_bits, workers=workers, stages=stages, profile=profile)
    header = (f"// {HIERARCHY_MODULE}: LINE_BITS={line_bits} WORKERS={workers} "
              f"STAGES={stages} profile={profile}\n"
              f"// Generated by neuron-fabric-export; do not edit.\n")
    return header + convert(design, HIERARCHY_MODULE)


def top_verilog(*, line_bits=DEFAULTS["line_bits"], workers=DEFAULTS["workers"],
                stages=DEFAULTS["stages"], regions=DEFAULTS["regions"],
                max_outstanding=DEFAULTS["max_outstanding"], profile="full"):
    """Verilog text of the CXL.mem top, module ``neuron_fabric`` (self-contained:
    its submodules are in the same text, under names prefixed ``neuron_fabric.``)."""
    top = FlatTop(line_bits=line_bits, workers=workers, stages=stages, regions=regions,
              max_outstanding=max_outstanding, profile=profile)
    header = (f"// {TOP_MODULE}: LINE_BITS={line_bits} WORKERS={workers} STAGES={stages} "
              f"REGIONS={regions} MAX_OUTSTANDING={max_outstanding} profile={profile} "
              f"AXI_ID_BITS={top.params.id_bits}\n"
              f"// Generated by neuron-fabric-export; do not edit.\n")
    return header + convert(top, TOP_MODULE)


@functools.cache
def _sources_digest():
    """Digest of every Python source the export reads: the gateware and the
    contract's facts it is built from, and Amaranth's version."""
    h = hashlib.sha256(amaranth.__version__.encode())
    for root in (pathlib.Path(hdl.__file__).parent, pathlib.Path(contract.__file__).parent):
        for path in sorted(root.rglob("*.py")):
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def cache_entry(export, folder, **params):
    """The file in ``folder`` that keeps ``export(**params)`` for
    :func:`cached_verilog` (it exists once the export is kept)."""
    def part(name, value):          # a profile by name or as a Profile: one key
        if name == "profile":
            value = PROFILES.get(value, value) if isinstance(value, str) else value
        if hasattr(value, "features"):
            return {"name": value.name, "features": sorted(value.features)}
        return value
    # the parameters as the export sees them (its defaults filled in), so
    # that a call naming a default and one leaving it out share one entry
    signature = inspect.signature(export)
    bound = signature.bind(**params)
    bound.apply_defaults()
    named = dict(bound.arguments)
    for name, parameter in signature.parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            named.update(named.pop(name, {}))
    key = {k: part(k, v) for k, v in sorted(named.items())}
    digest = hashlib.sha256(json.dumps([_sources_digest(), export.__name__, key])
                            .encode()).hexdigest()[:24]
    return pathlib.Path(folder) / f"{export.__name__}-{digest}.v"


def cached_verilog(export, folder, **params):
    """``export(**params)`` (one of this module's ``*_verilog`` functions),
    kept in ``folder`` and reused while the sources, Amaranth and ``params``
    are the same (elaborating the 512-bit top takes about a minute).  Processes
    asking for the same export wait for the first one instead of repeating it.
    A parameter left out and the same parameter at its default are one entry."""
    path = cache_entry(export, folder, **params)
    if path.exists():
        return path.read_text()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():                            # written while we waited
            return path.read_text()
        text = export(**params)
        write_verilog(path, text)
    return text


def _umask():
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_verilog(path, text):
    """Write ``text`` to ``path`` (folders made) in one step: a reader, such
    as a parallel test worker, never sees half a file.  The file's mode is
    what ``open`` gives under the process's umask (0644 under umask 022),
    not the private 0600 of a temporary file."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _parser():
    p = ArgumentParser(
        prog="neuron-fabric-export", parameters=True,
        description="Write the NEURON-Fabric datapath core and CXL.mem top as "
                    "self-contained Verilog.")
    p.add_parameters(profile_help="feature profile of the datapath")
    p.add_argument("--no-top", action="store_true",
                   help="write the datapath core only")
    p.add_argument("--out-dir", default="build/verilog",
                   help="folder for the .v files (default %(default)s)")
    p.add_argument("--regmap", action="store_true",
                   help="also write the register map as a C header and as JSON "
                        "(neuron_fabric_regs.h, neuron_fabric_regs.json) into the folder")
    p.add_argument("--cache", metavar="DIR",
                   help="keep each export in DIR and reuse it while the sources and "
                        "parameters are unchanged (make uses build/cache/verilog)")
    p.add_version()
    return p


@guarded
def main(argv=None):
    """Command line; every error is one line naming the bad value (exit 2),
    an internal failure one line naming the parameter set (exit 70)."""
    args = _parser().parse_args(argv)
    try:
        # Check every parameter before anything is elaborated, so that a bad
        # value leaves no half-built design behind (and no Amaranth warning).
        params = TopParams(line_bits=args.line_bits, workers=args.workers, stages=args.stages,
                           regions=args.regions, max_outstanding=args.max_outstanding,
                           profile=args.profile)
    except (TypeError, ValueError) as exc:
        print(f"neuron-fabric-export: error: {exc}", file=sys.stderr)
        return 2
    parameter_set(f"LINE_BITS={params.line_bits} WORKERS={params.workers} "
                  f"STAGES={params.stages} REGIONS={params.regions} "
                  f"MAX_OUTSTANDING={params.max_outstanding} profile={params.profile}"
                  + (" (core only)" if args.no_top else ""))
    core = dict(line_bits=params.line_bits, workers=params.workers, stages=params.stages,
                profile=params.profile)
    jobs = {DATAPATH_MODULE: (datapath_verilog, core)}
    if not args.no_top:
        jobs[TOP_MODULE] = (top_verilog, dict(core, regions=params.regions,
                                              max_outstanding=params.max_outstanding))
    texts = {}
    for module, (function, kwargs) in jobs.items():
        try:
            texts[module] = (function(**kwargs) if args.cache is None
                             else cached_verilog(function, args.cache, **kwargs))
        except OSError as exc:
            print(f"neuron-fabric-export: error: cannot keep {module}.v in the cache "
                  f"{args.cache!r}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    for module, text in texts.items():
        try:
            path = pathlib.Path(args.out_dir) / f"{module}.v"
            write_verilog(path, text)
        except OSError as exc:
            print(f"neuron-fabric-export: error: cannot write {module}.v into "
                  f"{args.out_dir!r}: {write_error(path, exc)}", file=sys.stderr)
            return 2
        print(f"wrote {path}")
    # the integrator's files: waivers scoped to the exported files, and the
    # top's widths as Verilog macros
    extra = {WAIVER_NAME: waiver_config()}
    if not args.no_top:
        extra[PARAMS_HEADER_NAME] = params_header(params)
    for name, text in extra.items():
        path = pathlib.Path(args.out_dir) / name
        write_verilog(path, text)
        print(f"wrote {path}")
    if args.regmap:
        try:
            paths = write_regmap_files(args.out_dir, params)
        except OSError as exc:
            print(f"neuron-fabric-export: error: cannot write the register map into "
                  f"{args.out_dir!r}: {write_error(pathlib.Path(args.out_dir) / 'x', exc)}",
                  file=sys.stderr)
            return 2
        for path in paths:
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
