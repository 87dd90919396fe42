"""The transaction-level device model against contract section 4: hand-worked
examples, the register map, the golden model's one-lane reference
(``transform_lane``) and the driver; the bulk path against the per-line path."""

import asyncio
import itertools

import numpy as np
import pytest

from neuron_fabric.host import golden
from neuron_fabric.host.device import Device, PoisonError, Response
from neuron_fabric.host.driver import BusError, CfgError, Driver
from neuron_fabric.contract.facts import (DRS_MEMDATA, FEATURES, NDR_CMP, Format, GateKind, Layout, Mode,
                                          Operand, PROFILES, Profile, ReqOpcode, RwdOpcode, TopParams, view_beats)
from neuron_fabric.contract.regmap import (STATUS_BITS, VERSION_MAJOR, VERSION_MINOR, RegisterMap,
                                           cfg_encode)

DEFAULT = TopParams()
SMALL = TopParams(line_bits=64, workers=4, stages=2, regions=2, max_outstanding=4)
WIDE = TopParams(line_bits=1024, workers=16, stages=8, regions=16, max_outstanding=256)
STATUS = {f.name: f.mask for f in STATUS_BITS}
BAD_CFGS = [                                    # contract 4.4: rejected whole
    cfg_encode(Mode.GBINARY, 3, GateKind.PATTERN, 5, 3, 1),            # format 3
    cfg_encode(Mode.GBINARY, Format.COUNT, GateKind.PATTERN, 0, 0, 0),  # P = 0
    cfg_encode(Mode.GBINARY, Format.COUNT, GateKind.PATTERN, 4, 5, 0),  # K > P
]


def run(coro):
    return asyncio.run(coro)


def read(dev, offset):
    return run(dev.read(offset))


def write(dev, offset, value, strb=0xF):
    return run(dev.write(offset, value, strb))


def counters(dev):
    return run(Driver(dev, dev.params).counters())


def region_words(r):
    base = 0x100 + 0x20 * r
    return {"CFG": base, "BASE_LO": base + 4, "BASE_HI": base + 8, "LIMIT_LO": base + 12,
            "LIMIT_HI": base + 16}


def set_region(dev, r, base_line, limit_line, cfg):
    """Program region ``r`` with raw register writes (line addresses)."""
    lb = dev.params.line_bytes
    words = region_words(r)
    for name, value in (("BASE_LO", base_line * lb), ("LIMIT_LO", limit_line * lb)):
        assert write(dev, words[name], value & 0xFFFF_FFFF)
        assert write(dev, words[name.replace("LO", "HI")], value >> 32)
    assert write(dev, words["CFG"], cfg | (1 << 31))


