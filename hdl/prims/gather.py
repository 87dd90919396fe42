"""Registered one-hot decodes and multiplexers of the control registers.

An address is decoded as it is captured: the registers holding it hold
one-hots of its fields (each field at most four bits, so one LUT4 from the
port), and a register's select is the AND of its fields' one-hots.  A value
chosen by one-hot selects is gathered through levels of registered partial
ORs, each a function of at most four bits (one LUT4 packed with its
flip-flop): the control registers' fetch and read."""

from itertools import combinations

from amaranth import Const, Signal

__all__ = ["FIELDS", "AddressDecode", "capture_hot", "gather", "tree", "and_all", "or_all"]

#: Widths of the fields of a word address decoded apart, lowest first: a
#: register's column (a region's eight words), then its row in two parts
#: (the last takes the rest of the address).
FIELDS = (3, 3, 4)
#: Inputs of a LUT4: the bits of one output of a registered level.
_LUT_INPUTS = 4


def capture_hot(m, value, keys, name, en, invert=False):
    """``{key: value == key}`` as registers, loaded in every cycle in which
    ``en`` is high (the capture of a bus address: ``en`` high while the
    slave has no address, so the one loaded last is the one of the
    handshake).  With ``invert`` each register holds the complement (and
    the result undoes it), so that synthesis keeps it apart from the same
    one-hot captured without."""
    regs = {k: Signal(name=f"{name}{k}") for k in sorted(set(keys))}
    with m.If(en):
        m.d.sync += [q.eq((value != k) if invert else (value == k)) for k, q in regs.items()]
    return {k: ~q if invert else q for k, q in regs.items()}


class AddressDecode:
    """The :data:`FIELDS` one-hots of a word address, captured (:func:`capture_hot`).

    Parameters
    ----------
    m : Module
    word : Value
        The bus address without its two low bits.
    words : iterable of int
        The word addresses told apart (one-hots only for their fields' values).
    name : str
    en : Value
        The capture enable.
    invert : bool
        See :func:`capture_hot`.
    """

    def __init__(self, m, word, words, name, en, invert=False):
        self._fields, lo = [], 0
        self._capture = lambda key_name, lo, hi, inv: capture_hot(
            m, word[lo:hi], {_field(w, lo, hi) for w in words}, key_name, en, inv)
        self._name, self._invert = name, invert
        for i, width in enumerate(FIELDS):
            hi = lo + width if i < len(FIELDS) - 1 else len(word)
            self._fields.append((lo, hi, self._capture(f"{name}{i}_", lo, hi, invert)))
            lo = hi
        self._columns = [self._fields[0][2]]

    def parts(self, word, fields=None):
        """The one-hots of ``word``'s fields (all, or those of ``fields``)."""
        return tuple(hot[_field(word, lo, hi)] for i, (lo, hi, hot) in enumerate(self._fields)
                     if fields is None or i in fields)

    def column(self, word, copy=0):
        """The one-hot of ``word``'s column, from the capture ``copy``: 0 the
        first, and each further one made on first use, the complement of
        the one before (so kept apart), so that each drives fewer selects."""
        lo, hi, _ = self._fields[0]
        while copy >= len(self._columns):
            self._columns.append(self._capture(f"{self._name}0c{len(self._columns)}_", lo, hi,
                                               self._invert ^ (len(self._columns) & 1)))
        return self._columns[copy][_field(word, lo, hi)]

    def row(self, word):
        """The one-hots of ``word``'s row (every field but the column)."""
        return self.parts(word, range(1, len(self._fields)))

    def row_key(self, word):
        """The values of ``word``'s row fields (the same for every word of a row)."""
        return tuple(_field(word, lo, hi) for lo, hi, _ in self._fields[1:])

    def telling(self, word, others):
        """The fewest of ``word``'s one-hots that are not all high for any
        word of ``others`` (enough to select ``word`` when the address is
        known to be one of them)."""
        others = [w for w in others if w != word]
        for n in range(len(self._fields) + 1):
            for fields in combinations(range(len(self._fields)), n):
                if all(any(_field(o, *self._fields[i][:2]) != _field(word, *self._fields[i][:2])
                           for i in fields) for o in others):
                    return self.parts(word, fields)
        raise ValueError(f"word {word} is among {others}")


def _field(word, lo, hi):
    return word >> lo & ((1 << hi - lo) - 1)


def gather(m, pairs, name):
    """A registered level of a one-hot multiplexer: ``(select, value)``
    pairs (a select a signal, a tuple of signals ANDed, or ``None``: always)
    packed in consecutive groups of at most four LUT inputs per bit, and for
    each group the OR of its values ANDed with their selects; :func:`or_all`
    of the result (one cycle later) is the selected value."""
    width = max((len(v) for _, v in pairs), default=1)
    groups, cost = [], _LUT_INPUTS
    for s, v in pairs:
        c = 1 + (0 if s is None else len(s) if isinstance(s, tuple) else 1)
        if cost + c > _LUT_INPUTS:
            groups.append([])
            cost = 0
        groups[-1].append((s, v))
        cost += c
    out = [Signal(width, name=f"{name}{i}") for i in range(len(groups))]
    m.d.sync += [q.eq(_one_hot_or(g, width)) for q, g in zip(out, groups)]
    return out


def tree(m, pairs, name, levels=None, last=_LUT_INPUTS):
    """Registered levels of a one-hot multiplexer (:func:`gather` of
    ``pairs``, which may be a list of such lists, each gathered on its own,
    then ORs of partial results), ``levels`` of them, or (``None``) as many
    as it takes to leave at most ``last`` partial results; :func:`or_all`
    of the result is the selected value, as many cycles after the selects
    as there are levels."""
    runs = pairs if pairs and isinstance(pairs[0], list) else [pairs]
    out = [q for i, run in enumerate(runs) for q in gather(m, run, f"{name}_l1_{i}_")]
    level = 1
    while (levels is None and len(out) > last) or (levels is not None and level < levels):
        level += 1
        out = gather(m, [(None, q) for q in out], f"{name}_l{level}_")
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
    """OR of ``value & select`` over ``(select, value)`` pairs (selects one-hot)."""
    out = Const(0, width)
    for s, value in pairs:
        if s is not None:
            value = value & and_all(s if isinstance(s, tuple) else (s,)).replicate(width)
        out = out | value
    return out
