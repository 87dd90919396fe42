"""Formal specifications of the datapath core, checked with SymbiYosys.

* :class:`LaneSpec` -- every lane of the core equals :func:`reference_lane`,
  a small Amaranth function written from contract section 2 (independent of
  the core's own structure), for every input line, every PATTERN mask
  and every configuration in range; IDENTITY and BYPASS lines pass
  unchanged whatever the other fields hold.  The line, its mask and its
  configuration are ``AnyConst`` and offered
  in every cycle, so a bounded check a few cycles past STAGES covers all
  inputs.
* :class:`HandshakeSpec` -- the stall logic against an ideal model of the
  handshake: every accepted line carries its sequence number (in the tag,
  and in every 16-bit word of an IDENTITY line), and the k-th line out must
  carry k.  So nothing is lost, duplicated or reordered, in any lane group;
  with the output ready high the input is ready after the first cycle; and
  with the output ready held high each line leaves exactly STAGES cycles after
  it went in.  Bounded (BMC) to STAGES + 7 cycles: reset, the first live
  cycle, a full pipeline and several cycles of stalls and bubbles.

Run as ``python -m neuron_fabric.sim.formal_datapath {lane,handshake} LINE_BITS
WORKERS STAGES`` to write and run one job under ``build/formal/``.
"""

import shutil
import sys

from amaranth import Cat, Elaboratable, Module, Mux, ResetSignal, Signal
from amaranth.asserts import AnyConst, AnySeq, Initial
from amaranth.back import rtlil
from amaranth.hdl import Assert, Assume

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import FIELD_WIDTHS, DatapathParams, Format, GateKind, Mode
from neuron_fabric.contract.paths import BUILD
from neuron_fabric.hdl.datapath import Datapath
from neuron_fabric.sim.formal import ENGINE, run_sby

FORMAL_BUILD = BUILD / "formal"


def reference_lane(lane, workers, mode, fmt, gate_kind, mask_bit, threshold):
    """contract section 2 for one lane: the W-bit output lane.  ``mask_bit`` is
    the lane's bit of ``gate_mask``, the PATTERN gate ``m`` (contract v2
    section 3).

    Written with wide signed arithmetic, straight from the formulas.
    Defined only for configurations in range (see :func:`config_in_range`).
    """
    w = workers
    c = sum(lane[k].as_unsigned() for k in range(w))        # sign count
    value = reference_value(c, w, mode, fmt, gate_kind, mask_bit, threshold)
    return Mux(mode[1], value.as_unsigned()[:w], lane)


