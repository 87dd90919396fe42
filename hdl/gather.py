"""Registered one-hot multiplexers: a value chosen by one-hot selects is
gathered through levels of registered partial ORs, so that no level is
more than one LUT4 deep (the control registers' decode, fetch and read)."""

from amaranth import Const, Signal

__all__ = ["GROUP", "LATER_GROUP", "groups", "gather", "tree", "and_all", "or_all"]

#: Pairs AND-ORed together in the first registered level of a one-hot
#: multiplexer (one LUT4), and partial results ORed in each later level.
GROUP = 2
LATER_GROUP = 4


def groups(items, group=GROUP):
    """``items`` in consecutive groups of ``group``."""
    return [items[i:i + group] for i in range(0, len(items), group)]


def gather(m, pairs, name, group=GROUP):
    """A registered level of a one-hot multiplexer: the OR of ``value &
    select`` over each of the :func:`groups` of ``(select, value)`` pairs
    (``None`` selects always); :func:`or_all` of the result (one cycle
    later) is the selected value."""
    width = max((len(v) for _, v in pairs), default=1)
    out = [Signal(width, name=f"{name}{i}") for i in range(len(groups(pairs, group)))]
    m.d.sync += [q.eq(_one_hot_or(g, width)) for q, g in zip(out, groups(pairs, group))]
    return out


def tree(m, pairs, name, levels):
    """``levels`` registered levels of a one-hot multiplexer (:func:`gather`
    first, then ORs of :data:`LATER_GROUP` partial results); :func:`or_all`
    of the result is the selected value, ``levels`` cycles after the selects."""
    out = gather(m, pairs, f"{name}_l1")
    for level in range(2, levels + 1):
        out = gather(m, [(None, q) for q in out], f"{name}_l{level}", LATER_GROUP)
    return out


def and_all(bits):
    """AND of ``bits`` (1 when there are none)."""
    out = Const(1, 1)
    for b in bits:
        out = out & b
    return out


def or_all(values):
    """OR of ``values`` (0 when there are none)."""
    out = Const(0, 1)
    for v in values:
        out = out | v
    return out


def _one_hot_or(pairs, width):
    """OR of ``value`` over ``(select, value)`` pairs (selects one-hot)."""
    out = Const(0, width)
    for s, value in pairs:
        out = out | (value if s is None else value & s.replicate(width))
    return out
