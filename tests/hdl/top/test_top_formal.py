"""Formal checks of the top (SymbiYosys, engine ``formal.ENGINE``); specs in
tests/hdl/top/formal/.

- axil_csr: AXI4-Lite slave rules of the control registers, proved by
  k-induction (stable payload while valid and not ready; one response per
  request).
- the control-write bound (contract 4.3): with every input free in every
  cycle (memory and CXL backpressure, requests, the control port), BVALID
  rises at most CONTROL_WRITE_BOUND rising edges after the one at which the
  slave has taken both a control write's address and its data with no
  earlier response pending.  Proved in two parts that
  meet at the hold/idle handshake, which the top connects directly:
  csr_bound, the control registers alone by k-induction, with idle free but
  assumed high once hold has been high IDLE_AFTER cycles; and request_idle,
  the request pipeline alone (default configuration) by k-induction, which
  guarantees exactly that (a cover trace each shows both numbers are
  exact).  control_bound proves the property on the whole top of a small
  configuration by k-induction, with a cover trace reaching the bound.
- request_config: the request pipeline's side of contract 4.3 by
  k-induction, every input free but the configuration, which changes only
  where the control registers change it (hold and idle high): its local
  copy of the region table never moves under a request, and no request
  chooses its region's values before the region's BASE residues have
  followed BASE (``derive.refresh_cycles`` cycles).
- top_response: on the smallest configuration (LINE_BITS 64, WORKERS 4,
  STAGES 1, REGIONS 0, MAX_OUTSTANDING 4), no request is answered twice or
  on the wrong channel and no response comes without a request; AXI IDs are
  never reused while in flight (bounded model check over a whole write,
  plus cover traces showing a read and a write complete).  Its depths follow
  from the latencies measured on the same configuration in the Amaranth
  simulator (:func:`first_responses`), so a change of the top's pipeline
  moves them.
"""

import pathlib
import shutil
import sys
import types

import pytest
from amaranth import Elaboratable

from neuron_fabric.hdl.top.csr import control_write_bound
from neuron_fabric.hdl.top.request import idle_after
from neuron_fabric.contract.facts import TopParams
from neuron_fabric.sim import formal
from neuron_fabric.contract.paths import BUILD

SPECS = pathlib.Path(__file__).resolve().parent / "formal"
SMALL = dict(line_bits=64, workers=4, stages=1, regions=1, max_outstanding=4)
#: The smallest legal top: the response check's configuration.
SMALLEST = dict(line_bits=64, workers=4, stages=1, regions=0, max_outstanding=4)


#: The request pipeline is idle in every cycle in which hold has been high
#: for that cycle and the IDLE_AFTER before it (RequestIdleSpec proves it,
#: CsrBoundSpec assumes it).
IDLE_AFTER = idle_after(TopParams(**SMALL))
#: Rising edges from the one at which the slave has taken a control write's
#: address and data to the one at which BVALID rises, at most (contract
#: 4.3), given IDLE_AFTER; the spec's BOUND.
CONTROL_WRITE_BOUND = control_write_bound(IDLE_AFTER)


def _csr_source():
    from neuron_fabric.hdl.export.verilog import convert
    from amaranth.lib import wiring
    from neuron_fabric.hdl.top.csr import ControlRegisters
    from neuron_fabric.hdl.export.flat import flat_names

    class FlatCsr(wiring.Component):
        """The registers with the spec's port names: the bus as s_axil_*, the
        events by name, hold as write_pending and idle as write_go."""
        rename = {"config_hold": "write_pending", "config_idle": "write_go"}

        def __init__(self):
            self.csr = ControlRegisters(TopParams(**SMALL))
            self.ports = [(self.rename.get(n, n.replace("bus_", "s_axil_")
                                           .replace("events_", "")), path, flow, shape)
                          for n, path, flow, shape in flat_names(self.csr.signature)]
            super().__init__({n: (wiring.In if flow == wiring.In else wiring.Out)(shape)
                              for n, _, flow, shape in self.ports})

        def elaborate(self, platform):
            from amaranth import Module
            from neuron_fabric.hdl.export.flat import flat_statements
            m = Module()
            m.submodules.csr = self.csr
            m.d.comb += flat_statements(self, self.csr, self.ports)
            return m

    return {"nf_csr.v": convert(FlatCsr(), "nf_csr")}


