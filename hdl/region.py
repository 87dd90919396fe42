"""Region match and configuration choice of the request pipeline (contract
4.3: the lowest-numbered enabled region with BASE <= address < LIMIT, or
DEFAULT_CFG and BASE 0 when none), split so that each step is about two
LUT levels deep.

A compare of the line address with a bound is formed in three steps: each
:data:`CHUNK`-bit chunk's ``addr < bound`` and ``addr <= bound`` (a LUT
each), the same for runs of chunks (:func:`runs`, short carry chains), then
:func:`below`, the whole compare from the runs' results.
The choice of the first match's configuration is formed in two steps as
well: :func:`pair_choice` within each pair of regions, then
:func:`first_choice` among the pairs and the default.
"""

from amaranth import Cat, Const, Mux

__all__ = ["CHUNK", "RUN", "chunk_compare", "runs", "below", "pair_choice", "first_choice"]

#: Bits of the line address compared in one chunk (each result one LUT).
CHUNK = 2
#: Chunks combined on one carry chain (short, so that the synthesis's delay
#: target, set by its longest path, stays near two LUT levels).
RUN = 8


def _less(a, b):
    """``a < b`` for values of at most two bits, as logic (no carry chain)."""
    if len(a) == 1:
        return ~a[0] & b[0]
    return (~a[1] & b[1]) | (~(a[1] ^ b[1]) & ~a[0] & b[0])


def chunk_compare(addr, bound):
    """``(lt, le)``: for each :data:`CHUNK`-bit chunk of ``addr`` (least
    significant first), whether it is below ``bound``'s chunk and whether
    it is at most it."""
    lt, le = [], []
    for lsb in range(0, len(addr), CHUNK):
        a, b = addr[lsb:lsb + CHUNK], bound[lsb:lsb + CHUNK]
        lt.append(_less(a, b))
        le.append(~_less(b, a))
    return Cat(*lt), Cat(*le)


def runs(lt, le):
    """``(lt, le)`` of :func:`chunk_compare`'s results for runs of :data:`RUN`
    chunks, each a carry chain with no logic around it: below is the carry
    out of ``le + lt`` (a chunk below generates a carry, an equal one
    propagates it), at most the same with a carry in (a low bit 1 + 1)."""
    out_lt, out_le = [], []
    for i in range(0, len(lt), RUN):
        r_lt, r_le = lt[i:i + RUN], le[i:i + RUN]
        out_lt.append((r_le + r_lt)[len(r_lt)])
        out_le.append((Cat(Const(1, 1), r_le) + Cat(Const(1, 1), r_lt))[len(r_lt) + 1])
    return Cat(*out_lt), Cat(*out_le)


def below(lt, le):
    """``addr < bound`` from :func:`runs`'s results (or the chunks'), as
    logic: the highest run below its bound's, or at most it and the rest
    below."""
    result = lt[0]
    for i in range(1, len(lt)):
        result = lt[i] | (le[i] & result)
    return result


def pair_choice(matches, values):
    """First step of the choice: for each pair of regions (2j, 2j + 1),
    ``(any, value)``, whether either matches and the value of the
    lower-numbered one that does (0 when neither)."""
    out = []
    for i in range(0, len(matches), 2):
        if i + 1 < len(matches):
            out.append((matches[i] | matches[i + 1],
                        Mux(matches[i], values[i], Mux(matches[i + 1], values[i + 1], 0))))
        else:
            out.append((matches[i], Mux(matches[i], values[i], 0)))
    return out


def first_choice(anys, values, default):
    """Second step: the value of the first pair in which a region matched,
    or ``default`` when none did."""
    result = default
    for hit, value in reversed(list(zip(anys, values))):
        result = Mux(hit, value, result)
    return result
