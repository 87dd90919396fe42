"""Region match of the request pipeline (contract 4.3): the lowest-numbered
enabled region with BASE <= line address < LIMIT gives the request its
CFG and BASE, DEFAULT_CFG and BASE 0 when none does.  The pipeline
(``request.py``) puts a register after each step: the compares
(:func:`compare_halves`), each region's :func:`match`, the first match,
and the choice (:func:`select`).

(A registered copy of the configuration beside the pipeline, a cycle late,
which no request could see since a register write commits under ``hold``
and ``idle``, was tried for the compares: the whole top routed at 150.6
against 152.4 MHz without it, with a thousand more flip-flops.)"""

from amaranth import Cat, Const, Signal

from neuron_fabric.host.facts import CXL_ADDR_BITS
from .cfg import CfgLayout

__all__ = ["compare_halves", "match", "select"]


def compare_halves(config, addr, params):
    """Per region of ``config``: its enable, and ``addr < BASE`` and
    ``addr < LIMIT`` as (high less, high equal, low less) triples, so each
    compare is half as long."""
    half = len(addr) // 2
    out = []
    for region in (config.regions if params.regions else []):
        bits = [region.enable]
        for bound in (region.base, region.limit):
            bits += [addr[half:] < bound[half:], addr[half:] == bound[half:],
                     addr[:half] < bound[:half]]
        out.append(Cat(*bits))
    return out


def match(cmp):
    """A region matches (from :func:`compare_halves`'s bits): enabled, not
    below BASE, below LIMIT."""
    enable, b_hlt, b_heq, b_llt, l_hlt, l_heq, l_llt = (cmp[i] for i in range(7))
    below_base = b_hlt | (b_heq & b_llt)
    below_limit = l_hlt | (l_heq & l_llt)
    return enable & ~below_base & below_limit


def select(m, config, first, none, params):
    """CFG and BASE of the region of ``config`` selected by ``first``
    (one-hot), or DEFAULT_CFG and 0 when ``none``."""
    cfg = Signal(CfgLayout)
    base = Signal(CXL_ADDR_BITS - params.offset_bits)
    cfg_or = config.default.as_value() & none.replicate(CfgLayout.size)
    base_or = Const(0, len(base))
    for r, hit in enumerate(first):
        region = config.regions[r]
        cfg_or = cfg_or | (region.cfg.as_value() & hit.replicate(CfgLayout.size))
        base_or = base_or | (region.base & hit.replicate(len(base)))
    m.d.comb += [cfg.eq(cfg_or), base.eq(base_or)]
    return cfg, base