class _HoldIdleSpec(Elaboratable):
    """A block of the hold/idle handshake with every input free in every
    cycle, reset too (high in the first); ``held`` in :meth:`handshake`
    counts the cycles before this one in which hold has been high since the
    last reset (saturating at IDLE_AFTER)."""

    def __init__(self, dut):
        self.dut = dut

    def handshake(self, m):
        """The free inputs; returns ``(rst, hold, idle, held)``."""
        from amaranth import Mux, ResetSignal, Shape, Signal
        from amaranth.asserts import AnySeq, Initial
        from amaranth.hdl import Assume
        from amaranth.lib.wiring import In
        from neuron_fabric.hdl.export.flat import flat_names, flat_statements
        dut = m.submodules.dut = self.dut
        ports = flat_names(dut.signature)
        free = types.SimpleNamespace(**{
            name: AnySeq(Shape.cast(shape)) if flow == In else Signal(Shape.cast(shape))
            for name, _, flow, shape in ports})
        m.d.comb += flat_statements(free, dut, ports)
        rst, hold = ResetSignal(), dut.config.hold
        m.d.comb += Assume(rst | ~Initial())
        held = Signal(range(IDLE_AFTER + 1))
        m.d.sync += held.eq(Mux(hold, Mux(held == IDLE_AFTER, held, held + 1), 0))
        return rst, hold, dut.config.idle, held


class RequestIdleSpec(_HoldIdleSpec):
    """The request pipeline: idle is high whenever hold has been high for
    this cycle and the IDLE_AFTER before it, and (cover) it may still be low
    a cycle earlier."""

    def __init__(self, params):
        from neuron_fabric.hdl.top.request import RequestPipeline
        super().__init__(RequestPipeline(params))

    def elaborate(self, platform):
        from amaranth import Module
        from amaranth.hdl import Assert, Cover
        m = Module()
        rst, hold, idle, held = self.handshake(m)
        m.d.comb += Assert(rst | ~hold | (held != IDLE_AFTER) | idle)
        m.d.comb += Cover(~rst & hold & (held == IDLE_AFTER - 1) & ~idle)
        return m


class RequestConfigSpec(Elaboratable):
    """The request pipeline's use of the configuration (contract 4.3), with
    every input free in every cycle but the configuration, which changes
    only at the end of a cycle with hold and idle high (as the control
    registers change it): its local copy of the region table changes only
    while no request is in a stage that reads it and none was accepted the
    cycle before; and no request reaches the choice of its region's values
    before the region's BASE residues have followed the local BASE
    (``derive.refresh_cycles`` cycles of the same local BASE)."""

    def __init__(self, params):
        from neuron_fabric.hdl.top.request import RequestPipeline
        self.params = params
        self.dut = RequestPipeline(params)

    def elaborate(self, platform):
        from amaranth import Cat, Fragment, Module, Mux, ResetSignal, Shape, Signal
        from amaranth.asserts import AnySeq, Initial
        from amaranth.hdl import Assert, Assume, Cover
        from amaranth.lib.wiring import In
        from neuron_fabric.hdl.top.region_residues import refresh_cycles
        from neuron_fabric.hdl.export.flat import flat_names, flat_statements
        m = Module()
        dut = self.dut
        m.submodules.dut = Fragment.get(dut, platform)
        ports = flat_names(dut.signature)
        free = types.SimpleNamespace(**{
            name: AnySeq(Shape.cast(shape)) if flow == In else Signal(Shape.cast(shape))
            for name, _, flow, shape in ports})
        m.d.comb += flat_statements(free, dut, ports)
        rst = ResetSignal()
        m.d.comb += Assume(rst | ~Initial())
        config = Signal.like(Cat(dut.config.default.as_value(),
                                 *(dut.config.regions[r].as_value()
                                   for r in range(self.params.regions))))
        m.d.comb += config.eq(Cat(dut.config.default.as_value(),
                                  *(dut.config.regions[r].as_value()
                                    for r in range(self.params.regions))))
        last_config, last_write = Signal.like(config), Signal()
        m.d.sync += [last_config.eq(config),
                     last_write.eq(dut.config.hold & dut.config.idle)]
        m.d.comb += Assume(rst | Initial() | (config == last_config) | last_write)
        # in reset the control registers hold their reset values: BASE 0
        m.d.comb += Assume(~rst | ~Cat(*(dut.config.regions[r].base
                                          for r in range(self.params.regions))).any())
        # the local copy: moves only while nothing can see it
        bases, busy = dut.probes["bases"], Signal()
        last_bases = Signal.like(bases)
        m.d.sync += [last_bases.eq(bases),
                     busy.eq(~dut.probes["drained"] | (dut.req.valid & dut.req.ready))]
        m.d.comb += Assert(rst | Initial() | (bases == last_bases) | ~busy)
        # cycles the local BASEs have held their value (saturating; after
        # reset the residues and BASEs are both zero)
        need = refresh_cycles(self.params)
        stable = Signal(range(need + 1), init=need)
        m.d.sync += stable.eq(Mux(bases != last_bases, 0, Mux(stable == need, need, stable + 1)))
        m.d.comb += [Assert(rst | ~dut.probes["choosing"] | (stable == need)),
                     Cover(~rst & dut.probes["choosing"] & (stable == need) & ~Initial())]
        return m


