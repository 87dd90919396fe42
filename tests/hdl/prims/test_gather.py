# amaranth: UnusedElaboratable=no
"""Registered one-hot decodes and multiplexers (``hdl/prims/gather.py``) in
the Amaranth simulator, against what their docstrings state in Python
terms: a capture holds ``value == key`` from the last cycle its enable was
high; an :class:`AddressDecode`'s one-hots select a word exactly when the
captured address is that word; ``gather`` and ``tree`` give the value the
one-hot selects, one cycle per level later."""

import random

import pytest
from amaranth import Module, Signal

from neuron_fabric.hdl.prims.gather import FIELDS, AddressDecode, and_all, capture_hot, gather, \
    or_all, tree
from neuron_fabric.sim.amaranth_sim import run_testbenches


def _wire(m, value, name):
    sig = Signal(len(value), name=name)
    m.d.comb += sig.eq(value)
    return sig


def test_and_all_or_all():
    m = Module()
    bits = [Signal(name=f"b{i}") for i in range(3)]
    out = {"and": _wire(m, and_all(bits), "all"), "or": _wire(m, or_all(bits), "any"),
           "and0": _wire(m, and_all([]), "and0"), "or0": _wire(m, or_all([]), "or0")}

    async def bench(ctx):
        for v in range(8):
            for i, b in enumerate(bits):
                ctx.set(b, v >> i & 1)
            assert ctx.get(out["and"]) == int(v == 7) and ctx.get(out["or"]) == int(v != 0)
            assert ctx.get(out["and0"]) == 1 and ctx.get(out["or0"]) == 0

    run_testbenches(m, bench, clock=False)


@pytest.mark.parametrize("invert", [False, True])
def test_capture_hot_holds_the_last_enabled_value(invert):
    m = Module()
    value, en = Signal(4), Signal()
    keys = [0, 3, 9, 15, 3]
    hot = capture_hot(m, value, keys, "k", en, invert=invert)
    assert sorted(hot) == sorted(set(keys))
    rng = random.Random(int(invert))

    async def bench(ctx):
        captured = None
        for _ in range(60):
            v, e = rng.choice(keys + [rng.getrandbits(4)]), rng.getrandbits(1)
            ctx.set(value, v)
            ctx.set(en, e)
            await ctx.tick()
            captured = v if e else captured
            if captured is not None:
                assert {k: ctx.get(h) for k, h in hot.items()} == \
                    {k: int(captured == k) for k in hot}, captured

    run_testbenches(m, bench)


def test_address_decode_hand_worked_telling():
    """Words 0, 1 and 8 (FIELDS: a 3-bit column, then the row): 1 is told
    from 0 and 8 by its column alone; 0 from 1 and 8 needs the column and
    the row's first field (8 is column 0 of row 1)."""
    assert FIELDS[0] == 3
    m = Module()
    dec = AddressDecode(m, Signal(10), [0, 1, 8], "a", Signal())
    assert len(dec.telling(1, [0, 1, 8])) == 1
    assert len(dec.telling(0, [0, 1, 8])) == 2
    assert dec.row_key(0) == dec.row_key(1) != dec.row_key(8)
    assert dec.row_key(8 + 2) == dec.row_key(8)


@pytest.mark.parametrize("invert", [False, True])
def test_address_decode_selects_exactly_the_captured_word(invert):
    width = 10
    rng = random.Random(5)
    words = sorted({0, 1, 7, 8, 63, 64, 200, (1 << width) - 1} |
                   {rng.getrandbits(width) for _ in range(8)})
    m = Module()
    word, en = Signal(width), Signal()
    dec = AddressDecode(m, word, words, "a", en, invert=invert)
    sel = {w: _wire(m, and_all(dec.parts(w)), f"sel{w}") for w in words}
    row = {w: _wire(m, and_all(dec.row(w)), f"row{w}") for w in words}
    col = {(w, c): _wire(m, dec.column(w, c), f"col{w}_{c}") for w in words for c in range(3)}
    some = words[::3]
    tell = {w: _wire(m, and_all(dec.telling(w, some)), f"tell{w}") for w in some}

    async def bench(ctx):
        captured = None
        for _ in range(80):
            v, e = rng.choice(words + [rng.getrandbits(width)]), rng.getrandbits(1)
            ctx.set(word, v)
            ctx.set(en, e)
            await ctx.tick()
            captured = v if e else captured
            if captured is None:
                continue
            for w in words:
                assert ctx.get(sel[w]) == int(captured == w), (captured, w)
                assert ctx.get(row[w]) == int(captured >> 3 == w >> 3), (captured, w)
                for c in range(3):
                    assert ctx.get(col[w, c]) == int(captured & 7 == w & 7), (captured, w, c)
            if captured in some:
                for w in some:
                    assert ctx.get(tell[w]) == int(captured == w), (captured, w)

    run_testbenches(m, bench)


