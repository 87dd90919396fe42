"""How a job's ranks (workers) share controllers: one source for the DDP
hook (:mod:`neuron_fabric.host.ddp.hook`), its tests and the models that
charge its bytes and reads (:mod:`.links`, :mod:`.commtime`).

:func:`plan_controllers` gives a job's :class:`ControllerSplit` (the
controllers' sizes, their W, the worker slots a rank votes in, the level-2
count operand); :func:`controller_slots` is one controller's W and copies;
:func:`level2_operand` the count operand that combines several;
:func:`largest_world` the largest world size served, derived from the
contract's limits; :func:`check_line_bits` refuses a W whose segment is not
whole bytes.  The contract's facts only (the models' layer: the host
imports it, never the other way).
"""

from dataclasses import dataclass

from neuron_fabric.contract.facts import WORKERS_CHOICES, Operand, count_geometry
from neuron_fabric.contract.regmap import count_total_max

__all__ = ["MAX_RANKS_PER_CONTROLLER", "MAX_CONTROLLERS", "ControllerSplit", "controller_slots",
           "controller_workers", "level2_operand", "balanced", "plan_controllers", "largest_world",
           "check_line_bits"]

#: Largest ranks per controller (W = 16, contract section 1).
MAX_RANKS_PER_CONTROLLER = 16


def controller_slots(ranks):
    """``(W, copies)`` of one controller that serves the whole job of ``ranks``
    ranks: each rank writes its signs into ``copies`` worker slots (1 for an
    even number of ranks, 2 for an odd one), and W is the smallest of 4, 8,
    16 that holds the ``copies * ranks`` slots; the ``W - copies * ranks``
    spare slots (an even number) cancel in pairs.  With two copies every
    vote counts twice (``c' = 2c + pairs``, ``a' = 2a``): the majority is the
    ranks' own, so 1, 3, 5 and 7 ranks are served (an odd count of 9 to 15
    is not: 2R > 16; :func:`plan_controllers` splits such a job)."""
    if not 1 <= ranks <= MAX_RANKS_PER_CONTROLLER:
        raise ValueError(f"{ranks} ranks on one controller: it takes 1 to "
                         f"{MAX_RANKS_PER_CONTROLLER}")
    copies = _copies(ranks)
    for w in WORKERS_CHOICES:
        if w >= copies * ranks:
            return w, copies
    raise ValueError(f"{ranks} ranks a controller: an odd count needs 2 x {ranks} worker "
                     f"slots, more than W={WORKERS_CHOICES[-1]}; use ranks_per_controller "
                     f"of at most 8 or an even number")


def controller_workers(ranks):
    """W of a controller for ``ranks`` ranks (:func:`controller_slots`)."""
    return controller_slots(ranks)[0]


def _copies(world):
    """Worker slots each rank votes in: 2 when the job's world size is odd, so
    that every total of votes is even and a gated COUNT lane (``c' =
    floor(total / 2)``, contract sections 2 and 5.3) decodes to 0."""
    return 1 if world % 2 == 0 else 2


def level2_operand(controllers, most, total):
    """The count operand of a level-2 region that combines ``controllers``
    level-1 counts of at most ``most`` each, ``total`` votes in all: the
    narrowest of COUNTS4 and COUNTS8 whose line holds that many
    contributors, whose ``b``-bit field holds ``most`` and whose ``total``
    field allows ``total`` (contract sections 5.1 and 5.3); None when
    neither does."""
    for operand in (Operand.COUNTS4, Operand.COUNTS8):
        bits, contributors = count_geometry(operand)
        if controllers <= contributors and most < 1 << bits \
                and total <= count_total_max(operand):
            return operand
    return None


@dataclass(frozen=True)
class ControllerSplit:
    """How a job's ranks share controllers (:func:`plan_controllers`).

    ``sizes``: the ranks of each controller, in rank order (controller ``c``
    holds ranks ``sum(sizes[:c]) ..``); ``workers``: W of every controller;
    ``copies``: the worker slots each rank writes (2 when the world size is
    odd); ``operand``: the level-2 count operand (None with one controller).
    With one controller the ``W - copies * world`` spare slots hold
    cancelling pairs (:attr:`pad_pairs`); with several, the spare slots hold
    0 (no positive vote), each level-1 COUNT read is ``copies * c_k``
    exactly, and the level-2 region counts ``total = copies * world`` votes.
    """
    sizes: tuple
    workers: int
    copies: int
    operand: Operand = None

    @property
    def controllers(self):
        return len(self.sizes)

    @property
    def world(self):
        return sum(self.sizes)

    @property
    def total(self):
        """The worker slots that vote over the job: ``copies * world``."""
        return self.copies * self.world

    @property
    def pad_pairs(self):
        """Cancelling pairs in the spare slots (one controller only)."""
        return (self.workers - self.total) // 2 if self.controllers == 1 else 0

    @property
    def equal(self):
        return len(set(self.sizes)) == 1

    def first(self, controller):
        """The controller's first rank."""
        return sum(self.sizes[:controller])

    def locate(self, rank):
        """``(controller, local index)`` of ``rank``."""
        for c, size in enumerate(self.sizes):
            if rank < size:
                return c, rank
            rank -= size
        raise ValueError(f"rank outside the job of {self.world}")

    def fill(self):
        """The constant byte of each spare worker slot (level 1): the
        cancelling pairs of one controller, one all-positive and one
        all-non-positive worker; none with several (zeros)."""
        used, fill = self.copies * self.sizes[0], {}
        for i in range(self.pad_pairs):
            fill[used + 2 * i], fill[used + 2 * i + 1] = 0xFF, 0x00
        return fill


