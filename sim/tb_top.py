"""Testbench pieces for the top ``neuron_fabric``: bus models, reference
models and a scoreboard.  Importable without a simulator running, so other
testbenches can reuse the bus models.

Bus models
----------
``ReqSource``, ``RwdSource``, ``DrsSink``, ``NdrSink`` (and the matching
``*Bus``/``*Transaction``/``*Monitor``) drive and take the four CXL.mem
channels by prefix (``m2s_req``, ``m2s_rwd``, ``s2m_drs``, ``s2m_ndr``); they
are cocotbext-axi streams, so ``set_pause_generator`` gives idle cycles and
backpressure.  :class:`FaultyAxiRam` is an ``AxiRam`` that answers SLVERR for
chosen lines and can hold many transactions in its queues (so the in-flight
table fills).  :class:`ReorderingAxiRam` answers reads out of order.
:func:`pauses` makes a random pause generator.

Reference models
----------------
:class:`ConfigState` is the control state as contract 4.3 reads it (DEFAULT_CFG
and the region table); :meth:`ConfigState.read_config` gives the
configuration and line index of a read, and :func:`expected_read` the response
bytes from the golden model.  :class:`ConfigHistory` records when control
writes took effect.

Top-level harness
-----------------
:class:`TopTB` owns clock, reset and all bus models, counts cycles, records
every handshake in one monitor (so request acceptance cycles, CSR write
BVALIDs and responses are ordered) and checks every response against a
:class:`TopScoreboard`: each request answered exactly once, on the right
channel, with the right tag, data and poison bit; ``devload`` 0 whenever
nothing is in flight.
"""

import itertools
import logging
import random
from dataclasses import dataclass, field, fields

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster
from cocotbext.axi.axi_ram import AxiRamRead, AxiRamWrite
from cocotbext.axi.memory import Memory
from cocotbext.axi.stream import define_stream

from neuron_fabric.host.driver import AxiLiteMasterBus, Driver
from neuron_fabric.host.device import read_response
from neuron_fabric.contract.facts import (DRS_MEMDATA, NDR_CMP, profile_named, Mode, ReqOpcode, RwdOpcode,
                                          TopParams)
from neuron_fabric.contract.regmap import RegisterMap, cfg_decode, cfg_encode

from neuron_fabric.sim.toolchain import bench_params

__all__ = [
    "ReqBus", "ReqSource", "RwdBus", "RwdSource", "DrsBus", "DrsSink", "NdrBus", "NdrSink",
    "FaultyAxiRam", "ReorderingAxiRam", "pauses", "ConfigState", "ConfigHistory",
    "expected_read", "RecordingBus", "TopScoreboard", "TopTB", "top_params", "SMALL_TOP",
]

#: The small exported top of the cocotb benches (the top bench, the device
#: model's differential test, the conformance bench, two levels on Icarus):
#: one parameter set, so one export and one simulator build serve them all.
#: Its in-flight table has eight entries, the fewest with which the
#: conformance bench can hold a batch of reads while R is stalled; the
#: formal checks of the top run with four.
SMALL_TOP = TopParams(line_bits=64, workers=4, stages=2, regions=4, max_outstanding=8)

ReqBus, ReqTransaction, ReqSource, ReqSink, ReqMonitor = define_stream(
    "M2sReq", signals=["valid", "ready", "opcode", "addr", "tag"])
RwdBus, RwdTransaction, RwdSource, RwdSink, RwdMonitor = define_stream(
    "M2sRwd", signals=["valid", "ready", "opcode", "addr", "tag", "data", "be", "poison"])
DrsBus, DrsTransaction, DrsSource, DrsSink, DrsMonitor = define_stream(
    "S2mDrs", signals=["valid", "ready", "opcode", "tag", "data", "poison", "devload"])
NdrBus, NdrTransaction, NdrSource, NdrSink, NdrMonitor = define_stream(
    "S2mNdr", signals=["valid", "ready", "opcode", "tag", "devload"])



def _u(handle):
    """Unsigned value of a signal (1-bit handles give a ``Logic``)."""
    value = handle.value
    return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)


def top_params():
    """The parameter set a cocotb run was built for: the
    :class:`~neuron_fabric.contract.facts.TopParams` fields among the runner's
    ``params`` (:func:`~neuron_fabric.sim.toolchain.bench_params`)."""
    params = bench_params()
    return TopParams(**{f.name: params[f.name] for f in fields(TopParams) if f.name in params})


