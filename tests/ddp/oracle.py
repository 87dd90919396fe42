"""The tests' oracle for the hook: the golden model on the lines every rank's
signs make, written as the contract says (independent of the hook's code)."""

import numpy as np

from neuron_fabric.host import golden
from neuron_fabric.contract.facts import Format, Mode


def workers_for(ranks):
    """W of a controller for ``ranks`` ranks (the hook's documented rule)."""
    return next(w for w in (4, 8, 16) if w >= ranks and (w - ranks) % 2 == 0)


def expected(grads, policy, layout, line_bits=512, first_element=0):
    """The direction every rank must get for one piece.

    ``grads``: (R, n) float, one row per rank.  The controller has W workers;
    its W - R spare slots are pairs of an all-positive and an
    all-non-positive worker.  The lines are packed by ``golden.encode_signs``
    in ``layout``, read by ``golden.transform`` with the region's mode,
    format and gate at the phase of the piece's lines (the piece starts at
    element ``first_element`` of the group's window, a line boundary), and
    decoded by ``golden.decode``.  The direction: SIGN as is, MARGIN a'/R,
    COUNT (2 (c' - pairs) - R) / R.
    """
    r, n = grads.shape
    w = workers_for(r)
    pairs = (w - r) // 2
    pad = np.tile(np.array([[1.0], [-1.0]], np.float32), (pairs, n))
    rows = np.vstack([grads, pad]) if pairs else grads
    lines = golden.encode_signs(rows, line_bits, layout)
    lanes = line_bits // w
    assert first_element % lanes == 0
    first = first_element // lanes
    phase = golden.line_phase(np.arange(first, first + len(lines)), lanes, policy["period"])
    resp = golden.transform(lines, w, Mode(policy["mode"]), Format(policy["format"]),
                            policy["gate_kind"], policy["period"], policy["keep"],
                            policy["threshold"], phase, layout=layout)
    v = golden.decode(resp, w, Format(policy["format"]), n).astype(np.float32)
    fmt = policy["format"]
    if fmt == Format.SIGN:
        return v
    if fmt == Format.MARGIN:
        return v / np.float32(r)
    return (2 * (v - pairs) - r) / np.float32(r)


def wide(grads, policy, line_bits=512, first_element=0):
    """The same direction from ``golden.transform_wide`` over the R real
    ranks' signs alone (32-bit lanes, no spare slots): SIGN and MARGIN must
    agree with :func:`expected` (and so must a hierarchy of controllers)."""
    r, n = grads.shape
    lanes = line_bits // 32
    first = first_element // lanes
    n_lines = -(-n // lanes)
    phase = golden.line_phase(np.arange(first, first + n_lines), lanes, policy["period"])
    resp = golden.transform_wide(grads > 0, Mode(policy["mode"]), Format(policy["format"]),
                                 policy["gate_kind"], policy["period"], policy["keep"],
                                 policy["threshold"], phase, line_bits=line_bits)
    v = golden.decode_counts(resp, Format(policy["format"]), n).astype(np.float32)
    fmt = policy["format"]
    if fmt == Format.SIGN:
        return v
    if fmt == Format.MARGIN:
        return v / np.float32(r)
    return (2 * v - r) / np.float32(r)
