"""Registers for hand-pipelined logic: every value registered every cycle,
without reset and without clock enable (the request pipeline never stalls)."""

from amaranth import Shape, Signal, Value
from amaranth.lib import data

__all__ = ["register", "delay", "copies", "kept_copies", "boundary", "Line"]


def register(m, name, value):
    """A reset-less register of ``value`` loaded every cycle: a Signal of the
    same shape (a View's layout kept), or a list or dict of them."""
    if isinstance(value, dict):
        return {k: register(m, f"{name}_{k}", v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [register(m, f"{name}{i}", v) for i, v in enumerate(value)]
    shape = value.shape() if isinstance(value, data.View) else Shape.cast(
        Value.cast(value).shape())
    reg = Signal(shape, name=name, reset_less=True)
    m.d.sync += reg.eq(value)
    return reg


def boundary(m, value, name):
    """``value`` (1 bit) through a net synthesis keeps: the boundary of a
    logic cone, so that the logic on each side is mapped into LUTs apart."""
    sig = Signal(name=name, attrs={"keep": 1})
    m.d.comb += sig.eq(value)
    return sig


def delay(m, name, value, cycles):
    """``value`` after ``cycles`` registers (the value itself for 0)."""
    for k in range(cycles):
        value = register(m, f"{name}_d{k + 1}", value)
    return value


def copies(m, name, value, n, inverted=True):
    """``n`` (at most 8) registered copies of ``value`` that synthesis keeps
    apart (it merges equal flip-flops): each stored as it is or inverted,
    with a reset or without, and with initial value 0 or all ones; so the
    copies hold any value until the first clock after reset and are for data
    only looked at while a registered ``valid`` says so.  Returns the copies
    as Values equal to ``value`` one cycle later.

    With ``inverted=False`` (at most 4 copies) none is stored inverted: for
    a clock enable, which must come straight from a flip-flop (Yosys 0.70's
    ABC9 aborts on an enable driven by an inverted copy)."""
    kinds = [k for k in range(8) if inverted or not k & 1]
    if not 1 <= n <= len(kinds):
        raise ValueError(f"n must be in 1..{len(kinds)}, not {n!r}")
    value = Value.cast(value)
    out = []
    for k in kinds[:n]:
        inv, resets, ones = k & 1, k >> 1 & 1, k >> 2 & 1
        reg = Signal(len(value), name=f"{name}_c{k}", reset_less=not resets,
                     init=((1 << len(value)) - 1) if ones else 0)
        m.d.sync += reg.eq(~value if inv else value)
        out.append(~reg if inv else reg)
    return out


def kept_copies(m, name, value, n):
    """``n`` registered copies of ``value``, each a reset-less register on a
    net that carries the ``keep`` attribute, so that synthesis keeps the
    flip-flops apart (the project's flow keeps every flip-flop that drives a
    kept net, ``synth/flowlib.py`` KEEP_FLOPS): for addresses and selects
    that must come straight from a flip-flop, as many as needed."""
    out = []
    for k in range(n):
        reg = Signal(Value.cast(value).shape(), name=f"{name}_k{k}", reset_less=True,
                     attrs={"keep": 1})
        m.d.sync += reg.eq(value)
        out.append(reg)
    return out


class Line:
    """What an item carries down a pipeline that never stalls: its ``valid``
    (reset) and its fields (reset-less, :func:`register`), one register of
    each per stage; ``stages`` lists ``(valid, fields)`` from the first
    stage (0) on."""

    def __init__(self, m, prefix):
        self.m, self.prefix, self.stages, self.fields, self.valid = m, prefix, [], {}, None

    def step(self, valid=None, fields=None, drop=()):
        """The next stage: ``valid`` (default: the last stage's) and the last
        stage's fields less ``drop``, with ``fields`` added or replaced."""
        valid = self.valid if valid is None else valid
        carried = {k: v for k, v in self.fields.items() if k not in drop}
        carried.update(fields or {})
        n = len(self.stages)
        valid_q = Signal(name=f"{self.prefix}_s{n}_valid")
        self.m.d.sync += valid_q.eq(valid)
        regs = {k: register(self.m, f"{self.prefix}_s{n}_{k}", v) for k, v in carried.items()}
        self.stages.append((valid_q, regs))
        self.valid, self.fields = valid_q, regs
        return valid_q, regs

    def run_to(self, stage):
        """Steps until the last stage is ``stage``."""
        while len(self.stages) <= stage:
            self.step()
