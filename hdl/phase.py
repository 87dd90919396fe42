"""Gate phase of a line, ``(line_index * E) mod P`` for a run-time P in 1..15,
and the PATTERN gate mask the datapath core takes (contract section 3 (v2)).

A division by a run-time P would be a long combinational path, so the
residue of the line index is formed for the moduli 5, 7, 9, 11 and 13 (the
odd prime powers below 16) by trees of small modular adders, the residue
modulo 8 is the low three bits, and each P then combines the residues it
needs (Chinese remainder theorem) with the factor E in one small table.
The tree is split into steps so that the caller can put pipeline registers
between them.

The mask is periodic in the lane index: lane ``i`` is kept iff
``(phase + i) mod P < K``, i.e. ``mask[i] = T[i + phase]`` for the table
``T[u] = (u mod P) < K``.  :func:`pattern_table` forms ``T`` from P and K
alone (each bit a function of eight bits), so it can be computed beside
the phase; :func:`gate_mask` then selects each lane's bit by the phase (a
16:1 multiplexer per lane).
"""

from math import gcd

from amaranth import Cat, Const, Mux, Signal

__all__ = ["MODULI", "PERIOD_MAX", "leaves", "reduce", "phase_lookup", "phase_reference",
           "pattern_table", "gate_mask"]

#: Moduli whose residues the trees compute.
MODULI = (5, 7, 9, 11, 13)
PERIOD_MAX = 15
_LEAF_BITS = 4
#: Values a 4-bit phase can take: the table reaches 15 entries past the last lane.
_PHASES = 16


def phase_reference(line_index, lanes, period):
    """Plain-integer reference (contract 4.3)."""
    return (line_index * lanes) % period


def _mod_add(a, b, q):
    s = a + b
    return Mux(s >= q, s - q, s)[:4]


def leaves(m, x):
    """First step: for each modulus ``q`` a list of residues (one per 4-bit
    group of ``x``), each already summed pairwise once."""
    out = {}
    for q in MODULI:
        parts = []
        for lsb in range(0, len(x), _LEAF_BITS):
            group = x[lsb:lsb + _LEAF_BITS]
            part = Signal(4, name=f"leaf{q}_{lsb // _LEAF_BITS}")
            with m.Switch(group):
                for v in range(1 << len(group)):
                    value = sum(((v >> k) & 1) * pow(2, lsb + k, q)
                                for k in range(len(group))) % q
                    if value:
                        with m.Case(v):
                            m.d.comb += part.eq(value)
            parts.append(part)
        out[q] = reduce(parts, q, levels=1)
    return out


def reduce(values, q, levels=None):
    """Add ``values`` pairwise modulo ``q`` for ``levels`` levels (all the way
    to one value when None)."""
    values = list(values)
    while len(values) > 1 and (levels is None or levels > 0):
        values = [_mod_add(values[i], values[i + 1], q) if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
        if levels is not None:
            levels -= 1
    return values


def _factor_inputs(p):
    """For period ``p``: the power of two dividing it and the tree moduli whose
    residues determine ``x mod p``."""
    two = p & -p
    odd = p // two
    mods = [q for q in MODULI if gcd(q, odd) > 1]
    return two, mods


def phase_lookup(m, low_bits, residues, period, lanes):
    """Last step: the phase for the run-time ``period`` from ``low_bits``
    (x mod 8) and the residues (one Value per modulus, each < q)."""
    phase = Signal(4)
    with m.Switch(period):
        for p in range(2, PERIOD_MAX + 1):
            two, mods = _factor_inputs(p)
            span = two
            for q in mods:
                span *= q
            key_parts = [low_bits[:two.bit_length() - 1]] + [residues[q] for q in mods]
            key = Cat(*key_parts)
            with m.Case(p):
                with m.Switch(key):
                    for x in range(span):
                        k = x % two
                        shift = two.bit_length() - 1
                        for q in mods:
                            k |= (x % q) << shift
                            shift += 4
                        value = (x * lanes) % p
                        if value:
                            with m.Case(k):
                                m.d.comb += phase.eq(value)
        # P = 1 (and the rejected P = 0) give phase 0.
    return phase


def pattern_table(period, keep, lanes):
    """``T[u] = (u mod P) < K`` for ``u`` in ``0 .. E + 14``, for a run-time
    P in 1..15 and K in 0..P (``period``, ``keep``: Values); with ints, the
    constant table of a fixed pattern."""
    length = lanes + _PHASES - 1
    if isinstance(period, int):
        return Const(sum(1 << u for u in range(length) if u % period < keep), length)
    bits = []
    for u in range(length):
        residues = Cat(*(Const(u % q if q else 0, 4) for q in range(PERIOD_MAX + 1)))
        bits.append(keep > residues.word_select(period, 4))
    return Cat(*bits)


def gate_mask(table, phase, lanes):
    """The PATTERN gate mask, bit ``i`` = ``T[i + phase]`` (contract section 2:
    lane ``i`` kept iff ``(phase + i) mod P < K``)."""
    return Cat(*(table[i:i + _PHASES].bit_select(phase, 1) for i in range(lanes)))