def reference_value(c, total, mode, fmt, gate_kind, mask_bit, threshold):
    """The output value (signed) of a count ``c`` of ``total`` votes under
    G-Binary or G-Ternary (contract section 2; section 5.3 with a count
    operand's total), straight from the formulas."""
    a = (c * 2).as_signed() - total                          # vote margin
    pattern_keep = mask_bit
    margin_keep = Mux(a < 0, -a, a) >= threshold
    gate = Mux(mode == Mode.GBINARY, 1,
               Mux(gate_kind == GateKind.PATTERN, pattern_keep, margin_keep))
    c_g = Mux(gate, c, total // 2)
    a_g = Mux(gate, a, 0)
    sign = Mux(a_g > 0, 1, Mux(a_g < 0, -1, 0))
    return Mux(fmt == Format.COUNT, c_g, Mux(fmt == Format.MARGIN, a_g, sign))


def config_in_range(workers, fmt, threshold):
    """contract section 2's ranges of the core's fields (every mask is in range)."""
    return (fmt != 3) & (threshold <= workers)


class _CoreSpec(Elaboratable):
    """A spec around one core, checked from reset (``depth``: BMC cycles)."""

    def __init__(self, line_bits, workers, stages):
        self.dut = Datapath(line_bits=line_bits, workers=workers, stages=stages)

    def _module(self):
        """A module holding the core, reset assumed in the first cycle."""
        m = Module()
        m.submodules.dut = self.dut
        m.d.comb += Assume(ResetSignal() == Initial())
        return m, self.dut


class LaneSpec(_CoreSpec):
    """Every lane of the core against :func:`reference_lane`."""

    def elaborate(self, platform):
        m, dut = self._module()
        w = dut.workers
        fields = {name: AnyConst(width) for name, width in FIELD_WIDTHS.items()}
        data = AnyConst(dut.line_bits)
        mask = AnyConst(dut.lanes)
        m.d.comb += [
            dut.i_stream.valid.eq(1), dut.o_stream.ready.eq(1),
            dut.i_stream.payload.line.eq(data), dut.i_stream.payload.gate_mask.eq(mask),
            *(dut.i_stream.payload[name].eq(value) for name, value in fields.items()),
        ]
        identity = ~fields["mode"][1]
        m.d.comb += Assume(identity | config_in_range(w, fields["format"],
                                                      fields["gate_threshold"]))

        # The same line is offered in every cycle; the first copy is
        # accepted at the end of the first cycle after reset and leaves
        # STAGES cycles later.  Check that cycle (later ones repeat it), and
        # that the line is there, so the check cannot pass vacuously.
        last = dut.stages + 1
        cycle = Signal(range(last + 1))         # cycles since reset
        with m.If(cycle != last):
            m.d.sync += cycle.eq(cycle + 1)
        with m.If(cycle == last):
            m.d.comb += [
                Assert(dut.o_stream.valid),
                Assert(dut.o_stream.payload.tag == fields["tag"]),
            ]
            for i in range(dut.lanes):
                ref = reference_lane(data[i * w:(i + 1) * w], w, fields["mode"],
                                     fields["format"], fields["gate_kind"], mask[i],
                                     fields["gate_threshold"])
                m.d.comb += Assert(dut.o_stream.payload.line[i * w:(i + 1) * w] == ref)
        return m

    depth = property(lambda self: self.dut.stages + 3)


class HandshakeSpec(_CoreSpec):
    """The stall logic against an ideal in-order model of the handshake."""

    def elaborate(self, platform):
        m, dut = self._module()
        stages = dut.stages
        i, o = dut.i_stream, dut.o_stream

        n_in = Signal(16)        # lines accepted
        n_out = Signal(16)       # lines delivered
        in_fire = i.valid & i.ready
        out_fire = o.valid & o.ready
        with m.If(in_fire):
            m.d.sync += n_in.eq(n_in + 1)
        with m.If(out_fire):
            m.d.sync += n_out.eq(n_out + 1)

        # Free inputs, except that each line carries its sequence number.
        for name in ("mode", "format", "gate_kind", "gate_mask", "gate_threshold"):
            field = i.payload[name]
            m.d.comb += field.eq(AnySeq(len(field)))
        in_valid, out_ready = AnySeq(1), AnySeq(1)
        words = dut.line_bits // 16
        w = dut.workers
        m.d.comb += [
            i.valid.eq(in_valid), o.ready.eq(out_ready),
            i.payload.tag.eq(n_in),
            i.payload.line.eq(n_in.replicate(words)),
        ]
        identity = Signal()
        m.d.comb += identity.eq((i.payload.mode == Mode.IDENTITY) |
                                (i.payload.mode == Mode.BYPASS))

        # Which accepted lines are IDENTITY lines (their data is checkable),
        # indexed by sequence number modulo a window larger than the core.
        index_bits = (stages + 1).bit_length()
        is_identity = Signal(1 << index_bits)
        with m.If(in_fire):
            m.d.sync += is_identity.bit_select(n_in[:index_bits], 1).eq(identity)

        with m.If(out_fire):
            m.d.comb += [
                Assert(n_in != n_out),              # nothing out of nothing
                Assert(o.payload.tag == n_out),     # the k-th line out is line k
            ]
            # The first lane of every 16-bit word: one lane per copy of
            # the core's controls and clock enable, however they are cut,
            # and few enough that the solver sees only a small cone.
            with m.If(is_identity.bit_select(n_out[:index_bits], 1)):
                for k in range(words):
                    m.d.comb += Assert(o.payload.line[16 * k:16 * k + w] == n_out[:w])

        # Input ready: high whenever the output is, from the second cycle on.
        started = Signal()
        m.d.sync += started.eq(1)
        with m.If(started & ~ResetSignal() & o.ready):
            m.d.comb += Assert(i.ready)

        # Exact latency while the output's ready is held high: a line
        # accepted STAGES cycles ago (ready high ever since) leaves now; the
        # tag check above says it is that line.
        fires = Signal(stages)
        ready_run = Signal(range(stages + 1))
        m.d.sync += fires.eq(Cat(in_fire, fires[:-1]))
        with m.If(~o.ready):
            m.d.sync += ready_run.eq(0)
        with m.Elif(ready_run != stages):
            m.d.sync += ready_run.eq(ready_run + 1)
        with m.If(fires[-1] & (ready_run == stages) & o.ready):
            m.d.comb += Assert(o.valid)
        return m

    depth = property(lambda self: self.dut.stages + 7)


SPECS = {"lane": LaneSpec, "handshake": HandshakeSpec}


def write_job(kind, line_bits, workers, stages):
    """Write ``build/formal/datapath_<kind>_L.._W.._S../`` with the spec as
    RTLIL and its .sby file; return the .sby path."""
    return write_sby(SPECS[kind](line_bits, workers, stages),
                     f"datapath_{kind}_L{line_bits}_W{workers}_S{stages}")


def write_sby(spec, name):
    """Write ``build/formal/<name>/``: ``spec`` (an elaboratable with a
    ``depth``) as RTLIL and a BMC job of that depth; return the .sby path."""
    folder = FORMAL_BUILD / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "spec.il").write_text(rtlil.convert(spec, ports=[], emit_src=False))
    (folder / f"{name}.sby").write_text(f"""\
[options]
mode bmc
depth {spec.depth}

[engines]
{ENGINE}

[script]
read_rtlil spec.il
prep -flatten -top top

[files]
spec.il
""")
    return folder / f"{name}.sby"


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.sim.formal_datapath", parameters=True,
                        description="Write and run one formal job of the datapath core "
                                    "under build/formal/.")
    ap.add_argument("kind", choices=("lane", "handshake"))
    for name in ("line_bits", "workers", "stages"):
        ap.add_argument(name, type=int, metavar=name.upper())
    args = ap.parse_args(argv)
    DatapathParams(line_bits=args.line_bits, workers=args.workers, stages=args.stages)
    passed, log = run_sby(write_job(args.kind, args.line_bits, args.workers, args.stages))
    print(log)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
