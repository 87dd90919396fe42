"""The packed result view (contract section 6) on the exported top against
the device model (run by tests/hdl/top/test_view_rtl.py).

For each of ``configs`` rounds: new random source lines (in the memory
and the model alike), region 0 programmed as a view of them through the
driver (random mode, format, gate kind, P, K, T, layout and operand), region
1 as a plain region over the source lines (another random configuration),
then batches of MemRd and MemRdData: lines of the view, source lines
through region 1, and lines of DEFAULT_CFG.  Random pauses on every
channel (both M2S sources, both S2M sinks, every AXI channel); in some
batches the memory answers SLVERR for a few source lines, so single beats
of a view's burst fail.  A batch is only reads, so its responses do not
depend on the order the top serves them.  Checked: every DRS by tag
(data, poison; a poisoned response's data is unspecified for a view),
every control access, STATUS and the counters after each batch.

Parameters (the runner's ``params``, :func:`~neuron_fabric.sim.toolchain.bench_params`):
the TopParams fields, ``seed``, ``configs``, ``batches``.
"""

import logging
import random

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster

from neuron_fabric.contract.facts import (profile_named, Format, GateKind, Layout, Mode, Operand, Profile,
                                          ReqOpcode, view_beats)
from neuron_fabric.contract.regmap import COUNTERS, count_total_max
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.sim.tb_top import (DrsBus, DrsSink, FaultyAxiRam, ReqBus, ReqSource, ReqTransaction,
                                      pauses, top_params)
from neuron_fabric.sim.toolchain import bench_params

#: Where the view, its source window and the lines of DEFAULT_CFG are.
VIEW_BASE, SOURCE, DEFAULT_LINES = 0x10_0000, 0x4_0000, 0x8000
#: View lines each round reads.
VIEW_LINES = 8
READS = (ReqOpcode.MEM_RD, ReqOpcode.MEM_RD_DATA)


def _u(value):
    return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)


def view_profile(params):
    """The build's profile with the packed view (the full profile's
    features and ``packed_view``)."""
    base = profile_named(params.profile)
    return Profile(base.name, base.features | {"packed_view"})


def random_fields(rng, params):
    """Random valid CFG fields of a G-Binary or G-Ternary configuration (contract
    sections 4.4, 5.1): every format, gate kind, layout and operand."""
    operand = rng.choice(list(Operand))
    total = 0 if operand == Operand.SIGNS else rng.randint(1, count_total_max(operand))
    period = rng.randint(1, 15)
    top = params.workers if operand == Operand.SIGNS else min(31, total)
    return dict(mode=rng.choice([Mode.GBINARY, Mode.GTERNARY]), format=rng.choice(list(Format)[:3]),
                gate_kind=rng.choice(list(GateKind)), period=period, keep=rng.randint(0, period),
                threshold=rng.randint(0, top), layout=rng.choice(list(Layout)),
                operand=operand, total=total)


class _Both:
    """The driver's bus on the RTL's control port and the model at once."""

    def __init__(self, axil, device):
        self.axil, self.device = axil, device

    async def read(self, offset):
        resp = await self.axil.read(offset, 4)
        rtl = (int.from_bytes(resp.data, "little"), int(resp.resp) == 0)
        model = await self.device.read(offset)
        assert rtl == model, f"read {offset:#05x}: RTL {rtl}, model {model}"
        return model

    async def write(self, offset, value):
        resp = await self.axil.write(offset, int(value).to_bytes(4, "little"))
        ok = await self.device.write(offset, value)
        assert (int(resp.resp) == 0) == ok, f"write {value:#x} to {offset:#05x}: RTL {resp.resp}"
        return ok


@cocotb.test()
async def test_view_matches_device_model(dut):
    params, bench = top_params(), bench_params()
    rng = random.Random(bench.get("seed", 1))
    nrng = np.random.default_rng(bench.get("seed", 1))
    profile = view_profile(params)
    logging.getLogger(f"cocotb.{dut._name}").setLevel(logging.ERROR)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    req = ReqSource(ReqBus.from_prefix(dut, "m2s_req"), dut.clk, dut.rst)
    drs = DrsSink(DrsBus.from_prefix(dut, "s2m_drs"), dut.clk, dut.rst)
    ram = FaultyAxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=2**32, depth=8)
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    dev = Device(params, profile=profile)
    bus = _Both(axil, dev)
    nf = Driver(bus, params, profile=profile)
    dut.rst.value = 1
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)
    for ch in (req, drs, *ram.channels()):
        ch.set_pause_generator(pauses(0.2, random.Random(rng.random())))
    lb = params.line_bytes
    n_source = VIEW_LINES * max(view_beats(params.line_bits, params.workers, op) for op in Operand)
    seen = {"views": 0, "poison": 0, "kinds": set()}
    tag = 0
    for _ in range(bench.get("configs", 4)):
        raw = nrng.integers(0, 256, (n_source, lb), dtype=np.uint8)
        ram.write(SOURCE, raw.tobytes())
        dev.poke(SOURCE, raw)
        fields = random_fields(rng, params)
        seen["kinds"].add((fields["mode"], fields["layout"], fields["operand"]))
        await nf.set_view(0, base=VIEW_BASE, limit=VIEW_BASE + VIEW_LINES * lb, source=SOURCE,
                          **fields)
        await nf.set_region(1, base=SOURCE, limit=SOURCE + n_source * lb,
                            **random_fields(rng, params))
        for _ in range(bench.get("batches", 4)):
            bad = set(rng.sample(range(SOURCE // lb, SOURCE // lb + n_source), 2)) \
                if rng.random() < 0.4 else set()
            ram.faults.read_lines, dev.faults.read_lines = set(bad), set(bad)
            expected = {}
            for _ in range(rng.randrange(16, 48)):
                roll = rng.random()
                if roll < 0.6:
                    addr = VIEW_BASE + rng.randrange(VIEW_LINES) * lb
                    seen["views"] += 1
                elif roll < 0.9:
                    addr = SOURCE + rng.randrange(n_source) * lb
                else:
                    addr = DEFAULT_LINES + rng.randrange(16) * lb
                addr += rng.randrange(lb)
                op = rng.choice(READS)
                req.send_nowait(ReqTransaction(opcode=op, addr=addr, tag=tag))
                expected[tag] = (addr, dev.m2s_req(op, addr, tag))
                tag = (tag + 1) & 0xFFFF
            got = {}
            for _ in range(20_000):
                while not drs.empty():
                    t = drs.recv_nowait()
                    assert _u(t.tag) not in got, f"tag {_u(t.tag)} answered twice"
                    got[_u(t.tag)] = (_u(t.data), _u(t.poison))
                if len(got) >= len(expected):
                    break
                await ClockCycles(dut.clk, 4)
            assert set(got) == set(expected), f"missing {sorted(set(expected) - set(got))[:8]}"
            for t, (addr, want) in expected.items():
                data, poison = got[t]
                assert poison == want.poison, f"{fields} {addr:#x}: poison {poison}"
                seen["poison"] += poison
                if not poison:
                    assert data.to_bytes(lb, "little") == want.data, (
                        f"{fields} {addr:#x}: RTL {data.to_bytes(lb, 'little').hex()}, "
                        f"model {want.data.hex()}")
            await bus.read(nf.map["STATUS"].offset)
            for j in range(len(COUNTERS)):
                await bus.read(nf.map[f"COUNTER{j}_LO"].offset)
        await nf.clear_region(0)
    print(f"NF_VIEW_DIFF views {seen['views']} poison {seen['poison']} "
          f"kinds {len(seen['kinds'])}")
    assert seen["views"] and seen["poison"], seen