class CsrBoundSpec(_HoldIdleSpec):
    """The control registers, idle assumed as :class:`RequestIdleSpec`
    proves it, against write_bound.sv's check."""

    def __init__(self, params):
        from neuron_fabric.hdl.top.csr import ControlRegisters
        super().__init__(ControlRegisters(params))

    def elaborate(self, platform):
        from amaranth import ClockSignal, Instance, Module
        from amaranth.asserts import Initial
        from amaranth.hdl import Assume
        m = Module()
        rst, hold, idle, held = self.handshake(m)
        m.d.comb += Assume(rst | ~hold | (held != IDLE_AFTER) | idle)
        bus = self.dut.bus
        m.submodules.check = Instance(
            "write_bound", p_BOUND=CONTROL_WRITE_BOUND, i_clk=ClockSignal(), i_rst=rst,
            i_init=Initial(), i_awready=bus.awready, i_wready=bus.wready, i_bvalid=bus.bvalid)
        return m


def _spec_source(spec):
    from amaranth.back import rtlil
    return {"spec.il": rtlil.convert(spec, ports=[], emit_src=False)}


def _top_source(params=SMALL):
    from neuron_fabric.hdl.export.verilog import top_verilog
    return {"neuron_fabric.v": top_verilog(**params)}


def first_responses(params):
    """Cycles from the end of reset to the handshake of the first DRS and of
    the first NDR when a MemRd and a MemWr are offered from the first cycle
    on, every ready is high and the memory answers each address the cycle
    after it (Amaranth simulator)."""
    from neuron_fabric.sim.amaranth_sim import run_testbenches
    from neuron_fabric.hdl.top.top import Top
    from neuron_fabric.contract.facts import ReqOpcode, RwdOpcode

    dut = Top(**params)
    seen = {}

    async def bench(ctx):
        axi = dut.m_axi
        for ready in (dut.s2m_drs.ready, dut.s2m_ndr.ready, axi.arready, axi.awready,
                      axi.wready):
            ctx.set(ready, 1)
        ctx.set(dut.m2s_req.payload.opcode, ReqOpcode.MEM_RD)
        ctx.set(dut.m2s_rwd.payload.opcode, RwdOpcode.MEM_WR)
        ctx.set(dut.m2s_req.valid, 1), ctx.set(dut.m2s_rwd.valid, 1)
        cycle = 0
        while len(seen) < 2:
            req_taken = ctx.get(dut.m2s_req.valid) and ctx.get(dut.m2s_req.ready)
            rwd_taken = ctx.get(dut.m2s_rwd.valid) and ctx.get(dut.m2s_rwd.ready)
            ar = ctx.get(axi.arvalid) and ctx.get(axi.arready)
            aw = ctx.get(axi.awvalid) and ctx.get(axi.awready)
            for name, port in (("drs", dut.s2m_drs), ("ndr", dut.s2m_ndr)):
                if ctx.get(port.valid) and name not in seen:
                    seen[name] = cycle
            await ctx.tick()
            cycle += 1
            assert cycle < 200, "no response"
            if req_taken:
                ctx.set(dut.m2s_req.valid, 0)
            if rwd_taken:
                ctx.set(dut.m2s_rwd.valid, 0)
            ctx.set(axi.rvalid, ar or (ctx.get(axi.rvalid) and not ctx.get(axi.rready)))
            ctx.set(axi.bvalid, aw or (ctx.get(axi.bvalid) and not ctx.get(axi.bready)))

    run_testbenches(dut, bench)
    return seen


