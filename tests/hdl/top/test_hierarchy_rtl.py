"""The hierarchy extension in hardware (contract section 5): the CFG check
of the control registers, and the wrapper of ``hdl/hierarchy/unit.py`` (the
worker-major permutation, the core and the count-sum unit) against the
golden model, in the Amaranth simulator and, exported
(``neuron_fabric_hierarchy``), under cocotb with Verilator and Icarus
(``neuron_fabric.sim.cocotb_hierarchy_unit``); and the count-sum unit's lanes
formally against contract section 5.3 (``neuron_fabric.sim.formal_hierarchy``)."""

import itertools
import pathlib
import random
import shutil
import sys

import pytest
from amaranth import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from neuron_fabric.sim.amaranth_sim import run_testbenches

from neuron_fabric.hdl.hierarchy.count_steps import margin_limits, margin_sums, margin_terms
from neuron_fabric.hdl.top.csr import CfgWordLayout, cfg_invalid
from neuron_fabric.hdl.hierarchy.unit import HIERARCHY_MODULE, HierarchyUnit
from neuron_fabric.contract.facts import PROFILES, Format, GateKind, Layout, Mode, Operand, TopParams
from neuron_fabric.contract.regmap import cfg_check, cfg_encode
from neuron_fabric.sim import formal_hierarchy
from neuron_fabric.sim.formal import run_sby
from neuron_fabric.sim.tb_hierarchy import expected_line, random_line
from neuron_fabric.sim.tb_top import SMALL_TOP
from neuron_fabric.contract.paths import BUILD, VERILOG_CACHE
from neuron_fabric.sim.toolchain import available_simulators, run_cocotb

HIERARCHY = ("hierarchy",)


class _CfgCheck(wiring.Component):
    """:func:`cfg_invalid` of a CFG word."""
    word: In(32)
    bad: Out(1)

    def __init__(self, workers, features):
        self._workers, self._features = workers, features
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.bad.eq(cfg_invalid(data.View(CfgWordLayout, self.word),
                                            self._workers, self._features))
        return m


def _rtl_rejects(values, workers, features):
    dut = _CfgCheck(workers, features)
    out = []

    async def bench(ctx):
        for v in values:
            ctx.set(dut.word, v)
            out.append(bool(ctx.get(dut.bad)))

    run_testbenches(dut, bench, clock=False)
    return out


def _cfg(operand=Operand.SIGNS, total=0, threshold=0, layout=Layout.ELEMENT_MAJOR, **kw):
    return cfg_encode(Mode.GTERNARY, Format.MARGIN, threshold=threshold, layout=layout,
                      operand=operand, total=total, **kw)


class _Limits(wiring.Component):
    """The count unit's MARGIN limits as the request pipeline forms them:
    :func:`margin_terms`, :func:`margin_sums`, :func:`margin_limits`."""
    mode: In(2)
    gate_kind: In(1)
    total: In(10)
    threshold: In(5)
    high: Out(10)
    low: Out(10)

    def elaborate(self, platform):
        m = Module()
        limits = margin_limits(margin_sums(margin_terms(self.mode, self.gate_kind, self.total,
                                                        self.threshold)))
        m.d.comb += [self.high.eq(limits[:10]), self.low.eq(limits[10:])]
        return m


def test_margin_limits_keep_what_the_contract_keeps():
    """For every count c of a lane (0..1020), ``c >= high or c < low`` is
    contract 5.3's MARGIN rule |2c - total| >= T when G-Ternary's gate is
    MARGIN, and never holds otherwise; every T with totals at the edges and
    spread over the range."""
    dut = _Limits()
    totals = sorted({0, 1, 2, 3, 30, 31, 32, 33, 511, 512, 1018, 1019, 1020,
                     *random.Random(7).sample(range(1021), 24)})
    cases = [(mode, kind, total, t) for total in totals for t in range(min(total, 31) + 1)
             for mode, kind in ((Mode.GTERNARY, GateKind.MARGIN), (Mode.GTERNARY, GateKind.PATTERN),
                                (Mode.GBINARY, GateKind.MARGIN))]
    got = []

    async def bench(ctx):
        for mode, kind, total, t in cases:
            for sig, v in zip((dut.mode, dut.gate_kind, dut.total, dut.threshold),
                              (mode, kind, total, t)):
                ctx.set(sig, v)
            got.append((ctx.get(dut.high), ctx.get(dut.low)))

    run_testbenches(dut, bench, clock=False)
    for (mode, kind, total, t), (high, low) in zip(cases, got):
        on = mode == Mode.GTERNARY and kind == GateKind.MARGIN
        kept = [c >= high or c < low for c in range(1021)]
        assert kept == [on and abs(2 * c - total) >= t for c in range(1021)], \
            (mode, kind, total, t, high, low)


