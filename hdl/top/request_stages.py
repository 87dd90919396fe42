"""The request pipeline's geometry: which stage does what, read issue's
tap, the credit windows that cover the blocks behind it, and what they
tell it (``LeftSignature``).  Functions of the parameters only, shared by
the pipeline, read issue, the NDR arbiter and the tests."""

from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from neuron_fabric.contract.facts import CXL_ADDR_BITS
from neuron_fabric.hdl.top.region import compare_steps
from neuron_fabric.hdl.top.residue_tracks import track_length

__all__ = ["AR_LEAD", "ISSUE_LOOP", "LeftSignature", "credit_windows", "first_stage",
           "idle_after", "join_stage", "pipeline_depth"]


#: Stages from the one read issue takes a request from to the last one,
#: which fills the read's in-flight entry.  The earliest lookup of a read's
#: entry comes 4 cycles after issue takes it (the AR register and queue 2,
#: the AXI address and data handshakes 1, the R beat register 1), and reads
#: the table as it was after the cycle before: so the entry is filled
#: before any lookup can read it as long as AR_LEAD <= 3, whatever the
#: memory does (a test checks it with a memory answering the cycle after
#: each address).
AR_LEAD = 3

#: Cycles an item stays counted after it leaves the tap: for a read,
#: issue's register, the AR queue, the leave registered here
#: (``late_give``) and the count; for a completion, issue's register, the
#: NDR arbiter's register and queue and its move, then the same.  With the
#: tap's stage, the credit windows that let a request be accepted every
#: cycle (a test measures them).
ISSUE_LOOP = {"read": 5, "cmp": 7}


def credit_windows(params):
    """``{"read": n, "cmp": n}``: how many reads (from their accept to
    their AR handshake) and completions (to their move out of the NDR
    arbiter's queue of them) the pipeline admits at most: the depths of
    those queues, so that nothing downstream of the accept can stop a
    request."""
    tap = pipeline_depth(params) - AR_LEAD
    return {kind: tap + loop for kind, loop in ISSUE_LOOP.items()}



def LeftSignature():
    """What the request pipeline is told each cycle: a read's AR beat left
    read issue's queue (``read``), a completion left the NDR arbiter's
    queue of them (``cmp``)."""
    return wiring.Signature({"read": Out(1), "cmp": Out(1)})


def first_stage(params):
    """The stage holding the copies of the first-match one-hot: the last
    before the configuration's choice (chunks 1, combines, match, first,
    copies)."""
    return 1 + compare_steps(CXL_ADDR_BITS - params.offset_bits) + 3


def join_stage(params):
    """The stage where the chosen region's residues and the address's
    meet (both tracks registered there)."""
    return max(first_stage(params) + 2, track_length(CXL_ADDR_BITS - params.offset_bits))


def pipeline_depth(params):
    """Stages from A (0) to the last, which fills the in-flight entry."""
    return join_stage(params) + 10


def idle_after(params):
    """Cycles of ``hold`` after which ``config.idle`` is high (for that cycle
    and every later one while ``hold`` stays high): ``req.ready`` falls the
    cycle after ``hold`` rises, and the last request accepted leaves the
    first-match stage ``first_stage + 1`` cycles later, ``idle`` (a
    register) a cycle after.  The control-write bound follows from it."""
    return first_stage(params) + 3
