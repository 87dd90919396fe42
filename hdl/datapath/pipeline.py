"""The pipeline and replication builder of the datapath core.

A core is four combinational steps; :class:`Pipeline` puts registers on
the boundaries between them (:data:`PLACEMENT`), gives each stage and each
copy its own clock enable from a local copy of the valid chain, and keeps
one copy of every per-line control per group of :data:`REPLICA_BITS` line
bits.  What the steps compute lives in the step sets
(:mod:`.steps_full`, :mod:`.steps_paper`); they pass bundles (frozen
dataclasses) whose fields say by their type how they are registered:

* an Amaranth value: a per-line signal, registered once;
* :class:`Copies`: a per-line control with one copy per group, reached
  through a spread tree (:meth:`Pipeline.register_copies`), kept apart
  in synthesis (:data:`KEEP`) with the skid or ``keep_copies``;
* :class:`Groups`: one vector per group (lane data, per-lane bits), each
  under its group's enable; a :class:`Gated` vector takes its forced bits
  by the flip-flops' synchronous set/reset;
* None: a field the profile does not have.
"""

import dataclasses
import functools
from dataclasses import dataclass

from amaranth import Const, Mux, Signal

from neuron_fabric.hdl.datapath.chains import plain_chain, skid_chain, skid_register

__all__ = ["KEEP", "PLACEMENT", "REPLICA_BITS", "SPREAD_FANOUT", "Copies", "Gated", "Geometry",
           "Groups", "Pipeline", "StepSet"]

#: Marks a copy that synthesis must not merge with its equals (with
#: ``out_ready`` held high every enable is 1; see ``synth/flowlib.py``).
KEEP = {"keep": 1}


#: For each STAGES value, how many registers sit on boundaries 0..4.
PLACEMENT = {
    1: (0, 0, 0, 0, 1),
    2: (0, 1, 0, 0, 1),
    3: (0, 1, 1, 0, 1),
    4: (0, 1, 1, 1, 1),
    5: (1, 1, 1, 1, 1),
    6: (2, 1, 1, 1, 1),
    7: (3, 1, 1, 1, 1),
    8: (4, 1, 1, 1, 1),
}

#: Line bits served by one copy of the per-line control registers, by kind
#: of profile: the paper's few controls drive one LUT per bit; the others'
#: drive wide functions and placed better with larger groups (ECP5, v1 full
#: profile, median of three seeds: 219.5 -> 243.7 MHz at 512 bits, 186.9 ->
#: 226.2 at 1024, from 16 to 32 bits per copy).
REPLICA_BITS = {"paper": 16, "other": 32}

#: Most copies one register of a spread per-line control feeds.
SPREAD_FANOUT = 8


class Copies(tuple):
    """A per-line control, one copy per group (``copies[g]`` serves group g)."""

    @classmethod
    def spread(cls, value, groups):
        """``value`` (a register output, so each copy's register is fed by a
        plain wire) to every group."""
        return cls([value] * groups)


class Groups(tuple):
    """One vector per group (``groups[g]`` holds group g's lanes)."""


@dataclass(frozen=True)
class Gated:
    """A vector whose bits read constants under conditions.

    Bit ``b`` is ``const >> b & 1`` when ``cond[b]`` is high, else
    ``value[b]``; ``cond[b]`` is None for a bit without a condition.  A
    register of it resets the bit synchronously under ``cond[b]`` and its
    clock enable (the reset has priority, as ECP5 flip-flops implement it).
    """
    value: object
    cond: tuple
    const: int

    def __post_init__(self):
        if len(self.cond) != len(self.value):
            raise ValueError(f"{len(self.cond)} conditions for {len(self.value)} bits")

    def __len__(self):
        return len(self.value)


