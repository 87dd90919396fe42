"""The pipeline and replication builder of the datapath core.

A core is four combinational steps; :class:`Pipeline` puts registers on
the boundaries between them (:data:`PLACEMENT`), gives each stage and each
copy its own clock enable from a local copy of the valid chain, and keeps
one copy of every per-line control per group of :data:`REPLICA_BITS` line
bits.  What the steps compute lives in the step sets
(:mod:`.steps_full`, :mod:`.steps_paper`); they pass bundles
(:mod:`.bundles`) whose fields say by their type how they are registered.

Synthesis merges equal flip-flops (same input, same initial value, same
reset), and where the output is always ready (in the top) every enable is
1, so copies of one control fed by one source would collapse into one
flip-flop driving the whole line.  So the copies a register stage makes
of one source each take another of :data:`COPY_FORMS` forms: stored as
they are or inverted, initially 0 or 1, with a reset or without (each is
only looked at while its line is valid).
"""

import dataclasses
import functools

from amaranth import Const, Mux, Signal

from .bundles import Copies, Gated, Groups, fields as bundle_fields
from .chains import plain_chain, skid_chain, skid_register

__all__ = ["PLACEMENT", "REPLICA_BITS", "SPREAD_FANOUT", "COPY_FORMS", "PLAIN_FORMS",
           "Pipeline"]


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
#: of profile.  The paper profile's controls are few and drive one LUT per
#: bit; every other profile's drive wide functions and placed better with
#: fewer, larger groups (ECP5, full profile with the v1 pattern network
#: that crossed groups, median of three seeds: 219.5 -> 243.7 MHz at 512
#: bits and 186.9 -> 226.2 at 1024 going from 16 to 32 bits per copy).
REPLICA_BITS = {"paper": 16, "other": 32}

#: Most copies one register of a spread per-line control feeds (the forms
#: that cost no logic, so that copies stay apart where every enable is 1).
SPREAD_FANOUT = 4

#: Forms a copy of a register can take that synthesis keeps apart: bit 0
#: initially all ones, bit 1 with a reset, bit 2 stored inverted.  The
#: inversion would cost a LUT on a copy fed by a register, so only copies
#: of a computed value (:meth:`Copies.each`) take the inverted forms; a
#: spread tree's copies take the first :data:`PLAIN_FORMS`.
COPY_FORMS = 8
PLAIN_FORMS = 4


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
    """

    def __init__(self, module, *, stages, in_valid, out_ready, skid=True):
        self._m = module
        self._stages = stages
        self._in_valid = in_valid
        self._out_ready = out_ready
        self._skid = skid
        self._chains = {}
        self._reset_en = {}
        # id(value) -> (value, key): values known to be equal in the netlist
        # share a key (a register and its wires; copies of one source in
        # one form)
        self._keys = {}

    def wire(self, value, keep=False):
        """``value`` through a signal of its own.  Every value used more than
        once goes through one, or the netlist would hold a copy per use.
        With ``keep``, synthesis keeps the signal, so that LUT mapping does
        not merge the logic before it with the logic after."""
        sig = Signal(len(value), attrs={"keep": 1} if keep else {})
        self._m.d.comb += sig.eq(value)
        self._keys[id(sig)] = (sig, self._key(value))
        return sig

    def _key(self, value):
        entry = self._keys.get(id(value))
        return ("value", id(value)) if entry is None else entry[1]

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

    def register(self, value, name, s, copy, form=0):
        """A register of ``value`` in stage ``s`` under copy ``copy``'s
        enable, in form ``form`` (:data:`COPY_FORMS`; a :class:`Gated`
        value only in form 0)."""
        m = self._m
        en = self.enable(s, copy)
        if not isinstance(value, Gated):
            ones, reset, inverted = form & 1, form >> 1 & 1, form >> 2 & 1
            reg = Signal(len(value), name=name, reset_less=not reset,
                         init=(1 << len(value)) - 1 if ones else 0)
            with m.If(en):
                m.d.sync += reg.eq(~value if inverted else value)
            return ~reg if inverted else reg
        # A flip-flop set under a condition starts at 1 too: an ECP5
        # flip-flop's initial value is its set/reset value.
        reg = Signal(len(value), name=name, reset_less=True, init=value.const)
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

    def _copies(self, items, s, forms):
        """Stage-``s`` registers of ``items`` ((value, name, copy) each), the
        copies of one source each in the next of ``forms`` forms, so that
        they stay apart."""
        used, regs = {}, []
        for value, name, copy in items:
            key = self._key(value)
            form = used.get(key, 0) % forms
            used[key] = form + 1
            reg = self.register(value, name, s, copy, form)
            self._keys[id(reg)] = (reg, (key, form))
            regs.append(reg)
        return regs

    def register_copies(self, name, copies, s):
        """Register a :class:`Copies`.  A control just spread from one
        register reaches its copies through a tree: this boundary registers
        one copy per :data:`SPREAD_FANOUT` groups, the next one per group, so
        no register drives more than about that many copies.  The tree's
        registers sit between their groups, so they keep enables of their
        own rather than stretching a group's."""
        n = len(copies)
        forms = PLAIN_FORMS if copies.tree else COPY_FORMS
        if not copies.tree or n <= SPREAD_FANOUT or any(v is not copies[0] for v in copies):
            return Copies(self._copies([(v, f"s{s}_{name}_r{c}", c)
                                        for c, v in enumerate(copies)], s, forms))
        per = SPREAD_FANOUT
        tree = self._copies([(copies[0], f"s{s}_{name}_t{c}", f"tree{c}")
                             for c in range(0, n, per)], s, forms)
        return Copies(tree[c // per] for c in range(n))

    def register_bundle(self, bundle, s):
        """Every field of ``bundle`` through a stage-``s`` register."""
        fields = {}
        for name, value in bundle_fields(bundle):
            if isinstance(value, Copies):
                fields[name] = self.register_copies(name, value, s)
            elif isinstance(value, Groups):
                fields[name] = Groups(self.register(v, f"s{s}_{name}_g{g}", s, g, value.form)
                                      for g, v in enumerate(value))
            else:
                fields[name] = self.register(value, f"s{s}_{name}", s, "line")
        return dataclasses.replace(bundle, **fields)

    def wire_bundle(self, bundle):
        """Every field of a step's output through wires of its own (copies
        of one value through one wire)."""
        fields = {}
        for name, value in bundle_fields(bundle):
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
        for name, value in bundle_fields(bundle):
            kind = type(value)
            fields[name] = kind(skid(v, f"skid_{name}_{c}", c) for c, v in enumerate(value)) \
                if kind in (Copies, Groups) else skid(value, f"skid_{name}", "line")
        return dataclasses.replace(bundle, **fields)
