"""The hierarchy extension in hardware (contract section 5): the CFG check
of the control registers."""

import itertools

import pytest
from amaranth import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from neuron_fabric.hdl.csr import CfgWordLayout, cfg_invalid
from neuron_fabric.host.facts import Format, Layout, Mode, Operand
from neuron_fabric.host.regmap import cfg_check, cfg_encode

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

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    return out


def _cfg(operand=Operand.SIGNS, total=0, threshold=0, layout=Layout.ELEMENT_MAJOR, **kw):
    return cfg_encode(Mode.GTERNARY, Format.MARGIN, threshold=threshold, layout=layout,
                      operand=operand, total=total, **kw)


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
