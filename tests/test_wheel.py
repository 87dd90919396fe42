"""``pip wheel .`` builds a wheel that works without the source checkout:
installed in a clean virtual environment (its runtime dependencies from
pip's configured indexes and cache), ``neuron-fabric-export`` run outside
any checkout writes the same Verilog as the checkout's export, and the
register map files; ``BUILD`` is then ``build/`` in the working directory
(``contract/paths.py``).

The wheel holds exactly the project's Python modules, each package of
``pyproject.toml`` from its folder: nothing missing, nothing stale; and
the LICENSE.
"""

import os
import pathlib
import subprocess
import sys
import tomllib
import zipfile

import pytest

from neuron_fabric.contract import regmap_files
from neuron_fabric.contract.facts import TopParams
from neuron_fabric.contract.paths import VERILOG_CACHE
from neuron_fabric.hdl.export import integration
from neuron_fabric.hdl.export.verilog import cached_verilog, datapath_verilog, top_verilog

ROOT = pathlib.Path(__file__).resolve().parent.parent
PARAMS = TopParams(line_bits=64, workers=4, stages=1, regions=1, max_outstanding=4,
                   profile="paper")


def _run(cmd, cwd, env=None):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, f"{cmd}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _expected_files():
    """``{path in the wheel: source file}`` of every module of every package
    ``pyproject.toml`` installs."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    out = {}
    for package in setup["packages"]:
        parts = package.split(".")
        # the longest package-dir entry that is a prefix of this package
        base = max((k for k in setup["package-dir"] if package == k or
                    package.startswith(k + ".")), key=len)
        folder = ROOT / setup["package-dir"][base] / pathlib.Path(*parts[len(base.split(".")):])
        for source in folder.glob("*.py"):
            out["/".join(parts) + "/" + source.name] = source
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    dist = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, ROOT], ROOT)
    wheels = list(dist.glob("neuron_fabric-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.mark.slow
def test_wheel_holds_every_module_and_nothing_else(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if ".dist-info/" not in n]
        expected = _expected_files()
        assert sorted(names) == sorted(expected)
        for name, source in expected.items():
            assert z.read(name) == source.read_bytes(), name
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))
        entry = z.read(meta).decode()
        # the license travels with the wheel (pyproject's license-files)
        licence = next(n for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE"))
        assert z.read(licence) == (ROOT / "LICENSE").read_bytes()
    assert "neuron-fabric-export = neuron_fabric.hdl.export.verilog:main" in entry
    assert "neuron-fabric-regmap = neuron_fabric.contract.regmap_files:main" in entry


@pytest.mark.slow
def test_installed_wheel_exports_outside_the_checkout(wheel, tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], tmp_path)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "NEURON_FABRIC_BUILD",
                        "NEURON_FABRIC_REPORTS")}
    _run([venv / "bin" / "python", "-m", "pip", "install", "-q", wheel], tmp_path, env)
    work = tmp_path / "work"
    work.mkdir()
    # the package imported is the installed one, and it has no checkout
    where = _run([venv / "bin" / "python", "-c",
                  "import neuron_fabric.contract.paths as p, neuron_fabric.hdl as h; "
                  "print(h.__file__); print(p.BUILD)"], work, env).split()
    assert str(venv) in where[0] and pathlib.Path(where[1]) == work / "build"
    _run([venv / "bin" / "neuron-fabric-export", "--line-bits", PARAMS.line_bits,
          "--workers", PARAMS.workers, "--stages", PARAMS.stages, "--regions", PARAMS.regions,
          "--max-outstanding", PARAMS.max_outstanding, "--profile", PARAMS.profile,
          "--regmap", "--out-dir", "out"], work, env)
    out = work / "out"
    core = dict(line_bits=PARAMS.line_bits, workers=PARAMS.workers, stages=PARAMS.stages,
                profile=PARAMS.profile)
    assert (out / "neuron_fabric_datapath.v").read_text() == \
        cached_verilog(datapath_verilog, VERILOG_CACHE, **core)
    assert (out / "neuron_fabric.v").read_text() == \
        cached_verilog(top_verilog, VERILOG_CACHE, regions=PARAMS.regions,
                       max_outstanding=PARAMS.max_outstanding, **core)
    assert (out / regmap_files.HEADER_NAME).read_text() == regmap_files.c_header(PARAMS)
    assert (out / integration.WAIVER_NAME).read_text() == integration.waiver_config()
    assert (out / integration.PARAMS_HEADER_NAME).read_text() == \
        integration.params_header(PARAMS)
    assert sorted(p.name for p in work.iterdir()) == ["out"]
