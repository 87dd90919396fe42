"""Conformance bench of ``neuron_fabric_datapath`` against contract section 3 (v2).

Written from the contract only: port names and widths, the handshake and
latency rules, and the lane values of contract section 2
(``common.lane_ref``) with the PATTERN gate taken from ``in_gate_mask``
(bit i is lane i's gate m).  Parameters: ``line_bits``, ``workers``, ``stages``,
``seed`` of the runner's ``params`` (``toolchain.bench_params``), set by
``_configure`` when each test starts.

Timing convention: inputs are driven after a falling edge; every signal is
then sampled in the read-only phase before the next rising edge, so a
sample tells exactly which beats move at that rising edge.  Edges are
numbered by the bench.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly

from neuron_fabric.sim.conformance.common import lane_ref, port_mismatches, spec_test

# The run's parameters and what follows from them: set by _configure.
LINE_BITS = W = STAGES = SEED = E = LMASK = ALL_LANES = None
PORTS = {}


def _configure(params):
    global LINE_BITS, W, STAGES, SEED, E, LMASK, ALL_LANES, PORTS
    LINE_BITS, W = params.get("line_bits", 64), params.get("workers", 4)
    STAGES, SEED = params.get("stages", 1), params.get("seed", 1)
    E = LINE_BITS // W
    LMASK = (1 << LINE_BITS) - 1
    ALL_LANES = (1 << E) - 1
    PORTS = {
        "clk": 1, "rst": 1, "in_valid": 1, "in_ready": 1, "in_data": LINE_BITS,
        "in_tag": 16, "in_mode": 2, "in_format": 2, "in_gate_kind": 1,
        "in_gate_mask": E, "in_gate_threshold": 5,
        "out_valid": 1, "out_ready": 1, "out_data": LINE_BITS, "out_tag": 16,
    }


conformance_test = spec_test(_configure)


# contract section 2's PATTERN gate (deliberate clean-room copy, independent of
# host/golden/'s gate_pattern).
def pattern_mask(period, keep, phase):
    """contract section 2's PATTERN gate as a mask: bit i is m of lane i,
    n = (phase + i) mod P, m = 0 iff n >= K."""
    return sum(1 << i for i in range(E) if (phase + i) % period < keep)


def line_expected(data, mode, fmt, kind, mask, thresh):
    """Whole output line: lane i per contract section 2 with the PATTERN gate
    m = bit i of ``mask``.  ``lane_ref`` takes m as the pattern P = 1,
    K = m (n = 0 for every lane, kept iff 0 < K)."""
    if mode in (0, 1):
        return data
    lane_mask = (1 << W) - 1
    out = 0
    for i in range(E):
        m = (mask >> i) & 1
        out |= lane_ref((data >> (i * W)) & lane_mask, i, W, mode, fmt, kind,
                        1, m, thresh, 0) << (i * W)
    return out


class InputLine:
    """One input beat: data, tag and the per-line configuration fields."""

    __slots__ = ("data", "tag", "mode", "fmt", "kind", "mask", "thresh", "check")

    def __init__(self, data, tag, mode, fmt=0, kind=0, mask=None, thresh=0, check=True):
        mask = ALL_LANES if mask is None else mask  # all lanes kept unless given
        self.data, self.tag, self.mode, self.fmt = data & LMASK, tag & 0xFFFF, mode, fmt
        self.kind, self.mask, self.thresh, self.check = kind, mask & ALL_LANES, thresh, check

    def expected(self):
        return line_expected(self.data, self.mode, self.fmt, self.kind, self.mask, self.thresh)

    def __repr__(self):
        return (f"InputLine(tag={self.tag:#x} mode={self.mode} fmt={self.fmt} kind={self.kind} "
                f"mask={self.mask:#x} T={self.thresh} data={self.data:#x})")


class DatapathConformanceBench:
    """The core under test: one beat a cycle, every handshake sampled with its edge."""

    def __init__(self, dut):
        self.dut = dut
        self.edge = 0  # index of the rising edge the current sample precedes
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())

    async def step(self, line=None, out_ready=1, rst=0):
        d = self.dut
        await FallingEdge(d.clk)
        d.rst.value = rst
        d.out_ready.value = out_ready
        if line is None:
            d.in_valid.value = 0
        else:
            d.in_valid.value = 1
            d.in_data.value = line.data
            d.in_tag.value = line.tag
            d.in_mode.value = line.mode
            d.in_format.value = line.fmt
            d.in_gate_kind.value = line.kind
            d.in_gate_mask.value = line.mask
            d.in_gate_threshold.value = line.thresh
        await ReadOnly()
        self.edge += 1
        s = (int(d.in_ready.value), int(d.out_valid.value))
        out = None
        if s[1] and out_ready:
            out = (d.out_data.value.to_unsigned(), d.out_tag.value.to_unsigned())
        return s[0], s[1], out

    async def reset(self, cycles=3):
        d = self.dut
        d.in_valid.value = 0
        d.out_ready.value = 1
        for name in ("in_data", "in_tag", "in_mode", "in_format", "in_gate_kind",
                     "in_gate_mask", "in_gate_threshold"):
            getattr(d, name).value = 0
        for _ in range(cycles):
            await self.step(None, 1, rst=1)
        # the next edge is the first with rst low; in_ready must hold from the
        # cycle after it (when out_ready is high)
        _, ov, _ = await self.step(None, 1, rst=0)
        assert ov == 0, "out_valid high right after reset"

    async def stream(self, lines, rng, p_valid=1.0, p_ready=1.0, hold_ready_high=False,
                     check_latency=False, idle_after=None):
        """Send ``lines`` with random gaps / backpressure and scoreboard them."""
        pending = list(lines)
        cur = None
        sent = []      # (line, accept edge)
        got = []       # (data, tag, edge)
        limit = 200 + 60 * len(lines) + 20 * STAGES
        n = 0
        while pending or cur is not None or len(got) < len(lines):
            n += 1
            assert n < limit, (f"no progress: sent {len(sent)}, received {len(got)} "
                               f"of {len(lines)} lines")
            if cur is None and pending and (p_valid >= 1.0 or rng.random() < p_valid):
                cur = pending.pop(0)
            ready = 1 if (hold_ready_high or p_ready >= 1.0 or rng.random() < p_ready) else 0
            in_ready, out_valid, out = await self.step(cur, ready)
            if hold_ready_high:
                assert in_ready == 1, f"in_ready low at edge {self.edge} with out_ready high"
            if cur is not None and in_ready:
                sent.append((cur, self.edge))
                cur = None
            if out is not None:
                assert len(got) < len(sent), (
                    f"output beat (tag {out[1]:#x}) at edge {self.edge} with nothing in flight")
                got.append((out[0], out[1], self.edge))
        # nothing extra comes out
        for _ in range(idle_after if idle_after is not None else STAGES + 3):
            in_ready, out_valid, _ = await self.step(None, 1)
            assert out_valid == 0, f"extra output beat at edge {self.edge}"
            assert in_ready == 1, f"in_ready low at edge {self.edge} when idle"
        # scoreboard: in order, nothing lost / duplicated, values per contract 2
        assert len(got) == len(sent) == len(lines)
        errors = []
        for k, ((line, t_in), (data, tag, t_out)) in enumerate(zip(sent, got)):
            if tag != line.tag:
                errors.append(f"beat {k}: tag {tag:#x}, expected {line.tag:#x} ({line})")
            elif line.check and data != line.expected():
                errors.append(f"beat {k}: data {data:#x}, expected {line.expected():#x} ({line})")
            if check_latency and t_out != t_in + STAGES:
                errors.append(f"beat {k}: accepted at edge {t_in}, left at {t_out}, "
                              f"expected {t_in + STAGES} ({line})")
            if len(errors) > 8:
                break
        assert not errors, "\n".join(errors)
        return sent, got


def rand_lane(rng):
    """Lane with a uniformly chosen popcount (so every margin is exercised)."""
    c = rng.randint(0, W)
    bits = rng.sample(range(W), c)
    v = 0
    for b in bits:
        v |= 1 << b
    return v


def rand_data(rng):
    v = 0
    for i in range(E):
        v |= rand_lane(rng) << (i * W)
    return v


def rand_mask(rng):
    """Any E-bit mask half the time, else one of contract section 2's patterns."""
    if rng.random() < 0.5:
        return rng.getrandbits(E)
    period = rng.randint(1, 15)
    return pattern_mask(period, rng.randint(0, period), rng.randrange(period))


