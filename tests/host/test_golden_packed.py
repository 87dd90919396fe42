"""The packed result view of the golden model (contract section 6.2): hand-worked
lines, and every element of random lines against the one-lane references."""

import numpy as np
import pytest

from neuron_fabric.contract.facts import (GateKind, Layout, Mode, Operand, LINE_BITS_CHOICES,
                                          WORKERS_CHOICES, view_beats)
from neuron_fabric.host.golden import (encode_counts, pack_view, to_worker_major,
                                       transform_count_lane, transform_lane, unpack_view,
                                       view_code)

ALL_ONES = 0xFF


def lines(*rows, line_bytes=8):
    out = np.zeros((len(rows), line_bytes), np.uint8)
    for r, row in enumerate(rows):
        out[r, :len(row)] = row
    return out


def test_codes():
    assert [view_code(s) for s in (1, 0, -1)] == [0b01, 0b00, 0b11]
    with pytest.raises(ValueError, match="not 2"):
        view_code(2)


def test_gbinary_by_hand():
    # 64-bit lines, W 8: B = 4 source lines of 8 lanes make one view line of 32.
    # Lanes 0xFF (c 8: +1), 0x00 (-1), 0x0F (c 4, a tie: 0), 0x1F (c 5: +1),
    # 0x07 (c 3: -1), then three 0x00 (-1); the three other lines all +1.
    src = lines([0xFF, 0x00, 0x0F, 0x1F, 0x07, 0, 0, 0], *[[ALL_ONES] * 8] * 3)
    view = pack_view(src, 8, Mode.GBINARY)
    # byte 0: 01 | 11 << 2 | 00 << 4 | 01 << 6; byte 1: four 11; then 01 01 01 01
    assert view.tolist() == [[0x4D, 0xFF] + [0x55] * 6]
    assert unpack_view(view, 5).tolist() == [1, -1, 0, 1, -1]


def test_pattern_gate_by_hand():
    # view line 1 (source lines 4..7): element n = 32 + t is kept when n mod 3 < 2;
    # every lane +1, so gated elements read 0: 0 +1 +1 0 | +1 +1 0 +1 | +1 0 +1 +1 ...
    src = lines(*[[ALL_ONES] * 8] * 4)
    view = pack_view(src, 8, Mode.GTERNARY, GateKind.PATTERN, period=3, keep=2, index=1)
    assert view.tolist() == [[0x14, 0x45, 0x51, 0x14, 0x45, 0x51, 0x14, 0x45]]


def test_margin_gate_by_hand():
    # T = 4 of W = 8: 0x3F (a = 4) kept +1, 0x1F (a = 2) gated 0, 0x01 (a = -6) kept -1,
    # 0x0F (a tie) 0
    src = lines([0x3F, 0x1F, 0x01, 0x0F], *[[]] * 3)
    view = pack_view(src, 8, Mode.GTERNARY, GateKind.MARGIN, threshold=4)
    assert unpack_view(view, 4).tolist() == [1, 0, -1, 0]


def test_worker_major_is_the_same_view():
    src = lines([0xFF, 0x00, 0x0F, 0x1F, 0x07, 0, 0, 0], *[[ALL_ONES] * 8] * 3)
    assert np.array_equal(pack_view(to_worker_major(src, 8), 8, Mode.GBINARY,
                                    layout=Layout.WORKER_MAJOR),
                          pack_view(src, 8, Mode.GBINARY))


def test_level_two_counts_by_hand():
    # COUNTS4, total 64, 64-bit lines: E_c = 2, B = 16.  Element 0: eight counts
    # of 5 (c 40: +1), element 1: eight of 4 (c 32, a tie: 0), element 2: 0 (-1),
    # element 3: eight of 8 (c 64: +1); every other element 0 (-1).
    src = np.zeros((16, 8), np.uint8)
    src[0] = [0x55] * 4 + [0x44] * 4
    src[1, 4:] = 0x88
    view = pack_view(src, 8, Mode.GBINARY, operand=Operand.COUNTS4, total=64)
    assert view.tolist() == [[0x71] + [0xFF] * 7]


def test_counts_worker_major_is_the_same_view():
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 9, (8, 16 * 16))
    args = dict(operand=Operand.COUNTS4, total=64)
    views = [pack_view(encode_counts(counts, 512, Operand.COUNTS4, layout), 8, Mode.GTERNARY,
                       GateKind.MARGIN, threshold=10, layout=layout, **args)
             for layout in Layout]
    assert np.array_equal(*views)


