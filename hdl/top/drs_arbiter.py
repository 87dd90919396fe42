"""DRS: the round robin between the read path's two queues (the core's
lines and the bypass lines), chosen a cycle ahead.

A line offered on either input is registered, then written into its queue.
Each queue is cut into slices, each a :class:`.queue.CreditQueue` (written
every cycle at a registered address, read at a registered address straight
from its memory); the writer is admitted by credit, so nothing is written
into a full queue.  DRS shows the head of one queue, chosen in the cycle
before, holds it while DRS waits, and reads each slice of the line through
a 2:1 choice.  The slices are in groups, each with its own copies of the
registers it needs (a write, the queue shown), so no control net reaches
more than a group.

The round robin keeps, for each queue, flags of its *rest*: the lines it
holds besides the one DRS shows (a line written this cycle counts from the
next cycle on, so a line written into an empty queue is shown the cycle
after next).  With those flags the choice of the next cycle is one small
function of registers and DRS's ``ready``: the queue to show next is one
with a rest, the one not shown last when both have one, unless DRS holds
its line.  A rest falls by one when its queue is chosen (its ``pick``), so
its flags are: the rest at least 1, exact, and a unary count that sees
each pick a cycle later (``lag``), whose flags give the rest at least 2
with a choice by that pick.  So the lagged flags are choices among
registers by the write and that pick, and this cycle's pick reaches only
the exact flag, the lagged pick and the copies of the choice.
"""

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.hdl.prims.queue import CreditQueue
from neuron_fabric.hdl.prims.unary import flag, unary_count

__all__ = ["DrsArbiter", "enabled_copies", "GROUPS"]

#: Most groups of slices: the kinds of copy that read 0 from reset on.
GROUPS = 4

#: The kinds of copy synthesis keeps apart (equal flip-flops are merged):
#: (stored inverted, without a reset, initial value of the flip-flop).  The
#: first GROUPS read 0 after reset, or from the start, until they load a 1;
#: the last two may read 1 until their first load.
_KINDS = [(0, False, 0), (1, False, 1), (0, True, 0), (1, True, 1), (0, True, 1), (1, True, 0)]


def enabled_copies(m, value, enable, kinds):
    """Registered copies of the 1-bit ``value``, each loaded while ``enable``
    is high, one of each kind in ``kinds`` (indices into :data:`_KINDS`:
    0 .. 3 for copies that must read 0 until ``value`` is loaded high, 4
    and 5 for selects of data that matters only while a registered
    ``valid`` says so).  The loads are clock enables, so a ``value`` and an
    ``enable`` that are each one small function of registers reach the
    copies directly.

    Returns the registered values (inverted back where stored inverted).
    """
    copies = []
    for k in kinds:
        inverted, reset_less, init = _KINDS[k]
        reg = Signal(name=f"copy{k}", init=init, reset_less=reset_less)
        with m.If(enable):
            m.d.sync += reg.eq(~value if inverted else value)
        copies.append(~reg if inverted else reg)
    return copies


def _kept(name):
    """A 1-bit net that synthesis keeps (a boundary of its logic cones)."""
    return Signal(name=name, attrs={"keep": 1})


def _rest(m, name, write, pick, depth):
    """Whether the rest (lines besides the one shown) of a queue of ``depth``
    is at least 1 (a register).  It rises by ``write`` and falls by ``pick``."""
    some, picked = Signal(name=f"{name}_rest"), Signal(name=f"{name}_picked")
    # the rest plus the pick of the cycle before
    lagged, _ = unary_count(m, f"{name}_lag", write, picked, depth)
    two = _kept(f"{name}_two")      # the rest is at least 2
    m.d.comb += two.eq(Mux(picked, lagged(3), lagged(2)))
    m.d.sync += [some.eq(flag(write, pick, Const(1), some, two)), picked.eq(pick)]
    return some


