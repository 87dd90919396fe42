"""The write channel of the control registers (``csr.py``).

A write, counted from the first cycle in which the slave holds its address
and data with no response pending (cycle 0; both are captured with their
handshakes: the address as one-hots of its fields, ``gather.py``, the data
masked by its strobes):

    1     each row's select and strobes; the old value of the address's CFG
          register (were it one) in partial ORs
    2     each register's select; the old value's second level
    3     the value the write would produce (``merged``); each register's
          byte enables
    4..6  the CFG check of that value: terms, rules, verdict (``cfg.py``)
    6..   wait until the request pipeline is idle (``config.hold`` is high
          from the moment both are held, ``config.idle`` answers)
    g+1   each row's apply (for its CFG register: and not refused)
    g+2   each register byte's write enable, a register driving its eight
          flip-flops
    g+3   the registers hold the value, BVALID

where ``g`` is the first cycle from 6 on with ``idle``: BVALID rises at
most :func:`control_write_bound` cycles after cycle 0.
"""

from amaranth import Cat, Const, Signal

from neuron_fabric.host.facts import PROFILES
from neuron_fabric.host.regmap import DATA_BITS, STATUS_BITS
from .bus import OKAY, SLVERR
from .cfg import CHECK_STEPS, CfgWordLayout, check_steps
from .gather import AddressDecode, and_all, or_all, tree

__all__ = ["WRITE_CHECK", "WRITE_COMMIT", "control_write_bound", "write_channel", "response"]

#: Cycle of a write (see the module docstring) in which its check ends.
WRITE_CHECK = 3 + CHECK_STEPS
#: Cycles from the first in which a write may commit to BVALID.
WRITE_COMMIT = 3
_BYTES = DATA_BITS // 8
#: Copies of the write data, each feeding a few rows' registers.
_COPIES = 4


def control_write_bound(idle_after):
    """Cycles from the first in which the slave holds a write's address and
    data with no response pending to its BVALID at most, when the request
    pipeline is idle in every cycle in which hold has been high for that
    cycle and the ``idle_after`` before it."""
    return max(WRITE_CHECK, idle_after) + WRITE_COMMIT


def response(error):
    """BRESP/RRESP: SLVERR when ``error``, else OKAY."""
    assert OKAY == 0b00 and SLVERR == 0b10
    return Cat(Const(0, 1), error)


def byte_mask(strb):
    """Each strobe bit repeated over its byte."""
    return Cat(strb[i].replicate(8) for i in range(len(strb)))


