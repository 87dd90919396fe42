"""The residues of each region's BASE, kept beside the region table for the
request pipeline: ``(-BASE) mod q`` for each modulus q of
:data:`.phase.MODULI` and ``(-BASE) mod 8``, so that the pipeline forms the
residues of ``line - BASE`` by adding them to the address's own residues,
which it computes while the region is being matched (``request.py``).

BASE changes only through a control-register write, so one residue track
serves every region in turn: a one-hot pointer steps through the regions
every cycle, the BASE it points at is chosen (an AND-OR over the one-hot,
in two steps), its residues are formed by a residue track (``residue_tracks.py``), and
the region's residue register is loaded :data:`LATENCY` cycles after the
pointer chose it (the pointer itself, rotated back, says which).  So every
region's residues follow its BASE within :func:`refresh_cycles` cycles; the
request pipeline accepts no request for that long after a control write
(``request.py``: the ``quiet`` count after ``hold``), so no request ever
sees stale residues.
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import CXL_ADDR_BITS
from neuron_fabric.hdl.top.phase import MODULI, negate_small
from neuron_fabric.hdl.prims.pipe import register
from neuron_fabric.hdl.top.region import select_final, select_partial
from neuron_fabric.hdl.top.residue_tracks import plain_residues, track_length

__all__ = ["ResidueLayout", "RegionResidues", "refresh_cycles"]


def ResidueLayout():
    """``(-BASE) mod 8`` (``low``) and ``(-BASE) mod q`` for each modulus."""
    return data.StructLayout({"low": 3, **{f"r{q}": (q - 1).bit_length() for q in MODULI}})


def _latency(params):
    """Cycles from the pointer choosing a region to its residues' register
    being loaded: the two steps of the choice, the track, the negation."""
    return 2 + track_length(CXL_ADDR_BITS - params.offset_bits) + 1


def refresh_cycles(params):
    """Cycles after a BASE register changes (its new value visible) within
    which its region's residues hold the new value: a whole turn of the
    pointer and the latency."""
    return params.regions + _latency(params)


class RegionResidues(wiring.Component):
    """Each region's ``(-BASE) mod 8`` and ``(-BASE) mod q``.

    Parameters
    ----------
    params : TopParams

    Members
    -------
    bases : In(ArrayLayout(line address, REGIONS))
        Each region's BASE (line address).
    residues : Out(ArrayLayout(ResidueLayout(), REGIONS))
        Registers, each following its BASE within :func:`refresh_cycles`.
    """

    def __init__(self, params):
        self._params = params
        super().__init__({
            "bases": In(data.ArrayLayout(CXL_ADDR_BITS - params.offset_bits,
                                         max(params.regions, 1))),
            "residues": Out(data.ArrayLayout(ResidueLayout(), max(params.regions, 1))),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._params.regions
        if not n:
            return m
        pointer = Signal(n, init=1)
        m.d.sync += pointer.eq(Cat(pointer[-1], pointer[:-1]) if n > 1 else pointer)
        bases = [self.bases[r] for r in range(n)]
        partial = register(m, "derive_base_part",
                           select_partial([pointer[r] for r in range(n)], bases))
        base = register(m, "derive_base", select_final(partial))
        sums, low = plain_residues(m, "derive", base)
        layout = ResidueLayout()
        result = Signal(layout, name="derive_result", reset_less=True)
        m.d.sync += [result.low.eq(-low), *(result[f"r{q}"].eq(negate_small(sums[q], q))
                                           for q in MODULI)]
        # The region whose residues leave the track now: the pointer chose it
        # ``latency`` cycles ago, and the pointer turns by one each cycle.
        back = _latency(self._params) % n
        for r in range(n):
            with m.If(pointer[(r + back) % n]):
                m.d.sync += self.residues[r].eq(result)
        return m


def local_config(m, config, params):
    """The request pipeline's own copy of the region table and DEFAULT_CFG:
    registers loaded every cycle from the control registers (a cycle
    behind them), placed beside the compares and the choice."""
    return {"regions": [register(m, f"local_region{r}", config.regions[r])
                        for r in range(params.regions)],
            "default": register(m, "local_default", config.default)}
