"""Control register map of the top ``neuron_fabric`` (contract section 4.4).

This module is the one place the register map is written down.  It is plain
Python (no Amaranth import): the RTL decode (:mod:`neuron_fabric.hdl.top.csr`), the
generated Markdown table (``docs/registers.md``, see :func:`markdown`) and the
control-plane driver (:mod:`neuron_fabric.host.driver`) all read it.

A :class:`RegisterMap` is built for one parameter set (:class:`TopParams`):
counters and region registers are arrays, and region registers exist only for
``r < REGIONS``.
"""

import pathlib
from dataclasses import dataclass
from dataclasses import field as dc_field

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import (
    CXL_ADDR_BITS,
    FEATURES,
    Format,
    GateKind,
    Layout,
    Mode,
    Operand,
    PROFILES,
    profile_base,
    profile_named,
    TopParams,
    check_range,
    count_geometry,
)

__all__ = [
    "Field", "Register", "RegisterMap", "CFG_FIELDS", "HIERARCHY_CFG_FIELDS", "STATUS_BITS",
    "COUNTERS", "ID_VALUE", "VERSION_MAJOR", "VERSION_MINOR", "CfgError",
    "cfg_encode", "cfg_decode", "cfg_check", "count_total_max", "markdown",
    "CAPS2_PROFILE", "caps2_fields", "caps2_value", "caps2_decode",
    "VIEW_FIELDS", "SOURCE_ALIGN_BITS", "view_check",
]

#: Value of the ID register: ASCII "NFAB".
ID_VALUE = 0x4E464142
VERSION_MAJOR = 2
VERSION_MINOR = 2

DATA_BITS = 32
ADDR_BITS = 12

@dataclass(frozen=True)
class Field:
    """A bit field of a register: bits ``[lsb, lsb + width)``."""
    name: str
    lsb: int
    width: int
    doc: str
    reset: int = 0

    @property
    def mask(self):
        return ((1 << self.width) - 1) << self.lsb

    def get(self, value):
        return (value >> self.lsb) & ((1 << self.width) - 1)

    def put(self, value, field_value):
        return (value & ~self.mask) | ((field_value << self.lsb) & self.mask)


#: CFG layout (contract 4.4; ``layout``, ``operand`` and ``total``: contract
#: section 5).  ``enable`` exists in region CFG registers only.
CFG_FIELDS = (
    Field("mode", 0, 2, "0 BYPASS, 1 IDENTITY, 2 G-Binary, 3 G-Ternary", Mode.BYPASS),
    Field("format", 2, 2, "0 COUNT, 1 MARGIN, 2 SIGN (3 is rejected)", Format.COUNT),
    Field("gate_kind", 4, 1, "G-Ternary gate: 0 PATTERN, 1 MARGIN", GateKind.PATTERN),
    Field("layout", 5, 1, "0 element-major, 1 worker-major (hierarchy builds only)",
          Layout.ELEMENT_MAJOR),
    Field("operand", 6, 2, "0 SIGNS, 1 COUNTS4, 2 COUNTS8 (hierarchy builds only; "
          "3 is rejected)", Operand.SIGNS),
    Field("period", 8, 4, "PATTERN gate period P, 1..15", 3),
    Field("keep", 12, 4, "PATTERN gate keep K, 0..P", 2),
    Field("threshold", 16, 5, "MARGIN gate threshold T, 0..W (SIGNS) or 0..total (counts)", 0),
    Field("total", 21, 10, "contributions the partial counts sum over: 0 with SIGNS, "
          "1..N*(2^b-1) with a count operand", 0),
)
CFG_ENABLE = Field("enable", 31, 1, "1 = region enabled")

#: The CFG fields of the hierarchy extension (contract section 5).
HIERARCHY_CFG_FIELDS = ("layout", "operand", "total")

#: REGIONr_VIEW's field (contract section 6.1).
VIEW_FIELDS = (Field("packed", 0, 1, "1 = the region is a packed view of its source window"),)

#: SOURCE is aligned to 2^SOURCE_ALIGN_BITS bytes (4 KiB: no burst of a view
#: crosses a 4 KiB boundary, contract section 6.3).
SOURCE_ALIGN_BITS = 12

