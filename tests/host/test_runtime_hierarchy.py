"""Gradient runtime with the hierarchy extension (contract section 5) on
device models: the worker-major write path (each worker's own segment by
MemWrPtl, the bytes and requests it counts) and two-level aggregation
(:class:`TwoLevelRuntime`) against the contract's formulas over all workers,
written out here in plain integers, and against ``golden.transform_wide``."""

import asyncio
import itertools

import numpy as np
import pytest

from neuron_fabric.host import golden
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.contract.facts import (PROFILES, Format, GateKind, Layout, Mode, Operand,
                                          TopParams)
from neuron_fabric.host.runtime import (G_BINARY, G_TERNARY, GradientRuntime, GroupPolicy,
                                        TwoLevelRuntime, g_ternary_margin, write_worker_major)

#: The full profile's hierarchy on a build whose reads return lanes: these
#: tests count a lane read's traffic by hand (reads through the packed view:
#: test_runtime_view.py).
HIERARCHY = PROFILES["full"].without("packed_view")
WM, EM = Layout.WORKER_MAJOR, Layout.ELEMENT_MAJOR


def run(coro):
    return asyncio.run(coro)


def device(params=TopParams(), profile=HIERARCHY):
    dev = Device(params, profile=profile)
    return dev, Driver(dev, params, profile=profile)


def worker_major(policy):
    return GroupPolicy(policy.mode, policy.format, policy.gate_kind, policy.period, policy.keep,
                       policy.threshold, layout=WM)


class RecordingPort:
    """A device's memory port that records each partial write's enables and data."""

    def __init__(self, dev):
        self.dev = dev
        self.partial = []

    async def write_lines(self, addr, lines):
        await self.dev.write_lines(addr, lines)

    async def write_lines_partial(self, addr, lines, enables):
        self.partial.append((addr, lines.copy(), enables.copy()))
        await self.dev.write_lines_partial(addr, lines, enables)

    async def read_lines(self, addr, count):
        return await self.dev.read_lines(addr, count)


