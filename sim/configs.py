"""The configuration sweep: every legal parameter set of contract section 1
is exported, linted and simulated against the device model.

:data:`CONFIGS` holds one parameter set for every pair of LINE_BITS and
WORKERS in each profile (30 sets), with STAGES, REGIONS and
MAX_OUTSTANDING spread over them so that every value of STAGES (1..8)
and REGIONS (0..16) occurs, and MAX_OUTSTANDING takes its extremes 4 and
256, the powers of two between and values that are not powers of two.
:data:`QUICK` is the covering subset ``make test`` runs: every WORKERS
value and both profiles, the narrowest line (E = 4 lanes) in both,
STAGES 1 and 8, REGIONS 0 and 1, MAX_OUTSTANDING 4 and 255 (the most
IDs, and not a power of two), on 64-bit lines, and the tops other
benches of ``make test`` build anyway (the
small top, the 64-bit and the default 512-bit top: their exports and
simulator builds are shared).  The rest (wider lines, REGIONS up to 16,
whose export and build cost a minute or more each) runs in ``make
test-long`` and ``make configs``.

For each set (:func:`run_config`):

1. ``neuron-fabric-export`` writes the core and the top (its exit status
   and the time it took; the Verilog cache, ``build/cache/verilog``,
   serves a set exported before with the same sources);
2. ``verilator --lint-only -Wall`` with the waivers of ``sim/lint.py``
   lints both files;
3. the device model's differential bench (``sim/cocotb_device.py``) runs
   the top under Verilator against :class:`~neuron_fabric.host.device.
   Device`: its directed phase (every read mode, and G-Binary and
   G-Ternary through each layout and operand the profile has, read errors
   injected), then :data:`BATCHES` batches of random requests with random
   control writes and region configurations: a few hundred requests in
   all, each response, control read, counter and the memory compared.

4. on a build with the packed view (contract section 6), its bench
   (``sim/cocotb_view.py``): :data:`VIEW_ROUNDS` view configurations of
   every kind, reads of the view, of its source lines and of DEFAULT_CFG
   under pauses and single-beat errors, against the device model.

Each result is kept as ``build/configs/rows/<set>.json`` and the table of
every set (those not run marked so) is written to
``build/reports/configs.{md,json}`` (:func:`write_report`).

Command line: ``python -m neuron_fabric.sim.configs [--quick] [--only SET ...]``
(``make configs`` runs every set).
"""

import ast
import concurrent.futures
import fcntl
import json
import os
import pathlib
import resource
import subprocess
import sys
import time

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import DATAPATH_MODULE, profile_named, TOP_MODULE, TopParams
from neuron_fabric.contract.paths import BUILD, VERILOG_CACHE
from neuron_fabric.hdl.export.verilog import (
    _sources_digest,
    cache_entry,
    datapath_verilog,
    top_verilog,
)
from neuron_fabric.sim import lint
from neuron_fabric.sim.toolchain import run_cocotb

__all__ = ["CONFIGS", "QUICK", "BATCHES", "run_config", "write_report", "rows", "record",
           "main"]

