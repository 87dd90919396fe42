"""Gate phase of a line, ``(line_index * E) mod P`` for a run-time P in 1..15,
and the PATTERN gate mask the datapath core takes (contract section 3 (v2)).

A division by a run-time P would be a long combinational path, so the
residue of the line index is formed for the moduli 5, 7, 9, 11 and 13 (the
odd prime powers below 16) by trees of small modular adders (each a table
of its two 4-bit residues, leaves a table of 6 bits of the index), the residue
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

from amaranth import Cat, Const, Signal

__all__ = ["MODULI", "PERIOD_MAX", "leaves", "reduce", "tree_levels", "phase_candidates",
           "phase_lookup", "phase_reference",
           "keep_below", "pattern_table", "gate_mask"]

#: Moduli whose residues the trees compute.
MODULI = (5, 7, 9, 11, 13)
PERIOD_MAX = 15
_LEAF_BITS = 6
#: Values a 4-bit phase can take: the table reaches 15 entries past the last lane.
_PHASES = 16


def phase_reference(line_index, lanes, period):
    """Plain-integer reference (contract 4.3)."""
    return (line_index * lanes) % period


def _mod_add(a, b, q):
    """``(a + b) mod q`` for residues ``a, b < q`` as one table indexed by
    both (6 or 8 bits): one small function per result bit, so a tree level
    is a LUT or two deep instead of an adder, a compare and a subtractor."""
    w = (q - 1).bit_length()
    table = sum((((x + y) % q) << (4 * (x | (y << w))))
                for x in range(q) for y in range(q))
    return Const(table, 4 << 2 * w).word_select(Cat(a[:w], b[:w]), 4)


def leaves(m, x):
    """First step: for each modulus ``q`` the residues of the 6-bit groups
    of ``x`` (each weighted by its position), one table per group."""
    out = {}
    for q in MODULI:
        parts = []
        for lsb in range(0, len(x), _LEAF_BITS):
            group = x[lsb:lsb + _LEAF_BITS]
            table = sum((sum(((v >> k) & 1) * pow(2, lsb + k, q)
                             for k in range(len(group))) % q) << (4 * v)
                        for v in range(1 << len(group)))
            part = Signal(4, name=f"leaf{q}_{lsb // _LEAF_BITS}")
            m.d.comb += part.eq(Const(table, 4 << len(group)).word_select(group, 4))
            parts.append(part)
        out[q] = parts
    return out


def tree_levels(width):
    """Levels of :func:`reduce` that bring the leaves of a ``width``-bit
    value down to one residue."""
    n = -(-width // _LEAF_BITS)
    return max(0, (n - 1).bit_length())


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


def phase_candidates(low_bits, residues, lanes, alternative=None):
    """The phase for each period P (list index, 0..15) from ``low_bits``
    (x mod 8) and the residues (one Value per modulus, each < q): each a
    table of the few residue bits P needs (at most 7), so all of them form
    in one shallow step; :func:`phase_lookup` then picks one by P.

    ``alternative``, a pair ``(select, lanes_2)``, makes each table one
    input wider: where the 1-bit Value ``select`` is high, the phase is
    ``(x * lanes_2) mod P`` instead (the count lines of contract section
    5.3, ``E_c`` elements a line)."""
    factors = [lanes] if alternative is None else [lanes, alternative[1]]
    out = [Const(0, 4), Const(0, 4)]         # P = 1 (and the rejected P = 0): phase 0
    for p in range(2, PERIOD_MAX + 1):
        two, mods = _factor_inputs(p)
        low = two.bit_length() - 1
        key = Cat(low_bits[:low], *(residues[q][:(q - 1).bit_length()] for q in mods))
        span = two
        for q in mods:
            span *= q
        table = 0
        for x in range(span):
            k, shift = x % two, low
            for q in mods:
                k |= (x % q) << shift
                shift += (q - 1).bit_length()
            for f, factor in enumerate(factors):
                table |= ((x * factor) % p) << (4 * (k | (f << len(key))))
        if alternative is not None:
            key = Cat(key, alternative[0])
        out.append(Const(table, 4 << len(key)).word_select(key, 4))
    return out


def phase_lookup(period, candidates):
    """The phase for the run-time ``period`` from :func:`phase_candidates`."""
    return Cat(*candidates).word_select(period, 4)


def keep_below(keep):
    """First step of the run-time pattern table: bit ``r`` = ``r < K`` for
    ``r`` in 0..14 (each bit a function of K alone)."""
    return Cat(*(keep > r for r in range(PERIOD_MAX)))


def pattern_table(period, keep, lanes, below=None):
    """``T[u] = (u mod P) < K`` for ``u`` in ``0 .. E + 14``, for a run-time
    P in 1..15 and K in 0..P (``period``, ``keep``: Values); with ints, the
    constant table of a fixed pattern.  Given ``below`` (:func:`keep_below`
    of K, registered by the caller), each bit is one of its bits chosen by P
    (a 16:1 choice) and ``keep`` is not used; without, each bit is a
    function of P and K."""
    length = lanes + _PHASES - 1
    if isinstance(period, int):
        return Const(sum(1 << u for u in range(length) if u % period < keep), length)
    if below is None:
        bits = []
        for u in range(length):
            residues = Cat(*(Const(u % q if q else 0, 4) for q in range(PERIOD_MAX + 1)))
            bits.append(keep > residues.word_select(period, 4))
        return Cat(*bits)
    return Cat(*(Cat(Const(0, 1), *(below[u % q] for q in range(1, PERIOD_MAX + 1)))
                 .bit_select(period, 1) for u in range(length)))


def gate_mask(table, phase, lanes):
    """The PATTERN gate mask, bit ``i`` = ``T[i + phase]`` (contract section 2:
    lane ``i`` kept iff ``(phase + i) mod P < K``)."""
    return Cat(*(table[i:i + _PHASES].bit_select(phase, 1) for i in range(lanes)))