@dataclass(frozen=True)
class Geometry:
    """How a line is cut: W-bit lanes, groups of ``group_bits`` line bits."""
    line_bits: int
    workers: int
    group_bits: int

    @property
    def groups(self):
        return self.line_bits // self.group_bits

    @property
    def group_lanes(self):
        return self.group_bits // self.workers

    @property
    def count_bits(self):
        """Width of a sign count 0..W."""
        return self.workers.bit_length()

    @property
    def half_bit(self):
        """h with W/2 = 1 << h."""
        return (self.workers // 2).bit_length() - 1

    @staticmethod
    def field(vector, index, width):
        """Field ``index`` of a vector of ``width``-bit fields."""
        return vector[index * width:(index + 1) * width]


class StepSet:
    """Base of a profile's step set: four steps over lanes of ``geometry``
    (:attr:`steps`, bundle to bundle); ``wire`` puts a value through a
    signal of its own (:meth:`Pipeline.wire`)."""

    def __init__(self, geometry, wire):
        self._geo = geometry
        self._wire = wire

    @property
    def steps(self):
        raise NotImplementedError

    def _lanes(self, vector, width):
        """The group's lanes of a vector of ``width``-bit fields, one per lane."""
        return [self._geo.field(vector, i, width) for i in range(self._geo.group_lanes)]


class Pipeline:
    """Registers, clock enables and control copies of one core.

    The enables (:mod:`.chains`) are per stage and per copy (each group
    ``g``, the per-line registers ``"line"``, the spread tree's registers
    ``"tree<g>"``), each from its own valid chain kept beside that stage's
    flip-flops, so no enable net crosses the pipeline; each chain closes a
    loop through its own state, so synthesis keeps them apart.  A chain is
    built when a register first asks for it.

    Parameters
    ----------
    module : Module
        Where the registers and wires go.
    stages : int
        Number of register stages.
    in_valid, out_ready : Value
        The handshake inputs.
    skid : bool
        Enables from flip-flops behind a one-line output skid
        (:func:`~.chains.skid_chain`), or ``out_ready | ~out_valid``.
    keep_copies : bool or None
        Mark every copy's register :data:`KEEP` (default: with the skid).
    """

    def __init__(self, module, *, stages, in_valid, out_ready, skid=True, keep_copies=None):
        self._m, self._stages = module, stages
        self._in_valid, self._out_ready = in_valid, out_ready
        self._skid, self._keep = skid, skid if keep_copies is None else keep_copies
        self._chains, self._reset_en = {}, {}

    def wire(self, value):
        """``value`` through a signal of its own.  Every value used more than
        once goes through one, or the netlist would hold a copy per use."""
        sig = Signal(len(value))
        self._m.d.comb += sig.eq(value)
        return sig

    def _chain(self, s, copy):
        if (s, copy) not in self._chains:
            build = functools.partial(skid_chain, wire=self.wire) if self._skid else plain_chain
            self._chains[s, copy] = build(self._m, f"{s}_{copy}", stages=self._stages,
                                          in_valid=self._in_valid, out_ready=self._out_ready)
        return self._chains[s, copy]

    def enable(self, s, copy):
        """Clock enable of stage ``s`` of copy ``copy`` (behind the skid, stage 0's is 1)."""
        return Const(1) if self._skid and s == 0 else self._chain(s, copy).enable

    @property
    def in_ready(self):
        """The per-line copy's input ready, low while in reset (a line
        offered then would be lost)."""
        return self._chain(self._stages - 1 if self._skid else 0, "line").in_ready

    @property
    def out_valid(self):
        return self._chain(self._stages - 1, "line").out_valid

    def register(self, value, name, s, copy, attrs=None):
        """A register of ``value`` in stage ``s`` under copy ``copy``'s enable."""
        m = self._m
        # A flip-flop set under a condition starts at 1 too: an ECP5
        # flip-flop's initial value is its set/reset value.
        init = value.const if isinstance(value, Gated) else 0
        reg = Signal(len(value), name=name, reset_less=True, init=init, attrs=attrs)
        en = self.enable(s, copy)
        if not isinstance(value, Gated):
            with m.If(en):
                m.d.sync += reg.eq(value)
            return reg
        for b, (bit, cond) in enumerate(zip(value.value, value.cond)):
            if cond is None:
                with m.If(en):
                    m.d.sync += reg[b].eq(bit)
                continue
            key = id(cond), s, copy
            if key not in self._reset_en:
                self._reset_en[key] = self.wire(cond & en)
            m.d.sync += reg[b].eq(Mux(self._reset_en[key], value.const >> b & 1,
                                      Mux(en, bit, reg[b])))
        return reg

    def register_copies(self, name, copies, s):
        """Register a :class:`Copies`.  A control just spread from one
        register reaches its copies through a tree: this boundary registers
        one copy per :data:`SPREAD_FANOUT` groups, the next one per group, so
        no register drives more than about that many copies.  The tree's
        registers sit between their groups, so they keep enables of their
        own.  With ``keep_copies`` every copy is kept (:data:`KEEP`)."""
        keep, n, per = KEEP if self._keep else None, len(copies), SPREAD_FANOUT
        if n <= per or any(v is not copies[0] for v in copies):
            return Copies(self.register(v, f"s{s}_{name}_r{c}", s, c, keep)
                          for c, v in enumerate(copies))
        tree = [self.register(copies[0], f"s{s}_{name}_t{c}", s, f"tree{c}", keep)
                for c in range(0, n, per)]
        return Copies(tree[c // per] for c in range(n))

    def register_bundle(self, bundle, s):
        """Every field of ``bundle`` through a stage-``s`` register."""
        fields = {}
        for name, value in _fields(bundle):
            if isinstance(value, Copies):
                fields[name] = self.register_copies(name, value, s)
            elif isinstance(value, Groups):
                fields[name] = Groups(self.register(v, f"s{s}_{name}_g{g}", s, g)
                                      for g, v in enumerate(value))
            else:
                fields[name] = self.register(value, f"s{s}_{name}", s, "line")
        return dataclasses.replace(bundle, **fields)

    def wire_bundle(self, bundle):
        """Every field of a step's output through wires of its own (copies
        of one value through one wire)."""
        fields = {}
        for name, value in _fields(bundle):
            if isinstance(value, Copies):
                shared = all(v is value[0] for v in value)
                fields[name] = Copies([self.wire(value[0])] * len(value)) if shared \
                    else Copies(self.wire(v) for v in value)
            elif isinstance(value, Groups):
                fields[name] = Groups(
                    Gated(self.wire(v.value), v.cond, v.const) if isinstance(v, Gated)
                    else self.wire(v) for v in value)
            else:
                fields[name] = self.wire(value)
        return dataclasses.replace(bundle, **fields)

    def run(self, bundle, steps, stages, placement=None):
        """Registers and steps in order: ``placement`` (default
        ``PLACEMENT[stages]``) registers on each boundary, step ``k`` after
        boundary ``k``; the last bundle."""
        index = 0
        for boundary, count in enumerate(PLACEMENT[stages] if placement is None else placement):
            for _ in range(count):
                bundle = self.register_bundle(bundle, index)
                index += 1
            if boundary < len(steps):
                bundle = self.wire_bundle(steps[boundary](bundle))
        return self._skid_bundle(bundle) if self._skid else bundle

    def _skid_bundle(self, bundle):
        """Every field of the last stage's bundle through the output skid."""
        def skid(value, name, copy):
            return skid_register(self._m, self.wire, value, name,
                                 self._chain(self._stages - 1, copy).room)
        fields = {}
        for name, value in _fields(bundle):
            kind = type(value)
            fields[name] = kind(skid(v, f"skid_{name}_{c}", c) for c, v in enumerate(value)) \
                if kind in (Copies, Groups) else skid(value, f"skid_{name}", "line")
        return dataclasses.replace(bundle, **fields)


def _fields(bundle):
    """(name, value) of the fields ``bundle`` has (those not None)."""
    return [(f.name, getattr(bundle, f.name)) for f in dataclasses.fields(bundle)
            if getattr(bundle, f.name) is not None]