#: STATUS bits (contract 4.4), sticky, write 1 to clear.
STATUS_BITS = (
    Field("unsupported", 0, 1, "an unsupported M2S opcode was answered with NDR Cmp"),
    Field("rd_err", 1, 1, "an AXI read returned RRESP != OKAY (DRS sent with poison)"),
    Field("wr_err", 2, 1, "an AXI write returned BRESP != OKAY"),
    Field("poison_drop", 3, 1, "a poisoned MemWr/MemWrPtl was dropped"),
    Field("bad_csr", 4, 1, "a control-port write was rejected with SLVERR"),
)

#: Counter index -> name (contract 4.4).
COUNTERS = ("bypass_reads", "identity_reads", "gbinary_reads", "gternary_reads",
            "writes", "errors")


@dataclass(frozen=True)
class Register:
    """One 32-bit register.

    ``kind`` tells the RTL how the register behaves: ``const`` (read-only
    constant ``value``), ``cfg`` (configuration, checked on write),
    ``status`` (RW1C), ``counter_lo``/``counter_hi`` (64-bit counter
    ``index``; reading LO snapshots HI), ``base_lo``/``base_hi``/
    ``limit_lo``/``limit_hi`` (region address words).  ``index`` is the
    counter or region number.
    """
    name: str
    offset: int
    access: str
    kind: str
    doc: str
    fields: tuple = ()
    index: int = 0
    value: int = 0

    @property
    def reset(self):
        if self.kind == "const":
            return self.value
        return sum(f.reset << f.lsb for f in self.fields)

    @property
    def writable_mask(self):
        """Bits that hold state (everything else reads as 0)."""
        return sum(f.mask for f in self.fields)

    def field(self, name):
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"register {self.name} has no field {name!r}")


#: CAPS2's field holding the build's profile: its index in
#: :data:`~.facts.PROFILES` (0 full, 1 paper).
CAPS2_PROFILE = Field("profile", 24, 8, "profile: " + ", ".join(
    f"{k} {name}" for k, name in enumerate(PROFILES)))


def caps2_fields():
    """CAPS2's fields: bit k is the k-th feature of :data:`~.facts.FEATURES`
    (1 = the build has it), in their order, so that a feature added there
    takes the next bit; then the profile (:data:`CAPS2_PROFILE`)."""
    if len(FEATURES) > CAPS2_PROFILE.lsb:
        raise ValueError(f"CAPS2 holds {CAPS2_PROFILE.lsb} feature bits, not {len(FEATURES)}")
    return tuple(Field(name, k, 1, doc) for k, (name, doc) in enumerate(FEATURES.items())) + \
        (CAPS2_PROFILE,)


def caps2_value(profile):
    """CAPS2 of a build of ``profile`` (a name :func:`~.facts.profile_named`
    takes: a build of ``<profile>-no-<feature>`` reads as its profile, less
    the feature's bit, one of ``<profile>-with-<feature>`` with it)."""
    features = profile_named(profile).features
    return (sum(1 << k for k, name in enumerate(FEATURES) if name in features)
            | CAPS2_PROFILE.put(0, list(PROFILES).index(profile_base(profile))))


def caps2_decode(value):
    """The profile name and the feature set a CAPS2 value states (the inverse
    of :func:`caps2_value`); raises ValueError for a profile index no profile
    has."""
    index = CAPS2_PROFILE.get(value)
    if index >= len(PROFILES):
        raise ValueError(f"CAPS2 0x{value:08X} names profile {index}; "
                         f"known: {', '.join(f'{k} {n}' for k, n in enumerate(PROFILES))}")
    return (list(PROFILES)[index],
            frozenset(name for k, name in enumerate(FEATURES) if value >> k & 1))


def _addr_fields(half, what, low=0):
    if half == "lo":
        return (Field("addr", low, 32 - low, f"{what} address bits [31:{low}]"),)
    return (Field("addr", 0, CXL_ADDR_BITS - 32, f"{what} address bits [51:32]"),)


