"""The gate phase and mask steps of the request pipeline (``request.py``):
from the residues of ``line - BASE`` to the PATTERN gate mask the read's
in-flight entry holds (contract 4.3 and section 3 (v2)), seven registered
steps on the pipeline's :class:`.pipe.Line` and an eighth for its caller:

1. the phase candidate of every P (``phase.phase_candidates``);
2. the phase chosen by ``P[:2]``; copies of P and K for the table;
3. the phase, by ``P[2:]``; each table entry's ``u mod P`` (a LUT4 of P a
   bit, beside each copy of P);
4. copies of the phase, each placed by the slice of the table it shifts;
   the table ``T[u] = (u mod P) < K`` (a 4-bit compare an entry);
5-7. the table shifted by ``phase[0]``, ``2 * phase[1]``, ``4 * phase[2]``
   (a 2:1 choice, one LUT4, per bit);
8. (returned, for the caller's last stage) by ``8 * phase[3]``.

P, K and the phase are read by every bit of a table of E + 15 entries, so
each is taken as :data:`CONTROL_COPIES` registered copies, each serving a
slice of the table; the phase as at most E copies (:func:`phase_copies`),
since the last step's table, the mask, has E bits and each copy serves a
slice of it (E = 4 with 64-bit lines and 16 workers).  Without
``gate_pattern_programmable`` the table is the constant of the paper's
2-of-3 gate (:data:`FIXED_PATTERN`); the phase is still formed with the
register's P."""

from amaranth import Cat
from amaranth.lib import data

from neuron_fabric.contract.facts import COUNT_LANE_BITS, profile_named, Operand
from neuron_fabric.hdl.top.cfg import CfgLayout
from neuron_fabric.hdl.top.phase import (MASK_STEPS, lane_residues, mask_choose, pattern_bits, pattern_table,
                                         phase_candidates, phase_choose)
from neuron_fabric.hdl.prims.pipe import copies, register

__all__ = ["FIXED_PATTERN", "CONTROL_COPIES", "phase_copies", "gate_mask_steps", "mask_lanes",
           "slices"]

#: The fixed PATTERN gate of a build without ``gate_pattern_programmable``
#: (the paper's 2-of-3 gate): P, K.
FIXED_PATTERN = (3, 2)

#: Registered copies of P, K's bits and the phase, each for a slice of the table.
CONTROL_COPIES = 8


def phase_copies(lanes):
    """Registered copies of the phase: :data:`CONTROL_COPIES`, or one per
    bit of the mask (``lanes``, E) when it has fewer bits, so that every copy
    drives a slice of every shift step."""
    return min(CONTROL_COPIES, lanes)


def slices(value, n):
    """``value`` cut into ``n`` slices (as equal as they come)."""
    cuts = [len(value) * k // n for k in range(n + 1)]
    return [value[lo:hi] for lo, hi in zip(cuts, cuts[1:]) if hi > lo]


def _per_copy(build, selects):
    """Each copy of a select drives its own slice: slice k of ``build(select
    copy k)``; a value of fewer bits than there are copies is refused."""
    parts = [slices(build(sel), len(selects)) for sel in selects]
    if len(parts[0]) < len(selects):
        raise ValueError(f"{len(selects)} copies for a value of {len(parts[0])} bits")
    return Cat(*(part[k] for k, part in enumerate(parts)))


def mask_lanes(params):
    """Bits of the mask a read's in-flight entry holds: E, or with the packed
    view ``LINE_BITS / 2``, one per element of a view line (contract section
    6.2: source line ``b`` of a view line takes bits ``[b*E', (b+1)*E')``);
    a read that is no view uses the first E (or ``E_c``)."""
    return params.line_bits // 2 if profile_named(params.profile).has("packed_view") else params.lanes


def gate_mask_steps(m, line, params, residues, low):
    """Steps on ``line`` (whose fields hold ``cfg``, and ``view`` with the
    packed view), from ``residues`` (``{q: (line - BASE) mod q}`` for q in
    3, 5, 7, 9, 11, 13) and ``low`` (``(line - BASE) mod 8``) at its last
    stage; returns the mask (:func:`mask_lanes` bits), formed from the last
    stage's registers.  The phase is ``(x * E) mod P``, ``(x * E_c) mod P``
    for a count line, and ``(x * LINE_BITS/2) mod P`` for a view line."""
    p = params
    has = profile_named(p.profile).has
    programmable = has("gate_pattern_programmable")
    width = mask_lanes(p)

    def cfg():
        return data.View(CfgLayout, line.fields["cfg"])

    alternatives = []
    if has("packed_view"):
        alternatives.append((line.fields["view"], p.line_bits // 2))
    if has("hierarchy"):
        alternatives.append((cfg().operand != Operand.SIGNS, p.line_bits // COUNT_LANE_BITS))
    # 1: every P's phase candidate
    period = cfg().period
    line.step()
    cand = register(m, "gate_cand", phase_candidates(low, residues, p.lanes, alternatives))
    pick = register(m, "gate_period_pick", period)
    # 2: the phase chosen by P[:2]; copies of P and K for the table
    table_period = copies(m, "gate_period_t", cfg().period, CONTROL_COPIES)
    keep = copies(m, "gate_keep", cfg().keep, CONTROL_COPIES)
    line.step()
    half = register(m, "gate_phase_half", phase_choose(cand, pick, 0))
    pick = register(m, "gate_period_pick2", pick)
    # 3: the phase (one register); each table entry's u mod P, beside each
    # copy of P
    line.step()
    phase = register(m, "gate_phase", phase_choose(half, pick, 1))
    if programmable:
        lanes = [register(m, f"gate_lane_res{k}", sl) for k, sl in enumerate(_per_copy_list(
            lambda per: lane_residues(per, width), table_period))]
        keep = [register(m, f"gate_keep_b{k}", kc) for k, kc in enumerate(keep)]
    # 4: copies of the phase, each beside the slice of the table it shifts;
    # the table, u mod P < K (a 4-bit compare an entry)
    line.step()
    shift = copies(m, "gate_phase_a", phase, phase_copies(width))
    if programmable:
        table = register(m, "gate_table", Cat(*(pattern_bits(kc, sl)
                                                for kc, sl in zip(keep, lanes))))
    else:
        table = pattern_table(*FIXED_PATTERN, width)
    # 5..: the table shifted by the phase, a bit a step (the last returned);
    # each step's copies of the phase taken from the last step's
    for step in range(MASK_STEPS):
        shifted = _per_copy(lambda ph: mask_choose(table, ph[step], width, step), shift)
        if step == MASK_STEPS - 1:
            return shifted
        line.step()
        table = register(m, f"gate_mask_step{step}", shifted)
        shift = [register(m, f"gate_phase_s{step}_{k}", sh) for k, sh in enumerate(shift)]


def _per_copy_list(build, selects):
    """Each copy of a select builds its own share of a list: share k of
    ``build(select copy k)``, for each k."""
    out = []
    for k, sel in enumerate(selects):
        values = build(sel)
        cuts = [len(values) * j // len(selects) for j in range(len(selects) + 1)]
        out.append(values[cuts[k]:cuts[k + 1]])
    return out
