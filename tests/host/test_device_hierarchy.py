"""The device model with the hierarchy extension (contract section 5): which
CFG values the control port accepts with and without the build feature,
reads of worker-major sign regions and of count regions, and a two-level
hierarchy of device models (8 level-1 controllers of 8 workers, one
level-2 controller) written and forwarded by MemWrPtl, against the
contract's formulas over all 64 workers (``golden.transform_wide``)."""

import asyncio
import itertools

import numpy as np
import pytest

from neuron_fabric.host import golden
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import CfgError, Driver
from neuron_fabric.contract.facts import (PROFILES, Format, GateKind, Layout, Mode, Operand,
                                          ReqOpcode, RwdOpcode, TopParams)
from neuron_fabric.contract.regmap import STATUS_BITS, cfg_decode, cfg_encode

PARAMS = TopParams()                                  # 512-bit lines, W 8
HIERARCHY = PROFILES["full"]
WITHOUT = PROFILES["full"].without("hierarchy")
BAD_CSR = next(f.mask for f in STATUS_BITS if f.name == "bad_csr")
DEFAULT_CFG = 0x010
WM, EM = Layout.WORKER_MAJOR, Layout.ELEMENT_MAJOR


def run(coro):
    return asyncio.run(coro)


def cfg(**fields):
    return cfg_encode(Mode.GBINARY, **fields)


# -- the control port: which CFG values a build accepts ------------------------------

#: (CFG word, accepted by a build with the hierarchy feature), from contract section 5.1.
CFG_CASES = [
    (cfg(layout=WM), True),
    (cfg(operand=Operand.COUNTS4, total=64), True),
    (cfg(operand=Operand.COUNTS4, total=120, threshold=31), True),
    (cfg(operand=Operand.COUNTS8, total=1020, layout=WM), True),
    (cfg(operand=Operand.COUNTS8, total=1), True),
    (cfg(operand=3, total=8), False),                         # operand 3
    (cfg(operand=Operand.COUNTS4, total=0), False),           # total 0 with counts
    (cfg(operand=Operand.COUNTS4, total=121), False),         # past 8 * 15
    (cfg(operand=Operand.COUNTS8, total=1021), False),        # past 4 * 255
    (cfg(operand=Operand.COUNTS8, total=5, threshold=6), False),   # T > total
    (cfg(operand=Operand.SIGNS, total=1), False),             # SIGNS with total != 0
    (cfg(layout=WM, threshold=9), False),                     # SIGNS: T > W
]


@pytest.mark.parametrize("word, accepted", CFG_CASES)
def test_cfg_values_of_the_extension(word, accepted):
    # With the feature (the full profile): as contract section 5.1 says;
    # without it (the paper profile, or the full one less the feature),
    # every one of them is refused, since each has layout or operand != 0.
    for dev, ok in ((Device(PARAMS, profile=HIERARCHY), accepted), (Device(PARAMS), accepted),
                    (Device(PARAMS, profile=WITHOUT), False),
                    (Device(PARAMS, profile=PROFILES["paper"]), False)):
        before = run(dev.read(DEFAULT_CFG))[0]
        assert run(dev.write(DEFAULT_CFG, word)) == ok
        assert run(dev.read(DEFAULT_CFG))[0] == (word if ok else before)
        assert bool(run(dev.read(0x014))[0] & BAD_CSR) == (not ok)


def test_profile_of_the_model_and_the_driver():
    assert PROFILES["full"].has("hierarchy") and not PROFILES["paper"].has("hierarchy")
    assert Device(PARAMS).profile == PROFILES["full"]
    with pytest.raises(TypeError, match="profile"):
        Device(PARAMS, profile="full")
    dev = Device(PARAMS, profile=HIERARCHY)
    # The driver checks against the features it is given, before the bus.
    with pytest.raises(CfgError, match="hierarchy"):
        Driver(dev, PARAMS, profile=WITHOUT).cfg_value(Mode.GBINARY, layout=WM)
    with pytest.raises(CfgError, match="operand"):
        Driver(dev, PARAMS, profile=HIERARCHY).cfg_value(Mode.GBINARY, operand=3, total=8)
    value = Driver(dev, PARAMS, profile=HIERARCHY).cfg_value(
        Mode.GTERNARY, operand=Operand.COUNTS8, total=300, threshold=17)
    assert {k: cfg_decode(value)[k] for k in ("operand", "total", "threshold", "layout")} == \
        {"operand": 2, "total": 300, "threshold": 17, "layout": 0}


# -- reads of the extension's regions ------------------------------------------------

def hierarchy_device(params=PARAMS):
    dev = Device(params, profile=HIERARCHY)
    return dev, Driver(dev, params, profile=HIERARCHY)


