"""The low-bit aggregation datapath core, ``neuron_fabric_datapath``.

Structure
---------
The read transform is split into four combinational steps; pipeline
registers sit on the boundaries between them.  The paper profile (no
optional feature) is built for area, every other profile for depth: for
W <= 8 each bit a step computes is a function of at most seven register
outputs (one LUT on ECP5: a LUT4 with the slice's wide-function
multiplexers)::

                 paper profile              other profiles
    boundary 0 | A: decode; first full-    A: popcount of each 4 worker bits;
               |    adder layer of each       output code, margin limit
               |    lane's popcount
    boundary 1 | B: two more layers        B: sign count c
    boundary 2 | C: the count c            C: output bit before gating (raw
               |                              bit or value by format); margin
               |                              drop; pattern drop (mask bit)
    boundary 3 | D: output lane (c, W/2    D: gated output
               |    if gated, or raw)
    boundary 4 | (output register, always present)

The PATTERN gate arrives as a mask, one bit per lane (``in_gate_mask``,
SPEC section 3): the top computes it from P, K and the line's phase when
it accepts the request.  A lane's mask bit travels with the lane's data,
in its group's registers, so no lane reads another lane's gate.

``STAGES`` registers are spread over the boundaries by :data:`PLACEMENT`,
so that STAGES = 1 is one register between input and output and each
extra stage shortens the longest run of steps between two registers (for
STAGES 2 and 3: step A alone, then B, C and D, or B and then C and D).
Past five stages the extra registers go on boundary 0 (input side), where
they cost only latency.

Timing structure
----------------
* **Stall.**  The pipeline moves when the consumer takes a line or the
  output register is empty (``out_ready | ~out_valid``), so bubbles are
  squeezed out and ``out_valid`` never waits for ``out_ready``.  The enable
  is computed per stage and per copy (each group, the per-line registers,
  and the spread tree's registers), each from its own copy of the valid
  chain (STAGES bits ending in a copy of ``out_valid``) kept beside that
  stage's flip-flops, so no enable net crosses the pipeline.  ``in_ready``
  is the per-line copy of the stage-0 enable, held low while ``rst`` is
  high.
* **Replicated control.**  The line is cut into groups of
  :data:`REPLICA_BITS` bits (one lane if W is wider) for the profile.  Every per-line
  control that lanes read is registered once per group, so each copy
  drives one group; a control is spread to the groups through a tree of at
  most :data:`SPREAD_FANOUT` copies per register, over two boundaries when
  they are free.  The copies are enabled by their group's enable, which
  keeps synthesis from merging them (a ``keep`` attribute on a register
  does not stop Yosys's ``opt_merge``).
* **Set/reset.**  Only the valid bits have a reset; data registers are
  reset-less.  In the paper profile a gated lane reads the constant W/2;
  the count bits' output flip-flops take it by their synchronous
  set/reset, driven by ``gated & en[g]`` from the group's own control
  copies (one net per lane), with the reset over the enable as ECP5
  flip-flops implement it.  Elsewhere a forced value is written as AND/OR
  logic, not as a multiplexer to a constant, so that synthesis does not
  turn it into a flip-flop reset gated by the enable.
"""

from amaranth import Cat, Const, Module, Mux, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.host.facts import (CORE_FEATURES, DatapathParams, FIELD_WIDTHS, Format,
                                      GateKind, Mode, Profile, PROFILES)

__all__ = ["Datapath", "PLACEMENT", "REPLICA_BITS"]


#: For each STAGES value, how many registers sit on boundaries 0..4.
PLACEMENT = {
    1: (0, 0, 0, 0, 1),
    2: (0, 1, 0, 0, 1),
    3: (0, 1, 1, 0, 1),
    4: (0, 1, 1, 1, 1),
    5: (1, 1, 1, 1, 1),
    6: (2, 1, 1, 1, 1),
    7: (3, 1, 1, 1, 1),
    8: (4, 1, 1, 1, 1),
}