def _reference_signs(src, workers, cfg, index):
    """Each element's result from :func:`transform_lane` (SIGN format), lane by lane."""
    lanes = src.shape[1] * 8 // workers
    ints = [int.from_bytes(row.tobytes(), "little") for row in src]
    out = []
    for s, line in enumerate(ints):
        k = index * view_beats(src.shape[1] * 8, workers, Operand.SIGNS) + s
        for i in range(lanes):
            lane = (line >> (i * workers)) & ((1 << workers) - 1)
            value = transform_lane(lane, i, workers, cfg["mode"], 2, cfg["gate_kind"],
                                   cfg["period"], cfg["keep"], cfg["threshold"],
                                   phase=(k * lanes) % cfg["period"])
            out.append(value - (1 << workers) if value >> (workers - 1) else value)
    return out


def _random_cfg(rng, workers):
    period = int(rng.integers(1, 16))
    return dict(mode=Mode(int(rng.integers(2, 4))), gate_kind=GateKind(int(rng.integers(0, 2))),
                period=period, keep=int(rng.integers(0, period + 1)),
                threshold=int(rng.integers(0, workers + 1)))


@pytest.mark.parametrize("line_bits", [64, 512])
@pytest.mark.parametrize("workers", WORKERS_CHOICES)
def test_signs_against_the_lane_reference(line_bits, workers):
    rng = np.random.default_rng(line_bits * workers)
    beats = view_beats(line_bits, workers, Operand.SIGNS)
    for _ in range(4):
        cfg, index = _random_cfg(rng, workers), int(rng.integers(0, 50))
        src = rng.integers(0, 256, (2 * beats, line_bits // 8), dtype=np.uint8)
        want = _reference_signs(src, workers, cfg, index)
        got = pack_view(src, workers, index=index, **cfg)
        assert got.shape == (2, line_bits // 8)
        assert unpack_view(got).tolist() == want
        wm = np.concatenate([to_worker_major(src[i:i + 1], workers) for i in range(len(src))])
        assert np.array_equal(pack_view(wm, workers, index=index, layout=Layout.WORKER_MAJOR,
                                        **cfg), got)


@pytest.mark.parametrize("operand", [Operand.COUNTS4, Operand.COUNTS8])
def test_counts_against_the_lane_reference(operand):
    rng = np.random.default_rng(int(operand))
    line_bits, total = 128, 50
    cfg, index = _random_cfg(rng, 8), 3
    src = rng.integers(0, 256, (16, line_bits // 8), dtype=np.uint8)
    if operand == Operand.COUNTS4:
        src &= 0x33        # counts of at most 3 each: 24 at most, below total
    got = unpack_view(pack_view(src, 8, operand=operand, total=total, index=index, **cfg))
    want = []
    for s, row in enumerate(src):
        k, line = index * 16 + s, int.from_bytes(row.tobytes(), "little")
        for i in range(line_bits // 32):
            value = transform_count_lane((line >> (32 * i)) & 0xFFFFFFFF, i, operand, total,
                                         cfg["mode"], 2, cfg["gate_kind"], cfg["period"],
                                         cfg["keep"], cfg["threshold"],
                                         phase=(k * (line_bits // 32)) % cfg["period"])
            want.append(value - (1 << 32) if value >> 31 else value)
    assert got.tolist() == want


def test_view_line_geometry():
    for line_bits in LINE_BITS_CHOICES:
        for workers in WORKERS_CHOICES:
            lanes = line_bits // workers
            assert view_beats(line_bits, workers, Operand.SIGNS) * lanes == line_bits // 2
        assert view_beats(line_bits, 8, Operand.COUNTS8) * (line_bits // 32) == line_bits // 2


def test_bad_input():
    src = np.zeros((4, 8), np.uint8)
    with pytest.raises(ValueError, match="G-Binary or G-Ternary"):
        pack_view(src, 8, Mode.IDENTITY)
    with pytest.raises(ValueError, match="no multiple"):
        pack_view(src[:3], 8, Mode.GBINARY)
    with pytest.raises(ValueError, match="index"):
        pack_view(src, 8, Mode.GBINARY, index=-1)