class DrsArbiter(wiring.Component):
    """Two queues of ``width``-bit lines shown in round robin.

    Parameters
    ----------
    width : int
        Bits of a line.
    depth : int
        Lines either queue may hold: its writer's credit.
    slices : int
        Memories each queue is cut into, each its own
        :class:`.queue.CreditQueue` (its own addresses and enables).
    groups : int
        Groups of slices (1 .. :data:`GROUPS`, dividing ``slices``), each
        with its own copies of the write enables and of the queue shown.

    Members
    -------
    core_valid, core_data, bypass_valid, bypass_data : In
        A line for the core's / the bypass queue, written a cycle later.
    valid : Out(1)
        DRS holds a line (a register).
    ready : In(1)
        The line leaves.
    data : Out(width)
        The line, read from the chosen queue's memory.
    """

    def __init__(self, width, depth, *, slices=1, groups=1):
        if not 1 <= groups <= GROUPS or slices % groups:
            raise ValueError(f"groups must be in 1..{GROUPS} and divide slices ({slices}), "
                             f"not {groups!r}")
        self._width, self._depth, self._slices, self._groups = width, depth, slices, groups
        super().__init__({"core_valid": In(1), "core_data": In(width),
                          "bypass_valid": In(1), "bypass_data": In(width),
                          "valid": Out(1), "ready": In(1), "data": Out(width)})

    def elaborate(self, platform):
        m = Module()
        # the inputs, registered: each write enable in copies, one a group
        writes, lines = [], []
        for name, valid, data in (("core", self.core_valid, self.core_data),
                                  ("bypass", self.bypass_valid, self.bypass_data)):
            line = Signal(self._width, name=f"{name}_line", reset_less=True)
            m.d.sync += line.eq(data)
            writes.append(enabled_copies(m, valid, Const(1), range(self._groups)))
            lines.append(line)

        valid, last_core = self.valid, Signal()
        hold = valid & ~self.ready
        picks = [_kept(f"{name}_pick") for name in ("core", "bypass")]
        rest = [_rest(m, name, w[0], pick, self._depth)
                for name, w, pick in zip(("core", "bypass"), writes, picks)]
        # the queue shown next (unless DRS holds): one with a rest, the one
        # not shown last when both have one
        pick_core = rest[0] & (~rest[1] | ~last_core)
        pick_bypass = rest[1] & (~rest[0] | last_core)
        m.d.comb += [picks[0].eq(~hold & pick_core), picks[1].eq(~hold & pick_bypass)]
        with m.If(~hold & (rest[0] | rest[1])):
            m.d.sync += last_core.eq(pick_core)
        m.d.sync += valid.eq(hold | rest[0] | rest[1])
        # which queue DRS shows, in copies: one a group for each queue's read
        # enables (each high only while DRS is valid), and four more that
        # choose the line (the bypass queue's inverted)
        shows = [enabled_copies(m, pick, ~hold, range(self._groups))
                 for pick in (pick_core, pick_bypass)]
        selects = [*enabled_copies(m, pick_core, ~hold, (4, 5)),
                   *(~c for c in enabled_copies(m, pick_bypass, ~hold, (4, 5)))]
        self._slices_of(m, writes, lines, shows, selects)
        return m

    def _slices_of(self, m, writes, lines, shows, selects):
        """Each slice of the line in its own queue of each kind, read when
        DRS takes the line from it; DRS's slice from the queue shown."""
        n = self._slices
        cuts = [self._width * k // n for k in range(n + 1)]
        for k, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
            group = k * self._groups // n
            queues = [CreditQueue(hi - lo, self._depth) for _ in range(2)]
            m.submodules[f"core_queue{k}"], m.submodules[f"bypass_queue{k}"] = queues
            for q, write, line, show in zip(queues, writes, lines, shows):
                m.d.comb += [q.w_en.eq(write[group]), q.w_data.eq(line[lo:hi]),
                             q.r_en.eq(self.ready & show[group])]
            select = selects[k * len(selects) // n]
            m.d.comb += self.data[lo:hi].eq(Mux(select, queues[0].r_data, queues[1].r_data))