def rand_valid_fields(rng):
    mode = rng.randrange(4)
    fmt = rng.randrange(3)
    kind = rng.randrange(2)
    thresh = rng.randint(0, W)
    return dict(mode=mode, fmt=fmt, kind=kind, mask=rand_mask(rng), thresh=thresh)


# ------------------------------------------------------------------ tests ----

@conformance_test
async def ports_and_widths(dut):
    """Every contract section 3 (v2) port exists with its width (in_gate_mask: E bits)."""
    bad = port_mismatches(dut, PORTS)
    assert not bad, "; ".join(bad)


@conformance_test
async def reset_in_ready_and_latency(dut):
    """After reset: no output, in_ready high every cycle, exact STAGES latency."""
    rng = random.Random(SEED * 11 + 1)
    b = DatapathConformanceBench(dut)
    await b.reset()
    # idle for a while: in_ready high, out_valid low
    for _ in range(STAGES + 4):
        ir, ov, _ = await b.step(None, 1)
        assert ir == 1, f"in_ready low at edge {b.edge} after reset with out_ready high"
        assert ov == 0, f"out_valid high at edge {b.edge} with nothing sent"
    # back-to-back burst, then single lines with gaps, all with out_ready high
    lines = [InputLine(rand_data(rng), 0x100 + k, **rand_valid_fields(rng)) for k in range(40)]
    sent, got = await b.stream(lines, rng, hold_ready_high=True, check_latency=True)
    edges = [t for _, t in sent]
    assert edges == list(range(edges[0], edges[0] + len(lines))), \
        "not one line accepted per cycle with in_valid and out_ready high"
    outs = [t for _, _, t in got]
    assert outs == list(range(outs[0], outs[0] + len(lines))), "not one line out per cycle"
    lines = [InputLine(rand_data(rng), 0x200 + k, **rand_valid_fields(rng)) for k in range(40)]
    await b.stream(lines, rng, p_valid=0.4, hold_ready_high=True, check_latency=True)