#: Line bits served by one copy of the per-line control registers, by kind
#: of profile.  The paper profile's controls are few and drive one LUT per
#: bit; every other profile's drive wide functions and placed better with
#: fewer, larger groups (ECP5, full profile with the v1 pattern network
#: that crossed groups, median of three seeds: 219.5 -> 243.7 MHz at 512
#: bits and 186.9 -> 226.2 at 1024 going from 16 to 32 bits per copy).
REPLICA_BITS = {"paper": 16, "other": 32}

#: Most copies one register of a spread per-line control feeds.
SPREAD_FANOUT = 8

#: Output code of a line that passes unchanged (codes 0..2 are the formats).
_IDENTITY = 3


class _Gated:
    """A vector whose bits read constants under conditions.

    Bit ``b`` is ``const >> b & 1`` when ``cond[b]`` is high, else
    ``value[b]``; ``cond[b]`` is None for a bit without a condition.  A
    register of it resets the bit synchronously under ``cond[b]`` and its
    clock enable (the reset has priority, as ECP5 flip-flops implement it).
    """

    def __init__(self, value, cond, const):
        assert len(cond) == len(value)
        self.value, self.cond, self.const = value, cond, const

    def __len__(self):
        return len(self.value)


def _full_adder(wire, a, b, c):
    """Sum and carry of three bits; the carry as a mux on the half sum."""
    s = wire(a ^ b)
    return wire(s ^ c), wire(Mux(s, c, a))


def _compress_layer(wire, columns):
    """One layer of full adders over each column of equal-weight bits."""
    out = [[] for _ in range(len(columns) + 1)]
    for weight, bits in enumerate(columns):
        full = len(bits) - len(bits) % 3
        for k in range(0, full, 3):
            s, c = _full_adder(wire, *bits[k:k + 3])
            out[weight].append(s)
            out[weight + 1].append(c)
        out[weight].extend(bits[full:])
    while out and not out[-1]:
        out.pop()
    return out


def _reduce(wire, columns, width):
    """Sum the columns to a ``width``-bit number with full and half adders."""
    columns = [list(bits) for bits in columns] + [[] for _ in range(width)]
    result = []
    for weight in range(width):
        bits = columns[weight]
        while len(bits) > 1:
            if len(bits) >= 3:
                s, c = _full_adder(wire, bits.pop(0), bits.pop(0), bits.pop(0))
            else:
                a, b = bits.pop(0), bits.pop(0)
                s, c = wire(a ^ b), wire(a & b)
            bits.append(s)
            columns[weight + 1].append(c)
        result.append(bits[0] if bits else Const(0, 1))
    return Cat(*result)


def _layer_shape(workers, layers):
    """Bits per column after ``layers`` full-adder layers of a W-bit popcount."""
    columns = [[Const(0, 1)] * workers]
    for _ in range(layers):
        columns = _compress_layer(lambda v: v, columns)
    return [len(col) for col in columns]


def _columns(flat, shape):
    """Split a flat vector into columns of ``shape`` bits."""
    columns, pos = [], 0
    for n in shape:
        columns.append([flat[pos + k] for k in range(n)])
        pos += n
    return columns


def _flatten(columns):
    return Cat(*(b for col in columns for b in col))


