"""A YoWASP tool is run once (``--version``) under the cache lock before a
process first uses it, and a tool that is not a YoWASP one is left alone."""

import fcntl
import stat
import subprocess
import sys

from neuron_fabric.contract.paths import CACHE
from neuron_fabric.synth import flowlib


def _fake_tool(tmp_path, name):
    calls = tmp_path / f"{name}.calls"
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path), calls


def test_a_yowasp_tool_is_warmed_once_per_process(tmp_path):
    path, calls = _fake_tool(tmp_path, "yowasp-fake")
    flowlib.warm(path)
    flowlib.warm(path)
    assert calls.read_text().splitlines() == ["--version"]


def test_another_tool_is_not_run(tmp_path):
    path, calls = _fake_tool(tmp_path, "not-yowasp")
    flowlib.warm(path)
    assert not calls.exists()


def test_the_warm_run_holds_the_lock(tmp_path):
    # while this test holds the lock, a warm-up in another process waits:
    # so the tool has not run when the lock is released, only after
    path, calls = _fake_tool(tmp_path, "yowasp-locked")
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "yowasp.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        child = subprocess.Popen([sys.executable, "-c",
                                  "import sys; from neuron_fabric.synth import flowlib; "
                                  "flowlib.warm(sys.argv[1])", path])
        try:
            child.wait(timeout=2)
            finished_early = True
        except subprocess.TimeoutExpired:
            finished_early = False
        assert not finished_early and not calls.exists()
    assert child.wait(timeout=60) == 0
    assert calls.read_text().splitlines() == ["--version"]