def write_channel(m, bus, config, regs, store, params):
    """The write channel: ``regs`` the writable registers (a CFG, STATUS or
    region address word each), ``store`` the words of all but STATUS.
    Returns the refused-write event and STATUS's clear, both registers."""
    steps = _handshake(m, bus, config)
    words = {r.name: r.offset >> 2 for r in regs}
    cfgs = [r for r in regs if r.kind == "cfg"]
    dec = AddressDecode(m, bus.awaddr[2:], words.values(), "csr_w_a", steps.aw_open)
    fetch = AddressDecode(m, bus.awaddr[2:], [words[r.name] for r in cfgs], "csr_w_f",
                          steps.aw_open, invert=True)
    strb, w_data = Signal(_BYTES, name="w_strb"), Signal(DATA_BITS, name="w_data")
    with m.If(steps.w_open):
        m.d.sync += [strb.eq(bus.wstrb), w_data.eq(bus.wdata & byte_mask(bus.wstrb))]
    copies = _copies(m, w_data)

    keys = sorted({dec.row_key(w) for w in words.values()})
    row_of = {n: keys.index(dec.row_key(w)) for n, w in words.items()}
    # 1: rows; 2: their strobes, registers; 3: registers' byte enables
    rows = [Signal(name=f"csr_w_row{k}") for k in range(len(keys))]
    m.d.sync += [q.eq(and_all(dec.row(next(w for w in words.values() if dec.row_key(w) == k))))
                 for q, k in zip(rows, keys)]
    row_strb = [Signal(_BYTES, name=f"csr_w_strb{k}") for k in range(len(keys))]
    m.d.sync += [q.eq(strb & row.replicate(_BYTES)) for q, row in zip(row_strb, rows)]
    sel = {n: Signal(name=f"csr_w_sel_{n.lower()}") for n in words}
    m.d.sync += [sel[n].eq(rows[row_of[n]] & dec.column(w)) for n, w in words.items()]
    wen = {n: Signal(_BYTES, name=f"csr_w_wen_{n.lower()}") for n in words}
    m.d.sync += [wen[n].eq(row_strb[row_of[n]] & sel[n].replicate(_BYTES)) for n in words]

    # 1..2: the address's CFG register's old value (from copies of the CFG
    # registers a cycle late, which no write can see: the next starts at
    # least two cycles after one is written); 3: merged; 4..6: checked
    shadow = {r.name: Signal(DATA_BITS, name=f"csr_w_old_{r.name.lower()}") for r in cfgs}
    m.d.sync += [shadow[r.name].eq(store[r.name]) for r in cfgs]
    old = tree(m, [(fetch.telling(words[r.name], [words[c.name] for c in cfgs]),
                    shadow[r.name]) for r in cfgs], "csr_w_old", levels=2)
    merged = Signal(CfgWordLayout, name="merged")
    m.d.sync += merged.eq((or_all(old) & ~byte_mask(strb)) | copies[0])
    bad = check_steps(m, merged, params.workers, PROFILES[params.profile].features, "csr_w")
    refused = _refused(m, bad, [sel[r.name] for r in cfgs], sel.values())

    # g+1: each row's apply, for its CFG register only when not refused;
    # g+2: the byte enables; g+3: registers, STATUS's clear, BVALID
    go = steps.check & config.idle
    apply = [[Signal(name=f"csr_w_apply{k}{'_cfg' if c else ''}") for c in (0, 1)]
             for k in range(len(keys))]
    m.d.sync += [a.eq(go & row & (~bad if c else 1))
                 for row, pair in zip(rows, apply) for c, a in enumerate(pair)]
    clear = Signal(len(STATUS_BITS))
    for r in regs:
        en = Signal(_BYTES, name=f"csr_w_en_{r.name.lower()}")
        m.d.sync += en.eq(wen[r.name] & apply[row_of[r.name]][r.kind == "cfg"].replicate(_BYTES))
        data_in = copies[row_of[r.name] * _COPIES // len(keys)]
        if r.kind == "status":
            m.d.sync += clear.eq(data_in[:len(clear)] & en[0].replicate(len(clear)))
        else:
            _store_bytes(m, store[r.name], data_in & r.writable_mask, en)
    with m.If(steps.finish):
        m.d.sync += [steps.bvalid.eq(1), steps.bresp.eq(response(refused))]
    bad_event = Signal()
    m.d.sync += bad_event.eq(steps.commit & refused)
    return bad_event, clear


def _copies(m, value):
    """:data:`_COPIES` registered copies of ``value`` (a cycle late, no
    enable) that synthesis keeps apart: with and without a reset, each
    from ``value`` or from the copy before it (two cycles late)."""
    out = []
    for k in range(_COPIES):
        q = Signal(len(value), name=f"w_data_copy{k}", reset_less=bool(k & 1))
        m.d.sync += q.eq(value if k < 2 else out[k - 2])
        out.append(q)
    return out


class _Steps:
    """The handshake's and the steps' registers (see :func:`_handshake`)."""


def _handshake(m, bus, config):
    """AW, W and B, and the write's steps: step k high in cycle k, the
    check from WRITE_CHECK until the request pipeline is idle, then commit
    and done.  Busy is high while any is (their next values' OR, less the
    request pipeline's idle, so that no state of them holds it high longer
    than they are); a write is done only while held and with no response
    pending, so that the AXI rules hold from whatever state the steps start."""
    s = _Steps()
    aw_full, w_full = Signal(name="csr_w_aw_full"), Signal(name="csr_w_w_full")
    bvalid, busy = Signal(name="csr_w_bvalid"), Signal(name="csr_w_busy")
    s.aw_open, s.w_open = Signal(init=1, name="csr_w_aw_open"), Signal(init=1, name="csr_w_w_open")
    s.bvalid, s.bresp = bvalid, Signal(2)
    m.d.comb += [bus.awready.eq(~aw_full), bus.wready.eq(~w_full), bus.bvalid.eq(bvalid),
                 bus.bresp.eq(s.bresp)]
    held = aw_full & w_full
    m.d.comb += config.hold.eq(held)
    steps = [Signal(name=f"csr_w_step{k}") for k in range(1, WRITE_CHECK)]
    s.check, s.commit, done = (Signal(name=f"csr_w_{n}") for n in ("check", "commit", "done"))
    start = held & ~bvalid & ~busy
    # (middle: the OR of the steps but the first and the last)
    middle = Signal(name="csr_w_middle")
    m.d.sync += [steps[0].eq(start), *(b.eq(a) for a, b in zip(steps, steps[1:])),
                 s.check.eq((steps[-1] | (s.check & ~config.idle)) & held & ~bvalid),
                 s.commit.eq(s.check & config.idle), done.eq(s.commit),
                 middle.eq(Cat(*steps[:-2]).any()),
                 busy.eq(start | steps[0] | middle | s.commit |
                         ((steps[-1] | s.check) & held & ~bvalid))]
    s.finish = done & held & ~bvalid
    for full, open_, valid in ((aw_full, s.aw_open, bus.awvalid), (w_full, s.w_open, bus.wvalid)):
        nxt = (full | valid) & ~s.finish
        m.d.sync += [full.eq(nxt), open_.eq(~nxt)]
    with m.If(bvalid & bus.bready):
        m.d.sync += bvalid.eq(0)
    return s


def _refused(m, bad, cfg_sels, sels):
    """Whether the write is refused (a CFG value the check refuses, or no
    writable register), a register a cycle after the check's verdict."""
    cfg_q, writable_q, refused = Signal(), Signal(), Signal()
    is_cfg = tree(m, [(s, Const(1, 1)) for s in cfg_sels], "csr_w_is_cfg")
    any_sel = tree(m, [(s, Const(1, 1)) for s in sels], "csr_w_any")
    m.d.sync += [cfg_q.eq(or_all(is_cfg)), writable_q.eq(or_all(any_sel)),
                 refused.eq((cfg_q & bad) | ~writable_q)]
    return refused


def _store_bytes(m, reg, value, en):
    for b in range(_BYTES):
        with m.If(en[b]):
            m.d.sync += reg[8 * b:8 * b + 8].eq(value[8 * b:8 * b + 8])
