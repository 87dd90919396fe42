"""``make release``: the files an integrator takes without Python.

``python -m neuron_fabric.hdl.export.release --out build/release`` writes,
for one parameter set (the defaults of contract section 1 unless told):

- ``<profile>/`` for each profile of ``contract/facts.py`` (``full``,
  ``paper``): ``neuron_fabric.v`` (the top), ``neuron_fabric_datapath.v``
  (the core alone), the register map (``neuron_fabric_regs.h``,
  ``neuron_fabric_regs.json``) and the build's widths
  (``neuron_fabric_params.vh``);
- ``neuron_fabric.vlt``: the lint waivers, scoped to the exported files;
- ``neuron_fabric.core``: a FuseSoC core (CAPI2) listing those files, with
  no generator: target ``default`` (``full``) and ``paper``, and the lint
  targets ``lint`` and ``lint_paper`` (Verilator ``-Wall`` with the
  waivers);
- ``LICENSE``, ``CHANGELOG.md`` (this version's entry) and ``SHA256SUMS``
  (``sha256sum -c SHA256SUMS`` checks every other file).

The release's version is the package's (``pyproject.toml``), which must
have its entry in the checkout's ``CHANGELOG.md``.
"""

import hashlib
import pathlib
import re
import shutil
import sys

import yaml

from neuron_fabric.contract.cli import ArgumentParser, guarded, package_version, parameter_set, \
    write_error
from neuron_fabric.contract.facts import DATAPATH_MODULE, PROFILES, TOP_MODULE, TopParams
from neuron_fabric.contract.paths import REPO, VERILOG_CACHE
from neuron_fabric.contract.regmap_files import HEADER_NAME, JSON_NAME, write_files
from neuron_fabric.hdl.export.integration import (PARAMS_HEADER_NAME, WAIVER_NAME,
                                                  params_header, waiver_config)
from neuron_fabric.hdl.export.verilog import (cached_verilog, datapath_verilog, top_verilog,
                                              write_verilog)

__all__ = ["CORE_NAME", "SUMS_NAME", "changelog_entry", "release_core", "build_release", "main"]

CORE_NAME = "neuron_fabric.core"
SUMS_NAME = "SHA256SUMS"
VLNV = "neuron-fabric:ip:neuron_fabric"


class ReleaseError(ValueError):
    """Something the release needs is missing."""


def changelog_entry(text, version):
    """The section of ``CHANGELOG.md`` ``text`` for ``version`` (from its
    ``## <version>`` heading to the next), or :class:`ReleaseError`."""
    match = re.search(rf"^## {re.escape(version)}\b.*?(?=^## |\Z)", text, re.M | re.S)
    if not match:
        raise ReleaseError(f"CHANGELOG.md has no entry '## {version}'")
    return match.group(0).rstrip() + "\n"


def release_core(version, params):
    """The CAPI2 text of the release's core (files relative to the release)."""
    filesets = {"waivers": {"files": [{WAIVER_NAME: {"file_type": "vlt"}}]}}
    targets = {}
    for profile in PROFILES:
        filesets[profile] = {"files": [
            {f"{profile}/{PARAMS_HEADER_NAME}": {"file_type": "verilogSource",
                                                 "is_include_file": True}},
            {f"{profile}/{TOP_MODULE}.v": {"file_type": "verilogSource"}}]}
        filesets[f"{profile}_datapath"] = {"files": [
            {f"{profile}/{DATAPATH_MODULE}.v": {"file_type": "verilogSource"}}]}
        filesets[f"{profile}_regmap"] = {"files": [
            {f"{profile}/{HEADER_NAME}": {"file_type": "user"}},
            {f"{profile}/{JSON_NAME}": {"file_type": "user"}}]}
    for profile in PROFILES:
        name = "default" if profile == "full" else profile
        targets[name] = {"filesets": ["waivers", profile, f"{profile}_regmap"],
                         "toplevel": TOP_MODULE}
    for profile in PROFILES:
        name = "lint" if profile == "full" else f"lint_{profile}"
        targets[name] = {"description": f"Verilator lint of the {profile} profile's top",
                         "filesets": ["waivers", profile], "toplevel": TOP_MODULE,
                         "flow": "lint", "flow_options": {"tool": "verilator",
                                                          "verilator_options": ["-Wall"]}}
    core = {"name": f"{VLNV}:{version}",
            "description": (f"NEURON-Fabric {version}, exported Verilog: LINE_BITS="
                            f"{params.line_bits} WORKERS={params.workers} STAGES="
                            f"{params.stages} REGIONS={params.regions} MAX_OUTSTANDING="
                            f"{params.max_outstanding}, profiles {', '.join(PROFILES)}"),
            "filesets": filesets, "targets": targets}
    return "CAPI=2:\n" + yaml.safe_dump(core, sort_keys=False)


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_release(out, params, cache=VERILOG_CACHE, progress=print):
    """Write the release of ``params`` (a :class:`TopParams`; its profile
    is ignored: every profile is written) into ``out``; return the paths
    written, ``SHA256SUMS`` last."""
    out = pathlib.Path(out)
    version = package_version()
    entry = changelog_entry((REPO / "CHANGELOG.md").read_text(), version)
    written = []
    for profile in PROFILES:
        build = TopParams(**dict(params.__dict__, profile=profile))
        core = dict(line_bits=build.line_bits, workers=build.workers, stages=build.stages,
                    profile=profile)
        progress(f"release: exporting the {profile} profile ({build.tag()})", flush=True)
        folder = out / profile
        written.append(write_verilog(folder / f"{TOP_MODULE}.v", cached_verilog(
            top_verilog, cache, regions=build.regions,
            max_outstanding=build.max_outstanding, **core)))
        written.append(write_verilog(folder / f"{DATAPATH_MODULE}.v",
                                     cached_verilog(datapath_verilog, cache, **core)))
        written += write_files(folder, build)
        written.append(write_verilog(folder / PARAMS_HEADER_NAME, params_header(build)))
    written.append(write_verilog(out / WAIVER_NAME, waiver_config()))
    written.append(write_verilog(out / CORE_NAME, release_core(version, params)))
    written.append(write_verilog(out / "CHANGELOG.md", entry))
    licence = out / "LICENSE"
    shutil.copyfile(REPO / "LICENSE", licence)
    written.append(licence)
    sums = "".join(f"{_sha256(p)}  {p.relative_to(out).as_posix()}\n" for p in written)
    written.append(write_verilog(out / SUMS_NAME, sums))
    return written


@guarded
def main(argv=None):
    p = ArgumentParser(prog="python -m neuron_fabric.hdl.export.release", parameters=True,
                       description="Write the release: the exported Verilog of both "
                                   "profiles, register maps, parameter headers, lint "
                                   "waivers, a FuseSoC core, LICENSE, this version's "
                                   "CHANGELOG entry and SHA256SUMS.")
    p.add_parameters()
    p.add_argument("--out", default="build/release", help="folder (default %(default)s)")
    p.add_argument("--cache", default=str(VERILOG_CACHE),
                   help="export cache folder (default %(default)s)")
    args = p.parse_args(argv)
    params = TopParams(line_bits=args.line_bits, workers=args.workers, stages=args.stages,
                       regions=args.regions, max_outstanding=args.max_outstanding)
    parameter_set(params.tag())
    out = pathlib.Path(args.out)
    try:
        written = build_release(out, params, args.cache)
    except ReleaseError as exc:
        p.error(str(exc))
    except OSError as exc:
        p.error(f"cannot write the release into {str(out)!r}: "
                f"{write_error(out / 'x', exc)}")
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
