"""Golden model of the hierarchy extension (contract section 5): worker-major
sign lines, 4- and 8-bit partial-count operands, and the two-level hierarchy
against the contract's formulas over all of its workers.

The oracles are independent of the vectorised code: hand-worked lines,
plain-integer references written here from the formulas (bit positions,
sums, gates), the section 2 reference ``transform_lane``, and
``transform_count_lane`` (plain integers, one element at a time)."""

import itertools

import numpy as np
import pytest

from neuron_fabric.host import golden
from neuron_fabric.contract.facts import Format, GateKind, Layout, Mode, Operand

WM, EM = Layout.WORKER_MAJOR, Layout.ELEMENT_MAJOR
LOW_BIT_MODES = (Mode.GBINARY, Mode.GTERNARY)


def line_int(lines, row=0):
    return golden.lines_to_ints(lines[row:row + 1])[0]


def bit(value, n):
    return (value >> n) & 1


def field(value, lsb, width):
    return (value >> lsb) & ((1 << width) - 1)


def as_signed32(value):
    return value - (1 << 32) if value >= 1 << 31 else value


def sign_extend(value, width):
    """A ``width``-bit two's complement value as a 32-bit one."""
    value -= (1 << width) if value >= 1 << (width - 1) else 0
    return value & 0xFFFF_FFFF


