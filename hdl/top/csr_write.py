"""The write channel of the control registers (``csr.py``).

A write, counted in cycles, cycle k beginning at rising edge k: edge 0 is
the one at which the slave has taken both its address and its data with no
response pending (the later of the AW and W handshakes, or the B handshake
of the write before if that comes later), so cycle 0 is the first in which
it holds both (they are captured with their handshakes: the address as
one-hots of its fields, ``gather.py``, the data masked by its strobes):

    1     each row's select and strobes; the old value of the address's CFG
          register (were it one) in partial ORs
    2     each register's select; the old value's second level
    3     the value the write would produce (``merged``); each register's
          byte enables
    4..6  the CFG check of that value: terms, rules, partial verdicts
          (``cfg.py``), and beside it the packed view's rule (contract
          section 6.4: each region's terms, partial ORs, their OR);
          whether it is refused two cycles later
    6..   wait until the request pipeline is idle (``config.hold`` is high
          from the moment both are held, ``config.idle`` answers)
    g+1   each row's apply (for its CFG register: and not refused)
    g+2   each register's write enable, a register (its bytes chosen by
          their strobes in their data)
    g+3   the registers hold the value, BVALID

where ``g`` is the first cycle from 6 on with ``idle``: BVALID rises at
edge g+3, at most :func:`control_write_bound` edges after edge 0 (contract
4.3; counted in cycles from the one in which the later handshake takes
place to the first with BVALID high, one more).
"""

from amaranth import Cat, Const, Signal
from amaranth.lib import data

from neuron_fabric.contract.facts import profile_named
from neuron_fabric.contract.regmap import DATA_BITS, STATUS_BITS
from neuron_fabric.hdl.top.bus import OKAY, SLVERR
from neuron_fabric.hdl.top.cfg import CHECK_STEPS, CfgWordLayout, check_steps
from neuron_fabric.hdl.datapath.pipeline import KEEP
from neuron_fabric.hdl.prims.gather import AddressDecode, and_all, or_all, tree
from neuron_fabric.hdl.prims.pipe import register

__all__ = ["WRITE_CHECK", "WRITE_COMMIT", "control_write_bound", "write_channel", "response"]

#: Cycle of a write (see the module docstring) in which its check ends.
WRITE_CHECK = 3 + CHECK_STEPS
#: Cycles from the first in which a write may commit to BVALID.
WRITE_COMMIT = 3
_BYTES = DATA_BITS // 8


