"""Shared pytest helpers (kept small and generic)."""

import os
import pathlib
import tempfile

import pytest

from neuron_fabric.sim.toolchain import BUILD, VERILOG_CACHE


def _export_datapath(line_bits, workers, stages, profile="full"):
    """Export the datapath core for a parameter set, into
    ``build/datapath/<set>/neuron_fabric_datapath.v``; return the path.

    The export is kept in the Verilog cache (elaborated again only when the
    sources change), and the file is written atomically, so parallel test
    workers that export the same set never read a half-written file.
    """
    from neuron_fabric.hdl.export import cached_verilog, datapath_verilog
    folder = BUILD / "datapath" / f"L{line_bits}_W{workers}_S{stages}_{profile}"
    path = folder / "neuron_fabric_datapath.v"
    text = cached_verilog(datapath_verilog, VERILOG_CACHE, line_bits=line_bits,
                          workers=workers, stages=stages, profile=profile)
    if not path.exists() or path.read_text() != text:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    return pathlib.Path(path)


@pytest.fixture(scope="session")
def export_datapath():
    """``export_datapath(line_bits, workers, stages, profile="full")`` gives
    the path of the exported Verilog of that datapath parameter set."""
    return _export_datapath