def response_depths(params):
    """``(bmc, cover)`` depths of top_response, from :func:`first_responses`
    (one reset cycle, the cycles it measured, the response's own cycle): the
    covers reach the first read's DRS; the bounded check holds a whole write
    and its NDR.  It cannot hold a read: the solver's time per step grows
    several-fold a step past step 10 (a read's DRS comes more than 20 cycles
    after reset), with z3 and Yices alike (Yices was still on step 16 after
    a minute), so that check would take hours."""
    cycles = first_responses(params)
    return 1 + cycles["ndr"] + 1, 1 + max(cycles.values()) + 1


def run_sby(name, sources, options=None, tasks=()):
    work = BUILD / "formal" / name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for fname, text in sources.items():
        (work / fname).write_text(text)
    for spec in SPECS.glob(f"{name}.*"):
        shutil.copy(spec, work / spec.name)
    listed = (SPECS / f"{name}.sby").read_text().split()
    for spec in SPECS.glob("*.sv"):                      # specs shared with other jobs
        if spec.name in listed and not (work / spec.name).exists():
            shutil.copy(spec, work / spec.name)
    if options:
        sby = work / f"{name}.sby"
        sby.write_text(sby.read_text().format(**options))
    passed, log = formal.run_sby(work / f"{name}.sby", tasks)
    tail = "\n".join(log.splitlines()[-25:])
    assert passed, f"{name} failed:\n{tail}"
    return log


def test_every_job_names_the_one_engine():
    """The job files here name :data:`formal.ENGINE` (the engine the
    generated jobs use), and the solver it runs is installed."""
    for sby in sorted(SPECS.glob("*.sby")):
        text = sby.read_text()
        engines = text.split("[engines]", 1)[1].strip().splitlines()[0].strip()
        assert engines == formal.ENGINE, f"{sby.name}: engine {engines!r}"
    assert shutil.which(formal.SOLVER, path=str(pathlib.Path(sys.executable).parent)), \
        f"{formal.SOLVER} is not in the virtual environment"


def test_axil_csr_proof():
    out = run_sby("axil_csr", _csr_source())
    assert "successful proof by k-induction" in out


def test_control_write_bound_csr():
    """The bound on the control registers, given the request pipeline's
    guarantee (test_request_idle_after_hold)."""
    out = run_sby("csr_bound", _spec_source(CsrBoundSpec(TopParams(**SMALL))))
    assert "successful proof by k-induction" in out
    assert out.count("DONE (PASS") == 2


def test_request_config_use():
    """The request pipeline's side of contract 4.3: its copy of the region
    table does not move under a request, and the region residues it chooses
    have followed BASE (k-induction, every other input free)."""
    out = run_sby("request_config", _spec_source(RequestConfigSpec(TopParams(**SMALL))))
    assert "successful proof by k-induction" in out
    assert out.count("DONE (PASS") == 2


def test_request_idle_after_hold():
    """The request pipeline's side of the bound: idle IDLE_AFTER cycles after
    hold, whatever its other inputs do."""
    out = run_sby("request_idle", _spec_source(RequestIdleSpec(TopParams(**SMALL))))
    assert "successful proof by k-induction" in out
    assert out.count("DONE (PASS") == 2


def test_control_write_bound_top():
    """The bound on the whole top by k-induction (under a minute with
    Yices; z3 took 5 to 7 minutes, so this ran in ``make test-long`` and
    ``make test`` checked 12 cycles from reset), and a cover trace that
    reaches it."""
    assert f"localparam BOUND = {CONTROL_WRITE_BOUND};" in (SPECS / "control_bound.sv").read_text()
    out = run_sby("control_bound", _top_source(), tasks=("prove", "cover"))
    assert "successful proof by k-induction" in out
    assert out.count("DONE (PASS") == 2


@pytest.mark.slow
def test_top_response_bmc():
    """Marked slow: about a minute (the covers and the bounded check side
    by side; 3 to 6 minutes with z3)."""
    bmc, cover = response_depths(SMALLEST)
    out = run_sby("top_response", _top_source(SMALLEST),
                  {"bmc_depth": bmc, "cover_depth": cover})
    assert out.count("DONE (PASS") >= 2