class Datapath(wiring.Component):
    """Low-bit aggregation datapath (SPEC section 3).

    Parameters
    ----------
    line_bits : int
        LINE_BITS, one of 64, 128, 256, 512, 1024.
    workers : int
        W, one of 4, 8, 16.
    stages : int
        Latency in cycles, 1..8.
    profile : str or :class:`~neuron_fabric.host.facts.Profile`
        ``"full"`` (all of SPEC section 2) or ``"paper"`` (identity,
        G-Binary, G-Ternary with the PATTERN gate, COUNT output), or any
        other :class:`Profile` (for feature-cost studies).  Only the
        features of :data:`~neuron_fabric.host.facts.CORE_FEATURES` concern
        the core; every profile takes the PATTERN gate as ``in_gate_mask``.

    Members
    -------
    in_valid, in_ready, in_data, in_tag, in_mode, in_format, in_gate_kind,
    in_gate_mask, in_gate_threshold :
        Input line and its configuration; ``in_gate_mask`` has one bit per
        lane (E bits), bit ``i`` = 1 keeps lane ``i`` under the PATTERN gate.
    out_valid, out_ready, out_data, out_tag :
        Output line.

    Raises
    ------
    TypeError, ValueError
        For a parameter outside SPEC section 1 (the message quotes it).
    """

    def __init__(self, *, line_bits=512, workers=8, stages=5, profile="full"):
        if isinstance(profile, Profile):
            self._params = DatapathParams(line_bits, workers, stages)
            self._profile = profile
        else:
            self._params = DatapathParams(line_bits, workers, stages, profile)
            self._profile = PROFILES[profile]
        w = FIELD_WIDTHS
        super().__init__({
            "in_valid": In(1),
            "in_ready": Out(1),
            "in_data": In(line_bits),
            "in_tag": In(w["tag"]),
            "in_mode": In(w["mode"]),
            "in_format": In(w["format"]),
            "in_gate_kind": In(w["gate_kind"]),
            "in_gate_mask": In(self._params.lanes),
            "in_gate_threshold": In(w["gate_threshold"]),
            "out_valid": Out(1),
            "out_ready": In(1),
            "out_data": Out(line_bits),
            "out_tag": Out(w["tag"]),
        })

    @property
    def params(self):
        return self._params

    @property
    def line_bits(self):
        return self._params.line_bits

    @property
    def workers(self):
        return self._params.workers

    @property
    def stages(self):
        return self._params.stages

    @property
    def profile(self):
        return self._profile

    @property
    def lanes(self):
        return self._params.lanes

    @property
    def groups(self):
        """Number of groups (:data:`REPLICA_BITS` bits each), one control
        copy each."""
        return self.line_bits // self.group_bits

    @property
    def group_bits(self):
        """Line bits per group: :data:`REPLICA_BITS` of the profile, or one
        lane if wider."""
        return max(REPLICA_BITS["paper" if self._paper_like else "other"], self.workers)

    @property
    def _group_lanes(self):
        return self.group_bits // self.workers

    @property
    def _count_bits(self):
        return self.workers.bit_length()

    @property
    def _half_bit(self):
        """h with W/2 = 1 << h."""
        return (self.workers // 2).bit_length() - 1

    def _wire(self, value):
        """``value`` through a signal of its own.  Every value used more than
        once goes through one, or the netlist would hold a copy per use."""
        sig = Signal(len(value))
        self._module.d.comb += sig.eq(value)
        return sig

    def _spread(self, line, rep, *names):
        """Move per-line signals to one copy per control group.  Only register
        outputs are spread, so each copy's register is fed by a plain wire."""
        for name in names:
            rep[name] = [line.pop(name)] * self.groups

    @staticmethod
    def _lane(vector, lane, width):
        """Field ``lane`` of a vector of ``width``-bit fields."""
        return vector[lane * width:(lane + 1) * width]

    # -- the four steps --------------------------------------------------------
    #
    # Each step maps a bundle to a bundle: ``line`` holds single per-line
    # signals, ``rep`` per-line signals with one copy per group, and
    # ``lane`` one vector per group.  The paper profile and every other
    # profile have steps of their own (:meth:`_steps`).

    def _steps(self):
        if self._paper_like:
            return (self._paper_a, self._paper_b, self._paper_c, self._paper_d)
        return (self._full_a, self._full_b, self._full_c, self._full_d)

    @property
    def _paper_like(self):
        """The profile has none of the optional features of the core: the
        paper's datapath, built for area (full-adder popcount over three
        steps)."""
        return not any(self.profile.has(f) for f in CORE_FEATURES)

    # -- paper profile ---------------------------------------------------------
    #
    #   A  decode; first full-adder layer of each lane's popcount
    #   B  two more full-adder layers
    #   C  the count c
    #   D  output lane: c, W/2 for a gated lane, or the raw lane

    def _paper_a(self, line, rep, lane):
        line.pop("format")
        line.pop("gate_kind")
        line.pop("threshold")
        mode = line.pop("mode")
        ternary = self._wire(mode == Mode.GTERNARY)
        line["xform"] = mode[1]
        self._spread(line, rep, "xform")
        # Whether the gate applies travels apart from the lanes' mask bits.
        line["pattern_on"] = ternary
        w = self.workers
        lane["layer"] = [
            Cat(*(_flatten(_compress_layer(self._wire, [[self._lane(data, i, w)[k]
                                                          for k in range(w)]]))
                  for i in range(self._group_lanes)))
            for data in lane["data"]]
        return line, rep, lane

    def _paper_b(self, line, rep, lane):
        gl = self._group_lanes
        shape = _layer_shape(self.workers, 1)
        partials = []
        for layer in lane.pop("layer"):
            ps = []
            for i in range(gl):
                columns = _columns(self._lane(layer, i, sum(shape)), shape)
                for _ in range(2):
                    columns = _compress_layer(self._wire, columns)
                ps.append(_flatten(columns))
            partials.append(Cat(*ps))
        lane["partial"] = partials
        self._spread(line, rep, "pattern_on")
        return line, rep, lane

    def _paper_c(self, line, rep, lane):
        cw = self._count_bits
        shape = _layer_shape(self.workers, 3)
        lane["count"] = [
            Cat(*(self._wire(_reduce(self._wire, _columns(
                self._lane(partial, i, sum(shape)), shape), cw))
                  for i in range(self._group_lanes)))
            for partial in lane.pop("partial")]
        return line, rep, lane

    def _paper_d(self, line, rep, lane):
        """Whole output lane.

        A gated lane (a G-Ternary lane whose mask bit is 0) reads W/2: a
        constant under a condition, which the count bits' flip-flops take
        by their synchronous set/reset, driven by the group's own control
        copies.  The bits above the count are the raw bits of identity
        lines and 0 otherwise.
        """
        w = self.workers
        cw = self._count_bits
        gl = self._group_lanes
        h = self._half_bit
        xform = rep.pop("xform")
        pattern_on = rep.pop("pattern_on")
        counts = lane.pop("count")
        masks = lane.pop("mask")
        out = []
        for g, data in enumerate(lane.pop("data")):
            x = xform[g]
            values, conds, const = [], [], 0
            for i in range(gl):
                # One condition per lane keeps each set/reset net short.
                zero = self._wire(pattern_on[g] & ~masks[g][i])
                c = self._lane(counts[g], i, cw)
                raw = self._lane(data, i, w)
                for j in range(w):
                    if j >= cw:
                        # Plain logic: a set/reset here would be one more
                        # LSR net per group, on the slowest paths.
                        values.append(raw[j] & ~x)
                        conds.append(None)
                    else:
                        values.append(Mux(x, c[j], raw[j]))
                        conds.append(zero)
                        const |= int(j == h) << (i * w + j)
            out.append(_Gated(Cat(*values), conds, const))
        lane["data"] = out
        return line, rep, lane

    # -- every other profile -----------------------------------------------------
    #
    # Built so that for W <= 8 each bit a step computes is a function of at
    # most seven register outputs (one LUT4 with the slice's wide-function
    # multiplexers on ECP5):
    #
    #   A  population count of each group of four worker bits; per line:
    #      the output code (format, or identity), the margin limit
    #   B  the sign count c (pairs of 4-bit counts added)
    #   C  each output bit before gating, t = raw bit or lane value by
    #      format (c, code and the raw bit); the margin drop |c - W/2| <
    #      ceil(T/2) (c and the limit); the pattern drop (the lane's mask
    #      bit is 0 and the pattern gate applies)
    #   D  the output bit: t, or the gated value (W/2 in COUNT format,
    #      else 0)

    def _full_a(self, line, rep, lane):
        prof = self.profile
        w = self.workers
        mode = line.pop("mode")
        fmt = line.pop("format")
        gate_kind = line.pop("gate_kind")
        threshold = line.pop("threshold")

        ternary = self._wire(mode == Mode.GTERNARY)
        if prof.has("gate_margin"):
            pattern_on = self._wire(ternary & (gate_kind == GateKind.PATTERN))
            # The limit and whether the gate applies travel apart (each a
            # function of at most five inputs); step B combines the copies.
            line["margin_limit"] = self._margin_limit(threshold)
            line["gate_margin"] = ternary & (gate_kind == GateKind.MARGIN)
        else:
            pattern_on = ternary
        # The output code: the format for a transformed line (the formats the
        # profile lacks, and the invalid code 3, read as COUNT), and
        # _IDENTITY for a line that passes unchanged.
        known = Const(0, 2)
        if prof.has("format_margin"):
            known = Mux(fmt == Format.MARGIN, Format.MARGIN, known)
        if prof.has("format_sign"):
            known = Mux(fmt == Format.SIGN, Format.SIGN, known)
        line["code"] = Mux(mode[1], known, _IDENTITY)

        line["pattern_on"] = pattern_on
        # Per-group copies (through the spread tree) by step C.
        self._spread(line, rep, *(k for k in ("code", "margin_limit", "gate_margin", "pattern_on")
                                  if k in line))

        counts = []
        for data in lane["data"]:
            bits = []
            for i in range(self._group_lanes):
                x = self._lane(data, i, w)
                for k in range(0, w, 4):
                    # Population count of four bits: three 4-input functions.
                    bits.append(self._wire((x[k] + x[k + 1] + x[k + 2] + x[k + 3])[:3]))
            counts.append(Cat(*bits))
        lane["chunk"] = counts
        return line, rep, lane

    def _margin_limit(self, threshold):
        """The margin gate keeps a lane iff d = |c - W/2| >= this limit.

        |2c - W| >= T  <=>  d >= ceil(T/2).  The limit saturates to all ones
        (above every d, so nothing is kept) for T > W.  Each bit is a table
        lookup on T, which maps to one LUT rather than a carry chain.
        """
        w = self.workers
        width = (w // 2 + 1).bit_length()
        values = range(1 << len(threshold))
        limit = [min((t + 1) // 2, (1 << width) - 1) if (t + 1) // 2 <= w // 2
                 else (1 << width) - 1 for t in values]
        bits = [Const(sum((limit[t] >> b & 1) << t for t in values), len(values))
                .bit_select(threshold, 1) for b in range(width)]
        return Cat(*bits)

    def _full_b(self, line, rep, lane):
        gl = self._group_lanes
        chunks = self.workers // 4
        if "gate_margin" in rep:
            # Per group: the limit, 0 (nothing dropped) unless the margin
            # gate applies.
            limits, gates = rep.pop("margin_limit"), rep.pop("gate_margin")
            rep["margin_limit"] = [limit & gate.replicate(len(limit))
                                   for limit, gate in zip(limits, gates)]
        sums = []
        for chunk in lane.pop("chunk"):
            ss = []
            for i in range(gl):
                counts = [self._lane(chunk, i * chunks + k, 3) for k in range(chunks)]
                if chunks == 1:
                    ss.append(counts[0])
                # Pairs of 3-bit counts (0..4) to 4-bit sums: each sum bit a
                # function of at most six inputs.  For W = 8 the pair is the
                # count c; for W = 16 step C adds the two pairs.
                ss.extend(self._wire(counts[k] + counts[k + 1]) for k in range(0, chunks - 1, 2))
            sums.append(Cat(*ss))
        lane["sum"] = sums

        return line, rep, lane

    def _full_c(self, line, rep, lane):
        w = self.workers
        cw = self._count_bits
        gl = self._group_lanes
        codes = rep.pop("code")
        limits = rep.pop("margin_limit", None)
        chunks = self.workers // 4
        values, margin_drop = [], []
        for g, (sums, data) in enumerate(zip(lane.pop("sum"), lane["data"])):
            ts, mz = [], []
            for i in range(gl):
                if chunks == 4:
                    pair = self._lane(sums, i, 8)
                    c = self._wire((pair[:4] + pair[4:])[:cw])
                else:
                    c = self._lane(sums, i, cw)
                ts.append(self._output_bits(c, codes[g], self._lane(data, i, w)))
                if limits is not None:
                    # The limit is 0 (nothing dropped) unless the margin
                    # gate applies.  c and the limit: seven inputs for W = 8.
                    mz.append(self._distance(c) < limits[g])
            values.append(Cat(*ts))
            if mz:
                margin_drop.append(Cat(*mz))
        lane["data"] = values
        if margin_drop:
            lane["margin_drop"] = margin_drop
        # A gated lane reads W/2 in COUNT format, 0 otherwise.
        rep["gated_half"] = [code == Format.COUNT for code in codes]

        # The pattern drop: a lane whose mask bit is 0, when the gate applies.
        pattern_on = rep.pop("pattern_on")
        lane["pattern_drop"] = [pattern_on[g].replicate(len(mask)) & ~mask
                                for g, mask in enumerate(lane.pop("mask"))]
        return line, rep, lane

    def _output_bits(self, c, code, raw):
        """Output lane before gating: the raw lane for _IDENTITY, else the
        lane value by format.  Bit j is a function of c, the code and raw
        bit j (seven inputs for W = 8)."""
        w = self.workers
        h = w // 2
        identity = code == _IDENTITY
        count_ok = code == Format.COUNT
        margin = self._wire(c * 2 - w)          # sign-extended to W bits below
        margin = Cat(margin, margin[-1].replicate(max(0, w - len(margin))))[:w]
        lt = self._wire(c < h)
        bits = []
        for j in range(w):
            value = Const(0)
            if self.profile.has("format_margin"):
                value = value | (margin[j] & (code == Format.MARGIN))
            if self.profile.has("format_sign"):
                sign_j = (c != h) if j == 0 else lt
                value = value | (sign_j & (code == Format.SIGN))
            if j < len(c):
                value = value | (c[j] & count_ok)
            bits.append(Mux(identity, raw[j], value))
        return Cat(*bits)

    def _full_d(self, line, rep, lane):
        w = self.workers
        gl = self._group_lanes
        h = self._half_bit
        gated_half = rep.pop("gated_half")
        margin_drop = lane.pop("margin_drop", None)
        pattern_drop = lane.pop("pattern_drop")
        out = []
        for g, data in enumerate(lane.pop("data")):
            lanes = []
            for i in range(gl):
                zero = pattern_drop[g][i]
                if margin_drop is not None:
                    zero = zero | margin_drop[g][i]
                t = self._lane(data, i, w)
                bits = []
                for j in range(w):
                    # AND/OR rather than a multiplexer on ``zero``: a
                    # multiplexer to a constant becomes a flip-flop
                    # synchronous reset, which under the clock enable costs
                    # one more LUT on the enable path.
                    bit = t[j] & ~zero
                    bits.append(bit | (zero & gated_half[g]) if j == h else bit)
                lanes.append(Cat(*bits))
            out.append(Cat(*lanes))
        lane["data"] = out
        return line, rep, lane

    # -- helpers of the steps ------------------------------------------------------

    def _distance(self, c):
        """|c - W/2| for a count c in 0..W."""
        w = self.workers
        width = (w // 2).bit_length()
        neg = self._wire(c < w // 2)
        below = (w // 2 - c).as_unsigned()[:width]
        above = (c - w // 2).as_unsigned()[:width]
        return (below & neg.replicate(width)) | (above & (~neg).replicate(width))

    # -- elaboration -------------------------------------------------------------

    def elaborate(self, platform):
        m = self._module = Module()
        groups = self.groups

        # One clock enable per stage and copy, ``out_ready | ~out_valid``:
        # copy g < groups serves group g, copy ``line`` the per-line
        # registers, copy ``tree<g>`` the spread tree's registers that serve
        # groups g.. g + SPREAD_FANOUT - 1.  Each (stage, copy) pair keeps
        # its own valid chain (STAGES bits, the copy of ``out_valid`` at its end), so the enable
        # that drives one stage of one copy is computed from flip-flops that
        # sit beside it: no enable net crosses the pipeline.  All chains hold
        # the same values (they load the same input under equal enables);
        # each closes a loop through its own enable, so synthesis keeps them
        # apart.  A chain is built when a register first asks for it.
        stages = self.stages
        chains = {}

        def enable(s, copy):
            if (s, copy) not in chains:
                en = Signal(name=f"en_{s}_{copy}")
                last = Signal(name=f"out_valid_{s}_{copy}")
                m.d.comb += en.eq(self.out_ready | ~last)
                v = self.in_valid
                with m.If(en):
                    for k in range(stages):
                        q = last if k == stages - 1 else Signal(name=f"valid_{s}_{copy}_{k}")
                        m.d.sync += q.eq(v)
                        v = q
                chains[s, copy] = en, last
            return chains[s, copy][0]

        line_en = "line"
        # Not ready while in reset: a line offered then would be lost.
        m.d.comb += self.in_ready.eq(enable(0, line_en) & ~ResetSignal())

        reset_en = {}

        def register(value, name, s, g):
            # A flip-flop set under a condition starts at 1 too: an ECP5
            # flip-flop's initial value is its set/reset value.
            init = value.const if isinstance(value, _Gated) else 0
            reg = Signal(len(value), name=name, reset_less=True, init=init)
            en_g = enable(s, g)
            if not isinstance(value, _Gated):
                with m.If(en_g):
                    m.d.sync += reg.eq(value)
                return reg
            for b, (bit, cond) in enumerate(zip(value.value, value.cond)):
                if cond is None:
                    with m.If(en_g):
                        m.d.sync += reg[b].eq(bit)
                    continue
                if (id(cond), s, g) not in reset_en:
                    reset_en[id(cond), s, g] = self._wire(cond & en_g)
                m.d.sync += reg[b].eq(Mux(reset_en[id(cond), s, g], value.const >> b & 1,
                                          Mux(en_g, bit, reg[b])))
            return reg

        def register_copies(name, values):
            # A signal just spread from one register reaches its per-group
            # copies through a tree: this boundary registers one copy per
            # :data:`SPREAD_FANOUT` groups, the next one per group, so no
            # register drives more than about that many copies.
            n = len(values)
            if n <= SPREAD_FANOUT or any(v is not values[0] for v in values):
                return [register(v, f"s{index}_{name}_r{c}", index, c)
                        for c, v in enumerate(values)]
            # The tree's registers sit between their groups, so they keep
            # enables of their own rather than stretching a group's.
            per = SPREAD_FANOUT
            tree = [register(values[0], f"s{index}_{name}_t{c}", index, f"tree{c}")
                    for c in range(0, n, per)]
            return [tree[c // per] for c in range(n)]

        def wire(value):
            if isinstance(value, _Gated):
                return _Gated(self._wire(value.value), value.cond, value.const)
            return self._wire(value)

        line = {
            "tag": self.in_tag, "mode": self.in_mode, "format": self.in_format,
            "gate_kind": self.in_gate_kind, "threshold": self.in_gate_threshold,
        }
        rep = {}
        gb, gl = self.group_bits, self._group_lanes
        # Each lane's mask bit travels with the lane, in its group.
        lane = {"data": [self.in_data[g * gb:(g + 1) * gb] for g in range(groups)],
                "mask": [self.in_gate_mask[g * gl:(g + 1) * gl] for g in range(groups)]}
        steps = self._steps()
        index = 0
        for boundary, count in enumerate(PLACEMENT[self.stages]):
            for _ in range(count):
                line = {k: register(v, f"s{index}_{k}", index, line_en) for k, v in line.items()}
                rep = {k: register_copies(k, vs) for k, vs in rep.items()}
                lane = {k: [register(v, f"s{index}_{k}_g{g}", index, g) for g, v in enumerate(vs)]
                        for k, vs in lane.items()}
                index += 1
            if boundary < len(steps):
                line, rep, lane = steps[boundary](dict(line), dict(rep), dict(lane))
                line = {k: self._wire(v) for k, v in line.items()}
                rep = {k: [self._wire(vs[0])] * len(vs) if all(v is vs[0] for v in vs)
                       else [self._wire(v) for v in vs] for k, vs in rep.items()}
                lane = {k: [wire(v) for v in vs] for k, vs in lane.items()}
        assert index == self.stages and set(line) == {"tag"} and not rep \
            and set(lane) == {"data"}, (sorted(line), sorted(rep), sorted(lane))

        m.d.comb += [
            self.out_valid.eq(chains[stages - 1, line_en][1]),
            self.out_data.eq(Cat(*lane["data"])),
            self.out_tag.eq(line["tag"]),
        ]
        return m