@dataclass
class RegisterMap:
    """The registers of one parameter set, in offset order.

    ``features`` are the build's (a :class:`~.facts.Profile`'s), by default
    those of ``params.profile``: with ``packed_view`` each region has its
    VIEW and SOURCE registers (contract section 6.1)."""
    params: TopParams
    features: frozenset = None
    registers: list = dc_field(default_factory=list)

    def __post_init__(self):
        p = self.params
        if self.features is None:
            self.features = profile_named(p.profile).features
        regs = [
            Register("ID", 0x000, "RO", "const", "identifies the block (ASCII NFAB)",
                     (Field("id", 0, 32, "0x4E464142"),), value=ID_VALUE),
            Register("VERSION", 0x004, "RO", "const", "register-map version",
                     (Field("minor", 0, 16, "minor version"), Field("major", 16, 16, "major version")),
                     value=(VERSION_MAJOR << 16) | VERSION_MINOR),
            Register("CAPS0", 0x008, "RO", "const", "build parameters",
                     (Field("line_bits", 0, 16, "LINE_BITS"), Field("workers", 16, 8, "WORKERS"),
                      Field("stages", 24, 4, "STAGES")),
                     value=p.line_bits | (p.workers << 16) | (p.stages << 24)),
            Register("CAPS1", 0x00C, "RO", "const", "build parameters",
                     (Field("regions", 0, 8, "REGIONS"), Field("max_outstanding", 8, 16, "MAX_OUTSTANDING")),
                     value=p.regions | (p.max_outstanding << 8)),
            Register("CAPS2", 0x018, "RO", "const",
                     "build features: one bit per optional feature, and the profile",
                     caps2_fields(), value=caps2_value(p.profile)),
            Register("DEFAULT_CFG", 0x010, "RW", "cfg",
                     "configuration of reads outside every enabled region (enable bit reads 0)",
                     CFG_FIELDS),
            Register("STATUS", 0x014, "RW1C", "status", "sticky event bits; write 1 to clear",
                     STATUS_BITS),
        ]
        for j, name in enumerate(COUNTERS):
            regs.append(Register(f"COUNTER{j}_LO", 0x080 + 8 * j, "RO", "counter_lo",
                                 f"counter {j} ({name}) bits [31:0]; reading it snapshots HI",
                                 (Field("count", 0, 32, "bits [31:0]"),), index=j))
            regs.append(Register(f"COUNTER{j}_HI", 0x084 + 8 * j, "RO", "counter_hi",
                                 f"counter {j} ({name}) bits [63:32] as of the last LO read",
                                 (Field("count", 0, 32, "bits [63:32]"),), index=j))
        for r in range(p.regions):
            base = 0x100 + 0x20 * r
            regs += [
                Register(f"REGION{r}_CFG", base, "RW", "cfg", f"region {r} configuration",
                         CFG_FIELDS + (CFG_ENABLE,), index=r),
                Register(f"REGION{r}_BASE_LO", base + 0x4, "RW", "base_lo",
                         f"region {r} first byte address, bits [31:0]", _addr_fields("lo", "base"), index=r),
                Register(f"REGION{r}_BASE_HI", base + 0x8, "RW", "base_hi",
                         f"region {r} first byte address, bits [51:32]", _addr_fields("hi", "base"), index=r),
                Register(f"REGION{r}_LIMIT_LO", base + 0xC, "RW", "limit_lo",
                         f"region {r} exclusive limit, bits [31:0]", _addr_fields("lo", "limit"), index=r),
                Register(f"REGION{r}_LIMIT_HI", base + 0x10, "RW", "limit_hi",
                         f"region {r} exclusive limit, bits [51:32]", _addr_fields("hi", "limit"), index=r),
            ]
            if "packed_view" in self.features:
                regs += [
                    Register(f"REGION{r}_VIEW", base + 0x14, "RW", "view",
                             f"region {r} read as a packed view (contract section 6)",
                             VIEW_FIELDS, index=r),
                    Register(f"REGION{r}_SOURCE_LO", base + 0x18, "RW", "source_lo",
                             f"region {r} view's source window, bits [31:{SOURCE_ALIGN_BITS}]",
                             _addr_fields("lo", "source", SOURCE_ALIGN_BITS), index=r),
                    Register(f"REGION{r}_SOURCE_HI", base + 0x1C, "RW", "source_hi",
                             f"region {r} view's source window, bits [51:32]",
                             _addr_fields("hi", "source"), index=r),
                ]
        self.registers = sorted(regs, key=lambda reg: reg.offset)
        self._by_name = {reg.name: reg for reg in self.registers}
        self._by_offset = {reg.offset: reg for reg in self.registers}

    def __contains__(self, name):
        return name in self._by_name

    def __getitem__(self, name):
        return self._by_name[name]

    def at(self, offset):
        """The register at byte ``offset``, or None if it is unmapped."""
        return self._by_offset.get(offset)

    def region(self, r, word):
        """Region ``r``'s register ``word`` (``CFG``, ``BASE_LO``, ...)."""
        check_range("region", r, range(self.params.regions))
        return self[f"REGION{r}_{word}"]


