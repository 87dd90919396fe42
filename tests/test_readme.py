"""README.md against what it describes: its make-targets table names exactly
the Makefile's targets, and its Python examples run as written."""

import os
import re
import socket
import subprocess
import sys

import pytest

from neuron_fabric.contract.paths import REPO

README = (REPO / "README.md").read_text()


def makefile_targets(text):
    """Targets the Makefile defines: ``name:`` at the start of a line (not a
    variable assignment, not a special or pattern target, not ``$(...)``)."""
    out = set()
    for line in text.splitlines():
        m = re.match(r"([A-Za-z][\w-]*)\s*:(?!=)", line)
        if m:
            out.add(m[1])
    return out


def table_targets(text):
    """Targets in the first column of the table between the targets markers:
    `make X` names X, `make` (`all`) names all."""
    block = text.split("<!-- targets:begin -->", 1)[1].split("<!-- targets:end -->", 1)[0]
    out = []
    for row in block.splitlines():
        if not row.startswith("| `"):
            continue
        first = row.split("|")[1]
        for token in re.findall(r"`([^`]+)`", first):
            if token.startswith("make "):
                out.append(token[len("make "):])
            elif token != "make":
                out.append(token)
    return out


def test_parsers():
    assert makefile_targets("A := 1\nall: x\n.PHONY: all\n$(STAMP): y\nte-st:\n\tcmd: no\n") \
        == {"all", "te-st"}
    assert table_targets("<!-- targets:begin -->\n| target | x |\n|---|---|\n"
                         "| `make` (`all`) | a |\n| `make test-long` | b |\n"
                         "<!-- targets:end -->") == ["all", "test-long"]


def test_targets_table_names_exactly_the_makefile_targets():
    listed = table_targets(README)
    assert len(listed) == len(set(listed)), "a target appears twice in README's table"
    assert set(listed) == makefile_targets((REPO / "Makefile").read_text())


def test_phony_list_is_the_targets():
    text = (REPO / "Makefile").read_text()
    phony = set(re.search(r"^\.PHONY:(.*)$", text, re.M)[1].split())
    assert phony == makefile_targets(text)


EXAMPLES = [b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "/dev/" not in b]


def test_examples_found():
    assert len(EXAMPLES) >= 2


#: An example whose first line is ``# torchrun --nproc-per-node N ...`` runs
#: under torchrun with N processes on 127.0.0.1.
TORCHRUN = re.compile(r"# torchrun --nproc-per-node (\d+)")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("code", EXAMPLES, ids=[f"example{i}" for i in range(len(EXAMPLES))])
def test_example_runs(code, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(code)
    command = [sys.executable, str(script)]
    launch = TORCHRUN.match(code)
    if launch:
        pytest.importorskip("torch", reason="the torch extra is not installed")
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
                   launch.group(1), "--master-addr", "127.0.0.1", "--master-port", str(_free_port()),
                   str(script)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stderr[-4000:]
