"""Lint the exported Verilog: ``python -m neuron_fabric.sim.lint FOLDER_OR_FILES``.

Every ``.v`` file is linted with ``verilator --lint-only -Wall`` with its
module named after the file (``neuron_fabric_datapath.v`` holds module
``neuron_fabric_datapath``).  The warning kinds in :data:`WAIVERS` are
switched off, one kind at a time, each for the reason written next to it:
they come from the style in which Amaranth and Yosys write Verilog, not
from the design.  Anything else fails the lint.  Exit status 0 when every
file is clean, 1 otherwise, 2 when there is nothing to lint.  A result is
kept under ``build/cache/lint`` by the file's text, its module name, the
waivers and Verilator's version, so the same export is linted once.
"""

import hashlib
import json
import os
import pathlib
import sys
from importlib.metadata import version

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.paths import BUILD
from neuron_fabric.sim.toolchain import lint_verilog

__all__ = ["WAIVERS", "LINT_CACHE", "lint_file", "main"]

#: Lint results, one file per linted text (see the module docstring).
LINT_CACHE = BUILD / "cache" / "lint"

#: Waived Verilator warning kinds and why each is harmless in exported code.
WAIVERS = {
    "WIDTHEXPAND":
        "Yosys writes constants at their minimal width (2'h2 - x[3:0]); "
        "Verilog's context-determined widths extend them exactly as the "
        "Amaranth expression meant.",
    "WIDTHTRUNC":
        "Yosys writes a shift or bit-select ($shr cell) at the width of its "
        "operand and assigns it to the narrower net Amaranth asked for; the "
        "truncation is the intended slice.",
    "UNUSEDSIGNAL":
        "Yosys keeps intermediate nets at full width when only some of their "
        "bits are used (carry bits sliced away, replicated control copies); "
        "no logic is lost.",
    "PROCASSINIT":
        "Amaranth carries each register's power-on value as a declaration "
        "initialiser next to the always block that also resets it "
        "synchronously; both give the same value.",
    "CASEINCOMPLETE":
        "Yosys writes an Amaranth Switch as casez without a default arm; the "
        "nets keep the values assigned before the case statement.",
    "DECLFILENAME":
        "A self-contained export puts submodules (named top.sub) in the "
        "same file as the top module, one file per parameter set.",
}


def lint_file(path):
    """Lint one exported file; return ``(passed, output)``."""
    path = pathlib.Path(path)
    if not path.is_file():                       # (Verilator says so)
        rc, output = lint_verilog(path, path.stem, waivers=tuple(WAIVERS))
        return rc == 0, output
    key = hashlib.sha256(json.dumps([version("verilator"), path.stem, sorted(WAIVERS)])
                         .encode() + b"\0" + path.read_bytes()).hexdigest()[:24]
    kept = LINT_CACHE / f"{key}.json"
    if kept.is_file():
        return tuple(json.loads(kept.read_text()))
    rc, output = lint_verilog(path, path.stem, waivers=tuple(WAIVERS))
    LINT_CACHE.mkdir(parents=True, exist_ok=True)
    tmp = kept.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps([rc == 0, output]))
    tmp.replace(kept)
    return rc == 0, output


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
    args = ap.parse_args(argv)
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
