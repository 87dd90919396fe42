"""Limits and definitions of contract section 5, against the register map's
check and the golden model, each worked by hand:

- T is the 5-bit field of every CFG word: 31 at most, whatever total is
  (5.1);
- worker-major signs with E < 8: two workers share a byte (5.2);
- the two levels of 5.4: level-1 controller k, workers 8k .. 8k+7, is the
  level-2 region's contributor k.
"""

import numpy as np
import pytest

from neuron_fabric.contract.facts import Format, GateKind, Layout, Mode, Operand
from neuron_fabric.contract.regmap import CfgError, cfg_check, cfg_decode, cfg_encode
from neuron_fabric.host import golden

HIERARCHY = ("hierarchy",)


def test_threshold_is_five_bits_whatever_the_total():
    """T = 31 is accepted with total 64 (and 1020); 32 does not fit the
    field, and the bit above T is total's lowest."""
    for operand, total in ((Operand.COUNTS4, 64), (Operand.COUNTS8, 1020)):
        word = cfg_encode(Mode.GTERNARY, gate_kind=GateKind.MARGIN, threshold=31,
                          operand=operand, total=total)
        assert cfg_check(word, 8, HIERARCHY) is None
    with pytest.raises(CfgError, match="threshold"):
        cfg_encode(Mode.GTERNARY, threshold=32, operand=Operand.COUNTS4, total=64)
    word = cfg_encode(Mode.GTERNARY, operand=Operand.COUNTS4, total=64) + (32 << 16)
    assert (cfg_decode(word)["threshold"], cfg_decode(word)["total"]) == (0, 65)


def test_threshold_31_over_64_contributions_keeps_abs_a_at_least_32():
    """total 64: a = 2c - 64 is even, so |a| >= 31 is |a| >= 32; elements
    with c = 48, 47, 16, 17 (a = 32, 30, -32, -30) are kept, gated
    (c' = 32), kept, gated."""
    # row k: contributor k's counts of the four elements
    counts = np.array([[15, 15, 15, 15], [15, 15, 1, 2], [15, 15, 0, 0], [3, 2, 0, 0]])
    lines = golden.encode_counts(counts, 512, Operand.COUNTS4)
    out = golden.transform_counts(lines, Operand.COUNTS4, 64, Mode.GTERNARY, Format.COUNT,
                                  GateKind.MARGIN, threshold=31)
    assert list(golden.decode_counts(out, Format.COUNT, 4)) == [48, 32, 16, 32]
    out = golden.transform_counts(lines, Operand.COUNTS4, 64, Mode.GTERNARY, Format.MARGIN,
                                  GateKind.MARGIN, threshold=31)
    assert list(golden.decode_counts(out, Format.MARGIN, 4)) == [32, 0, -32, 0]


def test_worker_major_with_four_lanes_shares_bytes():
    """64 bits, W 16: E = 4, worker k owns line bits [4k, 4k + 4), so byte i
    holds workers 2i (low nibble) and 2i + 1 (high nibble): no byte is one
    worker's alone.  The layout reads as element-major all the same."""
    assert cfg_check(cfg_encode(Mode.GBINARY, layout=Layout.WORKER_MAJOR), 16, HIERARCHY) is None
    grads = -np.ones((16, 4))
    grads[5, 2] = 1.0                    # worker 5, element 2: line bit 4*5 + 2 = 22
    line = golden.lines_to_ints(golden.encode_signs(grads, 64, Layout.WORKER_MAJOR))[0]
    assert line == 1 << 22               # byte 2, high nibble (byte 2 = workers 4 and 5)
    grads[4, 0] = 1.0                    # worker 4, element 0: bit 16, the same byte
    line = golden.lines_to_ints(golden.encode_signs(grads, 64, Layout.WORKER_MAJOR))[0]
    assert line == 1 << 22 | 1 << 16
    rng = np.random.default_rng(4)
    grads = rng.standard_normal((16, 4 * 5))
    wm = golden.encode_signs(grads, 64, Layout.WORKER_MAJOR)
    em = golden.encode_signs(grads, 64)
    for mode in (Mode.GBINARY, Mode.GTERNARY):
        for fmt in Format:
            assert np.array_equal(
                golden.transform(wm, 16, mode, fmt, GateKind.MARGIN, threshold=6,
                                 layout=Layout.WORKER_MAJOR),
                golden.transform(em, 16, mode, fmt, GateKind.MARGIN, threshold=6))


@pytest.mark.parametrize("layout", list(Layout))
def test_two_levels_contributor_k_is_controller_k(layout):
    """Contract 5.4 by hand, 512-bit lines, element 0: controller k (workers
    8k .. 8k+7) sees k + 1 positive signs (controller 7: 8), so its count
    is k + 1; as contributor k its 4 bits sit at [4k, 4k + 4) of count lane
    0 (element-major) or at the start of bits [64k, 64k + 64)
    (worker-major).  The level-2 read gives c = 1 + 2 + ... + 8 = 36 of the
    64 signs, a = 2 * 36 - 64 = 8."""
    grads = -np.ones((64, 1))
    for k in range(8):
        grads[8 * k:8 * k + k + 1, 0] = 1.0
    counts = []
    for k in range(8):
        lines = golden.encode_signs(grads[8 * k:8 * k + 8], 512, layout)
        read = golden.transform(lines, 8, Mode.GBINARY, Format.COUNT, layout=layout)
        counts.append(int(read[0, 0]) & 0x0F)      # 8-bit lanes: element 0 is byte 0
    assert counts == [1, 2, 3, 4, 5, 6, 7, 8]
    level2 = golden.encode_counts(np.array(counts)[:, None], 512, Operand.COUNTS4, layout)
    value = golden.lines_to_ints(level2)[0]
    if layout == Layout.ELEMENT_MAJOR:
        assert value == 0x8765_4321
    else:
        assert value == sum((k + 1) << 64 * k for k in range(8))
    for fmt, want in ((Format.COUNT, 36), (Format.MARGIN, 8), (Format.SIGN, 1)):
        out = golden.transform_counts(level2, Operand.COUNTS4, 64, Mode.GBINARY, fmt,
                                      layout=layout)
        assert golden.decode_counts(out, fmt, 1)[0] == want