def lanes(line_bytes, workers):
    value = int.from_bytes(bytes(line_bytes), "little")
    mask = (1 << workers) - 1
    return [(value >> (i * workers)) & mask for i in range(len(line_bytes) * 8 // workers)]


def expected_lanes(stored, workers, cfg, phase):
    """Response lanes from the one-lane reference of the golden model."""
    return [golden.transform_lane(lane, i, workers, cfg["mode"], cfg["format"],
                                  cfg["gate_kind"], cfg["period"], cfg["keep"],
                                  cfg["threshold"], phase)
            for i, lane in enumerate(lanes(stored, workers))]


def random_lines(rng, n, params):
    return rng.integers(0, 256, (n, params.line_bytes), dtype=np.uint8)


# -- control registers -------------------------------------------------------------

@pytest.mark.parametrize("params", [DEFAULT, SMALL, WIDE], ids=lambda p: p.tag())
def test_reset_values(params):
    dev = Device(params)
    rmap = RegisterMap(params)
    # contract 4.4, written out: DEFAULT_CFG = BYPASS, COUNT, PATTERN, P=3, K=2, T=0
    hand = {"ID": 0x4E464142, "VERSION": VERSION_MAJOR << 16 | VERSION_MINOR,
            "DEFAULT_CFG": 0x0000_2300, "STATUS": 0,
            "CAPS0": params.line_bits | params.workers << 16 | params.stages << 24,
            "CAPS1": params.regions | params.max_outstanding << 8,
            "CAPS2": rmap["CAPS2"].value}
    for reg in rmap.registers:
        want = hand.get(reg.name, 0x2300 if reg.name.endswith("_CFG") else 0)
        assert read(dev, reg.offset) == (want, True), reg.name
    assert dev.devload == 0


def test_unmapped_offsets_and_read_only_registers():
    dev = Device(SMALL)
    rmap = RegisterMap(SMALL)
    unmapped = [o for o in range(0, 0x1000, 4) if rmap.at(o) is None]
    assert 0x100 + 0x20 * SMALL.regions in unmapped        # region r >= REGIONS
    assert 0x080 + 8 * 6 in unmapped                       # counter j >= 6
    for offset in unmapped[:50]:
        assert read(dev, offset) == (0, False)
        assert not write(dev, offset, 0xFFFF_FFFF)
    read_only = [reg for reg in rmap.registers if reg.access == "RO"]
    for reg in read_only:
        before = read(dev, reg.offset)
        assert not write(dev, reg.offset, 0xFFFF_FFFF), reg.name
        if reg.kind == "const":
            assert read(dev, reg.offset) == before
    assert read(dev, 0x014) == (STATUS["bad_csr"], True)
    assert counters(dev)["errors"] == 50 + len(read_only)


def test_reserved_bits_read_as_zero():
    dev = Device(DEFAULT)
    cfg = cfg_encode(Mode.GTERNARY, Format.MARGIN, GateKind.MARGIN, 7, 5, 4)
    # contract v2.1: CFG bits [7:5] and [30:21] are fields (section 5), not reserved
    assert write(dev, 0x010, cfg | 1 << 31)
    assert read(dev, 0x010) == (cfg, True)                 # enable reads 0
    words = region_words(3)
    assert write(dev, words["CFG"], cfg | 1 << 31)
    assert read(dev, words["CFG"]) == (cfg | 1 << 31, True)
    assert write(dev, words["BASE_HI"], 0xFFFF_FFFF)
    assert read(dev, words["BASE_HI"]) == (0x000F_FFFF, True)
    assert write(dev, words["LIMIT_LO"], 0xFFFF_FFFF)       # low bits stored as written
    assert read(dev, words["LIMIT_LO"]) == (0xFFFF_FFFF, True)
    assert read(dev, 0x014) == (0, True)


@pytest.mark.parametrize("offset", [0x010, 0x100, 0x120])
def test_cfg_rejection(offset):
    p = SMALL
    dev = Device(p)
    good = cfg_encode(Mode.GBINARY, Format.SIGN, GateKind.PATTERN, 5, 3, 1)
    assert write(dev, offset, good)
    bad_values = BAD_CFGS + [cfg_encode(Mode.GBINARY, Format.COUNT, GateKind.PATTERN, 4, 4,
                                        p.workers + 1)]     # T > W
    for k, bad in enumerate(bad_values, 1):
        assert not write(dev, offset, bad), hex(bad)
        assert read(dev, offset) == (good, True), "a rejected write changed the register"
        assert read(dev, 0x014) == (STATUS["bad_csr"], True)
        assert counters(dev)["errors"] == k
    # T = W is the largest threshold accepted
    assert write(dev, offset, cfg_encode(Mode.GTERNARY, threshold=p.workers))


def test_wstrb():
    dev = Device(DEFAULT)
    words = region_words(0)
    assert write(dev, words["BASE_LO"], 0x1234_5678)
    assert write(dev, words["BASE_LO"], 0xAAAA_AAAA, strb=0b0010)
    assert read(dev, words["BASE_LO"]) == (0x1234_AA78, True)
    assert write(dev, words["BASE_LO"], 0xBBCC_DDEE, strb=0b1001)   # not contiguous
    assert read(dev, words["BASE_LO"]) == (0xBB34_AAEE, True)
    assert write(dev, words["BASE_LO"], 0xFFFF_FFFF, strb=0)
    assert read(dev, words["BASE_LO"]) == (0xBB34_AAEE, True)
    # a CFG write is checked on the value it would produce: byte 1 = 0 gives P = 0
    good = cfg_encode(Mode.GBINARY, Format.SIGN, GateKind.PATTERN, 5, 3, 1)
    assert write(dev, 0x010, good)
    assert not write(dev, 0x010, 0, strb=0b0010)
    assert read(dev, 0x010) == (good, True)
    assert write(dev, 0x010, 0x0000_0002, strb=0b0001)
    assert read(dev, 0x010) == ((good & ~0xFF) | 0x02, True)
    # the offset's low two bits are ignored
    assert write(dev, 0x013, good)
    assert read(dev, 0x012) == (good, True)


def test_status_rw1c():
    p = SMALL
    dev = Device(p)
    dev.m2s_req(0b0111, 0, 1)                               # UNSUPPORTED
    dev.m2s_rwd(RwdOpcode.MEM_WR, 0, 2, bytes(p.line_bytes), 0, poison=True)  # POISON_DROP
    write(dev, 0x0FC, 0)                                    # BAD_CSR
    everything = STATUS["unsupported"] | STATUS["poison_drop"] | STATUS["bad_csr"]
    assert read(dev, 0x014) == (everything, True)
    assert write(dev, 0x014, 0)                             # writing 0 clears nothing
    assert read(dev, 0x014) == (everything, True)
    assert write(dev, 0x014, STATUS["bad_csr"], strb=0b0010)  # bit 4 is in byte 0
    assert read(dev, 0x014) == (everything, True)
    assert write(dev, 0x014, STATUS["bad_csr"] | STATUS["unsupported"])
    assert read(dev, 0x014) == (STATUS["poison_drop"], True)
    assert counters(dev)["errors"] == 3


def test_counter_lo_snapshots_hi():
    dev = Device(SMALL)
    lo, hi = 0x080 + 8 * 4, 0x084 + 8 * 4
    run(dev.write_lines(0, np.zeros((3, 8), np.uint8)))
    assert read(dev, hi) == (0, True)
    assert read(dev, lo) == (3, True)
    assert read(dev, hi) == (0, True)
    # a count beyond 32 bits: HI shows the value as of the last LO read
    dev._counters[4] = (7 << 32) | 0xFFFF_FFFF
    assert read(dev, hi) == (0, True)
    assert read(dev, lo) == (0xFFFF_FFFF, True)
    run(dev.write_lines(0, np.zeros((1, 8), np.uint8)))
    assert read(dev, hi) == (7, True)                       # snapshot, not the live value
    assert read(dev, lo) == (0, True)
    assert read(dev, hi) == (8, True)


# -- reads: region table, phase, transform -----------------------------------------

def test_phase_hand_worked():
    """512-bit lines, W = 8: E = 64 lanes; line index 1 has phase 64 mod 3 = 1,
    so under the 2-of-3 gate lanes 1, 4, 7, ... are gated (COUNT W/2 = 4)."""
    dev = Device(DEFAULT)
    lb = DEFAULT.line_bytes
    dev.poke(0, np.full((40, lb), 0xFF, np.uint8))
    set_region(dev, 0, 10, 20, cfg_encode(Mode.GTERNARY, Format.COUNT, GateKind.PATTERN, 3, 2))
    got = dev.m2s_req(ReqOpcode.MEM_RD, 11 * lb, 5)
    assert lanes(got.data, 8)[:6] == [8, 4, 8, 8, 4, 8]
    got = dev.m2s_req(ReqOpcode.MEM_RD, 10 * lb + 17, 5)    # index 0, low address bits ignored
    assert lanes(got.data, 8)[:6] == [8, 8, 4, 8, 8, 4]
    # DEFAULT_CFG: BASE = 0, so line 11 has phase 11 * 64 mod 3 = 2
    assert write(dev, 0x010, cfg_encode(Mode.GTERNARY, Format.SIGN, GateKind.PATTERN, 3, 2))
    got = dev.m2s_req(ReqOpcode.MEM_RD_DATA, 30 * lb, 6)   # 30 * 64 mod 3 = 0
    assert lanes(got.data, 8)[:6] == [1, 1, 0, 1, 1, 0]
    got = dev.m2s_req(ReqOpcode.MEM_RD_DATA, 32 * lb, 6)   # 32 * 64 mod 3 = 2
    assert lanes(got.data, 8)[:6] == [0, 1, 1, 0, 1, 1]


def test_region_priority_and_window():
    p = SMALL
    dev = Device(p)
    lb = p.line_bytes
    dev.poke(0, np.full((64, lb), 0b0111_0111, np.uint8))   # every lane: 3 of 4 votes
    set_region(dev, 1, 0, 32, cfg_encode(Mode.GBINARY, Format.COUNT))
    set_region(dev, 0, 16, 48, cfg_encode(Mode.GBINARY, Format.MARGIN))
    count3, margin2 = bytes([0x33] * lb), bytes([0x22] * lb)
    want = {0: count3, 15: count3, 16: margin2, 47: margin2, 48: bytes([0x77] * lb)}
    for line, data in want.items():
        assert dev.m2s_req(ReqOpcode.MEM_RD, line * lb, line).data == data, line
    # a disabled region, and one with BASE >= LIMIT, never match
    assert write(dev, region_words(0)["CFG"], cfg_encode(Mode.GBINARY, Format.MARGIN))
    assert dev.m2s_req(ReqOpcode.MEM_RD, 20 * lb, 0).data == count3
    set_region(dev, 0, 20, 20, cfg_encode(Mode.GBINARY, Format.MARGIN))
    assert dev.m2s_req(ReqOpcode.MEM_RD, 20 * lb, 0).data == count3
    # BASE/LIMIT low bits are ignored in the comparison
    assert write(dev, region_words(0)["BASE_LO"], 20 * lb + lb - 1)
    assert write(dev, region_words(0)["LIMIT_LO"], 21 * lb + lb - 1)
    assert dev.m2s_req(ReqOpcode.MEM_RD, 20 * lb, 0).data == margin2
    assert dev.m2s_req(ReqOpcode.MEM_RD, 21 * lb, 0).data == count3
    c = counters(dev)
    assert c["bypass_reads"] == 1 and c["gbinary_reads"] == 8


@pytest.mark.parametrize("params", [DEFAULT, SMALL, WIDE], ids=lambda p: p.tag())
def test_reads_against_one_lane_reference(params):
    rng = np.random.default_rng(params.line_bits)
    dev = Device(params)
    lb = params.line_bytes
    stored = random_lines(rng, 48, params)
    dev.poke(0, stored)
    configs = [dict(mode=m, format=f, gate_kind=g, period=int(rng.integers(1, 16)), keep=0,
                    threshold=int(rng.integers(0, params.workers + 1)))
               for m, f, g in itertools.product(Mode, Format, GateKind)]
    for cfg in configs:
        cfg["keep"] = int(rng.integers(0, cfg["period"] + 1))
        base = int(rng.integers(0, 24))
        set_region(dev, 0, base, 48, cfg_encode(**cfg))
        for line in rng.integers(base, 48, 3):
            phase = (int(line) - base) * params.lanes % cfg["period"]
            got = dev.m2s_req(ReqOpcode.MEM_RD, int(line) * lb, 9)
            assert got == Response("drs", DRS_MEMDATA, 9, got.data, False)
            assert lanes(got.data, params.workers) == expected_lanes(
                stored[line].tobytes(), params.workers, cfg, phase), (cfg, line)


def test_paper_profile_hard_wires_its_features():
    """A paper build returns COUNT and applies the fixed 2-of-3 gate, with the
    phase the top computed from the register's P taken modulo 3."""
    p = TopParams(profile="paper")
    dev = Device(p)
    lb = p.line_bytes
    dev.poke(0, np.full((8, lb), 0xFF, np.uint8))
    set_region(dev, 0, 0, 8, cfg_encode(Mode.GTERNARY, Format.SIGN, GateKind.MARGIN, 5, 5, 8))
    # line index 2: phase (2 * 64) mod 5 = 3, applied as 3 mod 3 = 0
    got = dev.m2s_req(ReqOpcode.MEM_RD, 2 * lb, 1)
    assert lanes(got.data, 8)[:6] == [8, 8, 4, 8, 8, 4]


# -- opcodes, writes, poison, faults ------------------------------------------------

def test_req_opcodes():
    p = SMALL
    dev = Device(p)
    lb = p.line_bytes
    dev.poke(0, np.arange(lb, dtype=np.uint8)[None])
    for opcode in range(16):
        before = read(dev, 0x014)[0]
        got = dev.m2s_req(opcode, 0, opcode)
        status = read(dev, 0x014)[0]
        write(dev, 0x014, 0x1F)
        if opcode in (ReqOpcode.MEM_RD, ReqOpcode.MEM_RD_DATA):
            assert got == Response("drs", DRS_MEMDATA, opcode, bytes(range(lb)), False)
            assert status == 0
        elif opcode == ReqOpcode.MEM_SPEC_RD:
            assert got is None and status == 0
        elif opcode in (ReqOpcode.MEM_INV, ReqOpcode.MEM_INV_NT):
            assert got == Response("ndr", NDR_CMP, opcode) and status == 0
        else:
            assert got == Response("ndr", NDR_CMP, opcode)
            assert status == STATUS["unsupported"], opcode
        assert before == 0
    assert dev.peek(0, 1).tobytes() == bytes(range(lb)), "a Req changed memory"
    c = counters(dev)
    assert c["bypass_reads"] == 2                          # MemSpecRd is not a read
    assert c["errors"] == 16 - 5


def test_rwd_opcodes_and_poison():
    p = SMALL
    dev = Device(p)
    lb = p.line_bytes
    old = bytes(range(100, 100 + lb))
    for poison in (0, 1):
        for opcode in range(16):
            dev.poke(0, np.frombuffer(old, np.uint8)[None])
            data = bytes([opcode + 1] * lb)
            got = dev.m2s_rwd(opcode, 0, opcode, data, (1 << lb) - 1, poison=poison)
            assert got == Response("ndr", NDR_CMP, opcode)
            stores = not poison and opcode in (RwdOpcode.MEM_WR, RwdOpcode.MEM_WR_PTL)
            assert dev.peek(0, 1).tobytes() == (data if stores else old), (opcode, poison)
            want = (STATUS["poison_drop"] if poison else
                    0 if stores else STATUS["unsupported"])
            assert read(dev, 0x014) == (want, True), (opcode, poison)
            write(dev, 0x014, 0x1F)
    c = counters(dev)
    assert c["writes"] == 2 and c["errors"] == 16 + 14


def test_memwrptl_byte_enables():
    p = SMALL                                               # 8-byte lines
    dev = Device(p)
    dev.poke(0, np.frombuffer(bytes(range(8)), np.uint8)[None])
    dev.m2s_rwd(RwdOpcode.MEM_WR_PTL, 0, 1, bytes([0xA0 + i for i in range(8)]), 0b1000_0101)
    assert dev.peek(0, 1).tobytes() == bytes([0xA0, 1, 0xA2, 3, 4, 5, 6, 0xA7])
    dev.m2s_rwd(RwdOpcode.MEM_WR_PTL, 0, 2, bytes([0xFF] * 8), 0)       # writes nothing
    assert dev.peek(0, 1).tobytes() == bytes([0xA0, 1, 0xA2, 3, 4, 5, 6, 0xA7])
    dev.m2s_rwd(RwdOpcode.MEM_WR, 0, 3, bytes([0x55] * 8), 0)           # MemWr ignores be
    assert dev.peek(0, 1).tobytes() == bytes([0x55] * 8)
    assert counters(dev)["writes"] == 3


def test_axi_errors():
    p = SMALL
    dev = Device(p)
    lb = p.line_bytes
    dev.poke(0, np.full((8, lb), 0x77, np.uint8))
    assert write(dev, 0x010, cfg_encode(Mode.GBINARY))
    dev.faults.read_lines.add(5)
    got = dev.m2s_req(ReqOpcode.MEM_RD, 5 * lb, 1)
    assert got == Response("drs", DRS_MEMDATA, 1, bytes(lb), True)   # the memory's beat
    assert dev.m2s_req(ReqOpcode.MEM_RD, 6 * lb, 2).poison is False
    assert read(dev, 0x014) == (STATUS["rd_err"], True)
    write(dev, 0x014, 0x1F)
    dev.faults.write_lines.add(7)
    assert dev.m2s_rwd(RwdOpcode.MEM_WR, 7 * lb, 3, bytes(lb), 0) == Response("ndr", NDR_CMP, 3)
    assert dev.peek(7 * lb, 1).tobytes() == bytes([0x77] * lb), "a failed write changed memory"
    assert read(dev, 0x014) == (STATUS["wr_err"], True)
    c = counters(dev)
    assert (c["gbinary_reads"], c["writes"], c["errors"]) == (2, 1, 2)


# -- the driver on the model ------------------------------------------------------------

def test_driver_on_the_model():
    async def session():
        dev = Device(SMALL)
        nf = await Driver.probe(dev)
        assert nf.params == SMALL
        assert nf.profile.features == PROFILES[SMALL.profile].features
        await nf.set_default(Mode.GBINARY, format=Format.SIGN)
        await nf.set_region(1, base=0x1_0000_0040, limit=0x1_0000_0400, mode=Mode.GTERNARY,
                            gate_kind=GateKind.MARGIN, threshold=2)
        region = await nf.region(1)
        assert (region["base"], region["limit"], region["mode"], region["enable"]) == \
            (0x1_0000_0040, 0x1_0000_0400, Mode.GTERNARY, 1)
        assert (await nf.default())["format"] == Format.SIGN
        dev.m2s_req(0b0011, 0, 0)
        assert (await nf.status())["unsupported"]
        await nf.clear_status()
        assert not any((await nf.status()).values())
        await nf.clear_region(1)
        assert (await nf.region(1))["enable"] == 0
        assert (await nf.counters())["errors"] == 1
        with pytest.raises(BusError):
            await nf.write("REGION0_CFG", BAD_CFGS[0])
    run(session())


# -- bulk path ---------------------------------------------------------------------------

@pytest.mark.parametrize("params", [DEFAULT, SMALL], ids=lambda p: p.tag())
def test_bulk_path_equals_per_line_path(params):
    rng = np.random.default_rng(7)
    lb = params.line_bytes
    bulk, single = Device(params), Device(params)
    start, n = 100, 300
    for dev in (bulk, single):
        write(dev, 0x010, cfg_encode(Mode.GTERNARY, Format.MARGIN, GateKind.PATTERN, 7, 4))
        set_region(dev, 0, 150, 200, cfg_encode(Mode.GBINARY, Format.SIGN))
        set_region(dev, 1, 120, 260, cfg_encode(Mode.GTERNARY, Format.COUNT,
                                                GateKind.PATTERN, 5, 3))
        dev.faults.write_lines.update({130, 300})
        dev.faults.read_lines.update({101, 199, 250})
    data = random_lines(rng, n, params)
    run(bulk.write_lines(start * lb, data))
    for k in range(n):
        single.m2s_rwd(RwdOpcode.MEM_WR, (start + k) * lb, k, data[k].tobytes(), 0)
    with pytest.raises(PoisonError) as err:
        run(bulk.read_lines(start * lb, n))
    responses = [single.m2s_req(ReqOpcode.MEM_RD, (start + k) * lb, k) for k in range(n)]
    assert err.value.data.tobytes() == b"".join(r.data for r in responses)
    assert err.value.addrs == [(start + k) * lb for k, r in enumerate(responses) if r.poison]
    assert err.value.addrs == [101 * lb, 199 * lb, 250 * lb]
    assert np.array_equal(bulk.peek(0, 512), single.peek(0, 512))
    assert counters(bulk) == counters(single)
    assert read(bulk, 0x014) == read(single, 0x014)
    assert counters(bulk)["gternary_reads"] == n - 50


def test_bulk_round_trip_far_apart():
    """Sparse memory: lines at the top of the 52-bit space cost one chunk."""
    p = DEFAULT
    dev = Device(p)
    lines = random_lines(np.random.default_rng(1), 5, p)
    top = (1 << 52) - 5 * p.line_bytes
    run(dev.write_lines(top, lines))
    assert np.array_equal(run(dev.read_lines(top, 5)), lines)
    assert np.array_equal(dev.peek(0, 3), np.zeros((3, p.line_bytes), np.uint8))
    assert run(dev.read_lines(0, 0)).shape == (0, p.line_bytes)


# -- bad input ---------------------------------------------------------------------------

@pytest.mark.parametrize("call, error, words", [
    (lambda d: d.write_lines(8, np.zeros((1, 64), np.uint8)), ValueError, "0x8"),
    (lambda d: d.write_lines(0, np.zeros((1, 64), np.int8)), TypeError, "int8"),
    (lambda d: d.write_lines(0, np.zeros((2, 32), np.uint8)), ValueError, "(2, 32)"),
    (lambda d: d.write_lines(0, [[0] * 64]), TypeError, "list"),
    (lambda d: d.write_lines(1 << 52, np.zeros((1, 64), np.uint8)), ValueError, "0x10000000000000"),
    (lambda d: d.write_lines((1 << 52) - 64, np.zeros((2, 64), np.uint8)), ValueError, "2 lines"),
    (lambda d: d.read_lines(32, 1), ValueError, "0x20"),
    (lambda d: d.read_lines(0, 1.5), TypeError, "1.5"),
    (lambda d: d.read_lines(0, -1), ValueError, "-1"),
    (lambda d: d.read(0x1000), ValueError, "0x1000"),
    (lambda d: d.write(0x10, 1 << 32), ValueError, "0x100000000"),
    (lambda d: d.write(0x10, 0, strb=0x10), ValueError, "0x10"),
    (lambda d: d.read("ID"), TypeError, "'ID'"),
])
def test_bad_async_input(call, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        run(call(Device(DEFAULT)))


@pytest.mark.parametrize("call, error, words", [
    (lambda d: d.m2s_req(1, 1 << 52, 0), ValueError, "addr"),
    (lambda d: d.m2s_req(16, 0, 0), ValueError, "opcode"),
    (lambda d: d.m2s_req(1, 0, 1 << 16), ValueError, "tag"),
    (lambda d: d.m2s_req(1, -64, 0), ValueError, "addr"),
    (lambda d: d.m2s_req(1, True, 0), TypeError, "addr"),
    (lambda d: d.m2s_rwd(1, 0, 0, bytes(63), 0), ValueError, "63 bytes"),
    (lambda d: d.m2s_rwd(1, 0, 0, 0, 0), TypeError, "int"),
    (lambda d: d.m2s_rwd(1, 0, 0, bytes(64), 1 << 64), ValueError, "be"),
    (lambda d: d.m2s_rwd(1, 0, 0, bytes(64), 0, poison=2), ValueError, "poison"),
    (lambda d: d.peek(3, 1), ValueError, "0x3"),
    (lambda d: Device({"line_bits": 64}), TypeError, "TopParams"),
])
def test_bad_input(call, error, words):
    dev = Device(DEFAULT)
    with pytest.raises(error, match=words):
        call(dev)
    assert run(dev.read(0x014)) == (0, True), "bad input reached the model's state"


# -- the packed view (contract section 6) -------------------------------------------------

VIEW_BUILD = Profile("full-view", frozenset(FEATURES))
NO_VIEW = PROFILES["full"].without("packed_view")


def view_words(r):
    base = 0x100 + 0x20 * r
    return {"VIEW": base + 0x14, "SOURCE_LO": base + 0x18, "SOURCE_HI": base + 0x1C}


def test_view_registers_exist_only_with_the_feature():
    dev = Device(SMALL, profile=NO_VIEW)
    assert write(dev, view_words(0)["VIEW"], 1) is False, "a build without the view maps none"
    paper = Device(TopParams(line_bits=64, workers=4, regions=2, profile="paper"))
    assert write(paper, view_words(1)["SOURCE_LO"], 0x1000) is False
    dev = Device(SMALL, profile=VIEW_BUILD)
    words = view_words(1)
    assert write(dev, words["SOURCE_LO"], 0x1234_5FFF)
    assert read(dev, words["SOURCE_LO"]) == (0x1234_5000, True), "bits [11:0] are no field"
    assert write(dev, words["SOURCE_HI"], 0xFFFF_FFFF)
    assert read(dev, words["SOURCE_HI"]) == (0xF_FFFF, True)


def test_view_refusals():
    dev = Device(SMALL, profile=VIEW_BUILD)
    cfg, view = region_words(0)["CFG"], view_words(0)["VIEW"]
    # reset: mode BYPASS, so VIEW cannot be set
    assert write(dev, view, 1) is False
    assert read(dev, 0x014)[0] & STATUS["bad_csr"]
    assert write(dev, cfg, cfg_encode(Mode.GBINARY, Format.COUNT))
    assert write(dev, view, 1)
    # a view's mode cannot become BYPASS or IDENTITY (byte 0 holds the mode)
    for mode in (Mode.BYPASS, Mode.IDENTITY):
        assert write(dev, cfg, cfg_encode(mode)) is False
        assert write(dev, cfg, int(mode), strb=0x1) is False
    assert write(dev, cfg, cfg_encode(Mode.GTERNARY, Format.MARGIN, GateKind.MARGIN, 3, 2, 2))
    assert write(dev, view, 0) and write(dev, cfg, cfg_encode(Mode.BYPASS))
    assert counters(dev)["errors"] == 5


def program_view(dev, r, base_line, limit_line, source, cfg):
    """Region ``r`` as a view of the source window at byte ``source``, raw writes."""
    words = view_words(r)
    assert write(dev, region_words(r)["CFG"], cfg)
    assert write(dev, words["SOURCE_LO"], source & 0xFFFF_FFFF)
    assert write(dev, words["SOURCE_HI"], source >> 32)
    assert write(dev, words["VIEW"], 1)
    set_region(dev, r, base_line, limit_line, cfg)


def test_view_read_by_hand():
    # 64-bit lines, W 4: B = 2 source lines a view line of 32 elements.  Source
    # lines 2 and 3 (view line 1): lanes 0xF (+1), 0x0 (-1), 0x3 (tie 0), 0x7 (+1) ...
    params = TopParams(line_bits=64, workers=4, regions=2)
    dev = Device(params, profile=VIEW_BUILD)
    program_view(dev, 1, 100, 110, 0x1000, cfg_encode(Mode.GBINARY, Format.COUNT))
    src = np.zeros((4, 8), np.uint8)
    src[2, 0], src[2, 1] = 0x0F, 0x73          # lanes 0xF, 0x0 | 0x3, 0x7
    src[3, :] = 0xFF
    dev.poke(0x1000, src)
    response = dev.m2s_req(ReqOpcode.MEM_RD, 101 * 8, 9)
    # byte 0: 01 | 11 << 2 | 00 << 4 | 01 << 6; lanes 4..15 of line 2 read -1; line 3 +1
    assert response == Response("drs", DRS_MEMDATA, 9,
                                bytes([0x4D, 0xFF, 0xFF, 0xFF, 0x55, 0x55, 0x55, 0x55]))
    assert counters(dev)["gbinary_reads"] == 1
    # the source lines read through no view are lanes as before (DEFAULT_CFG: BYPASS)
    assert dev.m2s_req(ReqOpcode.MEM_RD, 0x1000 + 2 * 8, 1).data == src[2].tobytes()


@pytest.mark.parametrize("operand", [Operand.SIGNS, Operand.COUNTS4])
def test_view_reads_are_the_golden_view(operand):
    rng = np.random.default_rng(3)
    params = TopParams(line_bits=128, workers=8, regions=2)
    dev = Device(params, profile=VIEW_BUILD)
    lb = params.line_bytes
    counts = dict(operand=operand, total=64) if operand else {}
    cfg = cfg_encode(Mode.GTERNARY, Format.SIGN, GateKind.PATTERN, 7, 4, layout=Layout.WORKER_MAJOR,
                     **counts)
    program_view(dev, 0, 40, 60, 0x2_0000_0000, cfg)
    beats = view_beats(params.line_bits, params.workers, operand)
    src = rng.integers(0, 256, (20 * beats, lb), dtype=np.uint8)
    if operand:
        src &= 0x33
    dev.poke(0x2_0000_0000, src)
    dev.faults.read_lines.add(0x2_0000_0000 // lb + 5 * beats + 1)
    with pytest.raises(PoisonError) as err:
        run(dev.read_lines(40 * lb, 20))
    want = golden.pack_view(src, params.workers, Mode.GTERNARY, GateKind.PATTERN, 7, 4,
                     layout=Layout.WORKER_MAJOR, **counts)
    assert err.value.addrs == [45 * lb]
    good = [k for k in range(20) if k != 5]
    assert np.array_equal(err.value.data[good], want[good])
    assert read(dev, 0x014)[0] & STATUS["rd_err"]
    assert counters(dev)["gternary_reads"] == 20 and counters(dev)["errors"] == 1


def test_driver_programs_a_view():
    async def session():
        params = TopParams(line_bits=64, workers=8, regions=2)
        dev = Device(params, profile=VIEW_BUILD)
        nf = Driver(dev, params, profile=VIEW_BUILD)
        with pytest.raises(ValueError, match="aligned"):
            await nf.set_view(0, base=0, limit=0x400, source=0x1040, mode=Mode.GBINARY)
        with pytest.raises(CfgError, match="G-Binary or G-Ternary"):
            await nf.set_view(0, base=0, limit=0x400, source=0x1000, mode=Mode.IDENTITY)
        await nf.set_view(0, base=0x800, limit=0xC00, source=0x1_0000_3000, mode=Mode.GBINARY)
        region = await nf.region(0)
        assert (region["view"], region["source"], region["mode"], region["enable"]) == \
            (1, 0x1_0000_3000, Mode.GBINARY, 1)
        src = np.full((4, 8), 0xF0, np.uint8)        # every lane a tie: 0
        src[1] = 0xFF                                  # +1
        dev.poke(0x1_0000_3000 + 4 * 8, src)          # view line 1
        assert (await dev.read_lines(0x808, 1)).tolist() == [[0, 0, 0x55, 0x55, 0, 0, 0, 0]]
        await nf.set_region(0, base=0x800, limit=0xC00, mode=Mode.BYPASS)
        assert (await nf.region(0))["view"] == 0
        await nf.clear_region(0)
        assert (await nf.region(0))["source"] == 0
        assert (await nf.counters())["errors"] == 0
        with pytest.raises(ValueError, match="no packed view"):
            await Driver(dev, params, profile=NO_VIEW).set_view(0, base=0, limit=64, source=0,
                                                                mode=Mode.GBINARY)
    run(session())