def control_write_bound(idle_after):
    """Rising edges from edge 0 (the one at which the slave has taken both a
    write's address and its data with no response pending) to the one at
    which its BVALID rises, at most (contract 4.3), when the request
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
    dec = AddressDecode(m, bus.awaddr[2:], words.values(), "csr_w_a", steps.aw_open[0])
    # (the CFG fetch's one-hots captured once a byte, kept apart: with the
    # two copies of the capture enable, as they are and complemented)
    fetch = [AddressDecode(m, bus.awaddr[2:], [words[r.name] for r in cfgs], f"csr_w_f{b}_",
                           steps.aw_open[b >> 1], invert=not b & 1) for b in range(_BYTES)]
    strb, w_data = Signal(_BYTES, name="w_strb"), Signal(DATA_BITS, name="w_data")
    with m.If(steps.w_open):
        m.d.sync += [strb.eq(bus.wstrb), w_data.eq(bus.wdata & byte_mask(bus.wstrb))]

    keys = sorted({dec.row_key(w) for w in words.values()})
    row_of = {n: keys.index(dec.row_key(w)) for n, w in words.items()}
    # 1: rows; 2: registers; then each row's strobes (from its own copy of
    # them) and each register's byte enables
    rows = [Signal(name=f"csr_w_row{k}") for k in range(len(keys))]
    m.d.sync += [q.eq(and_all(dec.row(next(w for w in words.values() if dec.row_key(w) == k))))
                 for q, k in zip(rows, keys)]
    row_strb = [Signal(_BYTES, name=f"csr_w_strb{k}") for k in range(len(keys))]
    m.d.sync += [q.eq(c & row.replicate(_BYTES))
                 for q, c, row in zip(row_strb, _copies(m, strb, len(keys), "w_strb"), rows)]
    sel = {n: Signal(name=f"csr_w_sel_{n.lower()}") for n in words}
    m.d.sync += [sel[n].eq(rows[row_of[n]] & dec.column(w)) for n, w in words.items()]
    wen = {n: Signal(_BYTES, name=f"csr_w_wen_{n.lower()}") for n in words}
    m.d.sync += [wen[n].eq(row_strb[row_of[n]] & sel[n].replicate(_BYTES)) for n in words]

    # 1..2: the address's CFG register's old value (from copies of the CFG
    # registers a cycle late, which no write can see: the next starts at
    # least two cycles after one is written); 3: merged; 4..6: checked
    shadow = {r.name: Signal(DATA_BITS, name=f"csr_w_old_{r.name.lower()}") for r in cfgs}
    m.d.sync += [shadow[r.name].eq(store[r.name]) for r in cfgs]
    cfg_words = [words[c.name] for c in cfgs]
    old = Cat(or_all(tree(m, [(f.telling(words[r.name], cfg_words), shadow[r.name][8 * b:8 * b + 8])
                              for r in cfgs], f"csr_w_old{b}", levels=2))
              for b, f in enumerate(fetch))
    merged = Signal(CfgWordLayout, name="merged")
    m.d.sync += merged.eq((old & ~byte_mask(strb)) | w_data)
    bad = or_all(check_steps(m, merged, params.workers, profile_named(params.profile).features,
                             "csr_w"))
    view_bad = _view_refused(m, regs, sel, merged, w_data, store)
    refused = _refused(m, bad, [sel[r.name] for r in cfgs], sel.values(), view_bad)

    # g+1: each row's apply (and, from the check on, whether the row's CFG
    # register may be written: not refused); g+2: each register's enable;
    # g+3: registers, STATUS's clear, BVALID
    apply = _row_apply(m, steps, config.idle, rows)
    ok = [Signal(name=f"csr_w_ok{k}") for k in range(len(keys))]
    m.d.sync += [q.eq(row & ~bad & ~view_bad) for q, row in zip(ok, rows)]
    copies = _copies(m, w_data, len(keys), "w_data")
    clear = Signal(len(STATUS_BITS))
    for r in regs:
        k = row_of[r.name]
        en = Signal(name=f"csr_w_en_{r.name.lower()}")
        allowed = {"cfg": ok[k], "view": ~view_bad}.get(r.kind, 1)
        m.d.sync += en.eq(sel[r.name] & apply[k] & allowed)
        if r.kind == "status":
            m.d.sync += clear.eq(copies[k][:len(clear)] &
                                 (wen[r.name][0] & apply[k]).replicate(len(clear)))
        else:
            _store(m, store[r.name], copies[k], r.writable_mask, en, wen[r.name])
    with m.If(steps.finish):
        m.d.sync += [steps.bvalid.eq(1), steps.bresp.eq(response(refused))]
    bad_event = Signal()
    m.d.sync += bad_event.eq(steps.finish & refused)
    return bad_event, clear


def _copies(m, value, n, name):
    """``n`` registered copies of ``value`` (no enable) that synthesis keeps
    apart: two from ``value``, with and without a reset, then two from each
    copy in turn (so a binary tree, none more than WRITE_CHECK - 2 cycles
    late: the byte enables take the strobes' copies two cycles later, and
    all are read after the check)."""
    out = []
    for k in range(n):
        q = Signal(len(value), name=f"{name}_copy{k}", reset_less=bool(k & 1))
        m.d.sync += q.eq(value if k < 2 else out[(k - 2) // 2])
        out.append(q)
    assert (n + 1).bit_length() - 1 <= WRITE_CHECK - 2
    return out


def _row_apply(m, steps, idle, rows):
    """Each row's apply (a register, high the cycle after the check meets
    ``idle`` for a write to the row): from the row's own copy of the last
    step and of the check, so that no LUT is shared among the rows'."""
    out = []
    for k, row in enumerate(rows):
        last, check, apply = (Signal(name=f"csr_w_{n}{k}") for n in ("last", "check", "apply"))
        m.d.sync += [last.eq(steps.before_last & row), check.eq(last | (check & ~idle)),
                     apply.eq(check & idle)]
        out.append(apply)
    return out


class _Steps:
    """The handshake's and the steps' registers (see :func:`_handshake`)."""