def pauses(probability, rng=random):
    """Endless generator of pause flags, each True with ``probability``."""
    while True:
        yield rng.random() < probability


# -- memory models ------------------------------------------------------------------

class _FaultyRead(AxiRamRead):
    def __init__(self, *args, faults, **kwargs):
        self.faults = faults
        super().__init__(*args, **kwargs)

    async def _read(self, address, length):
        if address // length in self.faults.read_lines:
            raise IOError(f"injected read error at {address:#x}")
        return await super()._read(address, length)


class _FaultyWrite(AxiRamWrite):
    def __init__(self, *args, faults, **kwargs):
        self.faults = faults
        super().__init__(*args, **kwargs)

    async def _write(self, address, data):
        if address // self.byte_lanes in self.faults.write_lines:
            raise IOError(f"injected write error at {address:#x}")
        await super()._write(address, data)


@dataclass
class _Faults:
    read_lines: set = field(default_factory=set)
    write_lines: set = field(default_factory=set)


class FaultyAxiRam(Memory):
    """``AxiRam`` that answers SLVERR for the line numbers in
    ``faults.read_lines`` / ``faults.write_lines`` (a failed write changes
    nothing).  ``depth`` is how many AR/AW/W beats its queues take before
    pushing back."""

    def __init__(self, bus, clock, reset=None, size=2**32, depth=2):
        self.faults = _Faults()
        super().__init__(size)
        self.write_if = _FaultyWrite(bus.write, clock, reset, mem=self.mem, faults=self.faults)
        self.read_if = _FaultyRead(bus.read, clock, reset, mem=self.mem, faults=self.faults)
        for ch in (self.write_if.aw_channel, self.write_if.w_channel, self.write_if.b_channel,
                   self.read_if.ar_channel, self.read_if.r_channel):
            ch.queue_occupancy_limit = depth

    def channels(self):
        """Every AXI channel model, for pause generators."""
        return (self.write_if.aw_channel, self.write_if.w_channel, self.write_if.b_channel,
                self.read_if.ar_channel, self.read_if.r_channel)


class ReorderingAxiRam(FaultyAxiRam):
    """:class:`FaultyAxiRam` whose read side answers the pending reads in a
    random order (the AXI slave may reorder across IDs)."""

    def __init__(self, bus, clock, reset=None, size=2**32, depth=8, seed=1):
        super().__init__(bus, clock, reset, size, depth)
        self._rng = random.Random(seed)
        self.read_if._process_read = self._process_read_reordered

    async def _process_read_reordered(self):
        rif = self.read_if
        pending = []
        while True:
            while not rif.ar_channel.empty():
                pending.append(rif.ar_channel.recv_nowait())
            if not pending:
                pending.append(await rif.ar_channel.recv())
                continue
            ar = pending.pop(self._rng.randrange(len(pending)))
            r = rif.r_channel._transaction_obj()
            r.rid = int(ar.arid)
            r.rlast = 1
            r.rresp = 0
            try:
                data = await rif._read(int(ar.araddr), rif.byte_lanes)
            except Exception:
                data = bytes(rif.byte_lanes)
                r.rresp = 2
            r.rdata = int.from_bytes(data, "little")
            await rif.r_channel.send(r)


# -- reference models ---------------------------------------------------------------

@dataclass
class ConfigState:
    """DEFAULT_CFG and the region table as register words, read the contract 4.3
    way.  ``regions[r]`` is ``[CFG, BASE_LO, BASE_HI, LIMIT_LO, LIMIT_HI]``."""
    params: TopParams
    default_cfg: int = cfg_encode()
    regions: list = None

    _WORDS = ("CFG", "BASE_LO", "BASE_HI", "LIMIT_LO", "LIMIT_HI")

    def __post_init__(self):
        if self.regions is None:
            self.regions = [[cfg_encode(), 0, 0, 0, 0] for _ in range(self.params.regions)]

    def copy(self):
        return ConfigState(self.params, self.default_cfg, [list(r) for r in self.regions])

    def apply_write(self, offset, value):
        """Record an accepted control write of ``value`` at ``offset``."""
        reg = RegisterMap(self.params).at(offset & ~3)
        if reg is None:
            return
        if reg.name == "DEFAULT_CFG":
            self.default_cfg = value & reg.writable_mask
        elif reg.name.startswith("REGION"):
            word = self._WORDS.index(reg.name.split("_", 1)[1])
            self.regions[reg.index][word] = value & reg.writable_mask

    def read_config(self, addr):
        """(cfg fields, line index in its region) of a read of byte address ``addr``."""
        lb = self.params.line_bytes
        line = addr // lb
        for cfg, base_lo, base_hi, limit_lo, limit_hi in self.regions:
            f = cfg_decode(cfg)
            base = ((base_hi << 32) | base_lo) // lb
            limit = ((limit_hi << 32) | limit_lo) // lb
            if f["enable"] and base <= line < limit:
                return f, line - base
        return cfg_decode(self.default_cfg), line


