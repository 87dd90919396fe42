"""Region match of the request pipeline (contract 4.3): the lowest-numbered
enabled region with BASE <= line address < LIMIT gives the request its CFG
and its region values, DEFAULT_CFG (and BASE 0) when none does.

The compares are cut into steps of at most two LUT4 levels, which the
pipeline (``request.py``) registers one by one:

* :func:`chunk_compare` - for each 2-bit chunk of the address and a bound,
  whether the chunk is below the bound's and whether they are equal (a
  LUT4 each, packed with its flip-flop);
* :func:`combine` - groups of up to four (less, equal) pairs into one, the
  higher one deciding, until at most three are left;
* :func:`match` - the last three into "below" for BASE and LIMIT, and the
  region's match (enabled, not below BASE, below LIMIT);
* :func:`first` - the lowest-numbered match, one-hot, and "none";
* :func:`select_partial` and :func:`select_final` - the chosen region's
  values as an AND-OR over the one-hot, pairs of sources then their OR.

The combinations are written as gates, so synthesis makes LUT4s of them.
(With 4-bit chunks, whose "less" is a function of eight inputs, the
compares left the slice's wide multiplexers' output on a routed hop into
their flip-flops; in the top, they were among the latest inputs.)
"""

from functools import reduce

from amaranth import Const, Value

__all__ = ["chunk_compare", "combine", "match", "first", "select_partial", "select_final",
           "compare_steps", "region_reference"]


def _or(values):
    values = list(values)
    return reduce(lambda a, b: a | b, values) if values else Const(0, 1)


def _piece(a, b):
    """(a < b, a == b) for pieces of at most two bits, as gates."""
    lt, eq = Const(0, 1), Const(1, 1)
    for i in range(len(a)):                    # from the lowest bit up
        lt = (~a[i] & b[i]) | (~(a[i] ^ b[i]) & lt)
        eq = eq & ~(a[i] ^ b[i])
    return lt, eq


def _join(pairs):
    """One (less, equal) pair from pairs listed lowest first."""
    lt, eq = pairs[0]
    for hlt, heq in pairs[1:]:
        lt, eq = hlt | (heq & lt), heq & eq
    return lt, eq


#: Bits of the address each :func:`chunk_compare` pair covers.
CHUNK_BITS = 2


def chunk_compare(addr, bound):
    """(less, equal) of each :data:`CHUNK_BITS`-bit chunk of ``addr``
    against ``bound``, lowest first: functions of four inputs, a LUT4 each."""
    return [_piece(addr[i:i + CHUNK_BITS], bound[i:i + CHUNK_BITS])
            for i in range(0, len(addr), CHUNK_BITS)]


def combine(pairs):
    """Groups of four (less, equal) pairs joined, lowest first: two LUT4
    levels (the less of four is a function of seven inputs)."""
    return [_join(pairs[i:i + 4]) for i in range(0, len(pairs), 4)]


def compare_steps(width):
    """How many :func:`combine` steps bring a ``width``-bit compare's chunks
    to at most three pairs, which :func:`match` takes."""
    n, steps = -(-width // CHUNK_BITS), 0
    while n > 3:
        n, steps = -(-n // 4), steps + 1
    return steps


def match(enable, base_pairs, limit_pairs):
    """The region matches: enabled, the address not below BASE, below LIMIT
    (each from at most three pairs: a LUT5, then a LUT3)."""
    below_base, _ = _join(base_pairs)
    below_limit, _ = _join(limit_pairs)
    return enable & ~below_base & below_limit


def first(matches):
    """The lowest-numbered match as a one-hot list, and whether none matched."""
    return ([m & ~_or(matches[:r]) for r, m in enumerate(matches)],
            ~_or(matches))


def select_partial(selects, values):
    """First step of the AND-OR choice of ``values[k]`` by the one-hot
    ``selects``: the OR of each pair of sources (a LUT4 per bit)."""
    width = len(Value.cast(values[0]))
    terms = [Value.cast(v) & s.replicate(width) for s, v in zip(selects, values)]
    return [_or(terms[i:i + 2]) for i in range(0, len(terms), 2)]


def select_final(partials):
    """Second step: the OR of the partials."""
    return _or(partials)


def region_reference(addr, regions):
    """contract 4.3 in Python: the index of the first enabled region of
    ``regions`` (``(enable, base, limit)`` line addresses) that holds the line
    address ``addr``, or None."""
    for r, (enable, base, limit) in enumerate(regions):
        if enable and base <= addr < limit:
            return r
    return None