#: (CFG word, rejected by a build with the hierarchy feature, rejected without),
#: worked from contract section 5 by hand, W = 8.
HAND = [
    (_cfg(), False, False),
    (_cfg(threshold=8), False, False),
    (_cfg(threshold=9), True, True),                                   # T > W
    (_cfg(total=1), True, True),                                       # SIGNS, total != 0
    (_cfg(layout=Layout.WORKER_MAJOR), False, True),
    (_cfg(Operand.COUNTS4, total=120), False, True),
    (_cfg(Operand.COUNTS4, total=121), True, True),                    # > 8 * 15
    (_cfg(Operand.COUNTS4, total=0), True, True),
    (_cfg(Operand.COUNTS8, total=1020, threshold=31), False, True),    # T > W is fine here
    (_cfg(Operand.COUNTS8, total=1021), True, True),                   # > 4 * 255
    (_cfg(Operand.COUNTS8, total=30, threshold=31), True, True),       # T > total
    (_cfg(Operand.COUNTS8, total=31, threshold=31, layout=1), False, True),
    (_cfg(3, total=8), True, True),                                    # operand 3
    (_cfg(Operand.COUNTS4, total=8, period=0, keep=0), True, True),    # P = 0
]


@pytest.mark.parametrize("features", [(), HIERARCHY])
def test_cfg_check_hand_worked(features):
    index = 1 if features else 2
    want = [row[index] for row in HAND]
    values = [row[0] for row in HAND]
    assert [cfg_check(v, 8, features) is not None for v in values] == want
    assert _rtl_rejects(values, 8, features) == want


@pytest.mark.parametrize("workers", [4, 8, 16])
@pytest.mark.parametrize("features", [(), HIERARCHY])
def test_cfg_invalid_matches_cfg_check(workers, features):
    """The RTL check and the register map's check agree on every combination
    of the fields' boundary values."""
    values = [cfg_encode(Mode.GBINARY, fmt, 0, period, keep, threshold, layout=layout,
                         operand=operand, total=total)
              for fmt, operand, layout, total, threshold, (period, keep) in itertools.product(
                  range(4), range(4), range(2), (0, 1, 7, 8, 120, 121, 1020, 1021, 1023),
                  (0, workers, workers + 1, 31), ((3, 2), (0, 0), (4, 5), (15, 15)))]
    want = [cfg_check(v, workers, features) is not None for v in values]
    assert _rtl_rejects(values, workers, features) == want


# -- the wrapper: permutation, core and count unit (Amaranth simulator) ----------

def run_wrapper(line_bits, workers, stages, profile, n_lines, idle, backpressure, seed):
    """Random lines through :class:`HierarchyUnit` under ``in_valid`` gaps and
    ``out_ready`` backpressure; return the mismatches (empty when every line
    came out once, in order, with its tag and golden data, and exactly
    STAGES edges after it went in when nothing stalled)."""
    rng = random.Random(seed)
    dut = HierarchyUnit(line_bits=line_bits, workers=workers, stages=stages, profile=profile)
    beats = [random_line(rng, line_bits, workers) for _ in range(n_lines)]
    errors, accepted, left = [], [], []

    async def bench(ctx):
        sent = cycle = 0
        while len(left) < n_lines and cycle < 50 * (n_lines + stages + 10):
            valid = sent < n_lines and rng.random() >= idle
            ready = rng.random() >= backpressure
            ctx.set(dut.i_stream.valid, valid)
            ctx.set(dut.o_stream.ready, ready)
            if valid:
                for name, value in beats[sent].items():
                    ctx.set(dut.i_stream.payload[name], value)
            if valid and ctx.get(dut.i_stream.ready):
                accepted.append(cycle)
                sent += 1
            if ready and ctx.get(dut.o_stream.valid):
                left.append((cycle, ctx.get(dut.o_stream.payload.tag),
                             ctx.get(dut.o_stream.payload.line)))
            await ctx.tick()
            cycle += 1

    run_testbenches(dut, bench)
    prof = PROFILES[profile]
    if len(left) != n_lines:
        errors.append(f"{len(left)} of {n_lines} lines came out")
    for n, (cycle, tag, got) in enumerate(left):
        beat = beats[n]
        want = expected_line(beat, line_bits, workers, prof)
        if tag != beat["tag"]:
            errors.append(f"line {n}: tag {tag}, expected {beat['tag']}")
        elif want is not None and got != want:
            errors.append(f"line {n} {beat}: {got:#x}, expected {want:#x}")
        if not idle and not backpressure and cycle - accepted[n] != stages:
            errors.append(f"line {n}: latency {cycle - accepted[n]}, STAGES {stages}")
    return errors


@pytest.mark.parametrize("line_bits,workers,stages,profile,idle,backpressure", [
    *((*params, *stalls) for params in [(64, 4, 1, "full"), (64, 8, 3, "full"),
                                        (128, 16, 5, "full"), (64, 8, 5, "paper")]
      for stalls in [(0.0, 0.0), (0.3, 0.4)]),
    # the default width, in the top at every read of the two-level and
    # device tests (tests/hdl/top/test_device_rtl.py); alone here in make test-long
    pytest.param(512, 8, 5, "full", 0.2, 0.2, marks=pytest.mark.long),
    pytest.param(256, 8, 8, "full", 0.0, 0.0, marks=pytest.mark.slow),
])
def test_wrapper_against_golden(line_bits, workers, stages, profile, idle, backpressure):
    """Every operand, layout, mode, format and gate: each line out once, in
    order, with its golden response (exactly STAGES edges later without
    stalls)."""
    n_lines = 30 if line_bits >= 256 else 100
    errors = run_wrapper(line_bits, workers, stages, profile, n_lines, idle, backpressure,
                         seed=line_bits + stages)
    assert not errors, "\n".join(errors[:5])



