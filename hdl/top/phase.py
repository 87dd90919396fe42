"""Gate phase of a line, ``((line - BASE) * E) mod P`` for a run-time P in
1..15, and the PATTERN gate mask the datapath core takes (contract 4.3 and
section 3 (v2)), as steps the request pipeline registers one by one, each a
LUT level or two, or a short carry chain.

A division by a run-time P would be a long path, so the residue of the
address is formed for the moduli 5, 7, 9, 11 and 13 (the odd prime powers
below 16), the residue modulo 8 is the low three bits, and each P then
combines the residues it needs (Chinese remainder theorem) with the factor E
in one small table (:func:`phase_candidates`).  The residues of the address
do not depend on the region, so they are formed while the region is being
matched:

* :func:`leaf_residues` - each 4-bit group of the address, weighted by its
  position, modulo q: one LUT4 per bit;
* :func:`sum_level` - plain sums of pairs, one level per step (carry chains
  of at most 8 bits), until one sum is left;
* :func:`fold` - that sum (at most 8 bits) as two residues, of its high and
  low nibbles, each a LUT4, and their plain sum;
* the region's ``(-BASE) mod q`` (``hdl/top/region_residues.py``) added to it, and
  :func:`reduce_small` takes the result (at most 6 bits) modulo q.

The mask is periodic in the lane index: lane ``i`` is kept iff
``(phase + i) mod P < K``, i.e. ``mask[i] = T[i + phase]`` for the table
``T[u] = (u mod P) < K``, formed from P and K alone beside the phase: each
entry's ``u mod P`` (:func:`lane_residues`, a LUT4 of P a bit), then its
compare with K (:func:`pattern_bits`); :func:`mask_choose` then shifts the
table by the phase, a bit at a time (a 2:1 choice, one LUT4, per bit).  The
run-time choice of the phase by P is cut into two choices among four
(:func:`choose4`, a LUT4 pair and the slice's multiplexer).
"""

from math import gcd, lcm

from amaranth import Cat, Const, Mux, Signal, Value

__all__ = ["MODULI", "PERIOD_MAX", "LEAF_BITS", "leaf_residues", "sum_level", "fold",
           "reduce_small", "negate_small", "residue", "phase_candidates", "choose4",
           "phase_choose", "phase_reference", "lane_residues", "pattern_bits",
           "pattern_table", "mask_choose", "MASK_STEPS", "gate_mask", "table_length",
           "low_bits_needed"]

#: Moduli whose residues the trees compute.
MODULI = (5, 7, 9, 11, 13)
PERIOD_MAX = 15
#: Address bits a leaf reads: each residue bit of a leaf is one LUT4.
LEAF_BITS = 4
#: Values a 4-bit phase can take: the table reaches 15 entries past the last lane.
_PHASES = 16


def phase_reference(line_index, lanes, period):
    """Plain-integer reference (contract 4.3)."""
    return (line_index * lanes) % period


def _bits(n):
    return max(1, (n - 1).bit_length())


def _table(index, func, width, size):
    """``func(v)`` for ``v`` in ``0 .. size-1`` as a constant table of
    ``width``-bit words selected by ``index``."""
    return Const(sum(func(v) << (width * v) for v in range(size)),
                 width * size).word_select(index, width)


def leaf_residues(x, q):
    """Each ``LEAF_BITS``-bit group of ``x`` times its weight, modulo ``q``:
    one table of the group's bits (a LUT4 per result bit)."""
    out = []
    for lsb in range(0, len(x), LEAF_BITS):
        group = x[lsb:lsb + LEAF_BITS]
        weight = pow(2, lsb, q)
        out.append(_table(group, lambda v: (v * weight) % q, _bits(q), 1 << len(group)))
    return out


def sum_level(values):
    """Plain sums of neighbouring pairs (an odd last value passes)."""
    values = [Value.cast(v) for v in values]
    return [values[i] + values[i + 1] if i + 1 < len(values) else values[i]
            for i in range(0, len(values), 2)]


