"""The PATTERN gate (contract section 2) and a line's phase in its region
(contract section 4.3): the one definition of the gate mask in the host side."""

import numpy as np

from neuron_fabric.host.golden.checks import check_mask, check_phase

def gate_pattern(lanes, period, keep, phase):
    """PATTERN gate for ``lanes`` lanes (contract section 2): lane ``i`` is kept
    iff ``(phase + i) mod P < K``.  The one definition of the gate mask in
    the host side; the top computes the same mask for the datapath core.

    Returns a bool array, shape ``(E,)`` for a scalar ``phase`` or ``(L, E)``
    for an array of per-line phases.
    """
    rows = ((np.arange(period)[:, None] + np.arange(lanes)[None, :]) % period) < keep
    return rows[check_phase(phase, period)]


def line_phase(line_index, lanes, period):
    """Phase of a line within its region: ``(line_index * E) mod P`` (contract 4.3)."""
    return (np.asarray(line_index) * lanes) % period


def pattern_kept(gate_mask, phase, period, keep, n_lines, lanes):
    """The PATTERN gate of ``n_lines`` lines: bool, shape (E_c,) or (L, E_c)."""
    if gate_mask is not None:
        return check_mask(gate_mask, n_lines, lanes)
    return gate_pattern(lanes, period, keep, np.broadcast_to(check_phase(phase, period),
                                                             (n_lines,)))


def chunk_mask(kept, sl):
    return kept if kept.ndim == 1 else kept[sl]