class RecordingBus:
    """Driver bus that records in a :class:`ConfigHistory` when each accepted
    control write took effect (between the cycle it started and the cycle its
    response arrived)."""

    def __init__(self, tb, inner):
        self.tb = tb
        self.inner = inner

    async def read(self, offset):
        return await self.inner.read(offset)

    async def write(self, offset, value):
        start = self.tb.cycle
        ok = await self.inner.write(offset, value)
        if ok:
            self.tb.state.apply_write(offset, value)
            self.tb.history.add(start, self.tb.cycle, self.tb.state)
        return ok


def expected_read(params, line_bytes_value, cfg, index):
    """Response bytes for stored ``line_bytes_value`` read under ``cfg`` as
    line ``index`` of its region (golden model, for the build's profile)."""
    line = np.frombuffer(bytes(line_bytes_value), dtype=np.uint8).reshape(1, -1)
    return read_response(params, profile_named(params.profile), line, index, cfg).tobytes()


class ConfigHistory:
    """When control writes took effect: each entry is (first cycle the write
    may apply, cycle by which it applies, state after it)."""

    def __init__(self, state):
        self._initial = state.copy()
        self._events = []

    def add(self, start, end, state):
        self._events.append((start, end, state.copy()))

    def states_at(self, cycle):
        """Every state a request accepted at ``cycle`` may legally see."""
        settled = self._initial
        maybe = []
        for start, end, state in self._events:
            if end < cycle:
                settled = state
            elif start <= cycle:
                maybe.append(state)
        return [settled] + maybe


# -- scoreboard ---------------------------------------------------------------------

@dataclass
class Pending:
    """A request waiting for its response."""
    channel: str          # "drs" or "ndr"
    addr: int
    kind: str             # "read", "write", "cmp"
    accept_cycle: int = None
    poison: bool = False  # expected DRS poison
    data: bytes = None    # stored line at acceptance (reads)


class TopScoreboard:
    """Checks every response; counts what was checked."""

    def __init__(self, params, history):
        self.params = params
        self.history = history
        self.pending = {}           # tag -> Pending
        self.unanswered_tags = set()  # tags of requests that need no response
        self.errors = []
        self.checked = {"drs": 0, "ndr": 0}
        self.modes = {m: 0 for m in Mode}

    def expect(self, tag, pending):
        assert tag not in self.pending, f"testbench reused tag {tag:#x} while in flight"
        self.pending[tag] = pending

    def fail(self, msg):
        self.errors.append(msg)
        if len(self.errors) < 20:
            cocotb.log.error(msg)

    def response(self, channel, tag, opcode, data=None, poison=0):
        exp = self.pending.pop(tag, None)
        if exp is None:
            self.fail(f"{channel.upper()} with tag {tag:#x} that no request is waiting for")
            return
        if exp.channel != channel:
            self.fail(f"tag {tag:#x}: answered on {channel.upper()}, expected {exp.channel.upper()}")
            return
        if exp.accept_cycle is None:
            self.fail(f"tag {tag:#x}: answered before it was accepted")
        expected_opcode = DRS_MEMDATA if channel == "drs" else NDR_CMP
        if opcode != expected_opcode:
            self.fail(f"tag {tag:#x}: opcode {opcode:#x}, expected {expected_opcode:#x}")
        self.checked[channel] += 1
        if channel != "drs":
            return
        if bool(poison) != exp.poison:
            self.fail(f"tag {tag:#x}: DRS poison {poison}, expected {int(exp.poison)}")
        if exp.poison:
            return
        lb = self.params.line_bytes
        got = int(data).to_bytes(lb, "little")
        options = []
        for state in self.history.states_at(exp.accept_cycle):
            cfg, index = state.read_config(exp.addr)
            options.append((cfg, index, expected_read(self.params, exp.data, cfg, index)))
        for cfg, _, want in options:
            if got == want:
                self.modes[Mode(cfg["mode"])] += 1
                return
        cfg, index, want = options[0]
        self.fail(f"tag {tag:#x} addr {exp.addr:#x}: data {got.hex()} expected {want.hex()} "
                  f"(cfg {cfg}, line {index} of its region; {len(options)} candidate configs)")


