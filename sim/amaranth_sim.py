"""The one place that runs a design in Amaranth's own simulator for the unit
tests: a 100 MHz clock on the ``sync`` domain (unless the design is
combinational) and the given testbenches."""

from amaranth.sim import Simulator

__all__ = ["run_testbenches", "AxiLiteManager"]


def run_testbenches(dut, *benches, background=(), clock=True):
    """Simulate ``dut`` until every bench of ``benches`` has returned; the
    ``background`` benches run beside them and are stopped then.  A design
    without a ``sync`` domain takes ``clock=False``."""
    sim = Simulator(dut)
    if clock:
        sim.add_clock(1e-8)
    for bench in benches:
        sim.add_testbench(bench)
    for bench in background:
        sim.add_testbench(bench, background=True)
    sim.run()


class AxiLiteManager:
    """AXI4-Lite manager of ``bus`` for a testbench: one transaction at a
    time, address and data offered together, the response taken as soon
    as it is valid."""

    def __init__(self, ctx, bus):
        self.ctx, self.bus = ctx, bus

    async def write(self, addr, value, strb=0xF):
        """Write ``value`` to ``addr``; return BRESP."""
        ctx, bus = self.ctx, self.bus
        ctx.set(bus.awaddr, addr), ctx.set(bus.wdata, value), ctx.set(bus.wstrb, strb)
        ctx.set(bus.awvalid, 1), ctx.set(bus.wvalid, 1), ctx.set(bus.bready, 1)
        await ctx.tick()
        ctx.set(bus.awvalid, 0), ctx.set(bus.wvalid, 0)
        while True:
            _, _, bvalid, bresp = await ctx.tick().sample(bus.bvalid, bus.bresp)
            if bvalid:
                return bresp

    async def read(self, addr):
        """Read ``addr``; return ``(RDATA, RRESP)``."""
        ctx, bus = self.ctx, self.bus
        ctx.set(bus.araddr, addr), ctx.set(bus.arvalid, 1), ctx.set(bus.rready, 1)
        await ctx.tick()
        ctx.set(bus.arvalid, 0)
        while True:
            _, _, rvalid, rdata, rresp = await ctx.tick().sample(bus.rvalid, bus.rdata, bus.rresp)
            if rvalid:
                return rdata, rresp