def random_counts_lines(rng, n_lines, line_bits, operand, total):
    """Lines of random partial counts whose sums never exceed ``total``."""
    bits, contributors = {Operand.COUNTS4: (4, 8), Operand.COUNTS8: (8, 4)}[operand]
    top = min((1 << bits) - 1, total // contributors)
    counts = rng.integers(0, top + 1, (contributors, n_lines * line_bits // 32))
    return golden.encode_counts(counts, line_bits, operand, EM)


# -- hand-worked lines ---------------------------------------------------------

def test_worker_major_signs_by_hand():
    # 64-bit line, W = 8, E = 8: worker k's signs are byte k.  Worker 0 is
    # positive everywhere (0xFF), worker 2 on elements 0..3 (0x0F), the rest
    # nowhere.  Element-major lane j is byte j, bit k = worker k: elements
    # 0..3 have workers 0 and 2 (0x05), elements 4..7 worker 0 only (0x01).
    wm = np.array([[0xFF, 0x00, 0x0F, 0, 0, 0, 0, 0]], dtype=np.uint8)
    em = np.array([[0x05, 0x05, 0x05, 0x05, 0x01, 0x01, 0x01, 0x01]], dtype=np.uint8)
    assert golden.to_element_major(wm, 8).tolist() == em.tolist()
    assert golden.to_worker_major(em, 8).tolist() == wm.tolist()
    counts = golden.transform(wm, 8, Mode.GBINARY, Format.COUNT, layout=WM)
    assert counts.tolist() == [[2, 2, 2, 2, 1, 1, 1, 1]]
    # BYPASS and IDENTITY return the stored (worker-major) bytes.
    for mode in (Mode.BYPASS, Mode.IDENTITY):
        assert golden.transform(wm, 8, mode, layout=WM).tolist() == wm.tolist()


def test_counts4_line_by_hand():
    # 64-bit line, COUNTS4: N = 8 contributors, E_c = 2 elements.  Element 0:
    # every contributor counts 8 (c = 64); element 1: 8, 8, 8, 6 and four
    # zeros (c = 30).  total = 64: a = 64 and -4.
    em = np.array([[0x88, 0x88, 0x88, 0x88, 0x88, 0x68, 0x00, 0x00]], dtype=np.uint8)
    # Worker-major: contributor k is byte k, element 0 low nibble, element 1 high.
    wm = np.array([[0x88, 0x88, 0x88, 0x68, 0x08, 0x08, 0x08, 0x08]], dtype=np.uint8)
    expect = {
        (Format.COUNT, None): [64, 0, 0, 0, 30, 0, 0, 0],
        (Format.MARGIN, None): [64, 0, 0, 0, 0xFC, 0xFF, 0xFF, 0xFF],          # -4
        (Format.SIGN, None): [1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF],            # -1
        # MARGIN gate T = 5: |-4| < 5 gates element 1: c' = 32, a' = 0.
        (Format.COUNT, 5): [64, 0, 0, 0, 32, 0, 0, 0],
        (Format.MARGIN, 5): [64, 0, 0, 0, 0, 0, 0, 0],
        (Format.SIGN, 4): [1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF],               # |-4| >= 4: kept
    }
    for layout, line in ((EM, em), (WM, wm)):
        for (fmt, t), out in expect.items():
            mode, kind = (Mode.GBINARY, GateKind.PATTERN) if t is None else \
                (Mode.GTERNARY, GateKind.MARGIN)
            got = golden.transform_counts(line, Operand.COUNTS4, 64, mode, fmt, kind,
                                          threshold=t or 0, layout=layout)
            assert got.tolist() == [out], (layout, fmt, t)
        assert golden.transform_counts(line, Operand.COUNTS4, 64, Mode.IDENTITY,
                                       layout=layout).tolist() == line.tolist()
    assert golden.encode_counts([[8, 8], [8, 8], [8, 8], [8, 6]] + [[8, 0]] * 4, 64,
                                Operand.COUNTS4, EM).tolist() == em.tolist()
    assert golden.encode_counts([[8, 8], [8, 8], [8, 8], [8, 6]] + [[8, 0]] * 4, 64,
                                Operand.COUNTS4, WM).tolist() == wm.tolist()


def test_counts8_line_by_hand():
    # 64-bit line, COUNTS8: N = 4, E_c = 2.  Element 0: 255 from each of the
    # four (c = 1020 = 0x3FC, the largest total); element 1: 1, 2, 0, 0.
    em = np.array([[255, 255, 255, 255, 1, 2, 0, 0]], dtype=np.uint8)
    wm = np.array([[255, 1, 255, 2, 255, 0, 255, 0]], dtype=np.uint8)
    for layout, line in ((EM, em), (WM, wm)):
        out = golden.transform_counts(line, Operand.COUNTS8, 1020, Mode.GBINARY, Format.COUNT,
                                      layout=layout)
        assert out.tolist() == [[0xFC, 0x03, 0, 0, 3, 0, 0, 0]]
        # a = 2 * 3 - 1020 = -1014 = 0xFFFFFC0A
        out = golden.transform_counts(line, Operand.COUNTS8, 1020, Mode.GBINARY, Format.MARGIN,
                                      layout=layout)
        assert out.tolist() == [[0xFC, 0x03, 0, 0, 0x0A, 0xFC, 0xFF, 0xFF]]
        assert golden.decode_counts(out, Format.MARGIN).tolist() == [1020, -1014]


def test_counts_pattern_gate_by_hand():
    # 512-bit line, COUNTS4, E_c = 16, P = 3, K = 2.  Region line 1 has
    # phase (1 * 16) mod 3 = 1: element j is kept iff (1 + j) mod 3 < 2, so
    # elements 1, 4, 7, 10, 13 are gated.  Every element counts 3 of total 4.
    line = golden.encode_counts(np.full((1, 16), 3), 512, Operand.COUNTS4)
    phase = golden.line_phase(1, 16, 3)
    assert phase == 1
    out = golden.transform_counts(line, Operand.COUNTS4, 4, Mode.GTERNARY, Format.COUNT,
                                  GateKind.PATTERN, 3, 2, phase=phase)
    gated = {1, 4, 7, 10, 13}
    assert golden.decode_counts(out, Format.COUNT).tolist() == \
        [2 if j in gated else 3 for j in range(16)]


def test_decode_counts_by_hand():
    line = np.array([[7, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]], dtype=np.uint8)
    assert golden.decode_counts(line, Format.COUNT, 1).tolist() == [7]
    assert golden.decode_counts(line, Format.SIGN).tolist() == [7, -1]
    assert golden.decode_counts(line, Format.SIGN).dtype == np.int32


# -- the permutation -------------------------------------------------------------

@pytest.mark.parametrize("workers, line_bits",
                         list(itertools.product([4, 8, 16], [64, 128, 512, 1024])))
def test_permutation_moves_each_bit_by_the_formula(workers, line_bits):
    """Worker-major bit k*E + j is element-major bit j*W + k; the two
    functions are each other's inverse; neither modifies its input."""
    rng = np.random.default_rng(workers * line_bits)
    lanes = line_bits // workers
    em = rng.integers(0, 256, (3, line_bits // 8), dtype=np.uint8)
    keep = em.copy()
    wm = golden.to_worker_major(em, workers)
    assert np.array_equal(em, keep)
    for row in range(3):
        e, w = line_int(em, row), line_int(wm, row)
        for k in range(workers):
            for j in range(lanes):
                assert bit(w, k * lanes + j) == bit(e, j * workers + k)
    assert np.array_equal(golden.to_element_major(wm, workers), em)
    assert np.array_equal(golden.to_worker_major(golden.to_element_major(em, workers), workers),
                          em)


def test_permutation_across_chunks():
    rng = np.random.default_rng(3)
    em = rng.integers(0, 256, (golden.CHUNK_LINES + 5, 64), dtype=np.uint8)
    wm = golden.to_worker_major(em, 8)
    assert np.array_equal(golden.to_element_major(wm, 8), em)
    last = line_int(wm, len(wm) - 1), line_int(em, len(em) - 1)
    assert all(bit(last[0], k * 64 + j) == bit(last[1], j * 8 + k)
               for k in range(8) for j in range(64))


@pytest.mark.parametrize("workers, line_bits",
                         list(itertools.product([4, 8, 16], [64, 512])))
def test_encode_signs_worker_major(workers, line_bits):
    """Worker k's sign of element i sits at bit k*E + (i mod E) of line i // E;
    past N the bits are 0."""
    rng = np.random.default_rng(11 * workers + line_bits)
    lanes = line_bits // workers
    n = 2 * lanes + 3
    grads = rng.standard_normal((workers, n)).astype(np.float32)
    grads[:, ::5] = 0.0
    lines = golden.encode_signs(grads, line_bits, WM)
    assert lines.shape == (3, line_bits // 8)
    for row in range(3):
        value = line_int(lines, row)
        for k in range(workers):
            for j in range(lanes):
                i = row * lanes + j
                assert bit(value, k * lanes + j) == (int(grads[k, i] > 0) if i < n else 0)
    assert np.array_equal(golden.to_element_major(lines, workers),
                          golden.encode_signs(grads, line_bits))


# -- a worker-major read is the element-major read of the same signs ---------------

@pytest.mark.parametrize("workers, line_bits", [(4, 256), (8, 512), (16, 256), (16, 64)])
def test_worker_major_read_equals_element_major_read(workers, line_bits):
    rng = np.random.default_rng(workers + line_bits)
    lanes = line_bits // workers
    em = rng.integers(0, 256, (6, line_bits // 8), dtype=np.uint8)
    wm = golden.to_worker_major(em, workers)
    phases = rng.integers(0, 5, 6)
    masks = rng.random((6, lanes)) < 0.5
    for mode, fmt, kind in itertools.product(LOW_BIT_MODES, Format, GateKind):
        for extra in (dict(period=5, keep=3, phase=phases), dict(gate_mask=masks)):
            args = (mode, fmt, kind)
            out = golden.transform(wm, workers, *args, threshold=workers // 2, layout=WM,
                                   **extra)
            # Against section 2's one-lane reference on the element-major lanes.
            for row in range(6):
                value, got = line_int(em, row), line_int(out, row)
                for i in range(lanes):
                    lane = field(value, i * workers, workers)
                    kw = dict(gate_mask=masks[row]) if "gate_mask" in extra else \
                        dict(period=5, keep=3, phase=int(phases[row]))
                    expect = golden.transform_lane(lane, i, workers, mode, fmt, kind,
                                                   threshold=workers // 2, **kw)
                    assert field(got, i * workers, workers) == expect, (args, row, i)
    for mode in (Mode.BYPASS, Mode.IDENTITY):
        assert np.array_equal(golden.transform(wm, workers, mode, layout=WM), wm)


# -- count operands against the one-element reference --------------------------------

def count_lane_of(value, operand, layout, line_bits, j):
    """Element j's 32-bit count lane from a line (as an int), by section 5's bit positions."""
    bits, contributors = {Operand.COUNTS4: (4, 8), Operand.COUNTS8: (8, 4)}[operand]
    if layout == EM:
        return field(value, 32 * j, 32)
    segment = line_bits // contributors
    return sum(field(value, k * segment + j * bits, bits) << (k * bits)
               for k in range(contributors))


COUNT_CONFIGS = [(mode, fmt, kind, p, k, t)
                 for mode in Mode for fmt in Format for kind in GateKind
                 for (p, k, t) in [(3, 2, 0), (1, 0, 1), (5, 3, 7), (15, 15, 31), (7, 4, 20)]]


@pytest.mark.parametrize("operand, total", [(Operand.COUNTS4, 64), (Operand.COUNTS4, 120),
                                            (Operand.COUNTS4, 31), (Operand.COUNTS8, 1020),
                                            (Operand.COUNTS8, 40)])
@pytest.mark.parametrize("layout", list(Layout))
def test_transform_counts_matches_the_count_lane_reference(operand, total, layout):
    rng = np.random.default_rng(int(operand) * 1000 + total + 7 * layout)
    line_bits = 256
    lanes = line_bits // 32
    bits, contributors = {Operand.COUNTS4: (4, 8), Operand.COUNTS8: (8, 4)}[operand]
    # Any field values the counts may take (sums may exceed total: the
    # formula still applies), including the largest.
    lines = rng.integers(0, 256, (4, line_bits // 8), dtype=np.uint8)
    lines[0] = 0xFF
    masks = rng.random((4, lanes)) < 0.5
    for mode, fmt, kind, p, k, t in COUNT_CONFIGS:
        t = min(t, total)
        phases = rng.integers(0, p, 4)
        for use_mask in (False, True):
            extra = dict(gate_mask=masks) if use_mask else dict(phase=phases)
            out = golden.transform_counts(lines, operand, total, mode, fmt, kind, p, k, t,
                                          layout=layout, **extra)
            for row in range(4):
                value, got = line_int(lines, row), line_int(out, row)
                for j in range(lanes):
                    kw = dict(gate_mask=masks[row]) if use_mask else dict(phase=int(phases[row]))
                    if mode in (Mode.BYPASS, Mode.IDENTITY):
                        expect = field(value, 32 * j, 32)
                    else:
                        lane = count_lane_of(value, operand, layout, line_bits, j)
                        expect = golden.transform_count_lane(lane, j, operand, total, mode, fmt,
                                                             kind, p, k, t, **kw)
                    assert field(got, 32 * j, 32) == expect, (mode, fmt, kind, p, k, t, row, j)


def test_count_lane_reference_by_hand():
    # COUNTS8 lane with counts 10, 20, 30, 40 (c = 100) of total 150: a = 50.
    lane = 10 | 20 << 8 | 30 << 16 | 40 << 24
    assert golden.transform_count_lane(lane, 0, Operand.COUNTS8, 150, Mode.GBINARY) == 100
    assert golden.transform_count_lane(lane, 0, Operand.COUNTS8, 150, Mode.GBINARY,
                                       Format.MARGIN) == 50
    assert golden.transform_count_lane(lane, 0, Operand.COUNTS8, 250, Mode.GBINARY,
                                       Format.MARGIN) == (-50) & 0xFFFF_FFFF
    # PATTERN gate, P = 3, K = 2, phase 0: lane 2 is gated, c' = floor(151 / 2).
    assert golden.transform_count_lane(lane, 2, Operand.COUNTS8, 151, Mode.GTERNARY) == 75
    assert golden.transform_count_lane(lane, 1, Operand.COUNTS8, 151, Mode.GTERNARY) == 100
    assert golden.transform_count_lane(lane, 0, Operand.COUNTS8, 150, Mode.IDENTITY) == lane


@pytest.mark.parametrize("operand", [Operand.COUNTS4, Operand.COUNTS8])
@pytest.mark.parametrize("layout", list(Layout))
@pytest.mark.parametrize("line_bits", [64, 512])
def test_encode_counts_places_each_count(operand, layout, line_bits):
    rng = np.random.default_rng(int(operand) + line_bits + 3 * layout)
    bits, contributors = {Operand.COUNTS4: (4, 8), Operand.COUNTS8: (8, 4)}[operand]
    lanes = line_bits // 32
    n = 2 * lanes + 1
    used = contributors - 1
    counts = rng.integers(0, 1 << bits, (used, n))
    lines = golden.encode_counts(counts, line_bits, operand, layout)
    assert lines.shape == (3, line_bits // 8)
    segment = line_bits // contributors
    for row in range(3):
        value = line_int(lines, row)
        for j in range(lanes):
            i = row * lanes + j
            for k in range(contributors):
                lsb = 32 * j + k * bits if layout == EM else k * segment + j * bits
                want = int(counts[k, i]) if k < used and i < n else 0
                assert field(value, lsb, bits) == want, (row, j, k)


# -- one contributor holding a W-worker count is contract section 2 ------------------

# (A 4-bit count holds 0..15, so COUNTS4 carries W 4 and 8 only.)
@pytest.mark.parametrize("workers, operand", [(4, Operand.COUNTS4), (8, Operand.COUNTS4),
                                              (4, Operand.COUNTS8), (8, Operand.COUNTS8),
                                              (16, Operand.COUNTS8)])
def test_one_contributor_with_total_w_is_section_2(workers, operand):
    """Element i's only contributor holds the W-worker count c of sign lane i;
    total = W: the output lane is section 2's (W bits, sign-extended to 32)."""
    rng = np.random.default_rng(workers + 100 * operand)
    line_bits = 512
    n = 3 * (line_bits // workers)
    sign_lines = rng.integers(0, 256, (3, line_bits // 8), dtype=np.uint8)
    lanes_in = [field(line_int(sign_lines, r), i * workers, workers)
                for r in range(3) for i in range(line_bits // workers)]
    c = np.array([bin(v).count("1") for v in lanes_in])
    count_lines = golden.encode_counts(c[None], line_bits, operand, WM)
    e_c = line_bits // 32
    for mode, fmt, kind, p, k, t in COUNT_CONFIGS:
        if mode not in LOW_BIT_MODES:
            continue
        t = min(t, workers)
        # The element index alone fixes the PATTERN gate: phases from each
        # geometry's line index give the same gate for element i.
        out = golden.transform_counts(count_lines, operand, workers, mode, fmt, kind, p, k, t,
                                      phase=golden.line_phase(np.arange(len(count_lines)),
                                                              e_c, p), layout=WM)
        got = golden.decode_counts(out, Format.COUNT, n).astype(np.int64) & 0xFFFF_FFFF
        lanes = line_bits // workers
        for i in range(0, n, 3):
            phase = int(golden.line_phase(i // lanes, lanes, p))
            expect = golden.transform_lane(lanes_in[i], i % lanes, workers, mode, fmt, kind,
                                           p, k, t, phase)
            if fmt != Format.COUNT:
                expect = sign_extend(expect, workers)
            assert got[i] == expect, (mode, fmt, kind, p, k, t, i)


# -- transform_wide against the formulas ---------------------------------------------

def wide_reference(signs, mode, fmt, kind, p, k, t, phase_of_element):
    """Per element, in plain integers, from contract sections 2 and 5."""
    workers = len(signs)
    out = []
    for i in range(len(signs[0])):
        c = sum(int(s[i]) for s in signs)
        a = 2 * c - workers
        if mode == Mode.GBINARY:
            kept = True
        elif kind == GateKind.PATTERN:
            kept = (phase_of_element(i)) % p < k
        else:
            kept = abs(a) >= t
        c, a = (c, a) if kept else (workers // 2, 0)
        out.append(c if fmt == Format.COUNT else a if fmt == Format.MARGIN else
                   (a > 0) - (a < 0))
    return out


@pytest.mark.parametrize("workers", [1, 5, 64, 100])
def test_transform_wide_matches_the_formulas(workers):
    rng = np.random.default_rng(workers)
    line_bits = 256
    e_c = line_bits // 32
    n = 3 * e_c - 2
    signs = rng.random((workers, n)) < rng.random((1, n))
    signs[:, 0] = True
    signs[:, 1] = False
    for mode, fmt, kind in itertools.product(LOW_BIT_MODES, Format, GateKind):
        for p, k, t in [(3, 2, 0), (5, 3, min(3, workers)), (7, 4, workers)]:
            phases = golden.line_phase(np.arange(3), e_c, p)
            out = golden.transform_wide(signs, mode, fmt, kind, p, k, t, phases,
                                        line_bits=line_bits)
            assert out.shape == (3, line_bits // 8)
            got = golden.decode_counts(out, fmt)
            expect = wide_reference(signs, mode, fmt, kind, p, k, t, lambda i: i)
            assert got[:n].tolist() == expect, (mode, fmt, kind, p, k, t)
            # Padding elements count no positive vote.
            pad = wide_reference(np.zeros((workers, 3 * e_c), bool), mode, fmt, kind, p, k, t,
                                 lambda i: i)[n:]
            assert got[n:].tolist() == pad


# -- the two-level hierarchy: 8 x 8 workers ------------------------------------------

GROUPS, GROUP_WORKERS, LINE_BITS = 8, 8, 512
E_C = LINE_BITS // 32


def level1_counts(grads, layout):
    """Each level-1 controller (W 8, SIGNS in ``layout``, G-Binary COUNT): the
    exact counts its read returns, low 4 bits, one row per controller."""
    n = grads.shape[1]
    rows = []
    for g in range(GROUPS):
        lines = golden.encode_signs(grads[g * GROUP_WORKERS:(g + 1) * GROUP_WORKERS], LINE_BITS,
                                    layout)
        read = golden.transform(lines, GROUP_WORKERS, Mode.GBINARY, Format.COUNT, layout=layout)
        rows.append(read.reshape(-1)[:n] & 0x0F)      # 8-bit lanes: element i is byte i
    return np.array(rows)


@pytest.mark.parametrize("layout", list(Layout))
def test_two_level_hierarchy_equals_64_workers(layout):
    rng = np.random.default_rng(64 + layout)
    n = 5 * E_C + 3                                    # a padded last level-2 line
    grads = rng.standard_normal((GROUPS * GROUP_WORKERS, n)).astype(np.float32)
    grads -= rng.standard_normal(n).astype(np.float32)  # element-wise bias: wide spread of c
    grads[:, 0], grads[:, 1] = 1.0, -1.0               # c = 64 and c = 0
    grads[::2, 2], grads[1::2, 2] = 1.0, -1.0          # c = 32: a tie
    signs = grads > 0
    counts = level1_counts(grads, layout)
    assert np.array_equal(counts.sum(axis=0), signs.sum(axis=0))
    level2 = golden.encode_counts(counts, LINE_BITS, Operand.COUNTS4, layout)
    n_lines = len(level2)
    for mode, fmt, kind in itertools.product(LOW_BIT_MODES, Format, GateKind):
        for p, k, t in [(3, 2, 0), (7, 3, 9), (15, 15, 31), (4, 1, 17)]:
            phases = golden.line_phase(np.arange(n_lines), E_C, p)
            got = golden.transform_counts(level2, Operand.COUNTS4, 64, mode, fmt, kind, p, k, t,
                                          phases, layout=layout)
            want = golden.transform_wide(signs, mode, fmt, kind, p, k, t, phases)
            assert np.array_equal(got, want), (mode, fmt, kind, p, k, t)
    masks = rng.random((n_lines, E_C)) < 0.5
    assert np.array_equal(
        golden.transform_counts(level2, Operand.COUNTS4, 64, Mode.GTERNARY, Format.SIGN,
                                gate_mask=masks, layout=layout),
        golden.transform_wide(signs, Mode.GTERNARY, Format.SIGN, gate_mask=masks))
    for mode in (Mode.BYPASS, Mode.IDENTITY):
        assert np.array_equal(golden.transform_counts(level2, Operand.COUNTS4, 64, mode,
                                                      layout=layout), level2)


# -- bad input -----------------------------------------------------------------------

LINE = np.zeros((1, 64), dtype=np.uint8)


@pytest.mark.parametrize("call, words", [
    (lambda: golden.transform_counts(LINE, 3, 8, Mode.GBINARY), "operand.*3"),
    (lambda: golden.transform_counts(LINE, Operand.SIGNS, 8, Mode.GBINARY), "operand.*0"),
    (lambda: golden.transform_counts(LINE, Operand.COUNTS4, 0, Mode.GBINARY), "total.*0"),
    (lambda: golden.transform_counts(LINE, Operand.COUNTS4, 121, Mode.GBINARY), "total.*121"),
    (lambda: golden.transform_counts(LINE, Operand.COUNTS8, 1021, Mode.GBINARY), "total.*1021"),
    (lambda: golden.transform_counts(LINE, Operand.COUNTS8, 8, Mode.GTERNARY,
                                     threshold=9), "threshold.*9"),
    (lambda: golden.transform_counts(LINE, Operand.COUNTS8, 100, Mode.GTERNARY,
                                     threshold=32), "threshold.*32"),
    (lambda: golden.transform_counts(LINE, Operand.COUNTS8, 100, Mode.GTERNARY, fmt=3),
     "format.*3"),
    (lambda: golden.transform_counts(LINE, Operand.COUNTS8, 100, Mode.GTERNARY, period=0),
     "period.*0"),
    (lambda: golden.transform_counts(LINE, Operand.COUNTS8, 100, Mode.GTERNARY, phase=3),
     "phase"),
    (lambda: golden.transform_counts(LINE, Operand.COUNTS8, 100, Mode.GTERNARY,
                                     gate_mask=np.ones(15, bool)), "gate_mask.*15"),
    (lambda: golden.transform_counts(LINE, Operand.COUNTS8, 100, Mode.GTERNARY, layout=2),
     "layout.*2"),
    (lambda: golden.transform(LINE, 8, Mode.GTERNARY, layout=2), "layout.*2"),
    (lambda: golden.encode_signs(np.ones((8, 4)), 512, layout=-1), "layout.*-1"),
    (lambda: golden.encode_counts([[16]], 512, Operand.COUNTS4), "count.*16"),
    (lambda: golden.encode_counts([[-1]], 512, Operand.COUNTS8), "count.*-1"),
    (lambda: golden.encode_counts([[256]], 512, Operand.COUNTS8), "count.*256"),
    (lambda: golden.encode_counts(np.zeros((5, 3), int), 512, Operand.COUNTS8), r"\(5, 3\)"),
    (lambda: golden.encode_counts(np.zeros((2, 3)), 512, Operand.COUNTS8), "float64"),
    (lambda: golden.encode_counts([[1]], 500, Operand.COUNTS8), "line_bits.*500"),
    (lambda: golden.encode_counts([[1]], 512, 0), "operand.*0"),
    (lambda: golden.to_element_major(LINE, 5), "workers.*5"),
    (lambda: golden.to_worker_major(LINE.astype(np.int16), 8), "int16"),
    (lambda: golden.decode_counts(LINE, 3), "format.*3"),
    (lambda: golden.transform_wide(np.ones((4, 4), bool), Mode.BYPASS), "mode.*0"),
    (lambda: golden.transform_wide(np.ones((4, 4)), Mode.GBINARY), "float64"),
    (lambda: golden.transform_wide(np.ones((4, 4), bool), Mode.GTERNARY, threshold=5),
     "threshold.*5"),
    (lambda: golden.transform_wide(np.ones((4, 4), bool), Mode.GTERNARY, period=2, keep=3),
     "keep.*3"),
    (lambda: golden.transform_wide(np.ones((4, 4), bool), Mode.GBINARY, line_bits=96),
     "line_bits.*96"),
])
def test_bad_input_is_refused_naming_the_value(call, words):
    with pytest.raises(ValueError, match=words) as info:
        call()
    assert "\n" not in str(info.value)
