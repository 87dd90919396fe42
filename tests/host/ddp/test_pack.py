"""The hook's torch packing against the golden model (one process)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the DDP hook needs torch (pip install -e '.[torch]')")

from neuron_fabric.host import golden  # noqa: E402
from neuron_fabric.host.ddp.pack import pack_counts, pack_signs  # noqa: E402
from neuron_fabric.contract.facts import Layout, Operand  # noqa: E402


@pytest.mark.parametrize("workers", [4, 8, 16])
@pytest.mark.parametrize("line_bits", [512, 1024])
def test_segment_is_the_golden_worker_major_segment(workers, line_bits):
    rng = np.random.default_rng(workers)
    n = 3 * line_bits // workers + 5            # a partial last line
    g = rng.standard_normal((workers, n)).astype(np.float32)
    g[:, ::7] = 0.0
    g[0, 1] = -0.0
    lines = golden.encode_signs(g, line_bits, Layout.WORKER_MAJOR)
    seg = line_bits // workers // 8
    for k in range(workers):
        mine = pack_signs(torch.from_numpy(g[k]), len(lines) * line_bits // workers)
        np.testing.assert_array_equal(mine.reshape(len(lines), seg),
                                      lines[:, k * seg:(k + 1) * seg])


@pytest.mark.parametrize("operand", [Operand.COUNTS4, Operand.COUNTS8])
def test_count_segment_is_golden_encode_counts(operand):
    bits = 4 if operand == Operand.COUNTS4 else 8
    rng = np.random.default_rng(2)
    counts = rng.integers(0, 9, 48)
    lines = golden.encode_counts(counts[None], 512, operand, Layout.WORKER_MAJOR)
    seg = 64 * bits // 32
    np.testing.assert_array_equal(pack_counts(counts, bits).reshape(len(lines), seg),
                                  lines[:, :seg])
