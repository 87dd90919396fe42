"""The paper profile's steps: the paper's datapath, built for area.

Each lane's sign count is a full-adder tree spread over three steps::

    A  decode; first full-adder layer of each lane's popcount
    B  two more full-adder layers
    C  the count c
    D  output lane: c, W/2 for a gated lane, or the raw lane

A gated lane (a G-Ternary lane whose mask bit is 0) reads the constant
W/2; the count bits' output flip-flops take it by their synchronous
set/reset, driven by the group's own control copies (one net per lane).
"""

from dataclasses import dataclass

from amaranth import Cat, Const, Mux

from neuron_fabric.contract.facts import Mode

from neuron_fabric.hdl.datapath.pipeline import Copies, Gated, Groups, StepSet
from neuron_fabric.hdl.datapath.ports import LineIn, LineOut

__all__ = ["PaperSteps"]


def _full_adder(wire, a, b, c):
    """Sum and carry of three bits; the carry as a mux on the half sum."""
    s = wire(a ^ b)
    return wire(s ^ c), wire(Mux(s, c, a))


def compress_layer(wire, columns):
    """One layer of full adders over each column of equal-weight bits."""
    out = [[] for _ in range(len(columns) + 1)]
    for weight, bits in enumerate(columns):
        full = len(bits) - len(bits) % 3
        for k in range(0, full, 3):
            s, c = _full_adder(wire, *bits[k:k + 3])
            out[weight].append(s)
            out[weight + 1].append(c)
        out[weight].extend(bits[full:])
    while out and not out[-1]:
        out.pop()
    return out


def reduce_columns(wire, columns, width):
    """Sum the columns to a ``width``-bit number with full and half adders."""
    columns = [list(bits) for bits in columns] + [[] for _ in range(width)]
    result = []
    for weight in range(width):
        bits = columns[weight]
        while len(bits) > 1:
            if len(bits) >= 3:
                s, c = _full_adder(wire, bits.pop(0), bits.pop(0), bits.pop(0))
            else:
                a, b = bits.pop(0), bits.pop(0)
                s, c = wire(a ^ b), wire(a & b)
            bits.append(s)
            columns[weight + 1].append(c)
        result.append(bits[0] if bits else Const(0, 1))
    return Cat(*result)


def layer_shape(workers, layers):
    """Bits per column after ``layers`` full-adder layers of a W-bit popcount."""
    columns = [[Const(0, 1)] * workers]
    for _ in range(layers):
        columns = compress_layer(lambda v: v, columns)
    return [len(col) for col in columns]


def _columns(flat, shape):
    """Split a flat vector into columns of ``shape`` bits."""
    columns, pos = [], 0
    for n in shape:
        columns.append([flat[pos + k] for k in range(n)])
        pos += n
    return columns


def _flatten(columns):
    return Cat(*(b for col in columns for b in col))


@dataclass(frozen=True)
class PaperAfterA:
    tag: object
    xform: Copies           # the line is transformed (G-Binary or G-Ternary)
    pattern_on: object      # G-Ternary: the PATTERN gate applies
    data: Groups
    mask: Groups
    layer: Groups           # each lane's popcount after one full-adder layer


@dataclass(frozen=True)
class PaperAfterB:
    tag: object
    xform: Copies
    pattern_on: Copies
    data: Groups
    mask: Groups
    partial: Groups         # after three layers


@dataclass(frozen=True)
class PaperAfterC:
    tag: object
    xform: Copies
    pattern_on: Copies
    data: Groups
    mask: Groups
    count: Groups           # each lane's sign count c


class PaperSteps(StepSet):
    """The four steps of the paper profile."""

    @property
    def steps(self):
        return (self.decode, self.layers, self.count, self.output)

    def decode(self, line: LineIn) -> PaperAfterA:
        w = self._geo.workers
        ternary = self._wire(line.mode == Mode.GTERNARY)
        layer = Groups(
            Cat(*(_flatten(compress_layer(self._wire, [[lane[k] for k in range(w)]]))
                  for lane in self._lanes(data, w)))
            for data in line.data)
        # Whether the gate applies travels apart from the lanes' mask bits.
        return PaperAfterA(tag=line.tag, xform=Copies.spread(line.mode[1], self._geo.groups),
                      pattern_on=ternary, data=line.data, mask=line.mask, layer=layer)

    def layers(self, line: PaperAfterA) -> PaperAfterB:
        shape = layer_shape(self._geo.workers, 1)
        partials = []
        for layer in line.layer:
            ps = []
            for lane in self._lanes(layer, sum(shape)):
                columns = _columns(lane, shape)
                for _ in range(2):
                    columns = compress_layer(self._wire, columns)
                ps.append(_flatten(columns))
            partials.append(Cat(*ps))
        return PaperAfterB(tag=line.tag, xform=line.xform,
                      pattern_on=Copies.spread(line.pattern_on, self._geo.groups),
                      data=line.data, mask=line.mask, partial=Groups(partials))

    def count(self, line: PaperAfterB) -> PaperAfterC:
        shape = layer_shape(self._geo.workers, 3)
        cw = self._geo.count_bits
        counts = Groups(
            Cat(*(self._wire(reduce_columns(self._wire, _columns(lane, shape), cw))
                  for lane in self._lanes(partial, sum(shape))))
            for partial in line.partial)
        return PaperAfterC(tag=line.tag, xform=line.xform, pattern_on=line.pattern_on,
                      data=line.data, mask=line.mask, count=counts)

    def output(self, line: PaperAfterC) -> LineOut:
        """Whole output lane: the count bits are c (W/2 by set/reset for a
        gated lane) or the raw bits; the bits above the count are the raw
        bits of identity lines and 0 otherwise."""
        return LineOut(tag=line.tag, data=Groups(
            self._output_group(*args) for args in
            zip(line.data, line.count, line.mask, line.xform, line.pattern_on)))

    def _output_group(self, data, counts, masks, xform, pattern_on):
        w, cw, h = self._geo.workers, self._geo.count_bits, self._geo.half_bit
        values, conds, const = [], [], 0
        for i, (raw, c) in enumerate(zip(self._lanes(data, w), self._lanes(counts, cw))):
            # One condition per lane keeps each set/reset net short.
            zero = self._wire(pattern_on & ~masks[i])
            for j in range(w):
                if j >= cw:
                    # Plain logic: a set/reset here would be one more
                    # LSR net per group, on the slowest paths.
                    values.append(raw[j] & ~xform)
                    conds.append(None)
                else:
                    values.append(Mux(xform, c[j], raw[j]))
                    conds.append(zero)
                    const |= int(j == h) << (i * w + j)
        return Gated(Cat(*values), tuple(conds), const)
