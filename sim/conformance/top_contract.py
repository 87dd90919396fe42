"""Contract section 4 for the top's conformance benches, written from the
contract text: the register map (4.4), the opcodes (4.2) and the CFG word
with its validity rule (4.4, 5.1).

Deliberate clean-room copies: independent of contract/regmap.py and
contract/facts.py, so that a mistake there cannot hide here.  Do not share.
"""

#: The 52-bit CXL byte address.
AMASK = (1 << 52) - 1

# contract 4.4 register map (deliberate clean-room copy: written from the contract,
# independent of contract/regmap.py; do not share)
ID, VERSION, CAPS0, CAPS1, DEFAULT_CFG, STATUS = 0x000, 0x004, 0x008, 0x00C, 0x010, 0x014
# CAPS2 (v2.2): bit 4 the hierarchy feature, [31:24] the profile (0 full, 1 paper)
CAPS2, CAPS2_HIERARCHY, CAPS2_PROFILE_SHIFT = 0x018, 1 << 4, 24
# section 6.1: bit 5 the packed view; without it a region's 0x14, 0x18, 0x1C are unmapped
CAPS2_PACKED_VIEW, VIEW_OFFSETS = 1 << 5, (0x14, 0x18, 0x1C)
PROFILE_FULL, PROFILE_PAPER = 0, 1
def CNT_LO(j): return 0x080 + 8 * j
def CNT_HI(j): return 0x084 + 8 * j
def R_CFG(r): return 0x100 + 0x20 * r
def R_BASE_LO(r): return 0x104 + 0x20 * r
def R_BASE_HI(r): return 0x108 + 0x20 * r
def R_LIMIT_LO(r): return 0x10C + 0x20 * r
def R_LIMIT_HI(r): return 0x110 + 0x20 * r

ST_UNSUPPORTED, ST_RD_ERR, ST_WR_ERR, ST_POISON_DROP, ST_BAD_CSR = 1, 2, 4, 8, 16
CNT_BYPASS, CNT_IDENTITY, CNT_GBINARY, CNT_GTERNARY, CNT_WRITES, CNT_ERRORS = range(6)

# contract 4.2 opcodes (deliberate clean-room copy, independent of contract/facts.py)
REQ_MEMINV, REQ_MEMRD, REQ_MEMRDDATA, REQ_MEMSPECRD, REQ_MEMINVNT = 0b0000, 0b0001, 0b0010, 0b1000, 0b1001
RWD_MEMWR, RWD_MEMWRPTL = 0b0001, 0b0010
DRS_MEMDATA, NDR_CMP = 0b000, 0b000

# contract 4.4 CFG word and its validity rule (deliberate clean-room copy,
# independent of contract/regmap.py's cfg_encode / cfg_check)
CFG_DEFAULT_RESET = (3 << 8) | (2 << 12)  # BYPASS, COUNT, PATTERN, P=3, K=2, T=0


def cfg(mode=0, fmt=0, kind=0, period=3, keep=2, thresh=0, enable=0, layout=0, operand=0,
        total=0):
    return (mode | fmt << 2 | kind << 4 | layout << 5 | operand << 6 | period << 8
            | keep << 12 | thresh << 16 | total << 21 | enable << 31)


def cfg_fields(v):
    return dict(mode=v & 3, fmt=(v >> 2) & 3, kind=(v >> 4) & 1, layout=(v >> 5) & 1,
                operand=(v >> 6) & 3, period=(v >> 8) & 15, keep=(v >> 12) & 15,
                thresh=(v >> 16) & 31, total=(v >> 21) & 1023)


def cfg_valid(v, workers, hierarchy):
    """Whether contract 4.4 and 5.1 accept CFG word ``v`` for W = ``workers``,
    with or without the hierarchy extension."""
    f = cfg_fields(v)
    if f["fmt"] == 3 or f["period"] == 0 or f["keep"] > f["period"] or f["operand"] == 3:
        return False
    if not hierarchy and (f["layout"] or f["operand"]):
        return False
    if f["operand"] == 0:                   # SIGNS
        return f["total"] == 0 and f["thresh"] <= workers
    limit = {1: 8 * 15, 2: 4 * 255}[f["operand"]]   # N * (2^b - 1)
    return 1 <= f["total"] <= limit and f["thresh"] <= f["total"]


# mode, format, kind, layout, operand, P, K, T, total (contract v2.1: every
# CFG bit but 31 is a field)
CFG_RW_MASK = 0x7FFFFFFF
