"""A two-level hierarchy with the exported top at both levels (contract
section 5.4; run by tests/hdl/top/test_hierarchy_rtl.py).

Eight level-1 controllers of W workers and one level-2 controller, as
:class:`neuron_fabric.host.runtime.TwoLevelRuntime` drives them: the top under
simulation is level-1 controller 0 (its G-Binary COUNT region, region 0)
and the level-2 controller (a count region, region 1, in another window);
level-1 controllers 1..7 are transaction-level device models.  For every
mode, format and gate and both layouts, the level-2 read must equal, bit for
bit, what one controller over all ``8 * W`` workers returns by contract
sections 2 and 5.3 (``golden.transform_wide``), and every DRS response is
checked against the golden model by the bench's scoreboard on the way.

Parameters (the runner's ``params``): the TopParams fields, ``seed``,
``elements`` (n, the elements aggregated).
"""

import itertools

import cocotb
import numpy as np

from neuron_fabric.host import golden
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.contract.facts import Format, GateKind, Layout, Mode, Operand
from neuron_fabric.host.runtime import GroupPolicy, TwoLevelRuntime

from neuron_fabric.sim.rtl_port import RtlPort
from neuron_fabric.sim.tb_top import TopTB, top_params
from neuron_fabric.sim.toolchain import bench_params

GROUPS = 8
#: Gate parameters of every run: P, K, T.
PERIOD, KEEP, THRESHOLD = 5, 3, 12


def configs():
    """(mode, format, gate kind) of every low-bit read (G-Binary has no gate)."""
    return [(mode, fmt, kind) for mode, fmt, kind in
            itertools.product((Mode.GBINARY, Mode.GTERNARY), Format, GateKind)
            if mode == Mode.GTERNARY or kind == GateKind.PATTERN]


def expected(signs, mode, fmt, kind, line_bits):
    """What one controller over all of ``signs`` (``(G * W, n)`` bool)
    returns (contract sections 2 and 5.3), decoded."""
    n = signs.shape[1]
    lanes = line_bits // 32
    phase = golden.line_phase(np.arange(-(-n // lanes)), lanes, PERIOD)
    wide = golden.transform_wide(signs, mode, fmt, kind, PERIOD, KEEP, THRESHOLD, phase,
                                 line_bits=line_bits)
    return golden.decode_counts(wide, fmt, n)


@cocotb.test()
async def test_two_levels_match_one_controller(dut):
    params, bench = top_params(), bench_params()
    n = bench.get("elements", 256)
    rng = np.random.default_rng(bench.get("seed", 1))
    tb = TopTB(dut, params)
    await tb.reset()
    rtl = (RtlPort(tb), tb.driver)
    models = []
    for _ in range(GROUPS - 1):
        dev = Device(params)
        models.append((dev, Driver(dev, params)))
    workers = GROUPS * params.workers
    runs = 0
    for layout in Layout:
        for mode, fmt, kind in configs():
            g = rng.standard_normal((workers, n)).astype(np.float32)
            g[:, 0], g[:, 1] = 1.0, -1.0                  # unanimous elements
            policy = GroupPolicy(mode, fmt, kind, period=PERIOD, keep=KEEP,
                                 threshold=THRESHOLD, layout=layout)
            h = await TwoLevelRuntime.create([rtl, *models], rtl, n, policy, base1=0x10000,
                                       base2=0x40, region1=0, region2=1)
            assert h.operand == (Operand.COUNTS4 if params.workers <= 8 else Operand.COUNTS8)
            got = await h.aggregate(g)
            want = expected(g > 0, mode, fmt, kind, params.line_bits)
            assert got.tolist() == want.tolist(), (layout.name, mode.name, fmt.name, kind.name)
            runs += 1
    tb.check()
    cocotb.log.info(f"two levels, {runs} reads of {n} elements over {workers} workers: "
                    f"equal to one controller; modes {tb.board.modes}")