#: Every pair of LINE_BITS and WORKERS in both profiles:
#: ``(line_bits, workers, profile, stages, regions, max_outstanding)``.
_TABLE = [
    (64, 4, "full", 2, 4, 8),           # the small top of the cocotb benches (SMALL_TOP)
    (64, 4, "paper", 3, 1, 5),
    (64, 8, "full", 5, 8, 32),          # the 64-bit top of training and the envelope
    (64, 8, "paper", 4, 2, 12),
    (64, 16, "full", 1, 0, 4),          # E = 4 lanes
    (64, 16, "paper", 8, 1, 255),       # E = 4 lanes
    (128, 4, "full", 6, 3, 100),
    (128, 4, "paper", 7, 5, 16),
    (128, 8, "full", 8, 6, 64),
    (128, 8, "paper", 1, 7, 256),
    (128, 16, "full", 3, 9, 24),
    (128, 16, "paper", 2, 10, 128),
    (256, 4, "full", 4, 11, 48),
    (256, 4, "paper", 5, 12, 200),
    (256, 8, "full", 1, 13, 6),
    (256, 8, "paper", 6, 14, 96),
    (256, 16, "full", 7, 15, 7),
    (256, 16, "paper", 8, 16, 64),
    (512, 4, "full", 2, 0, 40),
    (512, 4, "paper", 3, 1, 129),
    (512, 8, "full", 5, 8, 32),         # the default top
    (512, 8, "paper", 5, 8, 32),
    (512, 16, "full", 6, 2, 4),
    (512, 16, "paper", 1, 16, 256),
    (1024, 4, "full", 7, 3, 10),
    (1024, 4, "paper", 8, 4, 33),
    (1024, 8, "full", 3, 6, 256),
    (1024, 8, "paper", 4, 0, 4),
    (1024, 16, "full", 2, 16, 20),
    (1024, 16, "paper", 6, 1, 160),
]

#: The sweep's parameter sets (:class:`TopParams`), in table order.
CONFIGS = [TopParams(line_bits=lb, workers=w, stages=s, regions=r, max_outstanding=o,
                     profile=prof) for lb, w, prof, s, r, o in _TABLE]

#: The covering subset ``make test`` runs (names: ``TopParams.tag()``).
QUICK = ("L64_W4_S2_R4_O8_full", "L64_W8_S5_R8_O32_full", "L64_W16_S1_R0_O4_full",
         "L64_W16_S8_R1_O255_paper", "L512_W8_S5_R8_O32_full")

#: Random request batches of the differential run after its directed phase
#: (8 to 47 requests a batch, beside random control operations).
BATCHES = 8

#: Rounds of the packed view's bench (a view configuration each) on a
#: build with the view.
VIEW_ROUNDS = 3

#: Where each set's files and result row go (``--work`` moves it).
WORK = BUILD / "configs"


def by_tag(tag):
    """The set of :data:`CONFIGS` named ``tag``."""
    for params in CONFIGS:
        if params.tag() == tag:
            return params
    raise KeyError(f"no configuration {tag!r} (--list names them)")


def _export(params, folder):
    """``neuron-fabric-export`` for ``params`` into ``folder``: (ok, seconds,
    cached, message)."""
    core = dict(line_bits=params.line_bits, workers=params.workers, stages=params.stages,
                profile=params.profile)
    top = dict(core, regions=params.regions, max_outstanding=params.max_outstanding)
    cached = (cache_entry(datapath_verilog, VERILOG_CACHE, **core).exists()
              and cache_entry(top_verilog, VERILOG_CACHE, **top).exists())
    cmd = [sys.executable, "-m", "neuron_fabric.hdl.export",
           "--line-bits", str(params.line_bits), "--workers", str(params.workers),
           "--stages", str(params.stages), "--regions", str(params.regions),
           "--max-outstanding", str(params.max_outstanding), "--profile", params.profile,
           "--out-dir", str(folder), "--cache", str(VERILOG_CACHE)]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - start
    message = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
    return proc.returncode == 0, seconds, cached, (message[-1] if message else "")


def _lint(folder):
    """Lint both exported files: ``{module: (passed, first lines of output)}``."""
    out = {}
    for module in (DATAPATH_MODULE, TOP_MODULE):
        passed, output = lint.lint_file(folder / f"{module}.v")
        out[module] = (passed, "\n".join(output.strip().splitlines()[:5]))
    return out


