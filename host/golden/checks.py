"""Configuration and argument checks of the golden model (contract sections 2
and 5): each raises ``ValueError`` naming the first field out of range."""

import numpy as np

from neuron_fabric.contract.facts import FIELD_WIDTHS, Format, GateKind, Layout, Mode, Operand, \
    LINE_BITS_CHOICES, WORKERS_CHOICES
from neuron_fabric.contract.regmap import count_total_max

#: Lines a vectorised transform takes at a time (bounds its temporaries).
CHUNK_LINES = 1 << 14


#: Largest MARGIN gate threshold the CFG word holds (contract section 4.4).
_MAX_THRESHOLD = (1 << FIELD_WIDTHS["gate_threshold"]) - 1


def check_config(workers, mode, fmt=Format.COUNT, gate_kind=GateKind.PATTERN,
                 period=3, keep=2, threshold=0):
    """Raise ``ValueError`` naming the first field outside contract section 2."""
    if workers not in WORKERS_CHOICES:
        raise ValueError(f"workers must be one of {WORKERS_CHOICES}, not {workers!r}")
    check_fields(mode, fmt, gate_kind, period, keep)
    if not 0 <= threshold <= workers:
        raise ValueError(f"gate threshold T must be in 0..W={workers}, not {threshold!r}")


def check_count_config(operand, total, mode, fmt=Format.COUNT, gate_kind=GateKind.PATTERN,
                       period=3, keep=2, threshold=0, layout=Layout.ELEMENT_MAJOR):
    """Raise ``ValueError`` naming the first field outside contract section 5
    for a count operand: ``1 <= total <= N * (2**b - 1)``, ``T <= total``
    (and T fits its 5-bit CFG field), the section 2 fields as for signs."""
    most = count_total_max(operand)
    if isinstance(total, bool) or not isinstance(total, (int, np.integer)) \
            or not 1 <= total <= most:
        raise ValueError(f"total must be an integer in 1..{most} for "
                         f"{Operand(operand).name}, not {total!r}")
    check_fields(mode, fmt, gate_kind, period, keep)
    if not 0 <= threshold <= min(total, _MAX_THRESHOLD):
        raise ValueError(f"gate threshold T must be in 0..min(total={total}, "
                         f"{_MAX_THRESHOLD}), not {threshold!r}")
    check_layout(layout)


def check_layout(layout):
    if layout not in tuple(Layout):
        raise ValueError(f"layout must be one of {[int(x) for x in Layout]}, not {layout!r}")


def check_fields(mode, fmt, gate_kind, period, keep):
    if mode not in tuple(Mode):
        raise ValueError(f"mode must be one of {[int(m) for m in Mode]}, not {mode!r}")
    if fmt not in tuple(Format):
        raise ValueError(f"format must be one of {[int(f) for f in Format]}, not {fmt!r}")
    if gate_kind not in tuple(GateKind):
        raise ValueError(f"gate kind must be 0 or 1, not {gate_kind!r}")
    if not 1 <= period <= 15:
        raise ValueError(f"gate period P must be in 1..15, not {period!r}")
    if not 0 <= keep <= period:
        raise ValueError(f"gate keep K must be in 0..P={period}, not {keep!r}")


def check_lines(lines, line_bits=None):
    lines = np.asarray(lines)
    if lines.dtype != np.uint8 or lines.ndim != 2:
        raise ValueError(f"lines must be a uint8 array of shape (L, LINE_BYTES), "
                         f"not {lines.dtype} of shape {lines.shape}")
    if lines.shape[1] * 8 not in LINE_BITS_CHOICES:
        raise ValueError(f"a line must have LINE_BITS in {LINE_BITS_CHOICES}, "
                         f"not {lines.shape[1] * 8}")
    return lines


def check_phase(phase, period):
    phase = np.asarray(phase)
    if np.any((phase < 0) | (phase >= period)):
        raise ValueError(f"gate phase must be in 0..P-1={period - 1}")
    return phase


def check_mask(gate_mask, n_lines, lanes):
    mask = np.asarray(gate_mask)
    if mask.dtype != np.bool_ or mask.shape not in ((lanes,), (n_lines, lanes)):
        raise ValueError(f"gate_mask must be a bool array of shape ({lanes},) or "
                         f"({n_lines}, {lanes}), not {mask.dtype} of shape {mask.shape}")
    return mask
