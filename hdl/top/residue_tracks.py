"""Registered residue tracks: the steps of ``phase.py`` with a register after
each, for the request pipeline (the address) and the region residues
(``region_residues.py``, each region's BASE).

A track forms, for each modulus q of :data:`.phase.MODULI`, a plain sum
``u_q`` with ``u_q = x (mod q)`` and ``u_q <= 2q - 2`` (leaves, plain sums of
pairs, the fold and its sum: :func:`track_length` cycles), and carries the
low three bits of ``x`` beside it; the caller takes ``u_q`` modulo q with or
without an offset."""

from amaranth import Value

from neuron_fabric.hdl.top.phase import LEAF_BITS, MODULI, fold, leaf_residues, sum_level
from neuron_fabric.hdl.prims.pipe import delay, register

__all__ = ["track_length", "plain_residues"]


def _levels(width):
    n, levels = -(-width // LEAF_BITS), 0
    while n > 1:
        n, levels = -(-n // 2), levels + 1
    return levels


def track_length(width):
    """Cycles from ``x`` (a register) to :func:`plain_residues`'s outputs:
    the leaves, one per level of plain sums, the fold and its sum."""
    return 1 + _levels(width) + 2


def plain_residues(m, name, x):
    """``({q: u_q}, low)``: registered, :func:`track_length` cycles after
    ``x``; ``low`` is ``x[:3]`` delayed as long."""
    x = Value.cast(x)
    sums = {}
    for q in MODULI:
        values = register(m, f"{name}_leaf{q}_", leaf_residues(x, q))
        level = 0
        while len(values) > 1:
            level += 1
            values = register(m, f"{name}_sum{q}_{level}_", sum_level(values))
        high, low = register(m, f"{name}_fold{q}_", list(fold(values[0], q)))
        sums[q] = register(m, f"{name}_plain{q}", high + low)
    return sums, delay(m, f"{name}_low", x[:3], track_length(len(x)))
