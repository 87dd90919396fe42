"""The low-bit aggregation datapath core, ``neuron_fabric_datapath``.

Structure
---------
The read transform is split into four combinational steps; pipeline
registers sit on the boundaries between them::

    boundary 0 | A: decode the line's controls (G-Ternary gate, format,
               |    margin limit ceil(T/2)); population count of each group
               |    of four worker bits; pattern-table entries per period
               |    quarter, K > (j mod P) for P in the quarter
    boundary 1 | B: pairs of 4-bit counts added (W = 8: the lane's sign
               |    count c); pattern table T[j] = (j mod P) < K
    boundary 2 | C: W = 16: final add; full profile: the long phase shift
               |    S[m] = T[m + 4 * phase[3:2]], the margin gate
               |    |c - W/2| >= ceil(T/2) and the lane value by format
    boundary 3 | D: full profile: the short phase shift, lane i's pattern
               |    gate S[i + phase[1:0]]; gated output lane, identity
               |    pass-through
    boundary 4 | (output register, always present)

``STAGES`` registers are spread over the boundaries by :data:`PLACEMENT`,
so that STAGES = 1 is one register between input and output and each
extra stage shortens the longest step.  Past five stages the extra
registers go on boundary 0 (input side), where they cost only latency.

Timing structure
----------------
* **Stall.**  The pipeline moves when the consumer takes a line or the
  output register is empty (``out_ready | ~out_valid``), so bubbles are
  squeezed out and ``out_valid`` never waits for ``out_ready``.  The enable
  is computed per stage and per group, each from its own copy of the valid
  chain (STAGES bits ending in a copy of ``out_valid``) kept beside that
  stage's flip-flops, so no enable net crosses the pipeline and each drives
  one stage of one group.  ``in_ready`` is the per-line copy of the
  stage-0 enable, held low while ``rst`` is high.
* **Replicated control.**  The line is cut into groups of
  :data:`REPLICA_BITS` bits (one lane if W is wider).  Every per-line
  control that lanes read is registered once per group, so each copy
  drives one group; copies are made only from register outputs, through a
  tree of at most :data:`SPREAD_FANOUT` copies per register when a
  boundary is free for it.  The copies are enabled by their group's
  enable, which keeps synthesis from merging them (a ``keep`` attribute on
  a register does not stop Yosys's ``opt_merge``).  The pattern table's
  entries past the last lane read copies of K and P of their own.
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

from .params import (DatapathParams, FIELD_WIDTHS, Format, GateKind, Mode,
                     Profile, PROFILES)

__all__ = ["Datapath", "PLACEMENT", "REPLICA_BITS"]


#: For each STAGES value, how many registers sit on boundaries 0..4.
PLACEMENT = {
    1: (0, 0, 0, 0, 1),
    2: (0, 0, 1, 0, 1),
    3: (0, 0, 1, 1, 1),
    4: (0, 1, 1, 1, 1),
    5: (1, 1, 1, 1, 1),
    6: (2, 1, 1, 1, 1),
    7: (3, 1, 1, 1, 1),
    8: (4, 1, 1, 1, 1),
}

#: Line bits served by one copy of the per-line control registers.
REPLICA_BITS = 16

#: Most copies one register of a spread per-line control feeds.
SPREAD_FANOUT = 8

#: Number of values the 4-bit gate period, keep and phase inputs can carry.
_FIELD_VALUES = 1 << FIELD_WIDTHS["gate_phase"]


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
    profile : str or :class:`~neuron_fabric.params.Profile`
        ``"full"`` (all of SPEC section 2) or ``"paper"`` (identity,
        G-Binary, G-Ternary with the fixed 2-of-3 gate, COUNT output), or
        any other :class:`Profile` (for feature-cost studies).

    Members
    -------
    in_valid, in_ready, in_data, in_tag, in_mode, in_format, in_gate_kind,
    in_gate_period, in_gate_keep, in_gate_threshold, in_gate_phase :
        Input line and its configuration.
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
            "in_gate_period": In(w["gate_period"]),
            "in_gate_keep": In(w["gate_keep"]),
            "in_gate_threshold": In(w["gate_threshold"]),
            "in_gate_phase": In(w["gate_phase"]),
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

    control_groups = groups

    @staticmethod
    def _copy(g):
        """Control copy that group ``g`` reads."""
        return g

    @property
    def group_bits(self):
        """Line bits per group: :data:`REPLICA_BITS`, or one lane if wider."""
        return max(REPLICA_BITS, self.workers)

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
            rep[name] = [line.pop(name)] * self.control_groups

    @staticmethod
    def _lane(vector, lane, width):
        """Field ``lane`` of a vector of ``width``-bit fields."""
        return vector[lane * width:(lane + 1) * width]

    # -- the four steps --------------------------------------------------------
    #
    # Each step maps a bundle to a bundle: ``line`` holds single per-line
    # signals, ``rep`` per-line signals with one copy per group, and
    # ``lane`` one vector per group.

    def _step_a(self, line, rep, lane):
        """Decode the controls; first adder layer; pattern-gate bits."""
        prof = self.profile
        mode = line.pop("mode")
        fmt = line.pop("format")
        gate_kind = line.pop("gate_kind")
        threshold = line.pop("threshold")
        phase = line.pop("phase")
        w = self.workers

        ternary = self._wire(mode == Mode.GTERNARY)
        if prof.has("gate_margin"):
            gate_pattern = self._wire(ternary & (gate_kind == GateKind.PATTERN))
            gate_margin = self._wire(ternary & (gate_kind == GateKind.MARGIN))
            line["margin_limit"] = self._margin_limit(threshold, gate_margin)
        else:
            gate_pattern = ternary
        line["xform"] = mode[1]
        self._spread(line, rep, "xform")

        if prof.has("format_margin") or prof.has("format_sign"):
            # The 2-bit code travels as it is, decoded where it is used, so
            # that a lane-value bit is one 6-input function of (c, format).
            line["format"] = fmt

        if prof.has("gate_pattern_programmable"):
            # Pattern table T[j] = (j mod P) < K, j = 0 .. E + 14, so that lane
            # i's gate is T[i + phase].  Here: for each quarter q of the
            # period range (P = 4q .. 4q + 3) the entry selected by P[1:0], a
            # function of K and P[1:0] only; step B picks the quarter.  Each
            # group decodes its own copy of K and P.
            line["pattern_on"] = gate_pattern
            quarters = []
            for g in range(self.groups):
                entries = []
                for j in self._table_entries(g):
                    keep = rep["keep"][self._entry_copy(j)]
                    period = rep["period"][self._entry_copy(j)]
                    for q in range(4):
                        # K > (j mod P) for P = 4q + P[1:0]: a 6-input function,
                        # one LUT level.  Written as a comparison with the
                        # selected residue (not a table): a table lookup lets
                        # synthesis see a flip-flop reset in it, which costs a
                        # LUT on the clock-enable path.
                        residues = [j % p if p else 0 for p in range(4 * q, 4 * q + 4)]
                        residue = Cat(*(Const(r, 4) for r in residues)).word_select(period[:2], 4)
                        entries.append(keep > residue)
                quarters.append(Cat(*entries))
            lane["pattern_quarter"] = quarters
            rep.pop("keep")
            rep["period_high"] = [period[2:] for period in rep.pop("period")]
            line["phase"] = phase
            self._spread(line, rep, "phase")
        else:
            # The paper's fixed 2-of-3 gate: lane i is kept iff
            # (phase + i) mod 3 < 2, so three bits serve the whole line.
            # ``drop3`` depends on the phase alone (one LUT each); whether
            # the gate applies at all travels separately as ``pattern_on``.
            drop = []
            for residue in range(3):
                table = sum(1 << ph for ph in range(_FIELD_VALUES)
                            if (ph + residue) % 3 >= 2)
                drop.append(self._wire(Const(table, _FIELD_VALUES).bit_select(phase, 1)))
            line["drop3"] = Cat(*drop)
            line["keep3"] = Cat(*(~d | ~gate_pattern for d in drop))
            line["pattern_on"] = gate_pattern

        layers = []
        for data in lane["data"]:
            bits = []
            for i in range(self._group_lanes):
                x = self._lane(data, i, w)
                if not self._chunk_count:
                    bits.append(_flatten(_compress_layer(self._wire, [[x[k] for k in range(w)]])))
                    continue
                for k in range(0, w, 4):
                    # Population count of four bits: three 4-input functions.
                    bits.append(self._wire((x[k] + x[k + 1] + x[k + 2] + x[k + 3])[:3]))
            layers.append(Cat(*bits))
        lane["layer"] = layers
        return line, rep, lane

    def _margin_limit(self, threshold, gate_margin):
        """The margin gate keeps a lane iff d = |c - W/2| >= this limit.

        |2c - W| >= T  <=>  d >= ceil(T/2).  The limit saturates to all ones
        (above every d, so nothing is kept) for T > W, and is 0 (everything
        kept) unless the MARGIN gate applies.  Each bit is a table lookup
        on T, which maps to one LUT rather than a carry chain.
        """
        w = self.workers
        width = (w // 2 + 1).bit_length()
        values = range(1 << len(threshold))
        limit = [min((t + 1) // 2, (1 << width) - 1) if (t + 1) // 2 <= w // 2
                 else (1 << width) - 1 for t in values]
        bits = [Const(sum((limit[t] >> b & 1) << t for t in values), len(values))
                .bit_select(threshold, 1) for b in range(width)]
        return Cat(*bits) & gate_margin.replicate(width)

    def _step_b(self, line, rep, lane):
        """Two more full-adder layers of each lane's popcount; pattern table."""
        gl = self._group_lanes
        chunks = self.workers // 4
        shape = _layer_shape(self.workers, 1)
        self._spread(line, rep, *(k for k in ("margin_limit", "format", "keep3", "drop3")
                                   if k in line))
        partials = []
        for layer in lane.pop("layer"):
            ps = []
            for i in range(gl):
                if not self._chunk_count:
                    columns = _columns(self._lane(layer, i, sum(shape)), shape)
                    for _ in range(2):
                        columns = _compress_layer(self._wire, columns)
                    ps.append(_flatten(columns))
                    continue
                counts = [self._lane(layer, i * chunks + k, 3) for k in range(chunks)]
                if chunks == 1:
                    ps.append(counts[0])
                # Pairs of 3-bit counts (0..4) to 4-bit sums: each sum bit a
                # function of at most six inputs, one LUT level.
                ps.extend(self._wire(counts[k] + counts[k + 1]) for k in range(0, chunks - 1, 2))
            partials.append(Cat(*ps))
        lane["partial"] = partials

        if "period_high" in rep:
            high = rep.pop("period_high")
            tables = []
            for g, quarters in enumerate(lane.pop("pattern_quarter")):
                tables.append(Cat(self._lane(quarters, k, 4).bit_select(high[self._entry_copy(j)], 1)
                                  for k, j in enumerate(self._table_entries(g))))
            lane["pattern"] = tables
        if "pattern_on" in line:
            self._spread(line, rep, "pattern_on")
        return line, rep, lane

    @property
    def _chunk_count(self):
        """Population count by groups of four bits, pairs added in step B
        (the count is ready for step C's format and margin logic), rather
        than the full-adder tree over steps A to C, which takes fewer cells
        and serves the paper profile, whose step C has nothing else to do."""
        return self.profile.has("format_margin") or self.profile.has("format_sign") \
            or self.profile.has("gate_margin")

    @property
    def _tail_copies(self):
        """Extra copies of K and P for the 15 table entries past the last
        lane, one per group's worth of entries."""
        return -(-(_FIELD_VALUES - 1) // self._group_lanes)

    def _entry_copy(self, j):
        """Copy of K and P that pattern-table entry ``j`` reads."""
        gl = self._group_lanes
        return j // gl if j < self.lanes else self.groups + (j - self.lanes) // gl

    def _table_entries(self, g):
        """Pattern-table entries that group ``g`` holds: those of its lanes,
        and in the last group the 15 past the last lane."""
        gl = self._group_lanes
        last = g == self.groups - 1
        return range(g * gl, self.lanes + _FIELD_VALUES - 1 if last else (g + 1) * gl)

    def _distance(self, c):
        """|c - W/2| for a count c in 0..W."""
        w = self.workers
        width = (w // 2).bit_length()
        neg = self._wire(c < w // 2)
        below = (w // 2 - c).as_unsigned()[:width]
        above = (c - w // 2).as_unsigned()[:width]
        return (below & neg.replicate(width)) | (above & (~neg).replicate(width))

    def _pattern_window(self, tables, lane_index, span, stride=1):
        """Pattern table entries ``lane_index + k * stride``, k < ``span``."""
        gl = self._group_lanes
        bits = []
        for j in range(lane_index, lane_index + span * stride, stride):
            owner = min(j // gl, self.groups - 1)
            bits.append(tables[owner][j - owner * gl])
        return Cat(*bits)

    def _format_flags(self, code):
        """(COUNT, MARGIN, SIGN) flags of a format code; the formats the
        profile lacks, and the invalid code 3, read as COUNT."""
        prof = self.profile
        margin = (code == Format.MARGIN) if prof.has("format_margin") else Const(0)
        sign = (code == Format.SIGN) if prof.has("format_sign") else Const(0)
        return ~margin & ~sign, margin, sign

    def _lane_value(self, c, fmt):
        """Lane value by format, before gating."""
        w = self.workers
        h = w // 2
        count_ok, margin_ok, sign_ok = self._format_flags(fmt)
        margin = self._wire(c * 2 - w)         # sign-extended to W bits below
        margin = Cat(margin, margin[-1].replicate(max(0, w - len(margin))))[:w]
        lt = self._wire(c < h)
        bits = []
        for j in range(w):
            sign_j = (c != h) if j == 0 else lt
            bit = (margin[j] & margin_ok) | (sign_j & sign_ok)
            if j < len(c):
                bit = bit | (c[j] & count_ok)
            bits.append(bit)
        return Cat(*bits)

    def _step_c(self, line, rep, lane):
        """Gate bits of each lane; lane value by format."""
        w = self.workers
        cw = self._count_bits
        gl = self._group_lanes
        counts, dists = [], []
        shape = _layer_shape(w, 3)
        for partial in lane.pop("partial"):
            cs = []
            for i in range(gl):
                if not self._chunk_count:
                    cs.append(self._wire(_reduce(self._wire, _columns(
                        self._lane(partial, i, sum(shape)), shape), cw)))
                elif w == 16:
                    p = self._lane(partial, i, 8)
                    cs.append(self._wire((p[:4] + p[4:])[:cw]))
                else:
                    cs.append(self._wire(self._lane(partial, i, cw)))
            counts.append(Cat(*cs))
            if "margin_limit" in rep:
                dists.append(Cat(*(self._distance(c) for c in cs)))
        keep3 = rep.pop("keep3", None)
        if keep3 is not None and "format" not in rep and "margin_limit" not in rep:
            # Paper profile: the count now, the output lane in step D.
            lane["count"] = counts
            return line, rep, lane
        rep.pop("drop3", None)

        dists = dists or None
        limits = rep.pop("margin_limit", None)
        tables = lane.pop("pattern", None)
        phases = rep.pop("phase", None)
        pattern_on = rep.pop("pattern_on", None)
        xform = rep["xform"]
        fmts = rep.get("format")
        pattern_gates, margin_zero, pattern_zero, values = [], [], [], []
        if tables is not None:
            # The phase shift in two 4:1 steps: here the long one,
            # S[m] = T[m + 4 * phase[3:2]]; in step D the short one, lane i's
            # gate S[i + phase[1:0]], next to the lane.
            shifted = []
            for g in range(self.groups):
                high = phases[self._copy(g)][2:]
                entries = [j for j in self._table_entries(g) if j < self.lanes + 3]
                shifted.append(Cat(*(self._pattern_window(tables, j, 4, 4).bit_select(high, 1)
                                     for j in entries)))
            lane["pattern_shift"] = shifted
            rep["phase_low"] = [ph[:2] for ph in phases]
        for g in range(self.groups):
            cg = self._copy(g)
            x = xform[cg]
            pg, mz, pz, vs = [], [], [], []
            for i in range(gl):
                index = g * gl + i
                c = self._lane(counts[g], i, cw)
                if tables is None:
                    pg.append(keep3[cg][index % 3])
                if dists is not None:
                    d = self._lane(dists[g], i, len(dists[g]) // gl)
                    # The limit is 0 (d < 0 never holds) unless the margin
                    # gate applies, which implies a transformed line.
                    mz.append(d < limits[cg])
                if fmts is not None:
                    vs.append(self._lane_value(c, fmts[cg]))
                else:
                    vs.append(Cat(c, Const(0, w - cw)))
            if pg:
                pattern_gates.append(Cat(*pg))
            if mz:
                margin_zero.append(Cat(*mz))
            if pattern_on is not None:
                pattern_zero.append(x & pattern_on[cg])
            values.append(Cat(*vs))
        if pattern_gates:
            lane["pattern_gate"] = pattern_gates
        if margin_zero:
            lane["margin_zero"] = margin_zero
        if pattern_zero:
            rep["pattern_zero"] = pattern_zero
        lane["value"] = values
        return line, rep, lane

    def _paper_output(self, line, rep, lane):
        """Whole output lane when the only gate is the fixed 2-of-3 pattern
        and the only format is COUNT (the paper profile).

        A gated lane (a G-Ternary lane the pattern drops) reads W/2: a
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
        drop3 = rep.pop("drop3")
        pattern_on = rep.pop("pattern_on")
        counts = lane.pop("count")
        out = []
        for g, data in enumerate(lane.pop("data")):
            cg = self._copy(g)
            x = xform[cg]
            values, conds, const = [], [], 0
            for i in range(gl):
                # One condition per lane keeps each set/reset net short.
                zero = self._wire(pattern_on[cg] & drop3[cg][(g * gl + i) % 3])
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

    def _step_d(self, line, rep, lane):
        """Gate the lane values; identity lines pass unchanged."""
        if "count" in lane:
            return self._paper_output(line, rep, lane)
        w = self.workers
        gl = self._group_lanes
        h = self._half_bit
        xform = rep.pop("xform")
        fmts = rep.pop("format", None)
        pattern_zero = rep.pop("pattern_zero", None)
        values = lane.pop("value")
        pattern_gates = lane.pop("pattern_gate", None)
        if pattern_gates is None:
            shifted = lane.pop("pattern_shift")
            low = rep.pop("phase_low")
            pattern_gates = [Cat(*(self._wire(self._pattern_window(shifted, g * gl + i, 4)
                                              .bit_select(low[self._copy(g)], 1))
                                   for i in range(gl)))
                             for g in range(self.groups)]
        margin_zero = lane.pop("margin_zero", None)
        out = []
        for g, data in enumerate(lane.pop("data")):
            cg = self._copy(g)
            x = xform[cg]
            # A gated lane reads W/2 in COUNT format and 0 otherwise.
            gated_half = self._format_flags(fmts[cg])[0] if fmts is not None else Const(1)
            lanes = []
            for i in range(gl):
                # The pattern gate zeroes where it applies (``pattern_zero``:
                # a transformed G-Ternary PATTERN line, or for the fixed
                # gate folded into the gate bit already), the margin gate
                # where its lane says so.
                if pattern_zero is not None:
                    zero = pattern_zero[g] & ~pattern_gates[g][i]
                else:
                    zero = x & ~pattern_gates[g][i]
                if margin_zero is not None:
                    zero = zero | margin_zero[g][i]
                zero = self._wire(zero)
                v = self._lane(values[g], i, w)
                raw = self._lane(data, i, w)
                bits = []
                for j in range(w):
                    # AND/OR rather than a multiplexer on ``zero``: a
                    # multiplexer to a constant becomes a flip-flop
                    # synchronous reset, which under the clock enable costs
                    # one more LUT on the enable path.
                    bit = Mux(x, v[j], raw[j]) & ~zero
                    bits.append(bit | (zero & gated_half) if j == h else bit)
                lanes.append(Cat(*bits))
            out.append(Cat(*lanes))
        lane["data"] = out
        return line, rep, lane

    # -- elaboration -------------------------------------------------------------

    def elaborate(self, platform):
        m = self._module = Module()
        groups = self.groups

        # One clock enable per stage and copy, ``en[s][c] = out_ready |
        # ~out_valid[s][c]``: copies 0..groups-1 serve the groups, copy
        # ``groups`` the per-line registers.  Each (stage, copy) pair keeps
        # its own valid chain (STAGES bits, ``out_valid[s][c]`` at its end),
        # so the enable that drives one stage of one group is
        # computed from flip-flops that sit beside it: no enable net crosses
        # the pipeline.  All chains hold the same values (they load the same
        # input under equal enables); each closes a loop through its own
        # enable, so synthesis keeps them apart.
        copies = groups + 1
        line_en = groups
        stages = self.stages
        out_valid = [[Signal(name=f"out_valid_{s}_{c}") for c in range(copies)]
                     for s in range(stages)]
        en = [[Signal(name=f"en_{s}_{c}") for c in range(copies)] for s in range(stages)]
        for s in range(stages):
            for c in range(copies):
                m.d.comb += en[s][c].eq(self.out_ready | ~out_valid[s][c])
                v = self.in_valid
                with m.If(en[s][c]):
                    for k in range(stages):
                        q = out_valid[s][c] if k == stages - 1 else \
                            Signal(name=f"valid_{s}_{c}_{k}")
                        m.d.sync += q.eq(v)
                        v = q
        # Not ready while in reset: a line offered then would be lost.
        m.d.comb += self.in_ready.eq(en[0][line_en] & ~ResetSignal())

        reset_en = {}

        def register(value, name, s, g):
            # A flip-flop set under a condition starts at 1 too: an ECP5
            # flip-flop's initial value is its set/reset value.
            init = value.const if isinstance(value, _Gated) else 0
            reg = Signal(len(value), name=name, reset_less=True, init=init)
            # Copies past the last group (the pattern table's own K and P
            # copies) take the per-line copy's enable.
            en_g = en[s][min(g, line_en)]
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
            per = SPREAD_FANOUT
            tree = [register(values[0], f"s{index}_{name}_t{c}", index, c)
                    for c in range(0, n, per)]
            return [tree[c // per] for c in range(n)]

        def wire(value):
            if isinstance(value, _Gated):
                return _Gated(self._wire(value.value), value.cond, value.const)
            return self._wire(value)

        line = {
            "tag": self.in_tag, "mode": self.in_mode, "format": self.in_format,
            "gate_kind": self.in_gate_kind, "threshold": self.in_gate_threshold,
            "phase": self.in_gate_phase,
        }
        rep = {}
        if self.profile.has("gate_pattern_programmable"):
            # The pattern table needs these in every control group by step B.
            for name, port in (("period", self.in_gate_period), ("keep", self.in_gate_keep)):
                # Distinct wires: one register per group at the input.
                rep[name] = [self._wire(port) for _ in range(self.groups + self._tail_copies)]
        gb = self.group_bits
        lane = {"data": [self.in_data[g * gb:(g + 1) * gb]
                         for g in range(groups)]}
        steps = (self._step_a, self._step_b, self._step_c, self._step_d)
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
            self.out_valid.eq(out_valid[stages - 1][line_en]),
            self.out_data.eq(Cat(*lane["data"])),
            self.out_tag.eq(line["tag"]),
        ]
        return m
