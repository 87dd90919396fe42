"""Golden model: hand-worked examples, the two forms against each other, the
runtime encode/decode round trip, and the paper's Table 6 traffic column."""

import itertools

import numpy as np
import pytest

from neuron_fabric.host import golden
from neuron_fabric.contract.facts import Format, GateKind, Mode
from neuron_fabric.models.traffic import (RESNET18_CIFAR100, TABLE6_PAPER, TABLE6_POLICIES,
                                          packed_lines, round_half_up, traffic_ratio)


def one_lane_line(lanes_values, workers, line_bits=64):
    """A line whose first lanes hold ``lanes_values`` (others zero)."""
    value = 0
    for i, lane in enumerate(lanes_values):
        value |= lane << (i * workers)
    return golden.lines_from_ints([value], line_bits)


def lanes_of(line, workers):
    value = golden.lines_to_ints(line)[0]
    return [(value >> (i * workers)) & ((1 << workers) - 1)
            for i in range(line.shape[1] * 8 // workers)]


# -- hand-worked examples ----------------------------------------------------

def test_six_positive_two_negative_votes_return_positive():
    # Paper section 2: eight workers, six positive and two negative votes.
    lane = 0b0011_1111
    assert golden.transform_lane(lane, 0, 8, Mode.GBINARY, Format.COUNT) == 6
    assert golden.transform_lane(lane, 0, 8, Mode.GBINARY, Format.MARGIN) == 4
    assert golden.transform_lane(lane, 0, 8, Mode.GBINARY, Format.SIGN) == 1
    # ... and if the G-Ternary gate is zero for that element, zero instead.
    # Lane 2 with phase 0 under the 2-of-3 gate is the zeroed one.
    assert golden.transform_lane(lane, 2, 8, Mode.GTERNARY, Format.SIGN, period=3, keep=2) == 0
    assert golden.transform_lane(lane, 1, 8, Mode.GTERNARY, Format.SIGN, period=3, keep=2) == 1


def test_two_of_three_gate_keeps_keep_zero():
    ones = [0xFF] * 8                     # every worker positive: sign +1
    line = one_lane_line(ones, 8)
    out = golden.transform(line, 8, Mode.GTERNARY, Format.SIGN, GateKind.PATTERN, 3, 2, 0, 0)
    assert lanes_of(out, 8) == [1, 1, 0, 1, 1, 0, 1, 1]
    out = golden.transform(line, 8, Mode.GTERNARY, Format.SIGN, GateKind.PATTERN, 3, 2, 0, 1)
    assert lanes_of(out, 8) == [1, 0, 1, 1, 0, 1, 1, 0]
    out = golden.transform(line, 8, Mode.GTERNARY, Format.SIGN, GateKind.PATTERN, 3, 2, 0, 2)
    assert lanes_of(out, 8) == [0, 1, 1, 0, 1, 1, 0, 1]


def test_tie_gives_sign_zero():
    assert golden.transform_lane(0b1010_0101, 0, 8, Mode.GBINARY, Format.SIGN) == 0
    assert golden.transform_lane(0b0011, 0, 4, Mode.GBINARY, Format.SIGN) == 0
    assert golden.transform_lane(0x00FF, 0, 16, Mode.GBINARY, Format.MARGIN) == 0


def test_negative_values_are_twos_complement():
    # W = 4: one positive vote of four: c = 1, a = -2 = 0b1110, sign -1 = 0b1111.
    assert golden.transform_lane(0b0100, 0, 4, Mode.GBINARY, Format.MARGIN) == 0b1110
    assert golden.transform_lane(0b0100, 0, 4, Mode.GBINARY, Format.SIGN) == 0b1111
    # W = 16, no positive vote: a = -16 = 0xFFF0.
    assert golden.transform_lane(0, 0, 16, Mode.GBINARY, Format.MARGIN) == 0xFFF0


def test_gated_lane_in_count_format_is_half_w():
    for workers in (4, 8, 16):
        full = (1 << workers) - 1
        assert golden.transform_lane(full, 2, workers, Mode.GTERNARY, Format.COUNT,
                                     period=3, keep=2) == workers // 2
        assert golden.transform_lane(full, 2, workers, Mode.GTERNARY, Format.MARGIN,
                                     period=3, keep=2) == 0


def test_margin_gate_threshold():
    # W = 8, T = 4: keep iff |2c - 8| >= 4, i.e. c <= 2 or c >= 6.
    kept = [c for c in range(9)
            if golden.transform_lane((1 << c) - 1, 0, 8, Mode.GTERNARY, Format.MARGIN,
                                     GateKind.MARGIN, threshold=4) != 0]
    assert kept == [0, 1, 2, 6, 7, 8]
    # T = 0 keeps every lane, even the tie (whose margin is 0 anyway).
    assert golden.transform_lane(0x0F, 0, 8, Mode.GTERNARY, Format.COUNT,
                                 GateKind.MARGIN, threshold=0) == 4


def test_identity_and_bypass_return_the_bytes():
    rng = np.random.default_rng(0)
    lines = rng.integers(0, 256, (5, 64), dtype=np.uint8)
    for mode in (Mode.BYPASS, Mode.IDENTITY):
        out = golden.transform(lines, 8, mode, Format.SIGN, GateKind.MARGIN, 5, 1, 3)
        assert np.array_equal(out, lines)


def test_transform_does_not_modify_its_input():
    rng = np.random.default_rng(1)
    lines = rng.integers(0, 256, (3, 64), dtype=np.uint8)
    keep = lines.copy()
    golden.transform(lines, 8, Mode.GTERNARY, Format.MARGIN)
    assert np.array_equal(lines, keep)


def test_line_bit_order():
    # Line bit n is bit n % 8 of byte n // 8.
    line = golden.lines_from_ints([1 << 9], 64)
    assert line[0, 1] == 0b10 and line.sum() == 2
    assert golden.lines_to_ints(line) == [1 << 9]


# -- the vectorised form against the scalar form ------------------------------

CONFIGS = [
    (mode, fmt, kind, p, k, t)
    for mode in Mode for fmt in Format for kind in GateKind
    for (p, k, t) in [(3, 2, 0), (1, 0, 1), (1, 1, 8), (5, 3, 2), (15, 15, 4), (7, 0, 3)]
]


@pytest.mark.parametrize("workers", [4, 8, 16])
def test_vectorised_matches_scalar(workers):
    rng = np.random.default_rng(workers)
    line_bits = 256
    lanes = line_bits // workers
    for mode, fmt, kind, p, k, t in CONFIGS:
        t = min(t, workers)
        lines = rng.integers(0, 256, (4, line_bits // 8), dtype=np.uint8)
        phases = rng.integers(0, p, 4)
        out = golden.transform(lines, workers, mode, fmt, kind, p, k, t, phases)
        for row in range(4):
            lane_in = lanes_of(lines[row:row + 1], workers)
            expect = [golden.transform_lane(lane_in[i], i, workers, mode, fmt, kind, p, k, t,
                                            int(phases[row])) for i in range(lanes)]
            assert lanes_of(out[row:row + 1], workers) == expect, (mode, fmt, kind, p, k, t)


# -- the PATTERN gate as a mask (contract section 3 (v2)) -----------------------------

def test_gate_pattern_follows_the_spec_formula():
    # contract section 2, written out here: n = (phase + i) mod P; keep iff n < K.
    lanes = 19
    for p in range(1, 16):
        for k in range(p + 1):
            for ph in range(p):
                expect = [(ph + i) % p < k for i in range(lanes)]
                assert golden.gate_pattern(lanes, p, k, ph).tolist() == expect, (p, k, ph)
    rows = golden.gate_pattern(lanes, 7, 3, np.array([0, 6, 2]))
    assert rows.shape == (3, lanes)
    assert rows[1].tolist() == golden.gate_pattern(lanes, 7, 3, 6).tolist()


@pytest.mark.parametrize("workers,line_bits", [(4, 256), (8, 256), (16, 256), (16, 64)])
def test_transform_takes_the_cores_mask(workers, line_bits):
    """Any mask, one per line or one for all lines, against the scalar form;
    and the keyword API gives what its gate_pattern mask gives."""
    rng = np.random.default_rng(10 + workers)
    lanes = line_bits // workers
    lines = rng.integers(0, 256, (6, line_bits // 8), dtype=np.uint8)
    masks = rng.random((6, lanes)) < 0.5
    for fmt in Format:
        for mask in (masks, masks[2]):
            out = golden.transform(lines, workers, Mode.GTERNARY, fmt, gate_mask=mask)
            for row in range(6):
                line_mask = mask if mask.ndim == 1 else mask[row]
                lane_in = lanes_of(lines[row:row + 1], workers)
                expect = [golden.transform_lane(lane_in[i], i, workers, Mode.GTERNARY, fmt,
                                                gate_mask=line_mask) for i in range(lanes)]
                assert lanes_of(out[row:row + 1], workers) == expect, (fmt, row)
        phases = rng.integers(0, 5, 6)
        by_keywords = golden.transform(lines, workers, Mode.GTERNARY, fmt, period=5, keep=3,
                                       phase=phases)
        by_mask = golden.transform(lines, workers, Mode.GTERNARY, fmt,
                                   gate_mask=golden.gate_pattern(lanes, 5, 3, phases))
        assert np.array_equal(by_keywords, by_mask)
    # The mask is the PATTERN gate only: G-Binary and the MARGIN gate ignore it.
    none = np.zeros(lanes, dtype=bool)
    for mode, kind in ((Mode.GBINARY, GateKind.PATTERN), (Mode.GTERNARY, GateKind.MARGIN)):
        assert np.array_equal(golden.transform(lines, workers, mode, gate_kind=kind,
                                               threshold=1, gate_mask=none),
                              golden.transform(lines, workers, mode, gate_kind=kind,
                                               threshold=1))


def test_per_line_masks_across_chunks():
    # More lines than one chunk of the vectorised form: each keeps its own mask.
    rng = np.random.default_rng(5)
    n = golden.CHUNK_LINES + 7
    lines = rng.integers(0, 256, (n, 8), dtype=np.uint8)
    phases = rng.integers(0, 3, n)
    by_mask = golden.transform(lines, 4, Mode.GTERNARY,
                               gate_mask=golden.gate_pattern(16, 3, 2, phases))
    assert np.array_equal(by_mask, golden.transform(lines, 4, Mode.GTERNARY, phase=phases))


# -- errors ------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, word", [
    (dict(fmt=3), "format"),
    (dict(period=0), "period"),
    (dict(period=3, keep=4), "keep"),
    (dict(threshold=9), "threshold"),
    (dict(mode=4), "mode"),
])
def test_invalid_configuration_is_rejected(kwargs, word):
    args = dict(workers=8, mode=Mode.GTERNARY)
    args.update(kwargs)
    with pytest.raises(ValueError, match=word):
        golden.check_config(**args)


def test_bad_lines_are_rejected():
    with pytest.raises(ValueError, match="uint8"):
        golden.transform(np.zeros((2, 64), dtype=np.int32), 8, Mode.GBINARY)
    with pytest.raises(ValueError, match="LINE_BITS"):
        golden.transform(np.zeros((2, 7), dtype=np.uint8), 8, Mode.GBINARY)
    with pytest.raises(ValueError, match="phase"):
        golden.transform(np.zeros((1, 64), dtype=np.uint8), 8, Mode.GTERNARY, phase=3)
    with pytest.raises(ValueError, match="gate_mask"):
        golden.transform(np.zeros((2, 64), dtype=np.uint8), 8, Mode.GTERNARY,
                         gate_mask=np.ones(63, dtype=bool))
    with pytest.raises(ValueError, match="gate_mask"):
        golden.transform(np.zeros((2, 64), dtype=np.uint8), 8, Mode.GTERNARY,
                         gate_mask=np.ones((3, 64), dtype=bool))
    with pytest.raises(ValueError, match="gate_mask"):
        golden.transform(np.zeros((2, 64), dtype=np.uint8), 8, Mode.GTERNARY,
                         gate_mask=np.ones(64, dtype=np.uint8))


# -- runtime side ------------------------------------------------------------

@pytest.mark.parametrize("workers, line_bits", list(itertools.product([4, 8, 16], [64, 512, 1024])))
def test_encode_then_count_gives_positive_votes(workers, line_bits):
    rng = np.random.default_rng(line_bits + workers)
    n = 3 * (line_bits // workers) - 5          # forces a padded last line
    grads = rng.standard_normal((workers, n)).astype(np.float32)
    grads[:, ::7] = 0.0                         # zero is non-positive
    lines = golden.encode_signs(grads, line_bits)
    assert lines.shape == (packed_lines(n, line_bits, workers), line_bits // 8)
    counts = golden.decode(golden.transform(lines, workers, Mode.GBINARY, Format.COUNT),
                           workers, Format.COUNT, n)
    assert np.array_equal(counts, (grads > 0).sum(axis=0))
    signs = golden.decode(golden.transform(lines, workers, Mode.GBINARY, Format.SIGN),
                          workers, Format.SIGN)
    assert np.array_equal(signs[:n], np.sign(2 * (grads > 0).sum(axis=0) - workers))
    assert np.all(signs[n:] == -1)              # padding: every worker non-positive


@pytest.mark.parametrize("workers, line_bits", list(itertools.product([4, 8, 16], [64, 512, 1024])))
def test_encode_places_each_sign_at_its_lane_bit(workers, line_bits):
    """Line bit i*W + k (byte n // 8, bit n % 8) is worker k's sign of element i."""
    rng = np.random.default_rng(7 * line_bits + workers)
    n = 2 * (line_bits // workers) + 3
    grads = rng.standard_normal((workers, n)).astype(np.float32)
    lines = golden.encode_signs(grads, line_bits)
    flat = lines.reshape(-1)
    for i in range(0, n, 5):
        for k in range(workers):
            bit = i * workers + k
            assert (flat[bit // 8] >> (bit % 8)) & 1 == int(grads[k, i] > 0)
    pad = slice(n * workers, flat.size * 8)
    assert not np.unpackbits(flat, bitorder="little")[pad].any()


def test_decode_margin_is_signed():
    line = one_lane_line([0b0000_0001, 0xFF], 8)
    margin = golden.decode(golden.transform(line, 8, Mode.GBINARY, Format.MARGIN), 8,
                           Format.MARGIN, 2)
    assert margin.tolist() == [-6, 8]


def test_line_phase_follows_the_region_index():
    # E = 64 lanes per line, P = 3: phases 0, 1, 2, 0, ...
    assert golden.line_phase(np.arange(4), 64, 3).tolist() == [0, 1, 2, 0]


# -- traffic -----------------------------------------------------------------

def test_resnet18_groups():
    assert RESNET18_CIFAR100.total == 11_220_132
    assert RESNET18_CIFAR100.groups["head"] == 51_300


@pytest.mark.parametrize("policy", list(TABLE6_POLICIES))
def test_table6_traffic_to_four_decimals(policy):
    ratio = traffic_ratio(RESNET18_CIFAR100, TABLE6_POLICIES[policy])
    assert round_half_up(ratio, 4) == TABLE6_PAPER[policy]


def test_traffic_rejects_bad_policies():
    with pytest.raises(ValueError, match="missing"):
        traffic_ratio(RESNET18_CIFAR100, {"backbone": "fp32"})
    with pytest.raises(ValueError, match="representation"):
        traffic_ratio(RESNET18_CIFAR100, {"backbone": "fp16", "head": "fp32"})


@pytest.mark.parametrize("workers", [4, 8, 16])
def test_vectorised_margin_gate_every_threshold(workers):
    # One lane per count value 0..W, every threshold 0..W, every format.
    line_bits = 1024
    lanes = line_bits // workers
    counts = [i % (workers + 1) for i in range(lanes)]
    line = one_lane_line([(1 << c) - 1 for c in counts], workers, line_bits)
    for t in range(workers + 1):
        for fmt in Format:
            out = golden.transform(line, workers, Mode.GTERNARY, fmt, GateKind.MARGIN,
                                   threshold=t)
            expect = [golden.transform_lane((1 << c) - 1, i, workers, Mode.GTERNARY, fmt,
                                            GateKind.MARGIN, threshold=t)
                      for i, c in enumerate(counts)]
            assert lanes_of(out, workers) == expect, (t, fmt)
