"""Limits the memory-service model must obey, and a smoke run of the report.

Expected values are closed forms derived by hand in each test from the
parameters, never taken from the model itself.
"""

import json
import math

import pytest

from neuron_fabric.models import commtime
from neuron_fabric.sim.envelope import report
from neuron_fabric.models.envelope.model import ModeSwitch, overhead_pct, simulate
from neuron_fabric.models.envelope.params import ANCHOR, GiB, MiB, ServiceParams

# The anchor in controller cycles, by hand: 200 ns and 20 ns at 2 GHz; the
# 128 GiB/s link needs 64 B / 128 GiB/s = 0.93 cycles per line, less than
# the one-line-per-cycle port, so the gate is 1 cycle.
L, LLC, GATE, D = 400, 40, 1, 5
RTT = LLC + GATE + L


def one_at_a_time(**kw):
    return ANCHOR.with_(workers=1, window=1, llc_policy="miss", **kw)


@pytest.mark.parametrize("p", [
    ANCHOR,
    ANCHOR.with_(window=64),
    ANCHOR.with_(window=64, stacks=4),
    ANCHOR.with_(workers=3, window=5, bandwidth_gib_s=4.0),
], ids=["anchor", "congested", "4 stacks", "3x5 at 4 GiB/s"])
def test_zero_datapath_gives_zero_overhead(p):
    assert overhead_pct(p.with_(datapath_cycles=0), 64) == 0.0


@pytest.mark.parametrize("depth", [1, 5, 20])
def test_one_read_at_a_time_pays_datapath_over_round_trip(depth):
    got = overhead_pct(one_at_a_time(datapath_cycles=depth), 50)
    assert got == pytest.approx(100 * depth / RTT, rel=1e-9)


def test_one_read_at_a_time_with_a_slow_link():
    # 8 GiB/s: 64 B take 64 / (8 * 2**30) s = 14.9 cycles at 2 GHz.
    gate = 64 / (8 * GiB) * 2e9
    got = overhead_pct(one_at_a_time(bandwidth_gib_s=8.0), 50)
    assert got == pytest.approx(100 * D / (LLC + gate + L), rel=1e-9)


def test_heavy_bandwidth_pressure_hides_the_datapath():
    # 1 GiB/s: 119.2 cycles per line; 8 x 64 reads in flight keep the gate
    # busy from the first arrival (LLC) to the last read, so the batch takes
    # LLC + n * gate + L and the datapath only delays the very last read.
    p = ANCHOR.with_(window=64, bandwidth_gib_s=1.0)
    gate = 64 / GiB * 2e9
    n = 8 * 256
    t_bypass = LLC + n * gate + L
    assert simulate(p, 256, datapath=False).completion_cycles == pytest.approx(t_bypass)
    assert simulate(p, 256, datapath=True).completion_cycles == pytest.approx(t_bypass + D)
    assert overhead_pct(p, 256) < 0.01 * 100 * D / RTT


@pytest.mark.parametrize("p", [
    ANCHOR,
    ANCHOR.with_(window=8, bandwidth_gib_s=8.0),       # partly overlapped
    ANCHOR.with_(window=64),
    ANCHOR.with_(stacks=2, window=64, interleave_bytes=4096),
], ids=["anchor", "partial", "congested", "2 stacks"])
def test_overhead_is_monotonic_in_datapath_depth(p):
    values = [overhead_pct(p.with_(datapath_cycles=d), 128) for d in (0, 1, 2, 5, 10, 20, 40)]
    assert values == sorted(values)
    assert values[0] == 0.0


@pytest.mark.parametrize("p", [
    ANCHOR, ANCHOR.with_(workers=5, window=3), ANCHOR.with_(window=32, stacks=2),
    ANCHOR.with_(llc_policy="random", footprint_per_worker_bytes=4 * MiB),
])
def test_exposure_never_exceeds_datapath_over_unloaded_round_trip(p):
    assert overhead_pct(p, 128) <= 100 * D / RTT + 1e-9


def test_footprint_within_llc_never_reaches_the_controller():
    p = ANCHOR.with_(footprint_per_worker_bytes=1 * MiB)       # 8 MiB total = LLC
    run = simulate(p, 100)
    assert run.misses == 0
    assert run.completion_cycles == pytest.approx(100 * LLC)
    assert overhead_pct(p, 100) == 0.0


def test_random_replacement_misses_the_part_that_does_not_fit():
    p = ANCHOR.with_(llc_policy="random", footprint_per_worker_bytes=4 * MiB)   # 32 MiB
    run = simulate(p, 1000)
    assert run.misses == pytest.approx(0.75 * 8 * 1000, abs=8)