def mem_wr_ptl(dev, line, data, first_byte, n_bytes):
    """One MemWrPtl of ``n_bytes`` bytes from ``first_byte`` of a line; the
    rest of ``data`` is whatever the writer has there (here: zeros)."""
    lb = dev.params.line_bytes
    row = np.zeros(lb, dtype=np.uint8)
    row[first_byte:first_byte + n_bytes] = data
    be = ((1 << n_bytes) - 1) << first_byte
    resp = dev.m2s_rwd(RwdOpcode.MEM_WR_PTL, line * lb, tag=line & 0xFFFF, data=row.tobytes(),
                       be=be)
    assert resp.channel == "ndr"


def read_line(dev, line):
    resp = dev.m2s_req(ReqOpcode.MEM_RD, line * dev.params.line_bytes, tag=1)
    assert resp.channel == "drs" and not resp.poison
    return np.frombuffer(resp.data, dtype=np.uint8)


@pytest.mark.parametrize("workers", [4, 8, 16])
def test_worker_major_region_reads_as_element_major(workers):
    """Each worker writes its own segment (E / 8 bytes) with one MemWrPtl per
    line; the read through G-Binary / G-Ternary equals section 2's transform
    of the element-major lines of the same signs (from encode_signs);
    IDENTITY returns the stored worker-major bytes."""
    params = TopParams(workers=workers)
    dev, drv = hierarchy_device(params)
    rng = np.random.default_rng(workers)
    lanes, lb = params.lanes, params.line_bytes
    n_lines, base_line = 5, 3
    grads = rng.standard_normal((workers, n_lines * lanes)).astype(np.float32)
    seg = lanes // 8
    for line in range(n_lines):
        for k in range(workers):
            signs = grads[k, line * lanes:(line + 1) * lanes] > 0
            mem_wr_ptl(dev, base_line + line, np.packbits(signs, bitorder="little"), k * seg, seg)
    em = golden.encode_signs(grads, params.line_bits)
    for mode, fmt, kind in itertools.product((Mode.GBINARY, Mode.GTERNARY), Format, GateKind):
        run(drv.set_region(1, base=base_line * lb, limit=(base_line + n_lines) * lb, mode=mode,
                           format=fmt, gate_kind=kind, period=5, keep=3, threshold=workers // 2,
                           layout=WM))
        got = np.stack([read_line(dev, base_line + line) for line in range(n_lines)])
        want = golden.transform(em, workers, mode, fmt, kind, 5, 3, workers // 2,
                                phase=golden.line_phase(np.arange(n_lines), lanes, 5))
        assert np.array_equal(got, want), (mode, fmt, kind)
    run(drv.set_region(1, base=base_line * lb, limit=(base_line + n_lines) * lb,
                       mode=Mode.IDENTITY, layout=WM))
    assert np.array_equal(run(dev.read_lines(base_line * lb, n_lines)),
                          golden.to_worker_major(em, workers))


