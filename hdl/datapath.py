"""The low-bit aggregation datapath core, ``neuron_fabric_datapath``.

Structure
---------
The read transform is split into four combinational steps; pipeline
registers sit on the boundaries between them::

    boundary 0 | A: decode controls, 4-bit partial popcounts
    boundary 1 | B: sign count c, gate tables for the line
    boundary 2 | C: gate bit m of each lane
    boundary 3 | D: output lane by format, identity pass-through
    boundary 4 | (output register, always present)

``STAGES`` registers are spread over the boundaries by :data:`PLACEMENT`,
so that STAGES = 1 is one register between input and output and each
extra stage shortens the longest step.  Past five stages the extra
registers go on boundary 0 (input side), where they cost only latency.

Stall handling is one clock enable for the whole pipeline,
``en = out_ready | ~out_valid``: a full pipeline advances while the
consumer takes its output, and bubbles are squeezed out while it does not.
``in_ready`` is ``en`` once the first clock edge out of reset has passed.
Only the ``valid`` bits have a reset; data registers are reset-less.
"""

from amaranth import Cat, Const, Module, Mux, Signal, C
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .params import (DatapathParams, FIELD_WIDTHS, Format, GateKind, Mode,
                     PROFILES)

__all__ = ["Datapath", "PLACEMENT", "GROUP_BITS"]


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

#: Width of the bit groups whose popcounts step A forms.
GROUP_BITS = 4

#: Largest phase the 4-bit gate phase input can carry.
_PHASE_MAX = (1 << FIELD_WIDTHS["gate_phase"]) - 1


def _signed_lane(value, workers):
    """``value`` as a W-bit two's complement constant."""
    return Const(value % (1 << workers), workers)