def _differential(params, source, batches, seed, work, bench="device"):
    """The device model's differential bench (``bench`` "device",
    ``sim/cocotb_device.py``), or the packed view's (``"view"``,
    ``sim/cocotb_view.py``: ``batches`` rounds of a new view configuration,
    two batches each), on the exported top: (passed, seconds, what it
    checked, message)."""
    folder = work / params.tag() / bench
    start = time.monotonic()
    extra = dict(batches=batches, cover=True) if bench == "device" else \
        dict(configs=batches, batches=2)
    try:
        run_cocotb(sources=[source], toplevel=TOP_MODULE,
                   test_module=f"neuron_fabric.sim.cocotb_{bench}", simulator="verilator",
                   build_dir=folder, params=dict(params.__dict__, seed=seed, **extra))
        passed, message = True, ""
    except AssertionError as exc:
        passed, message = False, str(exc).splitlines()[0]
    seconds = time.monotonic() - start
    seen = {}
    log = folder / "run" / "sim.log"
    if log.is_file():
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("NF_DEVICE_DIFF "):     # the bench's summary: dicts
                text = line.split(" ", 1)[1]
                seen = ast.literal_eval(text[:text.index("}") + 1])
            elif line.startswith("NF_VIEW_DIFF "):     # "views n poison n kinds n"
                words = line.split()[1:]
                seen = {k: int(v) for k, v in zip(words[::2], words[1::2])}
            elif not passed and "AssertionError: " in line:    # what the bench found
                message = line.split("AssertionError: ", 1)[1].strip()
    return passed, seconds, seen, message


def _cpu():
    """CPU seconds of this process and its finished children so far (a
    phase's cost is a difference of two; exact while one set runs at a time)."""
    return sum(getattr(resource.getrusage(who), field)
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for field in ("ru_utime", "ru_stime"))


def run_config(params, *, batches=BATCHES, seed=None, log=print, work=WORK):
    """Export, lint and simulate one parameter set; record and return its row.

    Returns
    -------
    dict
        The parameters, ``E`` (lanes), ``export`` ("ok" or the CLI's last
        line), ``export_s``, ``export_cached``, ``lint`` ("clean" or the
        files that failed), ``lint_output``, ``diff`` ("passed", "failed"
        or "not run"), ``diff_s``, ``responses`` and ``control`` (what the
        differential run compared), ``message``, ``passed``; ``cpu_s``, the
        CPU seconds of each phase (``export``, ``lint``, ``diff``).
    """
    tag = params.tag()
    seed = sum(map(ord, tag)) if seed is None else seed
    work = pathlib.Path(work).resolve()      # (the simulator runs in a folder of its own)
    folder = work / tag / "verilog"
    row = dict(tag=tag, line_bits=params.line_bits, workers=params.workers,
               stages=params.stages, regions=params.regions,
               max_outstanding=params.max_outstanding, profile=params.profile, E=params.lanes,
               export="not run", export_s=None, export_cached=False, lint="not run",
               lint_output="", diff="not run", diff_s=None, responses=0, control=0,
               view="not built" if not profile_named(params.profile).has("packed_view") else "not run",
               view_reads=0,
               message="", passed=False, batches=batches, seed=seed, cpu_s={})
    cpu = _cpu()

    def spent(phase):
        nonlocal cpu
        now = _cpu()
        row["cpu_s"][phase], cpu = round(now - cpu, 1), now

    ok, seconds, cached, message = _export(params, folder)
    spent("export")
    row.update(export="ok" if ok else message, export_s=round(seconds, 1), export_cached=cached)
    log(f"{tag}: export {'ok' if ok else 'FAILED'} in {seconds:.1f} s"
        f"{' (cache)' if cached else ''}")
    if ok:
        lints = _lint(folder)
        spent("lint")
        bad = [module for module, (passed, _) in lints.items() if not passed]
        row.update(lint="clean" if not bad else "FAILED: " + ", ".join(bad),
                   lint_output="\n".join(lints[m][1] for m in bad))
        log(f"{tag}: lint {row['lint']}")
        passed, seconds, seen, message = _differential(params, folder / f"{TOP_MODULE}.v",
                                                       batches, seed, work)
        spent("diff")
        row.update(diff="passed" if passed else "failed", diff_s=round(seconds, 1),
                   responses=seen.get("responses", 0), control=seen.get("control", 0),
                   message=message)
        log(f"{tag}: differential {row['diff']} in {seconds:.1f} s "
            f"({row['responses']} responses, {row['control']} control accesses)"
            + (f": {message}" if message else ""))
        if profile_named(params.profile).has("packed_view"):
            passed, seconds, seen, message = _differential(
                params, folder / f"{TOP_MODULE}.v", VIEW_ROUNDS, seed, work, bench="view")
            spent("view")
            row.update(view="passed" if passed else "failed", view_reads=seen.get("views", 0))
            row["message"] = "; ".join(m for m in (row["message"], message) if m)
            log(f"{tag}: packed view {row['view']} in {seconds:.1f} s "
                f"({row['view_reads']} view reads)" + (f": {message}" if message else ""))
    else:
        row["message"] = message
    row["passed"] = row["export"] == "ok" and row["lint"] == "clean" and \
        row["diff"] == "passed" and row["view"] in ("passed", "not built")
    record(row, work)
    return row


