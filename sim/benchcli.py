"""The command line every ``make bench`` benchmark shares: a buffer size, a
number of repeats (best kept), and a JSON file for the rows."""

import importlib
import json
import pathlib

from neuron_fabric.contract.cli import ArgumentParser, guarded

__all__ = ["bench_main", "bench_command"]


def bench_main(bench, *, prog, description, size_help, out, argv=None):
    """Parse ``--mib``, ``--repeat`` and ``--out``, run ``bench(mib, repeat)``
    and write the rows it returns as JSON."""
    ap = ArgumentParser(prog=prog, description=description)
    ap.add_argument("--mib", type=int, default=64, help=f"{size_help} (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per case, best kept (default %(default)s)")
    ap.add_argument("--out", default=out, help="JSON file for the rows (default %(default)s)")
    args = ap.parse_args(argv)
    if args.mib < 1 or args.repeat < 1:
        ap.error(f"--mib and --repeat must be at least 1, not {args.mib} and {args.repeat}")
    rows = bench(args.mib, args.repeat)
    path = pathlib.Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=2))
    print(f"wrote {path}")
    return rows


def bench_command(module, doc, *, size_help, out):
    """The guarded ``main(argv=None)`` of the benchmark module ``module``
    (its dotted name; ``doc``, its docstring, gives the description): runs
    :func:`bench_main` on the module's ``bench`` (looked up at each call)
    and returns exit status 0."""
    @guarded
    def main(argv=None):
        bench = importlib.import_module(module).bench
        bench_main(bench, prog=f"python -m {module}", description=doc.splitlines()[0],
                   size_help=size_help, out=out, argv=argv)
        return 0
    return main
