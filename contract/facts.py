"""Parameters, encodings, opcodes and build profiles: the single source of truth.

Everything here is plain Python (no Amaranth import) so that the golden
model, the HDL, the flows and the tests all read the same facts.

The values follow the external contract (contract sections 1 and 2).
"""

from dataclasses import dataclass, field
from enum import IntEnum

__all__ = [
    "LINE_BITS_CHOICES", "WORKERS_CHOICES", "STAGES_RANGE", "REGIONS_RANGE",
    "MAX_OUTSTANDING_RANGE", "DEFAULTS", "FIELD_WIDTHS",
    "Mode", "Format", "GateKind", "Layout", "Operand", "COUNT_LANE_BITS", "count_geometry",
    "FEATURES", "CORE_FEATURES", "TOP_FEATURES", "UNBUILT_FEATURES", "PROFILES", "Profile",
    "view_beats", "profile_named", "profile_base",
    "DatapathParams", "TopParams", "CXL_ADDR_BITS", "ReqOpcode", "RwdOpcode",
    "DRS_MEMDATA", "NDR_CMP", "DATAPATH_MODULE", "TOP_MODULE", "check_choice", "check_range",
    "ParameterError", "REFUSED_COMBINATIONS", "COMBINATION_NOTES",
]

#: Verilog module names of the exported core and top.
DATAPATH_MODULE = "neuron_fabric_datapath"
TOP_MODULE = "neuron_fabric"


LINE_BITS_CHOICES = (64, 128, 256, 512, 1024)
WORKERS_CHOICES = (4, 8, 16)
STAGES_RANGE = range(1, 9)
REGIONS_RANGE = range(0, 17)
MAX_OUTSTANDING_RANGE = range(4, 257)

DEFAULTS = {
    "line_bits": 512,
    "workers": 8,
    "stages": 5,
    "regions": 8,
    "max_outstanding": 32,
}

#: Widths of the per-line configuration fields on the datapath input
#: (contract section 3).  The PATTERN gate's mask, ``in_gate_mask``, is one bit
#: per lane: E = LINE_BITS / W bits (:attr:`DatapathParams.lanes`).
FIELD_WIDTHS = {
    "mode": 2,
    "format": 2,
    "gate_kind": 1,
    "gate_threshold": 5,
    "tag": 16,
}


class Mode(IntEnum):
    """What a read returns (contract section 2)."""
    BYPASS = 0
    IDENTITY = 1
    GBINARY = 2
    GTERNARY = 3


class Format(IntEnum):
    """Encoding of an output lane (contract section 2); 3 is invalid."""
    COUNT = 0
    MARGIN = 1
    SIGN = 2


class GateKind(IntEnum):
    """How G-Ternary decides whether a lane is kept (contract section 2)."""
    PATTERN = 0
    MARGIN = 1


class Layout(IntEnum):
    """Where a line keeps each worker's (or contributor's) bits (contract
    section 5): ELEMENT_MAJOR puts all of one element's bits in its lane
    (contract section 2); WORKER_MAJOR gives each worker a contiguous
    segment of the line holding its bits for every element."""
    ELEMENT_MAJOR = 0
    WORKER_MAJOR = 1


class Operand(IntEnum):
    """What a line holds (contract section 5): one sign bit per worker, or
    4- or 8-bit partial sign counts from lower-level controllers; 3 is
    invalid."""
    SIGNS = 0
    COUNTS4 = 1
    COUNTS8 = 2


#: Bits of one element's count lane, in and out, for the count operands
#: (contract section 5).
COUNT_LANE_BITS = 32


def count_geometry(operand):
    """``(b, N)`` for a count operand: bits per partial count and the number
    of contributors a count lane holds (contract section 5)."""
    bits = {Operand.COUNTS4: 4, Operand.COUNTS8: 8}.get(operand)
    if bits is None:
        raise ValueError(f"operand must be COUNTS4 (1) or COUNTS8 (2), not {operand!r}")
    return bits, COUNT_LANE_BITS // bits


def view_beats(line_bits, workers, operand):
    """B, the source lines (AXI beats) of one line of a packed view (contract
    section 6.2): ``(LINE_BITS / 2) / E'``, W / 2 for the SIGNS operand and 16
    for a count operand."""
    if operand == Operand.SIGNS:
        return workers // 2
    count_geometry(operand)
    return COUNT_LANE_BITS // 2


#: Features of the full design that a reduced build may hard-wire away.
#: Each name maps to a one-line description used in reports.
FEATURES = {
    "format_margin": "MARGIN output format (signed vote margin a')",
    "format_sign": "SIGN output format (sgn(a') in {-1, 0, +1})",
    "gate_margin": "G-Ternary MARGIN gate kind (|a| >= T)",
    "gate_pattern_programmable": "programmable PATTERN gate period P and keep K "
                                 "(the top's mask computation; the core takes any mask)",
    "hierarchy": "worker-major layout and 4-/8-bit partial-count operands "
                 "(contract section 5; the top's read path)",
    "packed_view": "packed result view: a region read as 2-bit results of the lines "
                   "of a source window, one AXI burst a line (contract section 6)",
}