def fold(v, q):
    """``v`` (at most 8 bits) as ``(16 * high) mod q`` and ``low mod q``,
    each a table of one nibble; their plain sum is at most ``2q - 2``."""
    v = Value.cast(v)
    if len(v) > 8:
        raise ValueError(f"fold takes at most 8 bits, not {len(v)}")
    high, low = v[4:], v[:4]
    return (_table(high, lambda h: (16 * h) % q, _bits(q), 1 << len(high)) if len(high)
            else Const(0, _bits(q)),
            _table(low, lambda l: l % q, _bits(q), 1 << len(low)))


def reduce_small(v, q):
    """``v mod q`` for a ``v`` of at most 6 bits: one table."""
    v = Value.cast(v)
    if len(v) > 6:
        raise ValueError(f"reduce_small takes at most 6 bits, not {len(v)}")
    return _table(v, lambda w: w % q, _bits(q), 1 << len(v))


def negate_small(v, q):
    """``(-v) mod q`` for a ``v`` of at most 6 bits: one table."""
    v = Value.cast(v)
    if len(v) > 6:
        raise ValueError(f"negate_small takes at most 6 bits, not {len(v)}")
    return _table(v, lambda w: (-w) % q, _bits(q), 1 << len(v))


def residue(m, x, q, offset=None):
    """``(x + offset) mod q`` as the steps above chained without registers,
    each step's result a Signal of ``m`` (for tests and references; the
    pipelines register between the steps).  ``offset`` is a residue below
    ``q``."""
    values = [_signal(m, v, f"res{q}_leaf{i}")
              for i, v in enumerate(leaf_residues(Value.cast(x), q))]
    level = 0
    while len(values) > 1:
        level += 1
        values = [_signal(m, v, f"res{q}_sum{level}_{i}") for i, v in enumerate(sum_level(values))]
    high, low = fold(values[0], q)
    total = _signal(m, high + low, f"res{q}_fold")
    return reduce_small(total if offset is None else _signal(m, total + offset, f"res{q}_off"), q)


def low_bits_needed(period, factors):
    """How many low bits of x decide ``(x * f) mod 2^s`` for every factor f
    (a power of two) of ``factors``, where ``2^s`` is the power of two
    dividing ``period``."""
    s = ((period & -period).bit_length() - 1) if period else 0
    return max([max(0, s - (f.bit_length() - 1)) for f in factors] + [0])


def _odd_moduli(p):
    """The moduli whose residues decide ``x mod odd(p)``: 3 for a factor of 3
    that 9 does not divide, 9 when it does, and the other primes."""
    odd = p // (p & -p)
    mods = []
    if odd % 9 == 0:
        mods.append(9)
    elif odd % 3 == 0:
        mods.append(3)
    mods += [q for q in (5, 7, 11, 13) if gcd(q, odd) > 1]
    return mods


def phase_candidates(low, residues, lanes, alternatives=()):
    """The phase ``(x * E) mod P`` for each period P (list index 0..15) from
    ``low`` (x mod 8, or its low bits) and ``residues`` (``{q: x mod q}``
    for q in 3, 5, 7, 9, 11, 13): each a table of the few bits P needs (at
    most five, one more for each of ``alternatives``), so all of them form
    in one step.

    ``alternatives``, pairs ``(select, lanes_2)``, make each table one
    input wider each: where the 1-bit Value ``select`` is high, the phase is
    ``(x * lanes_2) mod P`` instead, the first such pair deciding (the count
    lines of contract section 5.3, ``E_c`` elements a line; a packed view's
    lines of section 6.2, ``LINE_BITS / 2`` elements a line)."""
    alternatives = list(alternatives)
    factors = [lanes] + [f for _, f in alternatives]
    out = [Const(0, 4), Const(0, 4)]         # P = 1 (and the rejected P = 0): phase 0
    for p in range(2, PERIOD_MAX + 1):
        nlow, mods = low_bits_needed(p, factors), _odd_moduli(p)
        fields = [(1 << nlow, nlow)] + [(q, _bits(q)) for q in mods]
        key = Cat(low[:nlow], *(residues[q][:_bits(q)] for q in mods),
                  *(select for select, _ in alternatives))
        shift = sum(width for _, width in fields)
        table = 0
        for x in range(lcm(p, 8, *mods)):
            k, at = 0, 0
            for modulus, width in fields:
                k, at = k | ((x % modulus) << at), at + width
            for sel in range(1 << len(alternatives)):
                chosen = next((f for a, (_, f) in enumerate(alternatives) if sel >> a & 1),
                              lanes)
                table |= ((x * chosen) % p) << (4 * (k | (sel << shift)))
        out.append(Const(table, 4 << len(key)).word_select(key, 4))
    return out


