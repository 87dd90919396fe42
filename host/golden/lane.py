"""One lane, straight from the contract: the plain-integer references of the
read transform (contract sections 2 and 5), for formal proofs and
hand-worked examples."""

from neuron_fabric.contract.facts import COUNT_LANE_BITS, Format, GateKind, Mode, count_geometry
from neuron_fabric.host.golden.checks import check_config, check_count_config
from neuron_fabric.host.golden.gate import gate_pattern

def transform_lane(lane, lane_index, workers, mode, fmt=Format.COUNT,
                   gate_kind=GateKind.PATTERN, period=3, keep=2, threshold=0,
                   phase=0, *, gate_mask=None):
    """Return the W-bit output lane for one input lane (contract section 2).

    Parameters
    ----------
    lane : int
        The W sign bits of the lane; bit ``k`` is worker ``k``.
    lane_index : int
        ``i``, the lane's position in its line.
    phase : int
        Element index of lane 0 modulo P.
    gate_mask : sequence of bool, optional
        The line's PATTERN gate as the datapath core takes it (contract section
        3): the lane is kept iff ``gate_mask[lane_index]``.  When given,
        ``period``, ``keep`` and ``phase`` are not used; otherwise the gate
        is :func:`gate_pattern` of them.
    """
    check_config(workers, mode, fmt, gate_kind, period, keep, threshold)
    mask = (1 << workers) - 1
    if mode in (Mode.BYPASS, Mode.IDENTITY):
        return lane & mask
    c = bin(lane & mask).count("1")
    return _lane_value(c, workers, lane_index, mode, fmt, gate_kind, period, keep, threshold,
                       phase, gate_mask) & mask


def _lane_value(c, total, lane_index, mode, fmt, gate_kind, period, keep, threshold, phase,
                gate_mask):
    """The output value (a Python int, signed) of one lane of count ``c`` out of
    ``total`` votes under G-Binary or G-Ternary (contract sections 2 and 5)."""
    a = 2 * c - total
    if mode == Mode.GBINARY:
        m = True
    elif gate_kind == GateKind.PATTERN:
        if gate_mask is None:
            gate_mask = gate_pattern(lane_index + 1, period, keep, phase)
        m = bool(gate_mask[lane_index])
    else:
        m = abs(a) >= threshold
    c_g = c if m else total // 2
    a_g = a if m else 0
    if fmt == Format.COUNT:
        return c_g
    if fmt == Format.MARGIN:
        return a_g
    return (a_g > 0) - (a_g < 0)


def transform_count_lane(lane, lane_index, operand, total, mode, fmt=Format.COUNT,
                         gate_kind=GateKind.PATTERN, period=3, keep=2, threshold=0, phase=0,
                         *, gate_mask=None):
    """Return the 32-bit output lane for one element-major count lane
    (contract section 5), in plain integer arithmetic.

    Parameters
    ----------
    lane : int
        The element's 32-bit count lane: contributor ``k``'s count is bits
        ``[k*b, (k+1)*b)``.
    lane_index, phase, gate_mask
        As for :func:`transform_lane`, with E_c = LINE_BITS / 32 lanes a line.
    """
    check_count_config(operand, total, mode, fmt, gate_kind, period, keep, threshold)
    word = (1 << COUNT_LANE_BITS) - 1
    if mode in (Mode.BYPASS, Mode.IDENTITY):
        return lane & word
    bits, contributors = count_geometry(operand)
    c = sum((lane >> (k * bits)) & ((1 << bits) - 1) for k in range(contributors))
    return _lane_value(c, total, lane_index, mode, fmt, gate_kind, period, keep, threshold,
                       phase, gate_mask) & word