#: Features of the top only (the core's ports and logic do not change).
TOP_FEATURES = ("gate_pattern_programmable", "hierarchy", "packed_view")

#: The features the datapath core implements.  The core takes the PATTERN
#: gate as a per-lane mask in every profile (contract section 3 (v2)), so
#: ``gate_pattern_programmable`` concerns only the top, which computes the
#: mask.
CORE_FEATURES = tuple(f for f in FEATURES if f not in TOP_FEATURES)


@dataclass(frozen=True)
class Profile:
    """A build profile: which optional features the datapath implements.

    A profile without some feature hard-wires the corresponding inputs at
    elaboration time: without ``format_margin``/``format_sign`` every
    low-bit lane is returned in COUNT format; without ``gate_margin``
    G-Ternary always uses the PATTERN gate.  The datapath core takes the
    PATTERN gate as its per-lane mask in every profile; without
    ``gate_pattern_programmable`` the top computes that mask with the
    paper's fixed 2-of-3 gate (P = 3, K = 2) from the line's phase, which it
    still forms with the register's P (so the pattern's phase is that
    phase modulo 3).
    """
    name: str
    features: frozenset = field(default_factory=frozenset)

    def __post_init__(self):
        unknown = set(self.features) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown feature(s) {sorted(unknown)!r}; "
                             f"known: {sorted(FEATURES)}")

    def has(self, feature):
        if feature not in FEATURES:
            raise ValueError(f"unknown feature {feature!r}")
        return feature in self.features

    def effective(self, fmt, gate_kind, period, keep):
        """The configuration a build of this profile actually applies.

        Returns ``(format, gate_kind, period, keep)`` after hard-wiring the
        features this profile lacks, so that tests can ask the golden model
        what a reduced build must return.
        """
        if (fmt == Format.MARGIN and not self.has("format_margin")) or \
           (fmt == Format.SIGN and not self.has("format_sign")):
            fmt = Format.COUNT
        if not self.has("gate_margin"):
            gate_kind = GateKind.PATTERN
        if not self.has("gate_pattern_programmable"):
            period, keep = 3, 2
        return fmt, gate_kind, period, keep

    def without(self, feature):
        """This profile less one feature (for feature-cost studies)."""
        self.has(feature)
        return Profile(f"{self.name}-no-{feature}", self.features - {feature})

    def plus(self, feature):
        """This profile with one more feature: a build of a feature the
        profile does not have yet (:data:`UNBUILT_FEATURES`), to measure it."""
        self.has(feature)
        return Profile(f"{self.name}-with-{feature}", self.features | {feature})


#: Features the contract and the host models define that no exported
#: build implements yet: ``packed_view`` (contract section 6) is in the
#: golden, device and driver models, which take a :class:`Profile` that has
#: it; the gateware does not, so ``full`` leaves it out.
UNBUILT_FEATURES = ("packed_view",)

#: ``full`` has every feature built, ``hierarchy`` included (contract section 5:
#: the top's read path runs the core inside :class:`~neuron_fabric.hdl.
#: hierarchy.Hierarchy`); ``paper`` has none and rejects the extension's
#: CFG values.
PROFILES = {
    "full": Profile("full", frozenset(FEATURES) - frozenset(UNBUILT_FEATURES)),
    "paper": Profile("paper", frozenset()),
}


def profile_named(name):
    """The :class:`Profile` a build names: a key of :data:`PROFILES`,
    ``<profile>-no-<feature>`` (:meth:`Profile.without`, for the cost of a
    feature beside the build that has it) or ``<profile>-with-<feature>``
    (:meth:`Profile.plus`, a build of a feature the profile lacks).

    Raises
    ------
    ParameterError
        For any other name (the message quotes it).
    """
    if name in PROFILES:
        return PROFILES[name]
    base, derive, feature = _derivation(name)
    return derive(PROFILES[base], feature)


#: The derived profile names' separators, each with its derivation.
_DERIVED = (("-no-", Profile.without), ("-with-", Profile.plus))


def _derivation(name):
    """``(base, derivation, feature)`` of a derived profile name; raises
    ParameterError for a name that is neither a profile nor derived from one."""
    for sep, derive in _DERIVED:
        base, found, feature = str(name).partition(sep)
        if found and base in PROFILES and feature in FEATURES:
            return base, derive, feature
    raise ParameterError(f"profile must be one of {tuple(PROFILES)}, <profile>-no-<feature> or "
                         f"<profile>-with-<feature>, not {name!r}")