def test_scale_out_removes_the_queue_that_hid_the_datapath():
    congested = ANCHOR.with_(window=64)
    # One stack: the batch takes at least 8 x 1024 gate slots, and only the
    # last read pays the datapath.
    assert overhead_pct(congested, 1024) <= 100 * D / (8 * 1024 * GATE)
    # Eight stacks: 512 reads spread over 8 gates are 64 cycles of gate work
    # per 441-cycle round trip, so the loop is latency-bound again.
    assert overhead_pct(congested.with_(stacks=8), 1024) == pytest.approx(100 * D / (RTT + 0), rel=0.02)


def test_late_mode_update_costs_the_reads_accepted_meanwhile():
    # One read at a time: read k is accepted at LLC + k * (RTT + D) while
    # the datapath is on, so a switch to BYPASS at tau leaves
    # ceil((tau - LLC) / (RTT + D)) reads on the datapath.
    p = one_at_a_time()
    for tau in (1000.0, 10_000.0, 44_600.0):
        on_time = simulate(p, 200, switch=ModeSwitch(0.0, False)).completion_cycles
        late = simulate(p, 200, switch=ModeSwitch(tau, False)).completion_cycles
        assert late - on_time == pytest.approx(math.ceil((tau - LLC) / (RTT + D)) * D)


def test_max_outstanding_limits_reads_in_flight():
    # One stack holding 4 reads, each for GATE + L cycles (accept to
    # response), 8 streams: the 80 reads need at least 80 / 4 such turns
    # after the first LLC lookup; without the limit they overlap 8 ways.
    p = ANCHOR.with_(max_outstanding=4)
    assert simulate(p, 10, datapath=False).completion_cycles >= LLC + 20 * (GATE + L)
    assert simulate(ANCHOR, 10, datapath=False).completion_cycles < LLC + 20 * (GATE + L)


@pytest.mark.parametrize("bad", [
    {"workers": 0}, {"window": 0}, {"bandwidth_gib_s": 0.0}, {"fixed_latency_ns": -1.0},
    {"llc_policy": "fifo"}, {"footprint_per_worker_bytes": 32}, {"max_outstanding": 0},
    {"workers": True},
])
def test_bad_parameters_are_rejected_with_the_value(bad):
    with pytest.raises(ValueError, match=repr(next(iter(bad.values())))):
        ServiceParams(**bad)


def test_fp32_through_cxl_and_low_bit_rows_follow_the_payload():
    # GPT-2 XL, 1.5e9 FP32 gradients written and read back over 128 GiB/s.
    fp32_ms = 2 * 1.5e9 * 4 / (128 * GiB) * 1e3
    t = commtime.allreduce_times_ms(1.5e9, exposure_pct=0.0)
    assert t["FP32 via CXL pooled memory"] == pytest.approx(fp32_ms)
    assert fp32_ms == pytest.approx(87.31, abs=0.005)          # the paper's low end
    assert t["G-Binary (CXL-side)"] == pytest.approx(fp32_ms / 32)
    assert t["G-Ternary (CXL-side)"] == pytest.approx(fp32_ms * 1.58 / 32)
    # Ring: 2 (N-1)/N * 6 GB at 50 GB/s plus 14 steps of 5 us.
    assert t["FP32 ring All-Reduce (network)"] == pytest.approx(1e3 * (1.75 * 6e9 / 50e9 + 14 * 5e-6))
    with_exposure = commtime.allreduce_times_ms(1.5e9, exposure_pct=2.0)
    assert with_exposure["G-Binary (CXL-side)"] == pytest.approx(1.02 * fp32_ms / 32)


def test_report_smoke(tmp_path):
    result = report.build(tmp_path, quick=True)
    for name in ("envelope.md", "envelope.json", "envelope_fig2.png", "envelope_fig3a.png",
                 "envelope_fig3b.png", "envelope_fig3c.png", "envelope_fig7.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    data = json.loads((tmp_path / "envelope.json").read_text())
    assert data["single_stream_pct"] == pytest.approx(100 * D / RTT, rel=1e-6)
    assert data["full_llc_miss_pct"] == pytest.approx(100 * D / RTT, rel=1e-3)
    for key in ("streams_1_8_pct", "scaleout_healthy_pct", "scaleout_congested_pct"):
        lo, hi = data[key]
        assert 0 <= lo <= hi <= 100 * D / RTT + 1e-9, key
    # One stack of 8 x 64 reads is gate-bound (hidden), eight stacks are not.
    assert data["scaleout_congested_pct"][0] < 0.1 < data["scaleout_congested_pct"][1]
    assert result["table4_seconds"]["wall"] > 0
    assert "| full LLC miss | 1.67 |" in (tmp_path / "envelope.md").read_text()