def choose4(values, select):
    """``values[select]`` for up to four Values (zero-extended to the widest;
    missing ones read as 0) and a 2-bit ``select``: per bit a LUT4 pair and
    the slice's multiplexer."""
    values = [Value.cast(v) for v in values]
    width = max(len(v) for v in values)
    values += [Const(0, width)] * (4 - len(values))
    return Cat(*(v.as_unsigned() if len(v) == width else Cat(v, Const(0, width - len(v)))
                 for v in values)).word_select(select, width)


def phase_choose(candidates, period, step):
    """The phase for the run-time ``period`` from :func:`phase_candidates`
    in two steps: ``step`` 0 chooses by ``period[:2]`` (four values, one for
    each ``period[2:]``), ``step`` 1 by ``period[2:]`` among those."""
    if step == 0:
        return [choose4(candidates[4 * hi:4 * hi + 4], period[:2]) for hi in range(4)]
    return choose4(candidates, period[2:4])


def table_length(lanes):
    """Entries of the pattern table: the lanes and 15 past the last."""
    return lanes + _PHASES - 1


def lane_residues(period, lanes):
    """First step of the run-time pattern table: ``u mod P`` for each entry
    u (15 for the rejected P = 0), four bits each, each bit a table of P
    alone (a LUT4)."""
    return [_table(period, lambda p, u=u: u % p if p else PERIOD_MAX, 4, 16)
            for u in range(table_length(lanes))]


def pattern_bits(keep, residues):
    """Second step: ``T[u] = (u mod P) < K`` from :func:`lane_residues`, a
    4-bit compare each (a short carry chain)."""
    return Cat(*(Value.cast(r) < keep for r in residues))


def _signal(m, value, name):
    """``value`` through a Signal of ``m`` (when given): each step's result a
    Signal, as the pipeline registers it."""
    if m is None:
        return value
    value = Value.cast(value)
    sig = Signal(len(value), name=name)
    m.d.comb += sig.eq(value)
    return sig


def pattern_table(period, keep, lanes, m=None):
    """``T[u] = (u mod P) < K`` for ``u`` in ``0 .. E + 14``: with ints the
    constant table of a fixed pattern; with Values the steps
    :func:`lane_residues` and :func:`pattern_bits` chained without registers
    (through a Signal of ``m`` when given)."""
    length = table_length(lanes)
    if isinstance(period, int):
        return Const(sum(1 << u for u in range(length) if u % period < keep), length)
    residues = [_signal(m, r, f"lane_res{u}") for u, r in enumerate(lane_residues(period, lanes))]
    return pattern_bits(keep, residues)


#: Steps of :func:`mask_choose`: one per phase bit.
MASK_STEPS = 4


def mask_choose(table, phase_bit, lanes, step):
    """The PATTERN gate mask ``mask[i] = T[i + phase]`` (contract section 2:
    lane ``i`` kept iff ``(phase + i) mod P < K``) in :data:`MASK_STEPS`
    steps, one a phase bit from the lowest: ``step`` k shifts its input by
    ``2^k`` where ``phase_bit`` (bit k of the phase) is high, a 2:1 choice
    (one LUT4) per bit; its result keeps the entries the later steps can
    still reach: ``lanes + 2^4 - 2^(k+1)`` bits."""
    table = Value.cast(table)
    n = lanes + (1 << MASK_STEPS) - (1 << (step + 1))
    shift = 1 << step
    return Cat(*(Mux(phase_bit, table[j + shift] if j + shift < len(table) else Const(0, 1),
                     table[j]) for j in range(n)))


def gate_mask(table, phase, lanes, m=None):
    """:func:`mask_choose`'s steps chained without registers (through Signals
    of ``m`` when given)."""
    for step in range(MASK_STEPS):
        table = _signal(m, mask_choose(table, phase[step], lanes, step), f"mask_step{step}")
    return table
