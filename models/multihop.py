"""Time and traffic of one multi-hop All-Reduce among N controllers.

Each of ``controllers`` (N) controllers has already aggregated its own W
workers (one CXL controller, :mod:`.commtime`'s single-hop path); what is
modelled here is the exchange between controllers over the scale-out
network, with :class:`.commtime.CommParams`'s link: ``net_gb_s`` per
controller (full duplex) and ``ring_step_us`` of latency per message step.
Bits per coordinate of a partial result come from
:func:`partial_bits` (DynamiQ's accounting:
payload plus scale metadata), so the study and the timing count the same
bits.

* **Ring** (reduce-scatter, then all-gather): the vector is cut into N
  chunks of ``n / N`` coordinates.  Reduce-scatter step ``s`` (1 .. N-1)
  sends one chunk holding a partial result of ``s`` controllers (``s * W``
  workers); all-gather's N-1 steps send the final result.  Time
  ``sum_s (n / N * bits_s / 8 / B + alpha)``.
* **Tree** (``fanin``-ary, ``N = fanin ** depth`` leaves): level ``l``
  (1 .. depth) parents receive ``fanin`` messages of all ``n`` coordinates,
  each a partial result of ``fanin ** (l-1)`` controllers, one after another
  on their one link, then the result goes back down the same way.  Time per
  level ``fanin * n * bits / 8 / B + alpha``, whole messages stored and
  forwarded (no chunk pipelining, which would overlap the levels).

What the result going down costs (``result_bits``): a sign scheme returns
one bit per coordinate (1.58 for a ternary result in the paper's
accounting, which counts a returned tie as 0; we count 1 bit, as
:mod:`.commtime` does), the ``dq`` schemes their final b-bit code and its
scales, FP32 32 bits.  Encoding and summing times are not counted.
"""

import math

from neuron_fabric.models.commtime import CommParams

__all__ = ["GROUP", "SUPERGROUP", "META_BITS", "SCHEMES", "count_bits", "partial_bits", "TIMED",
           "result_bits", "ring", "tree"]

#: Coordinates per group (one 8-bit scale) and per super-group (one 16-bit scale).
GROUP = 16
SUPERGROUP = 256
#: Scale metadata, bits per coordinate per hop: 8-bit group scale, 16-bit super-group scale.
META_BITS = 8 / GROUP + 16 / SUPERGROUP

#: The schemes; every one returns a sign (-1/0/+1) except ``dq-grad`` (magnitudes).
SCHEMES = ("exact", "mom", "mom-ternary", "dq-sign", "dq-grad", "signofmean")


def count_bits(maximum):
    """Bits of an exact count of at most ``maximum``."""
    return math.ceil(math.log2(maximum + 1))


def partial_bits(scheme, members, bits=4):
    """Bits per coordinate, ``(payload, metadata)``, of one partial result
    of ``scheme`` covering ``members`` workers as it travels up (1: a
    worker's own gradient)."""
    if scheme not in SCHEMES + ("fp32",):
        raise ValueError(f"unknown scheme {scheme!r}; known: {SCHEMES + ('fp32',)}")
    if scheme in ("fp32", "signofmean"):
        return 32.0, 0.0
    if scheme == "dq-grad" or (scheme == "dq-sign" and members > 1):
        return float(bits), META_BITS
    if members == 1 or scheme == "mom":
        return 1.0, 0.0
    if scheme == "mom-ternary":
        return math.log2(3), 0.0
    return float(count_bits(members)), 0.0        # exact


#: Schemes timed, as :func:`partial_bits` names them (dq-sign and dq-grad
#: move the same bits between controllers).
TIMED = ("fp32", "exact", "mom", "mom-ternary", "dq-grad")


def result_bits(scheme, bits=4):
    """Bits per coordinate of the final result sent back down."""
    if scheme in ("dq-sign", "dq-grad"):
        return sum(partial_bits(scheme, 2, bits))
    if scheme in ("fp32", "signofmean"):
        return 32.0
    partial_bits(scheme, 1, bits)       # checks the name
    return 1.0


def _step(coords, bits_per_coord, messages, cp):
    """Seconds and bytes of one step: ``messages`` messages of ``coords``
    coordinates each, one after another on one link, plus one step latency."""
    nbytes = messages * coords * bits_per_coord / 8
    return nbytes / (cp.net_gb_s * 1e9) + cp.ring_step_us * 1e-6, nbytes


def ring(n, controllers, workers, scheme, bits=4, cp=CommParams()):
    """Ring All-Reduce of ``n`` coordinates among ``controllers`` controllers
    of ``workers`` workers each.

    Returns a dict: ``steps`` (one per step: ``phase``, ``members`` (workers
    the chunk's partial result covers), ``bits_per_coord``, ``bytes`` sent by
    each controller, ``seconds``), ``seconds`` and ``bytes_per_controller``
    in total.
    """
    if controllers < 2:
        raise ValueError(f"a ring needs at least 2 controllers, not {controllers}")
    chunk = n / controllers
    steps = []
    for s in range(1, controllers):
        w = sum(partial_bits(scheme, s * workers, bits))
        t, b = _step(chunk, w, 1, cp)
        steps.append(dict(phase="reduce-scatter", members=s * workers, bits_per_coord=w,
                          bytes=b, seconds=t))
    w = result_bits(scheme, bits)
    for _ in range(1, controllers):
        t, b = _step(chunk, w, 1, cp)
        steps.append(dict(phase="all-gather", members=controllers * workers,
                          bits_per_coord=w, bytes=b, seconds=t))
    return dict(steps=steps, seconds=sum(x["seconds"] for x in steps),
                bytes_per_controller=sum(x["bytes"] for x in steps))


def _depth(controllers, fanin):
    depth = round(math.log(controllers, fanin))
    if fanin < 2 or fanin ** depth != controllers:
        raise ValueError(f"controllers ({controllers}) must be a power of fanin ({fanin})")
    return depth


def tree(n, controllers, fanin, workers, scheme, bits=4, cp=CommParams()):
    """Tree All-Reduce of ``n`` coordinates: ``controllers`` leaves, each
    parent combining ``fanin`` children, results broadcast back down.

    Returns a dict: ``levels`` (one per message level, up then down:
    ``phase``, ``level``, ``members``, ``bits_per_coord``, ``bytes`` into
    (up) or out of (down) one parent, ``seconds``), ``seconds``,
    ``bytes_per_parent_link`` (the busiest link, summed over the levels).
    """
    depth = _depth(controllers, fanin)
    levels = []
    for lvl in range(1, depth + 1):
        members = workers * fanin ** (lvl - 1)
        w = sum(partial_bits(scheme, members, bits))
        t, b = _step(n, w, fanin, cp)
        levels.append(dict(phase="reduce", level=lvl, members=members, bits_per_coord=w,
                           bytes=b, seconds=t))
    w = result_bits(scheme, bits)
    for lvl in range(depth, 0, -1):
        t, b = _step(n, w, fanin, cp)
        levels.append(dict(phase="broadcast", level=lvl, members=controllers * workers,
                           bits_per_coord=w, bytes=b, seconds=t))
    return dict(levels=levels, seconds=sum(x["seconds"] for x in levels),
                bytes_per_parent_link=sum(x["bytes"] for x in levels))
