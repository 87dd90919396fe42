"""Gradient-traffic accounting per parameter group and aggregation policy.

The ratio counts only the gradient payload representation, normalised to
FP32, as the paper's Table 6 does: FP32 costs 32 bits per element, G-Binary
one sign bit, and G-Ternary ``log2(3)`` rounded to 1.58 bits (the paper's
count for a ternary symbol).  Note that the hardware of this project packs
G-Ternary payloads as one sign bit per element and derives the zero gate on
the read side, so its *stored* ternary payload is 1 bit per element; the
1.58-bit figure is kept to reproduce the paper's accounting.
"""

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

__all__ = ["BITS_PER_ELEMENT", "ParameterGroups", "RESNET18_CIFAR100",
           "TABLE6_POLICIES", "TABLE6_PAPER", "traffic_ratio", "packed_lines",
           "round_half_up"]

#: Bits one gradient element costs on the wire, by representation.
BITS_PER_ELEMENT = {
    "fp32": 32.0,
    "gbinary": 1.0,
    "gternary": 1.58,
}


@dataclass(frozen=True)
class ParameterGroups:
    """Named parameter groups of a model, with element counts."""
    name: str
    groups: dict

    @property
    def total(self):
        return sum(self.groups.values())


#: ResNet-18 for CIFAR-100: 11,220,132 parameters; the classifier head is
#: the 512x100 weight plus 100 biases.
RESNET18_CIFAR100 = ParameterGroups("ResNet-18/CIFAR-100", {
    "backbone": 11_220_132 - (512 * 100 + 100),
    "head": 512 * 100 + 100,
})

#: The policies of the paper's Table 6, as representation per group.
TABLE6_POLICIES = {
    "FP32 all": {"backbone": "fp32", "head": "fp32"},
    "G-Binary all": {"backbone": "gbinary", "head": "gbinary"},
    "G-Ternary all": {"backbone": "gternary", "head": "gternary"},
    "G-Binary backbone + FP32 head": {"backbone": "gbinary", "head": "fp32"},
    "G-Ternary backbone + FP32 head": {"backbone": "gternary", "head": "fp32"},
    "FP32 backbone + G-Binary head": {"backbone": "fp32", "head": "gbinary"},
    "FP32 backbone + G-Ternary head": {"backbone": "fp32", "head": "gternary"},
}

#: The traffic column of the paper's Table 6 (for comparison in reports).
TABLE6_PAPER = {
    "FP32 all": 1.0000,
    "G-Binary all": 0.0313,
    "G-Ternary all": 0.0494,
    "G-Binary backbone + FP32 head": 0.0357,
    "G-Ternary backbone + FP32 head": 0.0537,
    "FP32 backbone + G-Binary head": 0.9956,
    "FP32 backbone + G-Ternary head": 0.9957,
}


def traffic_ratio(model, policy, bits=BITS_PER_ELEMENT):
    """Gradient payload of ``policy`` relative to all-FP32.

    Parameters
    ----------
    model : ParameterGroups
    policy : dict
        Maps every group of ``model`` to a key of ``bits``.
    """
    missing = set(model.groups) - set(policy)
    extra = set(policy) - set(model.groups)
    if missing or extra:
        raise ValueError(f"policy must name exactly the groups {sorted(model.groups)}; "
                         f"missing {sorted(missing)}, unknown {sorted(extra)}")
    for group, rep in policy.items():
        if rep not in bits:
            raise ValueError(f"group {group!r}: unknown representation {rep!r}; "
                             f"known: {sorted(bits)}")
    payload = sum(n * bits[policy[g]] for g, n in model.groups.items())
    return payload / (model.total * bits["fp32"])


def packed_lines(elements, line_bits, workers):
    """Cache lines one low-bit bucket of ``elements`` occupies (last line padded)."""
    lanes = line_bits // workers
    return -(-elements // lanes)


def round_half_up(value, places=4):
    """Round as tables do (0.03125 -> 0.0313), not to even as ``round`` does."""
    quantum = Decimal(1).scaleb(-places)
    return float(Decimal(repr(value)).quantize(quantum, rounding=ROUND_HALF_UP))