@pytest.mark.parametrize("operand", [Operand.COUNTS4, Operand.COUNTS8])
@pytest.mark.parametrize("layout", list(Layout))
def test_count_region_reads_by_the_one_element_reference(operand, layout):
    """A count region from line 4: element j of region line l gets the
    PATTERN gate of phase (l * 16) mod P; every element against
    transform_count_lane (plain integers)."""
    dev, drv = hierarchy_device()
    rng = np.random.default_rng(int(operand) + 2 * layout)
    bits, contributors = {Operand.COUNTS4: (4, 8), Operand.COUNTS8: (8, 4)}[operand]
    lb, e_c, first, n_lines, total = 64, 16, 4, 6, 100
    counts = rng.integers(0, min(1 << bits, total // contributors + 1), (contributors, n_lines * e_c))
    run(dev.write_lines(first * lb, golden.encode_counts(counts, 512, operand, layout)))
    lanes = [sum(int(counts[k, i]) << (k * bits) for k in range(contributors))
             for i in range(n_lines * e_c)]
    for mode, fmt, kind in itertools.product(Mode, Format, GateKind):
        run(drv.set_region(2, base=first * lb, limit=(first + n_lines) * lb, mode=mode,
                           format=fmt, gate_kind=kind, period=7, keep=4, threshold=19,
                           layout=layout, operand=operand, total=total))
        got = run(dev.read_lines(first * lb, n_lines)).view("<u4").reshape(-1)
        for i in range(0, n_lines * e_c, 3):
            line, j = divmod(i, e_c)
            if mode in (Mode.BYPASS, Mode.IDENTITY):
                stored = dev.peek((first + line) * lb, 1).view("<u4").reshape(-1)[j]
                assert got[i] == stored
                continue
            want = golden.transform_count_lane(lanes[i], j, operand, total, mode, fmt, kind, 7,
                                               4, 19, phase=(line * e_c) % 7)
            assert got[i] == want, (mode, fmt, kind, i)


# -- two levels of device models -----------------------------------------------------

GROUPS, W, N_LINES1 = 8, 8, 3                          # 8 x 8 workers, 3 level-1 lines each
E1, E_C = 64, 16                                      # elements per level-1 / level-2 line


def test_two_level_hierarchy_of_device_models():
    rng = np.random.default_rng(2026)
    n = N_LINES1 * E1                                  # 192 elements: 12 level-2 lines
    grads = rng.standard_normal((GROUPS * W, n)).astype(np.float32)
    grads -= 0.8 * rng.standard_normal(n).astype(np.float32)
    grads[:, 0], grads[:, 1] = 1.0, -1.0               # c = 64 and c = 0
    grads[::2, 2], grads[1::2, 2] = 1.0, -1.0          # c = 32
    signs = grads > 0
    lb = PARAMS.line_bytes
    base1, base2 = 0x1000, 0x8000                      # byte addresses of the two regions

    level2, drv2 = hierarchy_device()
    level1 = []
    for g in range(GROUPS):
        dev, drv = hierarchy_device()
        run(drv.set_region(0, base=base1, limit=base1 + N_LINES1 * lb, mode=Mode.GBINARY,
                           format=Format.COUNT, layout=WM))
        level1.append(dev)
        # Worker k of group g writes its 8 bytes (64 signs) of each line.
        for line in range(N_LINES1):
            for k in range(W):
                own = signs[g * W + k, line * E1:(line + 1) * E1]
                mem_wr_ptl(dev, base1 // lb + line, np.packbits(own, bitorder="little"), 8 * k, 8)
        assert run(Driver(dev, PARAMS).counter(4)) == N_LINES1 * W        # writes

    # Level-1 reads: counts 0..8 in 8-bit lanes; forward the low 4 bits as
    # contributor g: 16 counts = 8 bytes of each level-2 line, bytes 8g..8g+7.
    n_lines2 = n // E_C
    for g, dev in enumerate(level1):
        counts = np.concatenate([read_line(dev, base1 // lb + line) for line in range(N_LINES1)])
        assert counts.tolist() == signs[g * W:(g + 1) * W].sum(axis=0).tolist()
        nibbles = counts & 0x0F
        for line in range(n_lines2):
            part = nibbles[line * E_C:(line + 1) * E_C]
            mem_wr_ptl(level2, base2 // lb + line, part[0::2] | (part[1::2] << 4), 8 * g, 8)
    assert run(Driver(level2, PARAMS).counter(4)) == n_lines2 * GROUPS

    for mode, fmt, kind in itertools.product((Mode.GBINARY, Mode.GTERNARY), Format, GateKind):
        for p, k, t in [(3, 2, 0), (7, 3, 9), (4, 1, 31)]:
            run(drv2.set_region(0, base=base2, limit=base2 + n_lines2 * lb, mode=mode,
                                format=fmt, gate_kind=kind, period=p, keep=k, threshold=t,
                                layout=WM, operand=Operand.COUNTS4, total=64))
            got = np.stack([read_line(level2, base2 // lb + line) for line in range(n_lines2)])
            want = golden.transform_wide(signs, mode, fmt, kind, p, k, t,
                                         golden.line_phase(np.arange(n_lines2), E_C, p))
            assert np.array_equal(got, want), (mode, fmt, kind, p, k, t)


def test_partial_bulk_write_is_memwrptl_per_line():
    dev = Device(PARAMS)
    lines = np.full((3, 64), 0xAB, dtype=np.uint8)
    enables = np.zeros(64, dtype=bool)
    enables[8:16] = True
    run(dev.write_lines(0, np.full((3, 64), 0x11, dtype=np.uint8)))
    run(dev.write_lines_partial(0, lines, enables))
    stored = dev.peek(0, 3)
    assert (stored[:, 8:16] == 0xAB).all() and (stored[:, :8] == 0x11).all() \
        and (stored[:, 16:] == 0x11).all()
    assert run(Driver(dev, PARAMS).counter(4)) == 6
    per_line = np.zeros((3, 64), dtype=bool)
    per_line[1, 0] = True
    run(dev.write_lines_partial(0, np.zeros((3, 64), np.uint8), per_line))
    assert dev.peek(0, 3)[1, 0] == 0 and dev.peek(0, 3)[0, 0] == 0x11
    with pytest.raises(ValueError, match="enables"):
        run(dev.write_lines_partial(0, lines, np.ones(63, dtype=bool)))
    with pytest.raises(ValueError, match="enables"):
        run(dev.write_lines_partial(0, lines, np.ones(64, dtype=np.uint8)))