def _widths(line_bits):
    """The W a controller of ``line_bits`` can have: a rank's segment of a sign
    line whole bytes (:func:`check_line_bits`)."""
    return [w for w in WORKERS_CHOICES if line_bits // w >= 8]


def _fit(sizes, line_bits):
    """The :class:`ControllerSplit` of controllers of ``sizes`` ranks with the
    smallest W, or None when no W and level-2 operand serve them."""
    copies = _copies(sum(sizes))
    most = copies * max(sizes)
    workers = next((w for w in _widths(line_bits) if w >= most), None)
    if workers is None:
        return None
    if len(sizes) == 1:
        return ControllerSplit(tuple(sizes), workers, copies)
    operand = level2_operand(len(sizes), most, copies * sum(sizes))
    return None if operand is None else ControllerSplit(tuple(sizes), workers, copies, operand)


def balanced(world, controllers):
    """``world`` ranks in ``controllers`` controllers whose sizes differ by at
    most one, the larger first."""
    size, extra = divmod(world, controllers)
    return [size + 1] * extra + [size] * (controllers - extra)


#: The most controllers a level-2 count line combines (COUNTS4's N).
MAX_CONTROLLERS = max(count_geometry(op)[1] for op in (Operand.COUNTS4, Operand.COUNTS8))


def largest_world(line_bits=512):
    """``(largest, largest odd)`` world size :func:`plan_controllers` serves
    by default at ``line_bits``, derived from the contract's limits: every
    even world size up to the first and every odd one up to the second is
    served (120 and 55 from 128 bits up, 64 and 31 at 64 bits)."""
    bound = MAX_CONTROLLERS * max(_widths(line_bits))
    served = [n for n in range(1, bound + 1) if _default_split(n, line_bits) is not None]
    return max(served), max(n for n in served if n % 2)


def _default_split(world, line_bits):
    for controllers in range(1, min(world, MAX_CONTROLLERS) + 1):
        split = _fit(balanced(world, controllers), line_bits)
        if split is not None:
            return split
    return None


def plan_controllers(world, line_bits=512, ranks_per_controller=None):
    """The :class:`ControllerSplit` of a job of ``world`` ranks.

    ``ranks_per_controller`` None: the fewest controllers that serve the
    job, their sizes as equal as can be (differing by at most one rank),
    with the smallest W: one controller up to 16 ranks (an odd number up
    to 7), so 11 ranks are 6 + 5, 17 are 6 + 6 + 5, 32 are 16 + 16.  An
    int R: equal controllers of R ranks (the world size a multiple of R).
    A tuple: the sizes of the controllers, in rank order.  A job no split
    serves (past :func:`largest_world`) raises ``ValueError``.
    """
    if world < 1:
        raise ValueError(f"a job has at least one rank, not {world}")
    r = ranks_per_controller
    if r is None:
        split = _default_split(world, line_bits)
        if split is None:
            most, odd = largest_world(line_bits)
            raise ValueError(
                f"the two-level pool cannot serve a world size of {world} ranks at "
                f"FabricConfig.line_bits={line_bits}: it serves every even world size up to "
                f"{most} and every odd one up to {odd} (at most {MAX_CONTROLLERS} controllers "
                f"a level-2 count line combines, W <= {max(_widths(line_bits))} slots a "
                f"controller, two slots a rank for an odd world size: contract sections 1, "
                f"5.1 and 5.3)")
        return split
    if isinstance(r, int):
        if world % r:
            raise ValueError(f"FabricConfig.ranks_per_controller={r}: {world} ranks do not "
                             f"split into controllers of {r}")
        sizes = [r] * (world // r)
    else:
        sizes = list(r)
        if sum(sizes) != world:
            raise ValueError(f"FabricConfig.ranks_per_controller={tuple(r)} holds "
                             f"{sum(sizes)} ranks, not the world size {world}")
    if len(sizes) == 1:
        workers, copies = controller_slots(world)
        check_line_bits(line_bits, world, workers)
        return ControllerSplit((world,), workers, copies)
    copies = _copies(world)
    most = copies * max(sizes)
    workers = next((w for w in WORKERS_CHOICES if w >= most), None)
    if workers is None:
        raise ValueError(f"FabricConfig.ranks_per_controller={r}: a controller of "
                         f"{max(sizes)} ranks needs {most} worker slots ({copies} a rank, "
                         f"the world size {world} being {('even', 'odd')[world % 2]}), "
                         f"more than W={WORKERS_CHOICES[-1]}")
    check_line_bits(line_bits, max(sizes), workers)
    operand = level2_operand(len(sizes), most, copies * world)
    if operand is None:
        raise ValueError(f"FabricConfig.ranks_per_controller={r}: {len(sizes)} controllers "
                         f"of up to {most} votes each ({copies * world} in all) fit no "
                         f"level-2 count line (at most {MAX_CONTROLLERS} contributors of "
                         f"4 bits, or 4 of 8 bits; contract section 5.3)")
    return ControllerSplit(tuple(sizes), workers, copies, operand)


def check_line_bits(line_bits, ranks, workers):
    """Raise ``ValueError`` naming ``FabricConfig.line_bits`` unless a rank's
    segment of a sign line, ``E / 8 = LINE_BITS / W / 8`` bytes, is whole
    bytes (what its MemWrPtl carries): every width serves W = 4 and 8, and
    W = 16 (9 to 16 ranks a controller) needs 128 bits or more."""
    if line_bits // workers < 8:
        raise ValueError(f"FabricConfig.line_bits={line_bits} cannot serve {ranks} ranks a "
                         f"controller (W={workers}): a rank's segment of a line would be "
                         f"{line_bits // workers} bits, less than a byte; use line_bits >= "
                         f"{8 * workers} or ranks_per_controller <= 8")