# -- the harness ----------------------------------------------------------------------

class TopTB:
    """Clock, reset, bus models and the scoreboard around ``neuron_fabric``.

    Parameters
    ----------
    dut :
        The cocotb handle of ``neuron_fabric``.
    params : TopParams
    reorder : bool
        Use :class:`ReorderingAxiRam` for the memory.
    mem_depth : int
        Queue depth of the memory model (how many AXI requests it holds).
    """

    def __init__(self, dut, params, *, reorder=False, mem_depth=64, seed=1):
        self.dut = dut
        self.params = params
        self.rng = random.Random(seed)
        self.cycle = 0
        logging.getLogger(f"cocotb.{dut._name}").setLevel(logging.WARNING)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.req = ReqSource(ReqBus.from_prefix(dut, "m2s_req"), dut.clk, dut.rst)
        self.rwd = RwdSource(RwdBus.from_prefix(dut, "m2s_rwd"), dut.clk, dut.rst)
        self.drs = DrsSink(DrsBus.from_prefix(dut, "s2m_drs"), dut.clk, dut.rst)
        self.ndr = NdrSink(NdrBus.from_prefix(dut, "s2m_ndr"), dut.clk, dut.rst)
        ram_cls = ReorderingAxiRam if reorder else FaultyAxiRam
        self.ram = ram_cls(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst,
                           size=2**32, depth=mem_depth)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.driver = Driver(RecordingBus(self, AxiLiteMasterBus(self.axil)), params)
        self.model = {}                 # line number -> bytes (the memory as contract says)
        self.state = ConfigState(params)
        self.history = ConfigHistory(self.state)
        self.board = TopScoreboard(params, self.history)
        self.in_flight_host = 0
        self.devload_seen = set()
        self.max_devload = 0
        self._queued = {}               # tag -> Pending not yet accepted
        self.accepted_at = {}           # tag -> cycle of its last acceptance
        self.answered_at = {}           # tag -> cycle of its last response
        self.responses = {}             # tag -> data bytes of its last DRS
        cocotb.start_soon(self._monitor())

    # -- set-up -------------------------------------------------------------------

    async def reset(self, cycles=4):
        """Pulse ``rst``; every expectation and control write is forgotten
        (requests not yet sent are dropped)."""
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, cycles)
        self.req.clear()
        self.rwd.clear()
        self.state = ConfigState(self.params)
        self.history = ConfigHistory(self.state)
        self.board = TopScoreboard(self.params, self.history)
        self._queued.clear()
        self.in_flight_host = 0
        self.dut.rst.value = 0
        await ClockCycles(self.dut.clk, 2)

    def set_pauses(self, host, memory=None):
        """Random idle cycles on both M2S sources and backpressure on both S2M
        sinks with probability ``host``, pauses on every AXI channel with
        probability ``memory`` (default ``host``); 0 turns them off."""
        memory = host if memory is None else memory
        chans = [(self.req, host), (self.rwd, host), (self.drs, host), (self.ndr, host)]
        chans += [(ch, memory) for ch in self.ram.channels()]
        for ch, probability in chans:
            if probability:
                ch.set_pause_generator(pauses(probability, random.Random(self.rng.random())))
            else:
                ch.clear_pause_generator()

    def fill(self, lines, seed=0):
        """Random contents for ``lines`` (line numbers), in the RAM and the model."""
        rng = np.random.default_rng(seed)
        lb = self.params.line_bytes
        for line in lines:
            value = rng.integers(0, 256, lb, dtype=np.uint8).tobytes()
            self.ram.write(line * lb, value)
            self.model[line] = value

    def store(self, line, value):
        lb = self.params.line_bytes
        self.ram.write(line * lb, value)
        self.model[line] = bytes(value)

    async def set_default(self, mode, **fields):
        await self.driver.set_default(mode, **fields)

    # -- requests -----------------------------------------------------------------

    def read(self, tag, line, opcode=ReqOpcode.MEM_RD, poison=False):
        lb = self.params.line_bytes
        self._queued[tag] = Pending("drs", line * lb, "read", poison=poison)
        self.req.send_nowait(ReqTransaction(opcode=opcode, addr=line * lb + self.rng.randrange(lb),
                                            tag=tag))

    def req_other(self, tag, opcode, line=0):
        """A Req opcode answered by NDR Cmp (``needs=False`` for MemSpecRd)."""
        lb = self.params.line_bytes
        if opcode != ReqOpcode.MEM_SPEC_RD:
            self._queued[tag] = Pending("ndr", line * lb, "cmp")
        self.req.send_nowait(ReqTransaction(opcode=opcode, addr=line * lb, tag=tag))

    def write(self, tag, line, data, opcode=RwdOpcode.MEM_WR, be=None, poison=0, stores=True):
        """Queue a RwD request; the model changes when it is accepted if ``stores``."""
        lb = self.params.line_bytes
        if be is None:
            be = (1 << lb) - 1 if opcode == RwdOpcode.MEM_WR else self.rng.getrandbits(lb)
        self._queued[tag] = Pending("ndr", line * lb, "write")
        if stores:
            old = self.model.get(line, bytes(lb))
            if opcode == RwdOpcode.MEM_WR:
                new = bytes(data)
            else:
                new = bytes(data[i] if (be >> i) & 1 else old[i] for i in range(lb))
            self.model[line] = new
        self.rwd.send_nowait(RwdTransaction(opcode=opcode, addr=line * lb, tag=tag,
                                            data=int.from_bytes(data, "little"), be=be,
                                            poison=poison))

    # -- the monitor ----------------------------------------------------------------

    async def _monitor(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            self.cycle += 1
            if dut.rst.value:
                continue
            # devload as it stood in the cycle that ends at this edge
            dl = (_u(dut.s2m_drs_devload), _u(dut.s2m_ndr_devload))
            self.devload_seen.update(dl)
            self.max_devload = max(self.max_devload, *dl)
            if self.in_flight_host == 0 and dl != (0, 0):
                self.board.fail(f"cycle {self.cycle}: devload {dl} with nothing in flight")
            if dut.m2s_req_valid.value and dut.m2s_req_ready.value:
                self._accepted(_u(dut.m2s_req_tag))
            if dut.m2s_rwd_valid.value and dut.m2s_rwd_ready.value:
                self._accepted(_u(dut.m2s_rwd_tag))
            if dut.s2m_drs_valid.value and dut.s2m_drs_ready.value:
                self.in_flight_host -= 1
                self.answered_at[_u(dut.s2m_drs_tag)] = self.cycle
                self.responses[_u(dut.s2m_drs_tag)] = _u(dut.s2m_drs_data).to_bytes(
                    self.params.line_bytes, "little")
                self.board.response("drs", _u(dut.s2m_drs_tag),
                                    _u(dut.s2m_drs_opcode),
                                    _u(dut.s2m_drs_data),
                                    _u(dut.s2m_drs_poison))
            if dut.s2m_ndr_valid.value and dut.s2m_ndr_ready.value:
                self.in_flight_host -= 1
                self.answered_at[_u(dut.s2m_ndr_tag)] = self.cycle
                self.board.response("ndr", _u(dut.s2m_ndr_tag),
                                    _u(dut.s2m_ndr_opcode))
            while not self.drs.empty():
                self.drs.recv_nowait()
            while not self.ndr.empty():
                self.ndr.recv_nowait()

    def _accepted(self, tag):
        pending = self._queued.pop(tag, None)
        if pending is None:
            return                      # MemSpecRd: nothing to answer
        pending.accept_cycle = self.cycle
        self.accepted_at[tag] = self.cycle
        if pending.kind == "read":
            pending.data = self.model.get(pending.addr // self.params.line_bytes,
                                          bytes(self.params.line_bytes))
        self.board.expect(tag, pending)
        self.in_flight_host += 1

    # -- waiting ---------------------------------------------------------------------

    def outstanding(self):
        return len(self._queued) + len(self.board.pending)

    async def drain(self, limit=100_000):
        """Wait until every request has been answered (fails after ``limit`` cycles)."""
        for _ in range(limit):
            if not self.outstanding() and self.req.empty() and self.rwd.empty():
                await ClockCycles(self.dut.clk, 20)
                return
            await RisingEdge(self.dut.clk)
        raise AssertionError(f"{self.outstanding()} requests unanswered after {limit} cycles: "
                             f"{sorted(self.board.pending)[:10]}")

    def check(self):
        assert not self.board.errors, f"{len(self.board.errors)} errors, first: {self.board.errors[0]}"


def tag_pool(size=4096):
    """Tags for requests that need a response (MemSpecRd uses :func:`spec_tags`)."""
    return list(range(size))


def spec_tags():
    """Tags for MemSpecRd (no response): never reused by the other requests."""
    return itertools.count(0x8000)
