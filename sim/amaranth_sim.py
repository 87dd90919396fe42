"""The one place that runs a design in Amaranth's own simulator for the unit
tests: a 100 MHz clock on the ``sync`` domain (unless the design is
combinational) and the given testbenches."""

from amaranth.sim import Simulator

__all__ = ["run_testbenches"]


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
