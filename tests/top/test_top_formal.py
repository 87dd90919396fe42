"""Formal checks of the top (SymbiYosys, engine smtbmc z3); specs in
tests/formal/axil_* and tests/formal/top_*.

- axil_csr: AXI4-Lite slave rules of the control registers, proved by
  k-induction (stable payload while valid and not ready; one response per
  request).
- top_response: on LINE_BITS 64 / WORKERS 4 / STAGES 1 / REGIONS 1 /
  MAX_OUTSTANDING 4, no request is answered twice or on the wrong channel and
  no response comes without a request; AXI IDs are never reused while in
  flight (bounded model check, plus cover traces showing a read and a write
  complete).  Marked slow: z3 needs minutes per step past about 10 cycles.
"""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from neuron_fabric.host.facts import TopParams
from neuron_fabric.sim import formal
from neuron_fabric.sim.toolchain import BUILD

SPECS = pathlib.Path(__file__).resolve().parent / "formal"
SMALL = dict(line_bits=64, workers=4, stages=1, regions=1, max_outstanding=4)


def _csr_source():
    from amaranth.back import verilog
    from neuron_fabric.hdl.csr import ControlRegisters
    return {"nf_csr.v": verilog.convert(ControlRegisters(TopParams(**SMALL)), name="nf_csr",
                                        emit_src=False)}


def _top_source():
    from neuron_fabric.hdl.export import top_verilog
    return {"neuron_fabric.v": top_verilog(**SMALL)}


def run_sby(name, sources):
    work = BUILD / "formal" / name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for fname, text in sources.items():
        (work / fname).write_text(text)
    for spec in SPECS.glob(f"{name}.*"):
        shutil.copy(spec, work / spec.name)
    passed, log = formal.run_sby(work / f"{name}.sby")
    tail = "\n".join(log.splitlines()[-25:])
    assert passed, f"{name} failed:\n{tail}"
    return log


def test_axil_csr_proof():
    out = run_sby("axil_csr", _csr_source())
    assert "successful proof by k-induction" in out


@pytest.mark.slow
def test_top_response_bmc():
    out = run_sby("top_response", _top_source())
    assert out.count("DONE (PASS") >= 2
