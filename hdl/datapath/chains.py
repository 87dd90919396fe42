"""The valid chains of a :class:`~.pipeline.Pipeline`: one per stage and
copy, each holding the valid bits of every stage (all chains hold the same
values), so that each stage's enable comes from flip-flops beside it.

* :func:`plain_chain`: the enable is ``out_ready | ~out_valid``, one LUT
  after the chain's copy of ``out_valid``.
* :func:`skid_chain`: the enable is a flip-flop, ``room``, high while the
  output skid (one line behind the last stage) is empty.
"""

from dataclasses import dataclass

from amaranth import Mux, ResetSignal, Signal

__all__ = ["Chain", "plain_chain", "skid_chain", "skid_register"]


@dataclass(frozen=True)
class Chain:
    """One chain: its stage's enable, and the handshake outputs as the chain
    sees them; with the skid, ``room`` (the skid is empty: its load enable
    and its output select)."""
    enable: object
    in_ready: object
    out_valid: object
    room: object = None


def plain_chain(m, name, *, stages, in_valid, out_ready):
    """The pipeline moves when the consumer takes a line or the output
    register is empty, so bubbles are squeezed out."""
    en = Signal(name=f"en_{name}")
    last = Signal(name=f"out_valid_{name}")
    m.d.comb += en.eq(out_ready | ~last)
    v = in_valid
    with m.If(en):
        for k in range(stages):
            q = last if k == stages - 1 else Signal(name=f"valid_{name}_{k}")
            m.d.sync += q.eq(v)
            v = q
    return Chain(enable=en, in_ready=en & ~ResetSignal(), out_valid=last)


def skid_chain(m, name, *, stages, in_valid, out_ready, wire):
    """Stages 1 .. STAGES-1 move while the output skid is empty (``room``, a
    flip-flop); the last stage's line then moves into the skid unless the
    consumer takes it, and the skid's line leaves first.  A line is accepted
    only when the skid will be empty in the next cycle (``out_ready``, or
    neither the skid nor the last stage holds a line), so stage 0 is empty
    whenever the other stages hold: it loads in every cycle.  With
    ``out_ready`` high the input is ready and the skid stays empty, so the
    latency is STAGES; ``wire`` puts a value through a signal of its own."""
    valid = [Signal(name=f"valid_{name}_{k}") for k in range(stages - 1)]
    valid.append(Signal(name=f"out_valid_{name}"))
    room = Signal(name=f"room_{name}", init=1)
    ready = wire(out_ready | (room & ~valid[-1]))      # room in the next cycle
    # room.eq(ready) written so that it maps to a flip-flop with no LUT before
    # it: set by out_ready (with the reset), cleared under the enable valid[-1].
    with m.If(out_ready):
        m.d.sync += room.eq(1)
    with m.Elif(valid[-1]):
        m.d.sync += room.eq(0)
    # (in_valid as the condition: an unknown in_valid in simulation before
    # the first reset leaves the chain unknown no longer than needed.)
    with m.If(in_valid):
        m.d.sync += valid[0].eq(ready)
    with m.Else():
        m.d.sync += valid[0].eq(0)
    with m.If(room):
        m.d.sync += [valid[k].eq(valid[k - 1]) for k in range(1, stages)]
    return Chain(enable=room, in_ready=ready & ~ResetSignal(), out_valid=~room | valid[-1],
                 room=room)


def skid_register(m, wire, value, name, room):
    """The output skid of the last stage's ``value``: it loads while empty
    (``room``); the output is the skid's line while it holds one."""
    reg = Signal(len(value), name=name, reset_less=True)
    with m.If(room):
        m.d.sync += reg.eq(value)
    return wire(Mux(room, value, reg))