def _one_hot_pairs(n, width):
    """``n`` (select, value) pairs, every third select a pair of bits
    ANDed, and one pair always selected; returns the pairs and the
    signals."""
    sels, vals, pairs = [], [], []
    for k in range(n):
        s = (Signal(name=f"sa{k}"), Signal(name=f"sb{k}")) if k % 3 == 2 else Signal(name=f"s{k}")
        v = Signal(width, name=f"v{k}")
        sels.append(s)
        vals.append(v)
        pairs.append((s, v))
    always = Signal(width, name="always")
    return pairs + [(None, always)], sels, vals, always


def _drive(ctx, rng, sels, vals, always, width):
    """Random values, at most one select high (a pair's both bits), an
    ``always`` value (unless None); returns the value the multiplexer gives."""
    chosen = rng.randrange(len(sels) + 1)       # len(sels): none
    for k, s in enumerate(sels):
        if isinstance(s, tuple):
            a, b = (1, 1) if k == chosen else rng.choice([(0, 0), (0, 1), (1, 0)])
            ctx.set(s[0], a)
            ctx.set(s[1], b)
        else:
            ctx.set(s, int(k == chosen))
    values = [rng.getrandbits(width) for _ in vals]
    for v, x in zip(vals, values):
        ctx.set(v, x)
    a = 0
    if always is not None:
        a = rng.getrandbits(width) if rng.random() < 0.3 else 0
        ctx.set(always, a)
    return a | (values[chosen] if chosen < len(sels) else 0)


@pytest.mark.parametrize("levels", [1, 2, 3])
def test_tree_gives_the_selected_value_a_cycle_a_level_later(levels):
    width, n = 6, 11
    m = Module()
    pairs, sels, vals, always = _one_hot_pairs(n, width)
    out = _wire(m, or_all(tree(m, pairs, "t", levels=levels)), "out")
    rng = random.Random(levels)

    async def bench(ctx):
        want = []
        for _ in range(40):
            want.append(_drive(ctx, rng, sels, vals, always, width))
            await ctx.tick()
            if len(want) >= levels:
                assert ctx.get(out) == want[-levels], len(want)

    run_testbenches(m, bench)


def test_gather_is_one_registered_level():
    width, n = 5, 7
    m = Module()
    pairs, sels, vals, always = _one_hot_pairs(n, width)
    level = gather(m, pairs, "g")
    out = _wire(m, or_all(level), "out")
    rng = random.Random(7)

    async def bench(ctx):
        for _ in range(30):
            want = _drive(ctx, rng, sels, vals, always, width)
            await ctx.tick()
            assert ctx.get(out) == want

    run_testbenches(m, bench)


def test_tree_of_runs_with_as_many_levels_as_it_takes():
    """Pairs given as runs (each gathered on its own); with ``levels=None``
    at most ``last`` partial results are left, whose OR settles on the
    selected value while the inputs hold."""
    width = 4
    m = Module()
    runs = [_one_hot_pairs(5, width) for _ in range(3)]
    pairs = [r[0][:-1] for r in runs]           # (no always-selected pair here)
    sels = [s for r in runs for s in r[1]]
    vals = [v for r in runs for v in r[2]]
    partial = tree(m, pairs, "r", last=2)
    assert len(partial) <= 2
    out = _wire(m, or_all(partial), "out")
    rng = random.Random(11)

    async def bench(ctx):
        for _ in range(12):
            want = _drive(ctx, rng, sels, vals, None, width)
            await ctx.tick().repeat(6)
            assert ctx.get(out) == want

    run_testbenches(m, bench)