def formula(signs, mode, fmt, kind=GateKind.PATTERN, p=3, k=2, t=0):
    """Each element's output value over all the workers of ``signs`` (bool,
    (workers, n)), element i of a window starting at element 0 (so the
    PATTERN gate keeps it when i mod P < K): contract sections 2 and 5.3."""
    workers = len(signs)
    out = []
    for i in range(signs.shape[1]):
        c = int(signs[:, i].sum())
        a = 2 * c - workers
        kept = mode == Mode.GBINARY or (i % p < k if kind == GateKind.PATTERN else abs(a) >= t)
        c, a = (c, a) if kept else (workers // 2, 0)
        out.append(c if fmt == Format.COUNT else a if fmt == Format.MARGIN else (a > 0) - (a < 0))
    return out


# -- one device, worker-major writes ---------------------------------------------------

@pytest.mark.parametrize("workers", [4, 8, 16])
def test_worker_major_group_gives_the_element_major_directions(workers):
    params = TopParams(workers=workers)
    n = 3 * params.lanes - 7
    rng = np.random.default_rng(workers)
    g = rng.standard_normal((workers, n)).astype(np.float32)
    policies = {"b": G_BINARY, "t": G_TERNARY, "m": g_ternary_margin(workers // 2),
                "c": GroupPolicy(Mode.GBINARY, Format.COUNT)}
    groups = dict.fromkeys(policies, n)

    async def go(layout_of):
        dev, drv = device(params)
        port = RecordingPort(dev)
        rt = await GradientRuntime.create(port, drv, groups,
                                          {k: layout_of(p) for k, p in policies.items()})
        out = await rt.step(dict.fromkeys(policies, g))
        return out, rt.traffic(), await drv.counters(), port.partial, rt.windows

    out_wm, t_wm, counters, partial, windows = run(go(worker_major))
    out_em, t_em, _, none, _ = run(go(lambda p: p))
    assert none == []
    lines = -(-n // params.lanes)
    seg = params.lanes // 8
    for name, policy in policies.items():
        assert np.array_equal(out_wm[name], out_em[name]), name
        want = formula(g > 0, policy.mode, policy.format, policy.gate_kind, policy.period,
                       policy.keep, policy.threshold)
        scale = {Format.SIGN: 1, Format.MARGIN: workers}[policy.format] \
            if policy.format != Format.COUNT else None
        got = out_wm[name] * scale if scale else (out_wm[name] * workers + workers) / 2
        assert np.allclose(got, want), name
        # Bytes up are the same; the requests are W MemWrPtl per line.
        assert t_wm[name].bytes_up == t_em[name].bytes_up == lines * params.line_bytes
        assert t_wm[name].writes == workers * lines and t_em[name].writes == lines
        assert t_wm[name].reads == t_em[name].reads == lines
    assert counters["writes"] == len(policies) * workers * lines
    # Each MemWrPtl run is one worker's segment of every line of a window,
    # and carries nothing outside it.
    assert len(partial) == len(policies) * workers
    for j, (addr, data, enables) in enumerate(partial):
        k = j % workers
        assert addr == windows[list(policies)[j // workers]].base
        assert enables.nonzero()[0].tolist() == list(range(k * seg, (k + 1) * seg))
        assert not data[:, ~enables].any()


def test_worker_major_needs_the_feature_a_partial_port_and_whole_bytes():
    async def create(port, drv, params, policy):
        return await GradientRuntime.create(port, drv, {"a": 100}, {"a": policy})

    dev, drv = device(profile=PROFILES["paper"])
    with pytest.raises(ValueError, match="hierarchy feature"):
        run(create(dev, drv, dev.params, worker_major(G_BINARY)))

    class WholeLines:
        write_lines = RecordingPort.write_lines
        read_lines = RecordingPort.read_lines

    dev, drv = device()
    with pytest.raises(ValueError, match="write_lines_partial"):
        run(create(WholeLines(), drv, dev.params, worker_major(G_BINARY)))
    dev, drv = device(TopParams(line_bits=64, workers=16))
    with pytest.raises(ValueError, match="E = LINE_BITS / W >= 8"):
        run(create(dev, drv, dev.params, worker_major(G_BINARY)))


def test_write_worker_major_counts_bytes_and_requests():
    dev, _ = device()
    lines = np.arange(3 * 64, dtype=np.uint8).reshape(3, 64)
    assert run(write_worker_major(dev, 0, lines, 8)) == (3 * 64, 24)
    assert np.array_equal(dev.peek(0, 3), lines)
    assert run(write_worker_major(dev, 0x1000, lines, 4, writers=3)) == (3 * 48, 9)
    stored = dev.peek(0x1000, 3)
    assert np.array_equal(stored[:, :48], lines[:, :48]) and not stored[:, 48:].any()


# -- two levels --------------------------------------------------------------------------

def levels(groups, params=TopParams()):
    return [device(params) for _ in range(groups)], device()


@pytest.mark.parametrize("layout", list(Layout))
def test_hierarchy_of_8_by_8_workers(layout):
    """8 level-1 devices of W 8 and a COUNTS4 level 2: every mode, format and
    gate equals the formulas over 64 workers (and transform_wide); the
    traffic of each level by hand."""
    n = 1000
    rng = np.random.default_rng(8 + layout)
    g = rng.standard_normal((64, n)).astype(np.float32) - rng.standard_normal(n).astype(np.float32)
    g[:, 0], g[:, 1] = 1.0, -1.0
    signs = g > 0
    configs = [(mode, fmt, kind) for mode, fmt, kind in
               itertools.product((Mode.GBINARY, Mode.GTERNARY), Format, GateKind)
               if mode == Mode.GTERNARY or kind == GateKind.PATTERN]

    async def go():
        out = {}
        for mode, fmt, kind in configs:
            policy = GroupPolicy(mode, fmt, kind, period=5, keep=3, threshold=12, layout=layout)
            level1, level2 = levels(8)
            h = await TwoLevelRuntime.create(level1, level2, n, policy, base1=0x4000, base2=0x40)
            assert h.operand == Operand.COUNTS4 and h.total == 64
            out[mode, fmt, kind] = (await h.aggregate(g), await h.step(g), h.traffic())
        return out

    out = run(go())
    lines1, lines2 = 16, 63                               # ceil(1000 / 64), ceil(1000 / 16)
    for (mode, fmt, kind), (values, direction, t) in out.items():
        want = formula(signs, mode, fmt, kind, 5, 3, 12)
        assert values.tolist() == want, (mode, fmt, kind)
        wide = golden.transform_wide(signs, mode, fmt, kind, 5, 3, 12,
                                     golden.line_phase(np.arange(lines2), 16, 5))
        assert values.tolist() == golden.decode_counts(wide, fmt, n).tolist()
        expect = {Format.SIGN: values, Format.MARGIN: values / 64,
                  Format.COUNT: (2 * values - 64) / 64}[fmt]
        assert np.allclose(direction, expect)
        # Two steps; level 1: 8 devices x 16 lines of 64 bytes each way.
        l1, l2, total = t["level1"], t["level2"], t["total"]
        assert l1.bytes_up == l1.bytes_down == 2 * 8 * lines1 * 64
        assert l1.writes == 2 * 8 * lines1 * (8 if layout == WM else 1)
        assert l1.reads == 2 * 8 * lines1
        # Level 2: 63 lines; worker-major, 8 contributors x 8 bytes each.
        assert l2.bytes_up == l2.bytes_down == 2 * lines2 * 64
        assert l2.writes == 2 * lines2 * (8 if layout == WM else 1) and l2.reads == 2 * lines2
        assert total.steps == 2 and total.fp32_up == 2 * 64 * n * 4
        assert total.bytes_up == l1.bytes_up + l2.bytes_up


@pytest.mark.parametrize("groups, workers, operand, given", [(3, 16, Operand.COUNTS8, False),
                                                              (2, 4, Operand.COUNTS4, False),
                                                              (4, 8, Operand.COUNTS8, True)])
def test_hierarchy_with_fewer_groups_than_contributors(groups, workers, operand, given):
    """Unused contributors hold 0 even where the level-2 window held data
    before; the sums are exact over G * W workers.  The operand is COUNTS4
    unless a count (0..W) needs 8 bits, or it is given."""
    n = 300
    g = np.random.default_rng(groups * workers).standard_normal((groups * workers, n))
    policy = GroupPolicy(Mode.GTERNARY, Format.MARGIN, GateKind.MARGIN, threshold=3, layout=WM)

    async def go():
        level1, level2 = levels(groups, TopParams(workers=workers))
        level2[0].poke(0, np.full((20, 64), 0xFF, dtype=np.uint8))
        h = await TwoLevelRuntime.create(level1, level2, n, policy, operand=operand if given else None)
        assert h.operand == operand and h.total == groups * workers
        return await h.aggregate(g.astype(np.float32))

    assert run(go()).tolist() == formula(g > 0, Mode.GTERNARY, Format.MARGIN, GateKind.MARGIN,
                                         t=3)


def test_hierarchy_refuses_what_the_devices_would():
    policy = GroupPolicy(Mode.GBINARY, Format.SIGN, layout=WM)

    def create(level1, level2, n=100, p=policy, **kw):
        return run(TwoLevelRuntime.create(level1, level2, n, p, **kw))

    with pytest.raises(ValueError, match="9 groups"):
        create(*levels(9))
    with pytest.raises(ValueError, match="W=16"):
        create(*levels(2, TopParams(workers=16)), operand=Operand.COUNTS4)
    with pytest.raises(ValueError, match="threshold"):
        create(*levels(2), p=g_ternary_margin(17))       # T > total = 16
    with pytest.raises(ValueError, match="rotate"):
        create(*levels(2), p=GroupPolicy(Mode.GTERNARY, Format.SIGN, rotate=True))
    with pytest.raises(ValueError, match="hierarchy feature"):
        create(levels(2)[0], device(profile=PROFILES["paper"]))
    with pytest.raises(ValueError, match="differ"):
        create([device(), device(TopParams(workers=4))], device())
    with pytest.raises(ValueError, match="elements"):
        create(*levels(2), n=0)

    async def bad_step():
        h = await TwoLevelRuntime.create(*levels(2), 10, policy)
        with pytest.raises(ValueError, match=r"\(16, 10\)"):
            await h.aggregate(np.zeros((16, 11), np.float32))
        with pytest.raises(ValueError, match="non-finite"):
            await h.aggregate(np.full((16, 10), np.nan, np.float32))

    run(bad_step())