def _handshake(m, bus, config):
    """AW, W and B, and the write's steps: step k high in cycle k, the
    check from WRITE_CHECK until the request pipeline is idle, then commit
    and done.  Busy is high while any is (their next values' OR, less the
    request pipeline's idle, so that no state of them holds it high longer
    than they are); a write is done only if it was held as it committed
    (held falls only as one is done) and with no response pending, so that
    the AXI rules hold from whatever state the steps start."""
    s = _Steps()
    # (aw_full equals the address's uncomplemented capture enable below:
    # both kept, so that synthesis keeps them apart)
    aw_full, w_full = Signal(name="csr_w_aw_full", attrs=KEEP), Signal(name="csr_w_w_full")
    bvalid, busy = Signal(name="csr_w_bvalid"), Signal(name="csr_w_busy")
    s.w_open = Signal(init=1, name="csr_w_w_open")
    s.bvalid, s.bresp = bvalid, Signal(2)
    m.d.comb += [bus.awready.eq(~aw_full), bus.wready.eq(~w_full), bus.bvalid.eq(bvalid),
                 bus.bresp.eq(s.bresp)]
    held = aw_full & w_full
    # (hold, for the request pipeline: a register of its own equal to held,
    # so that the handshake's registers are not drawn towards that block)
    hold = Signal(name="csr_w_hold", attrs=KEEP)
    m.d.comb += config.hold.eq(hold)
    steps = [Signal(name=f"csr_w_step{k}") for k in range(1, WRITE_CHECK)]
    s.check, s.commit, done = (Signal(name=f"csr_w_{n}") for n in ("check", "commit", "done"))
    start = held & ~bvalid & ~busy
    # (middle: the OR of the steps but the first and the last)
    middle = Signal(name="csr_w_middle")
    s.before_last = steps[-2]
    m.d.sync += [steps[0].eq(start), *(b.eq(a) for a, b in zip(steps, steps[1:])),
                 s.check.eq((steps[-1] | (s.check & ~config.idle)) & held & ~bvalid),
                 s.commit.eq(s.check & config.idle), done.eq(s.commit & held),
                 middle.eq(Cat(*steps[:-2]).any()),
                 busy.eq(start | steps[0] | middle |
                         ((s.commit | ((steps[-1] | s.check) & ~bvalid)) & held))]
    s.finish = done & ~bvalid
    aw_next = (aw_full | bus.awvalid) & ~s.finish
    w_next = (w_full | bus.wvalid) & ~s.finish
    # the capture enables: the address's in two copies (kept apart: one
    # complemented), the data's; the uncomplemented copy equals aw_full and
    # is kept apart from it too (both marked), so that the handshake's own
    # logic does not wait on the enables' wide net
    opens = [Signal(init=1, name="csr_w_aw_open"), Signal(name="csr_w_aw_open_n", attrs=KEEP)]
    s.aw_open = [opens[0], ~opens[1]]
    m.d.sync += [aw_full.eq(aw_next), w_full.eq(w_next), hold.eq(aw_next & w_next),
                 s.w_open.eq(~w_next),
                 opens[0].eq(~aw_next), opens[1].eq(aw_next)]
    with m.If(bvalid & bus.bready):
        m.d.sync += bvalid.eq(0)
    return s


def _refused(m, bad, cfg_sels, sels, view_bad):
    """Whether the write is refused (a CFG value the check refuses, a write
    :func:`_view_refused` refuses, or no writable register), a register two
    cycles after the check's verdict (``bad``: the OR of its partial
    verdicts)."""
    cfg_q, writable_q, cfg_bad, refused = (Signal(name=f"csr_w_{n}") for n in
                                           ("is_cfg", "writable", "cfg_bad", "refused"))
    is_cfg = tree(m, [(s, Const(1, 1)) for s in cfg_sels], "csr_w_is_cfg")
    any_sel = tree(m, [(s, Const(1, 1)) for s in sels], "csr_w_any")
    m.d.sync += [cfg_q.eq(or_all(is_cfg)), writable_q.eq(or_all(any_sel)),
                 cfg_bad.eq((cfg_q & bad) | view_bad), refused.eq(cfg_bad | ~writable_q)]
    return refused


def _view_refused(m, regs, sel, merged, w_data, store):
    """Whether the write would leave a region a packed view whose mode is
    BYPASS or IDENTITY (contract section 6.4: a CFG write of mode 0 or 1 to
    a view, or a VIEW write setting ``packed`` while CFG's mode is 0 or 1),
    a register from cycle 6 on (with the CFG check's verdict): each
    region's two terms at 4 (mode < 2 is ``~mode[1]``), partial ORs at 5,
    their OR at 6.  Constant 0 on a build without the view."""
    views = [r for r in regs if r.kind == "view"]
    if not views:
        return Const(0, 1)
    terms = []
    for r in views:
        cfg = next(c for c in regs if c.kind == "cfg" and c.name == f"REGION{r.index}_CFG")
        stored = data.View(CfgWordLayout, store[cfg.name])
        terms += [sel[cfg.name] & store[r.name][0] & ~merged.mode[1],
                  sel[r.name] & w_data[0] & ~stored.mode[1]]
    terms = register(m, "csr_w_view_term", terms)
    partial = register(m, "csr_w_view_part", [or_all(terms[i:i + 4])
                                              for i in range(0, len(terms), 4)])
    return register(m, "csr_w_view_bad", or_all(partial))


def _store(m, reg, value, mask, en, bytes_en):
    """Write the bits ``mask`` holds of the bytes of ``value`` that
    ``bytes_en`` selects into ``reg`` when ``en``: a clock enable of the
    whole register (a register), each byte's choice in its data (written as
    gates, which synthesis does not turn into an enable)."""
    keep = byte_mask(bytes_en)
    bits = [i for i in range(len(reg)) if mask >> i & 1]
    with m.If(en):
        m.d.sync += [reg[i].eq((value[i] & keep[i]) | (reg[i] & ~keep[i])) for i in bits]