def _sources():
    """Digest of the sources an export reads (the Verilog cache's key)."""
    return _sources_digest()


def record(row, work=WORK):
    """Keep ``row`` (with the sources' digest) as its set's result."""
    folder = pathlib.Path(work) / "rows"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{row['tag']}.json"
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(dict(row, sources=_sources()), indent=1))
    os.replace(tmp, path)


def rows(work=WORK):
    """The latest result of every set of :data:`CONFIGS` with the current
    sources (None for a set without one)."""
    digest, out = _sources(), []
    for params in CONFIGS:
        path = pathlib.Path(work) / "rows" / f"{params.tag()}.json"
        row = json.loads(path.read_text()) if path.is_file() else None
        out.append(row if row and row.get("sources") == digest else None)
    return out


def _cell(value, fmt="{}"):
    return "" if value is None else fmt.format(value)


def write_report(out=BUILD / "reports", work=WORK):
    """Write ``configs.md`` and ``configs.json`` into ``out`` from the rows
    kept in ``work`` (:func:`rows`); returns the paths.  Processes writing
    at once take turns."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".configs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        results = rows(work)
        table = []
        for params, row in zip(CONFIGS, results):
            table.append(row or dict(tag=params.tag(), line_bits=params.line_bits,
                                     workers=params.workers, stages=params.stages,
                                     regions=params.regions,
                                     max_outstanding=params.max_outstanding,
                                     profile=params.profile, E=params.lanes, export="not run",
                                     lint="not run", diff="not run", passed=None))
        ran = [r for r in results if r]
        summary = dict(sets=len(CONFIGS), ran=len(ran), passed=sum(r["passed"] for r in ran),
                       quick=list(QUICK))
        (out / "configs.json").write_text(json.dumps(dict(summary=summary, rows=table),
                                                     indent=1))
        lines = ["# Configuration sweep", "",
                 f"{len(CONFIGS)} parameter sets (every LINE_BITS x WORKERS pair in both "
                 f"profiles; every STAGES and REGIONS value; MAX_OUTSTANDING from 4 to 256); "
                 f"{summary['ran']} run with the current sources, {summary['passed']} passed. "
                 "Each: `neuron-fabric-export` (wall seconds, and CPU seconds; `cache`: served "
                 "by the Verilog cache), "
                 "`verilator --lint-only -Wall` with the waivers of `sim/lint.py` on the core "
                 "and the top, and the device model's differential bench on the top under "
                 "Verilator (responses and control accesses compared), and on a build with the "
                 "packed view its bench (`sim/cocotb_view.py`, view reads compared). "
                 "`make test` runs the "
                 "sets marked `quick`; `make configs` or `make test-long` runs every set.", "",
                 "| set | LINE_BITS | W | E | STAGES | REGIONS | MAX_OUT | profile | export | "
                 "export s | lint | differential | responses | sim s | packed view | result |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in table:
            result = {True: "PASS", False: "FAIL", None: "not run"}[r["passed"]]
            export_s = _cell(r.get("export_s"), "{:.1f}")
            if r.get("export_cached"):
                export_s += " (cache)"
            elif r.get("cpu_s", {}).get("export") is not None:
                export_s += f" ({r['cpu_s']['export']:.1f} CPU)"
            lines.append(
                f"| {r['tag']}{' (quick)' if r['tag'] in QUICK else ''} | {r['line_bits']} | "
                f"{r['workers']} | {r['E']} | {r['stages']} | {r['regions']} | "
                f"{r['max_outstanding']} | {r['profile']} | {r['export']} | {export_s} | "
                f"{r['lint']} | {r['diff']} | {_cell(r.get('responses'))} | "
                f"{_cell(r.get('diff_s'), '{:.1f}')} | {r.get('view', 'not run')} | {result} |")
        (out / "configs.md").write_text("\n".join(lines) + "\n")
    return out / "configs.md", out / "configs.json"


class _Progress:
    """Progress lines of one set: ``[i/n elapsed] text``."""

    def __init__(self, start, index, total):
        self.start, self.index, self.total = start, index, total

    def __call__(self, text):
        print(f"[{self.index:>2}/{self.total} {time.monotonic() - self.start:6.0f}s] {text}",
              flush=True)


def _parser():
    ap = ArgumentParser(prog="python -m neuron_fabric.sim.configs", parameters=True,
                        description="Export, lint and simulate against the device model "
                                    "every parameter set of the configuration sweep, and "
                                    "write build/reports/configs.{md,json}.")
    ap.add_argument("--quick", action="store_true",
                    help=f"only the covering subset make test runs ({len(QUICK)} sets)")
    ap.add_argument("--only", nargs="+", metavar="SET",
                    help="only these sets (names as L64_W16_S1_R0_O4_full)")
    ap.add_argument("--batches", type=int, default=BATCHES,
                    help="request batches of each differential run (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="sets run at once (default %(default)s)")
    ap.add_argument("--out", default=str(BUILD / "reports"),
                    help="folder for configs.{md,json} (default build/reports)")
    ap.add_argument("--work", default=str(WORK),
                    help="folder for each set's files and result (default build/configs)")
    ap.add_argument("--list", action="store_true", help="list the sets and stop")
    return ap


@guarded
def main(argv=None):
    ap = _parser()
    args = ap.parse_args(argv)
    if args.only:
        try:
            chosen = [by_tag(tag) for tag in args.only]
        except KeyError as exc:
            ap.error(exc.args[0])
    else:
        chosen = [p for p in CONFIGS if not args.quick or p.tag() in QUICK]
    if args.batches < 1 or args.jobs < 1:
        ap.error(f"--batches and --jobs must be at least 1, not {args.batches} and {args.jobs}")
    if args.list:
        for params in chosen:
            print(params.tag())
        return 0
    start = time.monotonic()
    print(f"{len(chosen)} sets, {args.jobs} at a time", flush=True)
    logs = [_Progress(start, i + 1, len(chosen)) for i in range(len(chosen))]
    if args.jobs == 1:
        results = [run_config(params, batches=args.batches, log=log, work=args.work)
                   for params, log in zip(chosen, logs)]
    else:                      # processes: the simulator set-up changes os.environ
        with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run_config, params, batches=args.batches, log=log,
                                   work=args.work)
                       for params, log in zip(chosen, logs)]
            results = [future.result() for future in futures]
    md, js = write_report(args.out, args.work)
    failed = [r["tag"] for r in results if not r["passed"]]
    print(f"{len(results) - len(failed)} of {len(results)} sets passed; wrote {md} and {js}")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
