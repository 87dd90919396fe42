"""Lint the exported Verilog: ``python -m neuron_fabric.sim.lint FOLDER_OR_FILES``.

Every ``.v`` file is linted with ``verilator --lint-only -Wall`` with its
module named after the file (``neuron_fabric_datapath.v`` holds module
``neuron_fabric_datapath``).  The warning kinds in :data:`WAIVERS`
(``hdl/export/integration.py``) are switched off in that file alone, by
the waiver configuration an integrator gets (a ``.vlt`` file), each for the
reason written there: they come from the style in which Amaranth and
Yosys write Verilog, not from the design.  Anything else fails the lint.
Exit status 0 when every file is clean, 1 otherwise, 2 when there is
nothing to lint.  A result is
kept under ``build/cache/lint`` by the file's text, its module name, the
waivers and Verilator's version, so the same export is linted once.

``--release DIR`` lints a release (``make release``) with the waiver file
it ships, as an integrator would (``make release-lint``), and with
``--wrapper`` a wrapper of the full profile's top.
"""

import hashlib
import json
import os
import pathlib
import sys
from importlib.metadata import version

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.paths import BUILD
from neuron_fabric.contract.facts import DATAPATH_MODULE, PROFILES, TOP_MODULE
from neuron_fabric.hdl.export.integration import WAIVER_NAME, WAIVERS, waiver_config
from neuron_fabric.sim.toolchain import lint_verilog

__all__ = ["WAIVERS", "LINT_CACHE", "lint_file", "lint_release", "lint_wrapper", "main"]

#: Lint results, one file per linted text (see the module docstring).
LINT_CACHE = BUILD / "cache" / "lint"

def lint_file(path):
    """Lint one exported file with the waivers scoped to it; return
    ``(passed, output)``."""
    path = pathlib.Path(path)
    config = waiver_config((path.name,))
    if not path.is_file():                       # (Verilator says so)
        return _lint(path, config)
    key = hashlib.sha256(json.dumps([version("verilator"), path.stem, config])
                         .encode() + b"\0" + path.read_bytes()).hexdigest()[:24]
    kept = LINT_CACHE / f"{key}.json"
    if kept.is_file():
        return tuple(json.loads(kept.read_text()))
    passed, output = _lint(path, config)
    LINT_CACHE.mkdir(parents=True, exist_ok=True)
    tmp = kept.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps([passed, output]))
    tmp.replace(kept)
    return passed, output


def _lint(path, config):
    LINT_CACHE.mkdir(parents=True, exist_ok=True)
    vlt = LINT_CACHE / f"waivers-{hashlib.sha256(config.encode()).hexdigest()[:16]}.vlt"
    if not vlt.is_file():
        tmp = vlt.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(config)
        tmp.replace(vlt)
    rc, output = lint_verilog([vlt, path], path.stem)
    return rc == 0, output


def lint_release(folder):
    """Lint a release (``make release``) with its own waiver file: each
    profile's top and core.  Return ``[(what, passed, output)]``."""
    folder = pathlib.Path(folder)
    out = []
    for profile in PROFILES:
        for module in (TOP_MODULE, DATAPATH_MODULE):
            path = folder / profile / f"{module}.v"
            rc, output = lint_verilog([folder / WAIVER_NAME, path], module)
            out.append((str(path), rc == 0, output))
    return out


def lint_wrapper(folder, wrapper, top, options=()):
    """Lint ``wrapper`` (module ``top``; Verilator ``options`` such as
    ``-GLINE_BITS=512``) around the full profile's top of the release in
    ``folder``, with the release's waiver file.  Return ``(what, passed,
    output)``."""
    folder = pathlib.Path(folder)
    rc, output = lint_verilog([folder / WAIVER_NAME, folder / "full" / f"{TOP_MODULE}.v",
                               wrapper], top, options)
    return f"{wrapper} ({top} {' '.join(options)})".rstrip(), rc == 0, output


def _files(args):
    files = []
    for arg in args:
        p = pathlib.Path(arg)
        files += sorted(p.glob("*.v")) if p.is_dir() else [p]
    return files


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.sim.lint",
                        description="verilator --lint-only -Wall, with the waivers of "
                                    "sim/lint.py, on exported Verilog.")
    ap.add_argument("paths", nargs="*", default=["build/verilog"],
                    help="folders of .v files, or .v files (default build/verilog)")
    ap.add_argument("--release", metavar="DIR",
                    help="lint the release in DIR (make release) with its own waiver file "
                         "instead")
    ap.add_argument("--wrapper", metavar="FILE",
                    help="with --release: also lint FILE, a wrapper of the full profile's top")
    ap.add_argument("--top", metavar="MODULE", help="the wrapper's module")
    ap.add_argument("-G", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                    help="a parameter of the wrapper (Verilator -G), repeatable")
    args = ap.parse_args(argv)
    if args.release:
        if not (pathlib.Path(args.release) / WAIVER_NAME).is_file():
            ap.error(f"{args.release!r} holds no release ({WAIVER_NAME} missing): "
                     f"run make release first")
        results = lint_release(args.release)
        if args.wrapper:
            results.append(lint_wrapper(args.release, args.wrapper, args.top,
                                        [f"-G{d}" for d in args.defines]))
        print(f"lint: verilator --lint-only -Wall with {args.release}/{WAIVER_NAME}")
        for what, passed, output in results:
            print(f"{'clean' if passed else 'FAILED'}: {what}")
            if not passed:
                print(output)
        return 0 if all(passed for _, passed, _ in results) else 1
    files = _files(args.paths)
    if not files:
        print(f"lint: no .v files in {' '.join(args.paths)}", file=sys.stderr)
        return 2
    print("lint: verilator --lint-only -Wall; waived warning kinds:")
    for kind, reason in WAIVERS.items():
        print(f"  {kind}: {reason}")
    failed = 0
    for path in files:
        passed, output = lint_file(path)
        print(f"{'clean' if passed else 'FAILED'}: {path}")
        if not passed:
            failed += 1
            print(output)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