class CfgError(ValueError):
    """A configuration value the control port would reject."""


def cfg_encode(mode=Mode.BYPASS, format=Format.COUNT, gate_kind=GateKind.PATTERN,
               period=3, keep=2, threshold=0, enable=0, *, layout=Layout.ELEMENT_MAJOR,
               operand=Operand.SIGNS, total=0):
    """The CFG word for the given fields (no range checks; see :func:`cfg_check`).

    The fields of contract section 5 (``layout``, ``operand``, ``total``) are
    keyword-only, so the positional order of the others stays as it was."""
    given = dict(mode=mode, format=format, gate_kind=gate_kind, period=period, keep=keep,
                 threshold=threshold, enable=enable, layout=layout, operand=operand,
                 total=total)
    value = 0
    for f in CFG_FIELDS + (CFG_ENABLE,):
        v = given[f.name]
        if not 0 <= int(v) < (1 << f.width):
            raise CfgError(f"CFG field {f.name} must fit in {f.width} bits, not {v!r}")
        value = f.put(value, int(v))
    return value


def cfg_decode(value):
    """Dict of the CFG fields of ``value``."""
    return {f.name: f.get(value) for f in CFG_FIELDS + (CFG_ENABLE,)}


def count_total_max(operand):
    """The largest ``total`` a count operand allows: N * (2^b - 1) (contract
    section 5; 120 for COUNTS4, 1020 for COUNTS8)."""
    bits, contributors = count_geometry(operand)
    return contributors * ((1 << bits) - 1)


def cfg_check(value, workers, features=()):
    """Return None if the control port accepts CFG ``value``, else the reason.

    Contract 4.4: format 3, P = 0 and K > P are rejected.  Contract section 5:
    operand 3 is rejected; the SIGNS operand requires total = 0 and T <= W;
    a count operand requires 1 <= total <= N * (2^b - 1) and T <= total.
    ``features`` are the build's (a :class:`~.facts.Profile`'s ``features``):
    without ``"hierarchy"``, layout != 0 and operand != 0 are rejected.
    """
    f = cfg_decode(value)
    if f["format"] == 3:
        return "format 3 is invalid"
    if f["period"] == 0:
        return "period P must not be 0"
    if f["keep"] > f["period"]:
        return f"keep K = {f['keep']} exceeds period P = {f['period']}"
    if f["operand"] == 3:
        return "operand 3 is invalid"
    if "hierarchy" not in features and (f["layout"] or f["operand"]):
        return "layout and operand other than 0 need a build with the hierarchy feature"
    if f["operand"] == Operand.SIGNS:
        if f["total"]:
            return f"total = {f['total']} must be 0 with the SIGNS operand"
        if f["threshold"] > workers:
            return f"threshold T = {f['threshold']} exceeds W = {workers}"
        return None
    top = count_total_max(f["operand"])
    if not 1 <= f["total"] <= top:
        return f"total = {f['total']} must be in 1..{top} with operand {f['operand']}"
    if f["threshold"] > f["total"]:
        return f"threshold T = {f['threshold']} exceeds total = {f['total']}"
    return None


def view_check(cfg_value, view_value):
    """Return None if a region may hold CFG ``cfg_value`` with VIEW
    ``view_value`` together, else the reason (contract section 6.4: a view
    needs mode G-Binary or G-Ternary)."""
    if VIEW_FIELDS[0].get(view_value) and cfg_decode(cfg_value)["mode"] in (Mode.BYPASS,
                                                                           Mode.IDENTITY):
        return "a packed view needs mode G-Binary or G-Ternary (clear VIEW first)"
    return None


def _bits(f):
    return f"[{f.lsb}]" if f.width == 1 else f"[{f.lsb + f.width - 1}:{f.lsb}]"


