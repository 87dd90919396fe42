"""Shared pytest helpers (kept small and generic)."""

import pathlib

import pytest

from neuron_fabric.sim.toolchain import BUILD, VERILOG_CACHE


def _export_datapath(line_bits, workers, stages, profile="full"):
    """Export the datapath core for a parameter set, into
    ``build/datapath/<set>/neuron_fabric_datapath.v``; return the path.

    The export is kept in the Verilog cache (elaborated again only when the
    sources change), and the file is written atomically, so parallel test
    workers that export the same set never read a half-written file.
    """
    from neuron_fabric.hdl.export import cached_verilog, datapath_verilog, write_verilog
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