# -- the count line's phase in the request pipeline -----------------------------------

# -- the exported wrapper under cocotb ------------------------------------------

def _export(line_bits, workers, stages, profile, simulator):
    """The wrapper's Verilog under ``build/hierarchy/<set>/<simulator>/`` (a
    folder per simulator, so parallel tests never share a file)."""
    from neuron_fabric.hdl.export.verilog import cached_verilog, hierarchy_verilog, write_verilog
    folder = BUILD / "hierarchy" / f"L{line_bits}_W{workers}_S{stages}_{profile}" / simulator
    return write_verilog(folder / f"{HIERARCHY_MODULE}.v",
                         cached_verilog(hierarchy_verilog, VERILOG_CACHE, line_bits=line_bits,
                                        workers=workers, stages=stages, profile=profile))


@pytest.mark.parametrize("simulator,line_bits,workers,stages,lines", [
    ("icarus", 64, 4, 2, 120),
    ("verilator", 64, 8, 3, 120),
    # W 8, STAGES 5 as the default build, at 128 bits: the 512-bit export
    # took about 100 s a simulator in `make test`, and the 512-bit wrapper
    # is simulated against the golden model in test_wrapper_against_golden.
    pytest.param("icarus", 128, 8, 5, 60, marks=pytest.mark.slow),
    pytest.param("verilator", 128, 8, 5, 60, marks=pytest.mark.slow),
])
def test_exported_wrapper(simulator, line_bits, workers, stages, lines):
    """The exported wrapper: random lines of every operand and layout under
    in_valid gaps and out_ready backpressure (four cocotb tests)."""
    if simulator not in available_simulators():
        pytest.skip(f"{simulator} is not installed")
    source = _export(line_bits, workers, stages, "full", simulator)
    build_dir = (BUILD / "cocotb" / "hierarchy" / f"L{line_bits}_W{workers}_S{stages}"
                 / simulator)
    ran = run_cocotb(sources=[source], toplevel=HIERARCHY_MODULE,
                     test_module="neuron_fabric.sim.cocotb_hierarchy_unit", simulator=simulator,
                     build_dir=build_dir,
                     params=dict(workers=workers, stages=stages, seed=line_bits + stages,
                                 lines=lines, profile="full"))
    assert ran == 4


# -- formal lane equivalence of the count-sum unit ----------------------------------

@pytest.mark.parametrize("operand,layout", [
    pytest.param(operand, layout, id=f"{operand.name}-{layout.name}",
                 marks=[pytest.mark.slow] if operand == Operand.COUNTS8 else [])
    for operand in (Operand.COUNTS4, Operand.COUNTS8) for layout in Layout])
def test_count_lane_formal(operand, layout):
    """Every count lane of the unit equals contract section 5.3 for every
    line, mask and configuration in range, and its select is high exactly
    for a transformed count line (SymbiYosys, 64-bit lines: two count lanes)."""
    if shutil.which("yowasp-sby", path=str(pathlib.Path(sys.executable).parent)) is None:
        pytest.skip("yowasp-sby is not installed")
    passed, log = run_sby(formal_hierarchy.write_job(64, 4, 1, operand, layout))
    assert passed, log[-4000:]


# -- two levels through the exported top ----------------------------------------

#: The default top, as tests/hdl/top/test_device_rtl.py and test_top_sim.py
#: build it (one build a simulator serves them all).
TOP = TopParams()


@pytest.mark.parametrize("simulator, params, elements", [
    ("verilator", TOP, 256),
    # Icarus, 20x slower than Verilator at 512 bits, on the benches' small
    # top (one build with them; 64 elements are as many lines there as 256
    # at the default top); the default top on Icarus in make test-long
    ("icarus", SMALL_TOP, 64),
    pytest.param("icarus", TOP, 256, marks=pytest.mark.long)],
    ids=["verilator", "icarus", "icarus-default"])
def test_two_levels_through_the_top(run_top_bench, simulator, params, elements):
    """Contract section 5.4 with the exported top as a level-1 controller and
    as the level-2 controller (``neuron_fabric.sim.cocotb_hierarchy``): every
    mode, format, gate and layout equals one controller over 8 of them
    (64 workers at the default top)."""
    if simulator not in available_simulators():
        pytest.skip(f"{simulator} is not installed")
    assert run_top_bench(params, simulator, "neuron_fabric.sim.cocotb_hierarchy",
                         f"two_levels_{simulator}_{params.tag()}", seed=5, elements=elements) == 1
