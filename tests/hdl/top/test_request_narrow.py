"""The request pipeline at the narrowest line, E = 4 lanes (64-bit lines,
16 workers), where the PATTERN mask has fewer bits than the pipeline's
copies of P, K and the phase (its export once failed with an IndexError):
every period 1..15 with a random keep, in a region and in DEFAULT_CFG,
each read's mask against contract 4.3's phase and the golden model's
pattern (the bench of tests/hdl/top/test_request.py)."""

import random

import pytest

from neuron_fabric.hdl.top.request import RequestPipeline
from neuron_fabric.contract.facts import Mode, TopParams
from neuron_fabric.sim.amaranth_sim import run_testbenches


@pytest.mark.parametrize("line_bits,workers", [(64, 16), (128, 16)])
def test_mask_of_every_period_with_few_lanes(line_bits, workers, test_module):
    bench = test_module("hdl/top/test_request.py")
    params = TopParams(line_bits=line_bits, workers=workers, stages=2, regions=1,
                       max_outstanding=4)
    assert params.lanes < 16
    dut = RequestPipeline(params)
    rng = random.Random(line_bits + workers)
    epochs = []
    for period in range(1, 16):
        keep = rng.randrange(period + 1)
        default = dict(bench.DEFAULT, mode=Mode.GTERNARY, period=period,
                       keep=rng.randrange(period + 1))
        region = (dict(mode=Mode.GTERNARY, format=0, gate_kind=0, period=period, keep=keep,
                       threshold=0, enable=1), 40 + period, 60 + 3 * period)
        # lines in the region (phases from every line index) and below it
        lines = [rng.randrange(0, 80) for _ in range(6)]
        epochs.append((default, [region], bench._requests(rng, lines, range(6 * period,
                                                                              6 * period + 6))))
    producer, consumer, tables = bench._bench(dut, epochs, rng)
    run_testbenches(dut, producer, consumer, background=tables)