def _sign_extend(value, width):
    """A signed ``value`` sign-extended (or truncated) to ``width`` bits."""
    if len(value) >= width:
        return value.as_unsigned()[:width]
    return Cat(value, value[-1].replicate(width - len(value)))


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
    profile : str
        ``"full"`` (all of SPEC section 2) or ``"paper"`` (identity,
        G-Binary, G-Ternary with the fixed 2-of-3 gate, COUNT output).

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
        self._params = DatapathParams(line_bits, workers, stages, profile)
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
        return PROFILES[self._params.profile]

    @property
    def lanes(self):
        return self._params.lanes

    # -- pipeline plumbing ---------------------------------------------------

    def _register(self, m, en, valid, sigs, index):
        """One pipeline register over ``valid`` and every signal in ``sigs``."""
        valid_q = Signal(name=f"s{index}_valid")
        with m.If(en):
            m.d.sync += valid_q.eq(valid)
        regs = {}
        for key, value in sigs.items():
            reg = Signal(len(value), name=f"s{index}_{key}", reset_less=True)
            with m.If(en):
                m.d.sync += reg.eq(value)
            regs[key] = reg
        return valid_q, regs

    # -- the four steps -------------------------------------------------------

    def _step_a(self, m, s):
        """Decode the line's controls; popcount each 4-bit group of each lane."""
        prof = self.profile
        mode = s.pop("mode")
        fmt = s.pop("format")
        gate_kind = s.pop("gate_kind")
        ternary = mode == Mode.GTERNARY
        s["xform"] = mode[1]                     # GBINARY or GTERNARY
        if prof.has("gate_margin"):
            s["gate_pattern"] = ternary & (gate_kind == GateKind.PATTERN)
            s["gate_margin"] = ternary & (gate_kind == GateKind.MARGIN)
        else:
            s["gate_pattern"] = ternary
        if prof.has("format_margin"):
            s["fmt_margin"] = fmt == Format.MARGIN
        if prof.has("format_sign"):
            s["fmt_sign"] = fmt == Format.SIGN
        if not prof.has("gate_pattern_programmable"):
            s.pop("period")
            s.pop("keep")
        if not prof.has("gate_margin"):
            s.pop("threshold")

        w = self.workers
        groups = w // GROUP_BITS
        parts = []
        data = s["data"]
        for lane in range(self.lanes):
            for g in range(groups):
                bits = data[lane * w + g * GROUP_BITS:lane * w + (g + 1) * GROUP_BITS]
                parts.append(sum(bits[k] for k in range(GROUP_BITS)).as_unsigned()[:3])
        s["parts"] = Cat(*parts)
        return s

    def _step_b(self, m, s):
        """Sign count of each lane; the line's pattern and margin gate tables."""
        w = self.workers
        groups = w // GROUP_BITS
        cw = w.bit_length()
        parts = s.pop("parts")
        counts = []
        for lane in range(self.lanes):
            total = sum(parts[(lane * groups + g) * 3:(lane * groups + g + 1) * 3]
                        for g in range(groups))
            counts.append(total.as_unsigned()[:cw])
        s["count"] = Cat(*counts)

        # Pattern gate table: bit j says whether element (j mod P) is kept.
        # Lane i of a line with phase ph is kept iff bit ph + i is set.
        n_bits = self.lanes + _PHASE_MAX
        if self.profile.has("gate_pattern_programmable"):
            period = s.pop("period")
            keep = s.pop("keep")
            table = []
            for j in range(n_bits):
                kept = C(0, 1)
                for p in range(1, 16):
                    kept = kept | ((period == p) & (keep > (j % p)))
                table.append(kept)
            s["pattern"] = Cat(*table)
        else:
            s["pattern"] = Cat(C(int(j % 3 < 2), 1) for j in range(n_bits))

        # Margin gate table: bit c says whether a lane with count c is kept.
        if self.profile.has("gate_margin"):
            threshold = s.pop("threshold")
            s["margin_keep"] = Cat(
                (~s["gate_margin"]) | (threshold <= abs(2 * c - w))
                for c in range(w + 1))
        return s

    def _step_c(self, m, s):
        """Gate bit of each lane."""
        w = self.workers
        cw = w.bit_length()
        phase = s.pop("phase")
        pattern = s.pop("pattern")
        margin_keep = s.pop("margin_keep", None)
        counts = s["count"]
        gates = []
        for lane in range(self.lanes):
            window = pattern[lane:lane + _PHASE_MAX + 1]
            kept = window.bit_select(phase, 1) | ~s["gate_pattern"]
            if margin_keep is not None:
                c = counts[lane * cw:(lane + 1) * cw]
                kept = kept & margin_keep.bit_select(c, 1)
            gates.append(kept)
        s["gate"] = Cat(*gates)
        return s

    def _step_d(self, m, s):
        """Output lane by format; identity lines pass unchanged."""
        w = self.workers
        cw = w.bit_length()
        counts = s.pop("count")
        gates = s.pop("gate")
        data = s.pop("data")
        xform = s.pop("xform")
        s.pop("gate_pattern")
        s.pop("gate_margin", None)
        fmt_margin = s.pop("fmt_margin", None)
        fmt_sign = s.pop("fmt_sign", None)
        half = Const(w // 2, w)
        lanes = []
        for lane in range(self.lanes):
            c = counts[lane * cw:(lane + 1) * cw]
            kept = gates[lane]
            value = Mux(kept, c, half)
            if fmt_margin is not None:
                margin = Mux(kept, _sign_extend(2 * c - w, w), 0)
                value = Mux(fmt_margin, margin, value)
            if fmt_sign is not None:
                sign = Mux(c > w // 2, _signed_lane(1, w),
                           Mux(c < w // 2, _signed_lane(-1, w), _signed_lane(0, w)))
                value = Mux(fmt_sign, Mux(kept, sign, 0), value)
            raw = data[lane * w:(lane + 1) * w]
            lanes.append(Mux(xform, value, raw))
        s["data"] = Cat(*lanes)
        return s

    # -- elaboration ----------------------------------------------------------

    def elaborate(self, platform):
        m = Module()

        live = Signal()           # high from the first clock edge out of reset
        m.d.sync += live.eq(1)

        placement = PLACEMENT[self.stages]
        out_valid = Signal()      # valid bit of the last stage, bound below
        en = Signal()
        m.d.comb += [
            en.eq(self.out_ready | ~out_valid),
            self.in_ready.eq(en & live),
        ]

        valid = self.in_valid & live
        sigs = {
            "data": self.in_data, "tag": self.in_tag, "mode": self.in_mode,
            "format": self.in_format, "gate_kind": self.in_gate_kind,
            "period": self.in_gate_period, "keep": self.in_gate_keep,
            "threshold": self.in_gate_threshold, "phase": self.in_gate_phase,
        }
        steps = (self._step_a, self._step_b, self._step_c, self._step_d)
        index = 0
        for boundary, count in enumerate(placement):
            for _ in range(count):
                valid, sigs = self._register(m, en, valid, sigs, index)
                index += 1
            if boundary < len(steps):
                sigs = steps[boundary](m, dict(sigs))
        assert index == self.stages and set(sigs) == {"data", "tag"}

        m.d.comb += [
            out_valid.eq(valid),
            self.out_valid.eq(valid),
            self.out_data.eq(sigs["data"]),
            self.out_tag.eq(sigs["tag"]),
        ]
        return m