@conformance_test
async def lanes_all_modes_formats_gates(dut):
    """Lane values of contract 2 for every mode x format x gate kind and gate-field edges
    (PATTERN: no lane, every lane, single lanes, random masks, and the patterns of
    contract 2's P, K and phase edges)."""
    rng = random.Random(SEED * 11 + 2)
    b = DatapathConformanceBench(dut)
    await b.reset()
    lines = []
    tag = 0x1000
    # lane sources: all W-bit values when W <= 8 (spread over lines), else random
    if W <= 8:
        allv = list(range(1 << W))
        datas = []
        for start in range(0, len(allv), E):
            chunk = allv[start:start + E]
            chunk += [rng.randrange(1 << W) for _ in range(E - len(chunk))]
            v = 0
            for i, x in enumerate(chunk):
                v |= x << (i * W)
            datas.append(v)
    else:
        datas = [rand_data(rng) for _ in range(3)]
    datas.append(rand_data(rng))
    fields = []
    for mode in (0, 1, 2):
        for fmt in range(3):
            fields.append(dict(mode=mode, fmt=fmt, kind=rng.randrange(2)))
    masks = [0, ALL_LANES, 1, 1 << (E - 1), rng.getrandbits(E), rng.getrandbits(E)]
    for period, keep in ((1, 0), (1, 1), (2, 1), (3, 2), (3, 0), (3, 3), (7, 4), (15, 15), (15, 1)):
        for phase in sorted({0, period - 1, rng.randrange(period)}):
            masks.append(pattern_mask(period, keep, phase))
    for fmt in range(3):
        for mask in masks:
            fields.append(dict(mode=3, fmt=fmt, kind=0, mask=mask, thresh=rng.randint(0, W)))
        for thresh in sorted({0, 1, 2, W // 2, W - 1, W}):
            fields.append(dict(mode=3, fmt=fmt, kind=1, thresh=thresh, mask=rng.getrandbits(E)))
    for f in fields:
        for d in (datas if W <= 8 else datas[:2]):
            lines.append(InputLine(d, tag, **f))
            tag += 1
    rng.shuffle(lines)
    await b.stream(lines, rng, hold_ready_high=True, check_latency=True)


@conformance_test
async def random_gaps_backpressure_scoreboard(dut):
    """Random in_valid gaps and out_ready backpressure: in order, nothing lost or duplicated."""
    rng = random.Random(SEED * 11 + 3)
    b = DatapathConformanceBench(dut)
    await b.reset()
    tag = rng.randrange(1 << 16)
    for p_valid, p_ready, n in ((0.9, 0.5, 150), (0.5, 0.9, 150), (1.0, 0.2, 100),
                                (0.3, 0.3, 100), (1.0, 0.95, 150)):
        lines = []
        for _ in range(n):
            lines.append(InputLine(rand_data(rng), tag, **rand_valid_fields(rng)))
            tag = (tag + 1) & 0xFFFF
        await b.stream(lines, rng, p_valid=p_valid, p_ready=p_ready)


@conformance_test
async def out_of_range_fields_do_not_disturb(dut):
    """Out-of-range fields (format 3, T>W, mode 0/1 with junk) do not hang the core or
    disturb other lines; IDENTITY/BYPASS ignore format and gate fields.  (Every mask is
    in range.)"""
    rng = random.Random(SEED * 11 + 4)
    b = DatapathConformanceBench(dut)
    await b.reset()
    lines = []
    tag = 0x4000
    for k in range(300):
        f = rand_valid_fields(rng)
        r = rng.randrange(5)
        junk = True
        if r == 0:
            f["fmt"] = 3
        elif r == 1:
            f["thresh"] = rng.randint(W + 1, 31) if W < 31 else 31
        elif r == 2:
            f["fmt"], f["thresh"] = 3, rng.randint(W + 1, 31)
        else:
            junk = False
        if junk and f["mode"] in (0, 1):
            # IDENTITY/BYPASS ignore format and gate fields: still checked
            junk = False
        lines.append(InputLine(rand_data(rng), tag, check=not junk, **f))
        tag += 1
    await b.stream(lines, rng, p_valid=0.8, p_ready=0.7)
    # and at full rate with out_ready high the timing is unchanged
    for ln in lines:
        ln.tag ^= 0x8000
    await b.stream(lines[:80], rng, hold_ready_high=True, check_latency=True)


@conformance_test
async def reset_mid_stream(dut):
    """A synchronous reset with lines in flight leaves no stale output; the core
    then works from scratch (evident intent of 'rst: synchronous')."""
    rng = random.Random(SEED * 11 + 5)
    b = DatapathConformanceBench(dut)
    await b.reset()
    # fill the pipeline (out_ready low so lines pile up)
    for k in range(STAGES + 2):
        await b.step(InputLine(rand_data(rng), 0x7000 + k, mode=1), 0)
    await b.step(None, 0, rst=1)
    await b.step(None, 1, rst=1)
    await b.step(None, 1, rst=0)
    for _ in range(STAGES + 4):
        ir, ov, _ = await b.step(None, 1)
        assert ov == 0, f"stale output at edge {b.edge} after reset"
        assert ir == 1, f"in_ready low at edge {b.edge} after reset"
    lines = [InputLine(rand_data(rng), 0x7100 + k, **rand_valid_fields(rng)) for k in range(20)]
    await b.stream(lines, rng, hold_ready_high=True, check_latency=True)


@conformance_test
async def out_valid_does_not_wait_for_out_ready(dut):
    """A line already accepted reaches the output and raises out_valid while out_ready is
    held low: the output side is a valid/ready handshake, so out_valid must not wait for
    out_ready (a consumer may wait for out_valid before raising out_ready)."""
    rng = random.Random(SEED * 11 + 6)
    b = DatapathConformanceBench(dut)
    await b.reset()
    for n_lines in (1, min(STAGES, 3)):
        lines = [InputLine(rand_data(rng), 0x7200 + n_lines * 16 + k, **rand_valid_fields(rng))
                 for k in range(n_lines)]
        accepted = []
        for ln in lines:
            ir, _, _ = await b.step(ln, 1)
            assert ir == 1
            accepted.append(b.edge)
        # out_ready low from now on; the consumer waits for out_valid
        seen = None
        for _ in range(STAGES + 6):
            _, ov, _ = await b.step(None, 0)
            if ov:
                seen = b.edge
                break
        assert seen is not None, (
            f"{n_lines} line(s) accepted at edges {accepted}; out_valid still low "
            f"{STAGES + 6} cycles later with out_ready low")
        assert seen <= accepted[0] + STAGES, (
            f"line accepted at edge {accepted[0]} presented out_valid only at edge {seen} "
            f"with out_ready low")
        # now drain and check the values
        got = []
        for _ in range(4 * STAGES + 10):
            _, ov, out = await b.step(None, 1)
            if out is not None:
                got.append(out)
            if len(got) == len(lines):
                break
        assert [(d, t) for d, t in got] == [(ln.expected(), ln.tag) for ln in lines]
