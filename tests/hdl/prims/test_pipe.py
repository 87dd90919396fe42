# amaranth: UnusedElaboratable=no
"""Pipeline registers (``hdl/prims/pipe.py``) in the Amaranth simulator,
against what their docstrings state: ``register`` and ``delay`` give the
value one and ``cycles`` clock edges later, ``copies`` give the value a
cycle later whatever each copy's storage, ``boundary`` is the value itself,
and a :class:`Line` carries its valid and fields one register a stage."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.lib import data

from neuron_fabric.hdl.prims.pipe import Line, boundary, copies, delay, register
from neuron_fabric.sim.amaranth_sim import run_testbenches


def _run_sequence(m, inputs, outputs, cycles, seed):
    """Drive every signal of ``inputs`` with random values for ``cycles``
    edges; return, per edge, the inputs set before it and the outputs read
    after it (lists of dicts)."""
    rng = random.Random(seed)
    seen_in, seen_out = [], []

    async def bench(ctx):
        for _ in range(cycles):
            values = {k: rng.getrandbits(len(s)) for k, s in inputs.items()}
            for k, s in inputs.items():
                ctx.set(s, values[k])
            await ctx.tick()
            seen_in.append(values)
            seen_out.append({k: ctx.get(v) for k, v in outputs.items()})

    run_testbenches(m, bench)
    return seen_in, seen_out


def test_register_and_delay_give_the_value_cycles_later():
    m = Module()
    x, y = Signal(7), Signal(3)
    one = register(m, "one", x)
    pair = register(m, "pair", {"a": x, "b": [y, x[:2]]})
    outputs = {"one": one, "a": pair["a"], "b0": pair["b"][0], "b1": pair["b"][1],
               **{f"d{n}": delay(m, f"d{n}", x, n) for n in (1, 2, 4)}}
    ins, outs = _run_sequence(m, {"x": x, "y": y}, outputs, 20, seed=1)
    for t, out in enumerate(outs):
        assert out["one"] == out["a"] == ins[t]["x"]
        assert (out["b0"], out["b1"]) == (ins[t]["y"], ins[t]["x"] & 3)
        for n in (1, 2, 4):
            if t >= n - 1:
                assert out[f"d{n}"] == ins[t - n + 1]["x"], (t, n)


def test_register_keeps_a_views_layout_and_delay_zero_is_the_value():
    m = Module()
    layout = data.StructLayout({"lo": 3, "hi": 5})
    view = Signal(layout)
    reg = register(m, "view", view)
    assert reg.shape() == layout
    assert len(register(m, "plain", Signal(6))) == 6
    x = Signal(4)
    assert delay(m, "none", x, 0) is x


@pytest.mark.parametrize("n, inverted", [(1, True), (8, True), (4, False)])
def test_copies_equal_the_value_a_cycle_later(n, inverted):
    m = Module()
    x = Signal(6)
    outs = copies(m, "c", x, n, inverted=inverted)
    assert len(outs) == n
    ins, seen = _run_sequence(m, {"x": x}, {k: c for k, c in enumerate(outs)}, 12, seed=n)
    for t, out in enumerate(seen):
        assert all(out[k] == ins[t]["x"] for k in range(n)), (t, out)


@pytest.mark.parametrize("n, inverted", [(0, True), (9, True), (5, False)])
def test_copies_refuse_a_count_out_of_range(n, inverted):
    with pytest.raises(ValueError, match=str(n)):
        copies(Module(), "c", Signal(2), n, inverted=inverted)


def test_boundary_is_the_value_through_a_kept_net():
    m = Module()
    a, b = Signal(), Signal()
    net = boundary(m, a ^ b, "cut")
    assert net.attrs.get("keep") == 1

    async def bench(ctx):
        for va in (0, 1):
            for vb in (0, 1):
                ctx.set(a, va)
                ctx.set(b, vb)
                assert ctx.get(net) == va ^ vb

    run_testbenches(m, bench, clock=False)


def test_line_carries_valid_and_fields_a_stage_per_register():
    """Stage 0 registers ``valid`` and ``a``, ``b``; stage 1 drops ``a``
    and adds ``c``; ``run_to(3)`` adds stages 2 and 3 carrying the rest."""
    m = Module()
    valid, a, b, c = Signal(), Signal(5), Signal(4), Signal(3)
    line = Line(m, "t")
    v0, f0 = line.step(valid=valid, fields={"a": a, "b": b})
    v1, f1 = line.step(fields={"c": c}, drop=("a",))
    line.run_to(3)
    assert len(line.stages) == 4 and set(f1) == {"b", "c"} and set(line.fields) == {"b", "c"}
    v3, f3 = line.stages[3]
    outputs = {"v0": v0, "a0": f0["a"], "b0": f0["b"], "v1": v1, "b1": f1["b"], "c1": f1["c"],
               "v3": v3, "b3": f3["b"], "c3": f3["c"]}
    ins, outs = _run_sequence(m, {"valid": valid, "a": a, "b": b, "c": c}, outputs, 24, seed=3)
    for t, out in enumerate(outs):
        assert (out["v0"], out["a0"], out["b0"]) == (ins[t]["valid"], ins[t]["a"], ins[t]["b"])
        if t >= 1:
            assert (out["v1"], out["b1"], out["c1"]) == \
                (ins[t - 1]["valid"], ins[t - 1]["b"], ins[t]["c"])
        if t >= 3:
            assert (out["v3"], out["b3"], out["c3"]) == \
                (ins[t - 3]["valid"], ins[t - 3]["b"], ins[t - 2]["c"])
