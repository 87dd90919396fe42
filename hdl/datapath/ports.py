"""What enters and leaves the datapath core: the payload layouts of its
streams (contract section 3), and the bundles every step set starts from and
ends with."""

from dataclasses import dataclass

from amaranth.lib import data

from neuron_fabric.contract.facts import FIELD_WIDTHS

from neuron_fabric.hdl.datapath.pipeline import Geometry, Groups

__all__ = ["InputLayout", "OutputLayout", "LineIn", "LineOut"]


class InputLayout(data.StructLayout):
    """Payload of the core's input stream: a line and its configuration.

    Members
    -------
    line : unsigned(line_bits)
        Lane ``i`` is bits ``[i*W, (i+1)*W)``; bit ``k`` of a lane is worker
        ``k``'s sign.
    tag, mode, format, gate_kind, gate_threshold : unsigned
        Widths from :data:`~neuron_fabric.contract.facts.FIELD_WIDTHS`.
    gate_mask : unsigned(lanes)
        The PATTERN gate, bit ``i`` = 1 keeps lane ``i``.
    """

    def __init__(self, *, line_bits, lanes):
        super().__init__({"line": line_bits, "gate_mask": lanes, **FIELD_WIDTHS})


class OutputLayout(data.StructLayout):
    """Payload of the core's output stream: the transformed line and its tag."""

    def __init__(self, *, line_bits):
        super().__init__({"line": line_bits, "tag": FIELD_WIDTHS["tag"]})


@dataclass(frozen=True)
class LineIn:
    """A line as it enters the steps: per-line fields, and the line and its
    mask cut into groups (a lane's mask bit travels with the lane)."""
    tag: object
    mode: object
    format: object
    gate_kind: object
    threshold: object
    data: Groups
    mask: Groups

    @classmethod
    def from_payload(cls, payload, geometry: Geometry):
        gb, gl = geometry.group_bits, geometry.group_lanes
        groups = range(geometry.groups)
        return cls(tag=payload.tag, mode=payload.mode, format=payload.format,
                   gate_kind=payload.gate_kind, threshold=payload.gate_threshold,
                   data=Groups(payload.line[g * gb:(g + 1) * gb] for g in groups),
                   mask=Groups(payload.gate_mask[g * gl:(g + 1) * gl] for g in groups))


@dataclass(frozen=True)
class LineOut:
    """A line as it leaves the last step."""
    tag: object
    data: Groups
