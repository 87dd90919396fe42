"""``make release`` (``hdl/export/release.py``): the files an integrator
takes without Python, linted with the waiver file the release ships.

The waivers are scoped to the exported files, so a wrapper whose port
widths do not match the build fails the lint (a WIDTH warning in the
wrapper), and the same wrapper with the build's widths passes.  The
release is built for the benches' 64-bit top (its exports are cached by
the other tests); ``make release`` builds the default one.
"""

import hashlib
import os
import re
import subprocess
import sys

import pytest
import yaml

from neuron_fabric.contract import regmap_files
from neuron_fabric.contract.cli import package_version
from neuron_fabric.contract.facts import PROFILES, TOP_MODULE
from neuron_fabric.contract.paths import BUILD, REPO
from neuron_fabric.hdl.export import integration, release
from neuron_fabric.sim import lint
from neuron_fabric.sim.tb_top import SMALL_TOP

OUT = BUILD / "tests" / "release"
EXAMPLE = REPO / "examples" / "integration_top.v"


@pytest.fixture(scope="module")
def released():
    written = release.build_release(OUT, SMALL_TOP, progress=lambda *a, **k: None)
    return {p.relative_to(OUT).as_posix() for p in written}


def test_release_holds_every_file_with_its_sum(released, top_contract_ports, exported_ports):
    per_profile = {"neuron_fabric.v", "neuron_fabric_datapath.v", regmap_files.HEADER_NAME,
                   regmap_files.JSON_NAME, integration.PARAMS_HEADER_NAME}
    assert released == {f"{profile}/{name}" for profile in PROFILES for name in per_profile} | {
        integration.WAIVER_NAME, "neuron_fabric.core", "CHANGELOG.md", "LICENSE", "SHA256SUMS"}
    # SHA256SUMS in the form `sha256sum -c` reads: every other file, its sum
    sums = dict(reversed(line.split("  ", 1)) for line in
                (OUT / "SHA256SUMS").read_text().splitlines())
    assert set(sums) == released - {"SHA256SUMS"}
    for name, digest in sums.items():
        assert hashlib.sha256((OUT / name).read_bytes()).hexdigest() == digest, name
    assert (OUT / "LICENSE").read_bytes() == (REPO / "LICENSE").read_bytes()
    assert (OUT / "CHANGELOG.md").read_text().startswith(f"## {package_version()} ")
    # each profile's top: the contract's ports, and its header says the
    # build the Verilog's first line names
    for profile in PROFILES:
        text = (OUT / profile / "neuron_fabric.v").read_text()
        assert text.startswith(f"// neuron_fabric: LINE_BITS={SMALL_TOP.line_bits} ")
        assert f" profile={profile} " in text.splitlines()[0]
        assert exported_ports(text, TOP_MODULE) == top_contract_ports(SMALL_TOP.line_bits,
                                                                       SMALL_TOP.id_bits)


def test_parameter_header_holds_the_widths_of_the_export(released, exported_ports):
    header = (OUT / "full" / integration.PARAMS_HEADER_NAME).read_text()
    macros = dict(re.findall(r"^`define (NF_\w+)\s+(\d+)", header, re.M))
    ports = exported_ports((OUT / "full" / "neuron_fabric.v").read_text(), TOP_MODULE)
    assert {name: int(macros[f"NF_WIDTH_{name.upper()}"]) for name in ports} == \
        {name: width for name, (_, width) in ports.items()}
    # the 64-bit top: 64-bit lines, 8 byte enables, 3-bit AXI IDs (8 in flight)
    assert (macros["NF_LINE_BITS"], macros["NF_LINE_BYTES"], macros["NF_AXI_ID_BITS"]) == \
        ("64", "8", "3")
    assert macros["NF_FEATURE_HIERARCHY"] == "1" and "NF_PROFILE_FULL" in macros
    paper = (OUT / "paper" / integration.PARAMS_HEADER_NAME).read_text()
    assert "`define NF_FEATURE_HIERARCHY" in paper and "NF_PROFILE_PAPER" in paper
    assert re.search(r"^`define NF_FEATURE_HIERARCHY\s+0$", paper, re.M)


def _wrapper(line_bits, id_bits):
    return lint.lint_wrapper(OUT, EXAMPLE, "cxl_mem_expander",
                             [f"-GLINE_BITS={line_bits}", f"-GID_BITS={id_bits}"])


def test_wrapper_of_the_build_lints_clean_with_the_released_waivers(released):
    what, passed, output = _wrapper(SMALL_TOP.line_bits, SMALL_TOP.id_bits)
    assert passed, output


def test_wrapper_with_the_wrong_widths_fails_the_lint(released):
    """The wrapper written for 256-bit lines around the 64-bit build: the
    export's own waivers do not reach the wrapper's port connections."""
    what, passed, output = _wrapper(256, SMALL_TOP.id_bits)
    assert not passed
    mismatches = re.findall(r"%Warning-WIDTH\w+: \S*integration_top\.v:\d+:\d+: "
                            r"(?:In|Out)put port connection '(\w+)'", output)
    assert sorted(mismatches) == sorted(["m2s_rwd_data", "m2s_rwd_be", "s2m_drs_data",
                                         "m_axi_wdata", "m_axi_wstrb", "m_axi_rdata"])


def test_released_core_needs_no_generator(released):
    core = yaml.safe_load((OUT / "neuron_fabric.core").read_text())
    assert core["name"] == f"neuron-fabric:ip:neuron_fabric:{package_version()}"
    assert "generators" not in core and "generate" not in core
    listed = {name for fileset in core["filesets"].values() for entry in fileset["files"]
              for name in entry}
    assert listed == released - {"neuron_fabric.core", "CHANGELOG.md", "LICENSE", "SHA256SUMS"}
    for name, target in core["targets"].items():
        assert "waivers" in target["filesets"], name
        if target.get("flow") == "lint":
            assert target["flow_options"]["verilator_options"] == ["-Wall"], name


def test_release_refuses_a_version_without_a_changelog_entry():
    with pytest.raises(release.ReleaseError, match="CHANGELOG.md has no entry '## 9.9.9'"):
        release.changelog_entry("# Changelog\n\n## 1.0.0\n\ntext\n", "9.9.9")
    assert release.changelog_entry("## 2.0.0\n\nnew\n\n## 1.0.0\n\nold\n", "2.0.0") == \
        "## 2.0.0\n\nnew\n"


@pytest.mark.slow
def test_release_lint_passes_on_every_file(released):
    """``make release-lint``: both profiles' tops and cores."""
    proc = subprocess.run([sys.executable, "-m", "neuron_fabric.sim.lint", "--release", str(OUT)],
                          capture_output=True, text=True, env=dict(os.environ), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("clean: ") == 2 * len(PROFILES)


def test_release_params_reject_a_bad_value(capsys):
    assert release.main(["--line-bits", "96", "--out", str(OUT / "never")]) == 2
    err = capsys.readouterr().err
    assert "LINE_BITS must be one of" in err and not (OUT / "never").exists()

