"""Shared pytest helpers (kept small and generic)."""

import importlib.util
import pathlib

import pytest

from neuron_fabric.contract.paths import BUILD, VERILOG_CACHE


def _export_datapath(line_bits, workers, stages, profile="full"):
    """Export the datapath core for a parameter set, into
    ``build/datapath/<set>/neuron_fabric_datapath.v``; return the path.

    The export is kept in the Verilog cache (elaborated again only when the
    sources change), and the file is written atomically, so parallel test
    workers that export the same set never read a half-written file.
    """
    from neuron_fabric.hdl.export.verilog import cached_verilog, datapath_verilog, write_verilog
    path = BUILD / "datapath" / f"L{line_bits}_W{workers}_S{stages}_{profile}" / \
        "neuron_fabric_datapath.v"
    text = cached_verilog(datapath_verilog, VERILOG_CACHE, line_bits=line_bits,
                          workers=workers, stages=stages, profile=profile)
    if not path.exists() or path.read_text() != text:
        write_verilog(path, text)
    return pathlib.Path(path)


@pytest.fixture(scope="session")
def export_datapath():
    """``export_datapath(line_bits, workers, stages, profile="full")`` gives
    the path of the exported Verilog of that datapath parameter set."""
    return _export_datapath


#: Test modules that take most of the suite's time (measured with
#: ``--durations=0`` on two workers), heaviest first.  They are collected
#: first so that two xdist workers end together (the longest jobs first);
#: the order changes only the suite's wall time, never what it checks.
HEAVY_FIRST = (
    "hdl/top/test_top_sim.py",
    "hdl/top/test_conformance_top.py",
    "hdl/top/test_hierarchy_rtl.py",
    "test_make_targets.py",
    "hdl/top/test_train_rtl.py",
    "hdl/top/test_top_formal.py",
    "sim/test_envelope_rtl.py",
    "hdl/top/test_device_rtl.py",
    "hdl/top/test_configs.py",
    "hdl/datapath/test_conformance_datapath.py",
    "hdl/export/test_verilog_top.py",
    "hdl/datapath/test_datapath_cocotb.py",
    "hdl/export/test_verilog.py",
    "hdl/datapath/test_datapath_formal.py",
)


@pytest.fixture(scope="session")
def test_module():
    """``test_module(path)`` gives the test file ``path`` (relative to
    ``tests/``) as a module, for a test that reuses another file's bench at
    other parameters (the tests are not a package: ``--import-mode=importlib``)."""
    def load(path):
        path = pathlib.Path(__file__).parent / path
        spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load


def pytest_collection_modifyitems(config, items):
    here = pathlib.Path(__file__).parent
    missing = [path for path in HEAVY_FIRST if not (here / path).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py HEAVY_FIRST names missing modules: {missing}")

    def rank(item):
        path = pathlib.Path(str(item.path)).relative_to(here).as_posix()
        return HEAVY_FIRST.index(path) if path in HEAVY_FIRST else len(HEAVY_FIRST)
    items.sort(key=rank)  # stable: the order within a module is kept