def markdown(params=None):
    """The register table of ``params`` (default build) as Markdown."""
    rmap = RegisterMap(params or TopParams())
    p = rmap.params
    out = [
        "# Control registers of `neuron_fabric`",
        "",
        "Generated from `contract/regmap.py` by `python -m neuron_fabric.contract.regmap`; do not edit.",
        "",
        f"Parameter set: LINE_BITS={p.line_bits}, WORKERS={p.workers}, STAGES={p.stages}, "
        f"REGIONS={p.regions}, MAX_OUTSTANDING={p.max_outstanding}.",
        "AXI4-Lite, 32-bit data, 12-bit byte address; address bits [1:0] are ignored.",
        "Offsets not listed are unmapped: reads answer SLVERR with data 0, writes answer",
        "SLVERR, change nothing and set STATUS.BAD_CSR.",
        "",
        "| offset | name | access | reset | description |",
        "|---|---|---|---|---|",
    ]
    for reg in rmap.registers:
        out.append(f"| 0x{reg.offset:03X} | {reg.name} | {reg.access} | "
                   f"0x{reg.reset:08X} | {reg.doc} |")
    out += ["", "## Fields", ""]
    seen = set()
    for reg in rmap.registers:
        key = (reg.kind, tuple(reg.fields))
        if key in seen:
            continue
        seen.add(key)
        title = reg.name
        if reg.kind.startswith("counter"):
            title = title.replace(f"COUNTER{reg.index}", "COUNTERj") + " (j = 0..5)"
        elif reg.name.startswith("REGION"):
            title = title.replace(f"REGION{reg.index}", "REGIONr") + " (r = 0..REGIONS-1)"
        out += [f"### {title}", "", "| bits | field | reset | description |", "|---|---|---|---|"]
        for f in reg.fields:
            reset = f.reset if reg.kind != "const" else f.get(reg.value)
            doc = f.doc.replace("|", "\\|")           # (|a| >= T: no column break)
            out.append(f"| {_bits(f)} | {f.name} | {reset:#x} | {doc} |")
        out.append("")
    out += [
        "## Write rules",
        "",
        "- WSTRB is honoured per byte; a CFG write is checked on the value it would produce.",
        "- A CFG write is rejected whole (SLVERR, the register keeps its old value,",
        "  STATUS.BAD_CSR is set) when it has format 3, P = 0, K > P or operand 3; with",
        "  operand SIGNS, total != 0 or T > W; with a count operand (COUNTS4, COUNTS8: b = 4, 8",
        "  bits, N = 32 / b contributors), total outside 1..N*(2^b-1) (120, 1020) or",
        "  T > total; and, in a build without the hierarchy feature (contract section 5),",
        "  layout != 0 or operand != 0.",
        "- Writes to read-only or unmapped offsets: SLVERR, nothing changes, STATUS.BAD_CSR set.",
        "- Every CFG bit but DEFAULT_CFG's bit 31 is a field, checked on a write (the bits",
        "  version 2.0 reserved, [7:5] and [30:21], included).",
        "- Bits that are no field (DEFAULT_CFG's bit 31, STATUS bits [31:5], BASE_HI/LIMIT_HI",
        "  bits [31:20]) read as 0; what is written to them is ignored.",
        *([
            "- A write that would leave a region's VIEW.packed = 1 with its CFG mode BYPASS or",
            "  IDENTITY is refused whole like a bad CFG value (contract section 6.4).",
            "- SOURCE_LO bits [11:0] and SOURCE_HI bits [31:20] are no field (4 KiB-aligned).",
        ] if any(reg.kind == "view" for reg in rmap.registers) else []),
        "- Counters 0..3 count reads by their mode, whatever their layout and operand.",
        "- Counter 5 (errors) counts every event that sets a STATUS bit, set already or not",
        "  (a refused write while BAD_CSR is set counts); two events in one cycle count two.",
        "- A write applies to requests accepted after its BVALID, which rises within the bound",
        "  of contract section 4.3 (rising edges from the one at which the slave has taken",
        "  both the address and the data).",
        "",
    ]
    return "\n".join(out)


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.contract.regmap",
                        description="Write the Markdown register table.")
    ap.add_argument("out", nargs="+", help="output file(s)")
    args = ap.parse_args(argv)
    text = markdown()
    for out in args.out:
        path = pathlib.Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
