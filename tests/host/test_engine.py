"""The aggregation engine's decoding against the golden model's decode, and
its direction worked by hand (host/runtime/engine.py)."""

import numpy as np
import pytest

from neuron_fabric.contract.facts import Format, Layout, Operand
from neuron_fabric.host import golden
from neuron_fabric.host.runtime import engine


@pytest.mark.parametrize("workers", [4, 8, 16])
@pytest.mark.parametrize("fmt", list(Format))
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_sign_lanes_decode_as_golden_decode(workers, fmt, dtype):
    rng = np.random.default_rng(1)
    lines = rng.integers(0, 256, (5, 64), dtype=np.uint8)
    n = 5 * 512 // workers - 3
    got = engine.decode_lanes(lines, workers, fmt, n, dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, golden.decode(lines, workers, fmt, n))


@pytest.mark.parametrize("operand", [Operand.COUNTS4, Operand.COUNTS8])
@pytest.mark.parametrize("fmt", list(Format))
def test_count_lanes_decode_as_golden_decode_counts(operand, fmt):
    rng = np.random.default_rng(2)
    counts = rng.integers(0, 9, (4, 48))
    lines = golden.encode_counts(counts, 512, operand, Layout.WORKER_MAJOR)
    resp = golden.transform_counts(lines, operand, 32, 2, fmt, layout=Layout.WORKER_MAJOR)
    np.testing.assert_array_equal(engine.decode_lanes(resp, 32, fmt, 48),
                                  golden.decode_counts(resp, fmt, 48))


def test_direction_by_hand():
    """6 voters, one positive vote from a spare slot: COUNT c' = 4 is 3 of
    the workers' 6 positive, a tie, direction 0; c' = 7 (all 6) is 1."""
    c = np.array([1, 4, 7], np.float32)
    np.testing.assert_array_equal(engine.direction(c.copy(), Format.COUNT, 6, 1), [-1, 0, 1])
    np.testing.assert_array_equal(engine.direction(np.array([-6, 2]), Format.MARGIN, 6),
                                  np.array([-1, 1 / 3], np.float32))
    np.testing.assert_array_equal(engine.direction(np.array([-1, 0, 1]), Format.SIGN, 6),
                                  [-1, 0, 1])


def test_piece_window_by_hand():
    """Elements 256..299 of a window of 8-element lines of 64 bytes from 0x1000:
    lines 32..37, at 0x1000 + 32 * 64."""
    from neuron_fabric.host.runtime import GroupWindow
    piece = GroupWindow("g", 1000, 0x1000, 125, 64).piece(256, 44, 8)
    assert (piece.base, piece.lines, piece.limit) == (0x1000 + 32 * 64, 6, 0x1000 + 38 * 64)
