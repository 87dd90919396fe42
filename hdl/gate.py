"""The gate phase and mask steps of the request pipeline (``request.py``):
from the residues of ``line - BASE`` to the PATTERN gate mask the read's
in-flight entry holds (contract 4.3 and section 3 (v2)), seven registered
steps on the pipeline's :class:`.pipe.Line` and an eighth for its caller:

1. the phase candidate of every P (``phase.phase_candidates``);
2. the phase chosen by ``P[:2]``; K's bits ``r < K`` (``phase.keep_below``),
   beside each copy of K taken in step 1;
3. the phase, by ``P[2:]``; the pattern table chosen by ``P[:2]``;
4. copies of the phase, each placed by the slice of the table it shifts;
   the table by ``P[2:]``;
5-7. the table shifted by ``phase[0]``, ``2 * phase[1]``, ``4 * phase[2]``
   (a 2:1 choice, one LUT4, per bit);
8. (returned, for the caller's last stage) by ``8 * phase[3]``.

P, K and the phase are read by every bit of a table of E + 15 entries, so
each is taken as :data:`CONTROL_COPIES` registered copies, each serving a
slice of the table.  Without ``gate_pattern_programmable`` the table is the
constant of the paper's 2-of-3 gate (:data:`FIXED_PATTERN`); the phase is
still formed with the register's P."""

from amaranth import Cat
from amaranth.lib import data

from neuron_fabric.host.facts import COUNT_LANE_BITS, PROFILES, Operand
from .cfg import CfgLayout
from .phase import (MASK_STEPS, keep_below, mask_choose, pattern_choose, pattern_table,
                    phase_candidates, phase_choose)
from .pipe import copies, register

__all__ = ["FIXED_PATTERN", "CONTROL_COPIES", "gate_mask_steps", "slices"]

#: The fixed PATTERN gate of a build without ``gate_pattern_programmable``
#: (the paper's 2-of-3 gate): P, K.
FIXED_PATTERN = (3, 2)

#: Registered copies of P, K's bits and the phase, each for a slice of the table.
CONTROL_COPIES = 8


def slices(value, n):
    """``value`` cut into ``n`` slices (as equal as they come)."""
    cuts = [len(value) * k // n for k in range(n + 1)]
    return [value[lo:hi] for lo, hi in zip(cuts, cuts[1:]) if hi > lo]


def _per_copy(build, selects):
    """Each copy of a select drives its own slice: slice k of ``build(select
    copy k)``."""
    return Cat(*(slices(build(sel), len(selects))[k] for k, sel in enumerate(selects)))


def gate_mask_steps(m, line, params, residues, low):
    """Steps on ``line`` (whose fields hold ``cfg``), from ``residues``
    (``{q: (line - BASE) mod q}`` for q in 3, 5, 7, 9, 11, 13) and ``low``
    (``(line - BASE) mod 8``) at its last stage; returns the mask, formed
    from the last stage's registers."""
    p = params
    programmable = PROFILES[p.profile].has("gate_pattern_programmable")

    def cfg():
        return data.View(CfgLayout, line.fields["cfg"])

    counts = ((cfg().operand != Operand.SIGNS, p.line_bits // COUNT_LANE_BITS)
              if PROFILES[p.profile].has("hierarchy") else None)
    # 1: every P's phase candidate; copies of K and P for the table
    period = cfg().period
    keep = copies(m, "gate_keep", cfg().keep, CONTROL_COPIES)
    table_period = copies(m, "gate_period_t", cfg().period, CONTROL_COPIES)
    line.step()
    cand = register(m, "gate_cand", phase_candidates(low, residues, p.lanes, counts))
    pick = register(m, "gate_period_pick", period)
    # 2: the phase chosen by P[:2]; K's bits beside each copy
    line.step()
    half = register(m, "gate_phase_half", phase_choose(cand, pick, 0))
    pick = register(m, "gate_period_pick2", pick)
    below = [register(m, f"gate_below{k}", keep_below(kc)) for k, kc in enumerate(keep)]
    period = [register(m, f"gate_period_a{k}", pc) for k, pc in enumerate(table_period)]
    # 3: the phase (one register); the table chosen by P[:2]
    table_period = copies(m, "gate_period_b", cfg().period, CONTROL_COPIES)
    line.step()
    phase = register(m, "gate_phase", phase_choose(half, pick, 1))
    if programmable:
        parts = [pattern_choose(b, per, p.lanes, 0) for b, per in zip(below, period)]
        table_half = register(m, "gate_table_half", [
            Cat(*(slices(part[hi], len(parts))[k] for k, part in enumerate(parts)))
            for hi in range(4)])
    # 4: copies of the phase, each beside the slice of the table it shifts;
    # the table chosen by P[2:]
    line.step()
    shift = copies(m, "gate_phase_a", phase, CONTROL_COPIES)
    if programmable:
        table = register(m, "gate_table", _per_copy(
            lambda per: pattern_choose(table_half, per, p.lanes, 1), table_period))
    else:
        table = pattern_table(*FIXED_PATTERN, p.lanes)
    # 5..: the table shifted by the phase, a bit a step (the last returned);
    # each step's copies of the phase taken from the last step's
    for step in range(MASK_STEPS):
        shifted = _per_copy(lambda ph: mask_choose(table, ph[step], p.lanes, step), shift)
        if step == MASK_STEPS - 1:
            return shifted
        line.step()
        table = register(m, f"gate_mask_step{step}", shifted)
        shift = [register(m, f"gate_phase_s{step}_{k}", sh) for k, sh in enumerate(shift)]
