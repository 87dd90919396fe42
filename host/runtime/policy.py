"""A parameter group's aggregation policy, its window in device memory and
the traffic it moves (see :mod:`neuron_fabric.host.runtime`)."""

from dataclasses import dataclass

from neuron_fabric.contract.facts import Format, GateKind, Layout, Mode
from neuron_fabric.host import encoding as _encoding
from neuron_fabric.host import golden

#: Bytes of one FP32 element.
FP32_BYTES = 4



@dataclass(frozen=True)
class GroupPolicy:
    """How one parameter group is aggregated.

    ``mode`` BYPASS is the FP32 path (host mean); GBINARY and GTERNARY are
    low-bit paths through the device, read back in ``format`` with the
    G-Ternary gate ``gate_kind`` (PATTERN: keep when ``(element mod P) < K``;
    MARGIN: keep when ``|a| >= T``).  The other fields are ignored on the
    FP32 path.  IDENTITY returns the packed signs, not an aggregate, and is
    rejected.

    ``rotate`` (PATTERN gate only; ours, beyond the paper) turns the group's
    elements by ``s mod P`` lanes before they are packed at the group's step
    ``s``, and back after the read: the PATTERN gate follows the address, so
    without it the same elements (``j mod P >= K``) are zeroed at every step
    and never learn; with it each element is kept in about ``K`` of every
    ``P`` steps.  The hardware and the bytes moved are the same.

    ``layout`` (contract section 5.2) is how the group's signs are written:
    ELEMENT_MAJOR, one MemWr per line; WORKER_MAJOR, one MemWrPtl per
    worker and line, each worker's own segment (the device needs the
    ``hierarchy`` feature, and ``E = LINE_BITS / W`` must be at least 8).

    ``encoding`` (:mod:`neuron_fabric.host.encoding`) is how a zero
    gradient becomes a bit: ``"negative"`` (the contract's ``g > 0``, a zero
    votes negative), ``"alternate"`` (worker ``k`` packs a zero as ``k mod
    2``), ``"random"`` (each worker packs a zero as a bit it draws from a
    seed of its own) or ``"abstain"`` (the writer balances an element's
    zeros so that they do not move its SIGN lane: it needs one writer
    holding every worker's signs, element-major only, an upper bound no
    distributed worker reaches).  The device, its CFG and the bytes moved
    are the same for all four.
    """
    mode: Mode = Mode.BYPASS
    format: Format = Format.SIGN
    gate_kind: GateKind = GateKind.PATTERN
    period: int = 3
    keep: int = 2
    threshold: int = 0
    rotate: bool = False
    layout: Layout = Layout.ELEMENT_MAJOR
    encoding: str = _encoding.NEGATIVE

    def __post_init__(self):
        if self.mode not in tuple(Mode) or self.mode == Mode.IDENTITY:
            raise ValueError(f"mode must be BYPASS (FP32), GBINARY or GTERNARY, not {self.mode!r}")
        if self.rotate and not (self.mode == Mode.GTERNARY and self.gate_kind == GateKind.PATTERN):
            raise ValueError("rotate applies to the G-Ternary PATTERN gate only, not to "
                             f"mode {Mode(self.mode).name} with gate kind "
                             f"{GateKind(self.gate_kind).name}")

    @property
    def low_bit(self):
        """True when the group goes through the device."""
        return self.mode != Mode.BYPASS

    def check(self, workers, line_bits=None):
        """Raise ``ValueError`` if the device would reject this configuration,
        or (when ``line_bits`` is given) a worker's segment of a worker-major
        line is not whole bytes."""
        if self.layout not in tuple(Layout):
            raise ValueError(f"layout must be one of {[int(x) for x in Layout]}, "
                             f"not {self.layout!r}")
        if self.low_bit:
            golden.check_config(workers, self.mode, self.format, self.gate_kind,
                                self.period, self.keep, self.threshold)
            _encoding.check_encoding(self.encoding, self.layout)
        if self.low_bit and self.layout == Layout.WORKER_MAJOR and line_bits is not None \
                and line_bits // workers < 8:
            raise ValueError(f"worker-major writes need E = LINE_BITS / W >= 8 (whole-byte "
                             f"segments), not {line_bits}/{workers} = {line_bits // workers}")

    def cfg_fields(self):
        """Keyword arguments of :meth:`Driver.cfg_value` for this policy."""
        return dict(format=self.format, gate_kind=self.gate_kind, period=self.period,
                    keep=self.keep, threshold=self.threshold, layout=self.layout)


#: FP32 mean on the host.
FP32 = GroupPolicy()
#: G-Binary, SIGN output: the majority sign.
G_BINARY = GroupPolicy(Mode.GBINARY, Format.SIGN)
#: G-Ternary with the paper's fixed 2-of-3 PATTERN gate, SIGN output.
G_TERNARY = GroupPolicy(Mode.GTERNARY, Format.SIGN, GateKind.PATTERN, period=3, keep=2)
#: G-Ternary with the 2-of-3 gate turned by one lane a step (ours).
G_TERNARY_ROTATING = GroupPolicy(Mode.GTERNARY, Format.SIGN, GateKind.PATTERN, period=3, keep=2,
                                 rotate=True)
#: G-Binary, MARGIN output: direction ``a / W`` (the vote margin).
G_BINARY_MARGIN = GroupPolicy(Mode.GBINARY, Format.MARGIN)


def g_ternary_margin(threshold):
    """G-Ternary with the MARGIN gate ``|a| >= threshold``, SIGN output."""
    return GroupPolicy(Mode.GTERNARY, Format.SIGN, GateKind.MARGIN, threshold=threshold)


@dataclass(frozen=True)
class GroupWindow:
    """A group's place in device memory: bytes ``base <= addr < limit``."""
    name: str
    elements: int
    base: int
    lines: int
    line_bytes: int

    @property
    def limit(self):
        return self.base + self.lines * self.line_bytes

    def piece(self, first, elements, per_line):
        """The window of ``elements`` elements from element ``first`` of this
        one (``first`` a multiple of ``per_line``, the elements a line holds)."""
        return GroupWindow(self.name, elements, self.base + first // per_line * self.line_bytes,
                           -(-elements // per_line), self.line_bytes)


@dataclass
class GroupTraffic:
    """Bytes one group has moved, and what FP32 would have moved."""
    bytes_up: int = 0
    bytes_down: int = 0
    fp32_up: int = 0
    fp32_down: int = 0
    steps: int = 0
    writes: int = 0
    reads: int = 0

    def add(self, up, down, fp32_up, fp32_down, writes=0, reads=0):
        self.bytes_up += up
        self.bytes_down += down
        self.fp32_up += fp32_up
        self.fp32_down += fp32_down
        self.writes += writes
        self.reads += reads
        self.steps += 1

    def __iadd__(self, other):
        for f in ("bytes_up", "bytes_down", "fp32_up", "fp32_down", "steps", "writes", "reads"):
            setattr(self, f, getattr(self, f) + getattr(other, f))
        return self

    def payload_ratio(self):
        """Bytes up over FP32's bytes up (the paper's Table 6 measure)."""
        return self.bytes_up / self.fp32_up if self.fp32_up else float("nan")

    def round_trip_ratio(self):
        """Bytes up and down over FP32's up and down."""
        total = self.fp32_up + self.fp32_down
        return (self.bytes_up + self.bytes_down) / total if total else float("nan")
