"""The gate phase and mask steps of the request pipeline (``request.py``):
from the residues of ``line - BASE`` to the PATTERN gate mask the read's
in-flight entry holds (contract 4.3 and section 3 (v2)), five registered
steps on the pipeline's :class:`.pipe.Line`:

1. the phase candidate of every P (``phase.phase_candidates``), and K's
   bits ``r < K`` (``phase.keep_below``);
2. the phase chosen by ``P[:2]``, and the pattern table by ``P[:2]``;
3. by ``P[2:]`` each;
4. the table shifted by ``phase[:2]``;
5. (returned, for the caller's last stage) by ``4 * phase[2:]``.

P, K and the phase are read by every bit of a table of E + 15 entries, so
each is taken as :data:`CONTROL_COPIES` registered copies, each serving a
slice of the table.  Without ``gate_pattern_programmable`` the table is the
constant of the paper's 2-of-3 gate (:data:`FIXED_PATTERN`); the phase is
still formed with the register's P."""

from amaranth import Cat
from amaranth.lib import data

from neuron_fabric.host.facts import COUNT_LANE_BITS, PROFILES, Operand
from .cfg import CfgLayout
from .phase import (keep_below, mask_choose, pattern_choose, pattern_table, phase_candidates,
                    phase_choose)
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
    """Steps 1-4 on ``line`` (whose fields hold ``cfg``), from ``residues``
    (``{q: (line - BASE) mod q}`` for q in 3, 5, 7, 9, 11, 13) and ``low``
    (``(line - BASE) mod 8``) at its last stage; returns the mask, formed
    from the last stage's registers (step 5)."""
    p = params
    programmable = PROFILES[p.profile].has("gate_pattern_programmable")
    cfg = data.View(CfgLayout, line.fields["cfg"])
    counts = ((cfg.operand != Operand.SIGNS, p.line_bits // COUNT_LANE_BITS)
              if PROFILES[p.profile].has("hierarchy") else None)
    line.step()
    cand = register(m, "gate_cand", phase_candidates(low, residues, p.lanes, counts))
    period = copies(m, "gate_period_a", cfg.period, CONTROL_COPIES)
    below = (copies(m, "gate_below", keep_below(cfg.keep), CONTROL_COPIES)
             if programmable else None)
    cfg = data.View(CfgLayout, line.fields["cfg"])
    line.step()
    half = register(m, "gate_phase_half", phase_choose(cand, period[0], 0))
    if programmable:
        parts = [pattern_choose(b, per, p.lanes, 0) for b, per in zip(below, period)]
        table_half = register(m, "gate_table_half", [
            Cat(*(slices(part[hi], len(parts))[k] for k, part in enumerate(parts)))
            for hi in range(4)])
    period = copies(m, "gate_period_b", cfg.period, CONTROL_COPIES)
    line.step()
    phase = copies(m, "gate_phase_a", phase_choose(half, period[0], 1), CONTROL_COPIES)
    if programmable:
        table = register(m, "gate_table", _per_copy(
            lambda per: pattern_choose(table_half, per, p.lanes, 1), period))
    else:
        table = pattern_table(*FIXED_PATTERN, p.lanes)
    line.step()
    shifted = register(m, "gate_mask_half", _per_copy(
        lambda ph: mask_choose(table, ph, p.lanes, 0), phase))
    phase = copies(m, "gate_phase_b", phase[0], CONTROL_COPIES)
    return _per_copy(lambda ph: mask_choose(shifted, ph, p.lanes, 1), phase)