def profile_base(name):
    """The key of :data:`PROFILES` a build's profile name derives from
    (``full`` for ``full-no-hierarchy`` or ``full-with-packed_view``)."""
    return name if name in PROFILES else _derivation(name)[0]


#: Combinations of legal values (contract section 1) that the IP refuses,
#: as ``(combination, reason)``: none, every combination is built
#: (``make configs`` exports, lints and simulates one set for every pair of
#: LINE_BITS and WORKERS in both profiles).
REFUSED_COMBINATIONS = ()

#: What a legal combination implies that an integrator may not expect.
COMBINATION_NOTES = (
    "LINE_BITS 64 with WORKERS 16 has E = 4 lanes: in the worker-major "
    "layout (contract section 5.2) a worker's segment is 4 bits, two workers "
    "to a byte, so a worker cannot write its own signs alone with one "
    "MemWrPtl (byte enables); the transform is the same as for E >= 8.",
)


class ParameterError(ValueError):
    """A parameter outside contract section 1 (the message names the value)."""


class _ParameterTypeError(ParameterError, TypeError):
    """A parameter that is not an integer."""


def _check_integer(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise _ParameterTypeError(f"{name} must be an integer, not {value!r}")


def check_choice(name, value, choices):
    """Raise a ``TypeError``/``ValueError`` (a :class:`ParameterError`)
    quoting ``value`` unless it is one of ``choices``."""
    _check_integer(name, value)
    if value not in choices:
        raise ParameterError(f"{name} must be one of {tuple(choices)}, not {value!r}")
    return value


def check_range(name, value, rng):
    """Raise a ``TypeError``/``ValueError`` (a :class:`ParameterError`)
    quoting ``value`` unless it lies in ``rng``."""
    _check_integer(name, value)
    if value not in rng:
        raise ParameterError(f"{name} must be in {rng.start}..{rng.stop - 1}, not {value!r}")
    return value


@dataclass(frozen=True)
class DatapathParams:
    """Validated parameters of the datapath core.

    Raises
    ------
    TypeError, ValueError
        If a parameter is outside contract section 1 (a
        :class:`ParameterError`); the message names the value.
    """
    line_bits: int = DEFAULTS["line_bits"]
    workers: int = DEFAULTS["workers"]
    stages: int = DEFAULTS["stages"]
    profile: str = "full"

    def __post_init__(self):
        check_choice("LINE_BITS", self.line_bits, LINE_BITS_CHOICES)
        check_choice("WORKERS", self.workers, WORKERS_CHOICES)
        check_range("STAGES", self.stages, STAGES_RANGE)
        profile_named(self.profile)

    @property
    def line_bytes(self):
        return self.line_bits // 8

    @property
    def lanes(self):
        """E, the number of lanes (elements) per line."""
        return self.line_bits // self.workers


#: Address bits a BASE/LIMIT pair holds (the CXL address width).
CXL_ADDR_BITS = 52


@dataclass(frozen=True)
class TopParams(DatapathParams):
    """The datapath's parameters plus the top's own (contract section 1):
    REGIONS address windows and MAX_OUTSTANDING memory transactions in
    flight, checked as :class:`DatapathParams` checks its own."""
    regions: int = DEFAULTS["regions"]
    max_outstanding: int = DEFAULTS["max_outstanding"]

    def __post_init__(self):
        super().__post_init__()
        check_range("REGIONS", self.regions, REGIONS_RANGE)
        check_range("MAX_OUTSTANDING", self.max_outstanding, MAX_OUTSTANDING_RANGE)

    @property
    def offset_bits(self):
        """log2(LINE_BYTES): address bits below a line."""
        return self.line_bytes.bit_length() - 1

    @property
    def id_bits(self):
        """AXI ID width: enough to number MAX_OUTSTANDING transactions."""
        return max(1, (self.max_outstanding - 1).bit_length())

    def tag(self):
        """Short name of the parameter set, for build folders."""
        return (f"L{self.line_bits}_W{self.workers}_S{self.stages}"
                f"_R{self.regions}_O{self.max_outstanding}_{self.profile}")


class ReqOpcode(IntEnum):
    """M2S Req opcodes (CXL 2.0 encodings, contract section 4.2)."""
    MEM_INV = 0b0000
    MEM_RD = 0b0001
    MEM_RD_DATA = 0b0010
    MEM_SPEC_RD = 0b1000
    MEM_INV_NT = 0b1001


class RwdOpcode(IntEnum):
    """M2S RwD opcodes (CXL 2.0 encodings, contract section 4.2)."""
    MEM_WR = 0b0001
    MEM_WR_PTL = 0b0010


#: S2M DRS MemData and S2M NDR Cmp opcodes.
DRS_MEMDATA = 0b000
NDR_CMP = 0b000
