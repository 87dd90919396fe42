"""The DDP hook's configuration and what it reports (see :mod:`.hook`).

:class:`FabricConfig` (the options of :class:`~.hook.FabricState`) and the
checks of its arguments (:func:`policy_of`: a group's policy from a mode
name; how the ranks share controllers is
:mod:`neuron_fabric.models.controllers`'s).  The values the hook hands its
caller: :class:`Event` (a mode change), :class:`StepTraffic` (one rank's
bytes of one step) and :class:`RankLostError` (a failed collective).  No
torch here: the options can be built and checked without it.
"""

from dataclasses import dataclass

from neuron_fabric.host.control import MODE_POLICY
from neuron_fabric.contract.facts import LINE_BITS_CHOICES, Layout
from neuron_fabric.host.runtime import GroupPolicy

__all__ = ["RankLostError", "Event", "StepTraffic", "policy_of", "FabricConfig"]


class RankLostError(RuntimeError):
    """A collective of the hook failed or timed out: names the ranks that did
    not answer (``missing``) when the job's store could be asked."""

    def __init__(self, message, missing=()):
        super().__init__(message)
        self.missing = tuple(missing)


@dataclass(frozen=True)
class Event:
    """A mode change every rank made before ``step`` (the same on every rank).

    ``kind``: ``"warm-up end"``, ``"admission"``, ``"re-admission"``,
    ``"recovery"`` (the Supervisor returned every group to FP32) or
    ``"fault"`` (every group on FP32 for the rest of the run).
    """
    step: int
    kind: str
    modes: dict
    detail: str = ""


@dataclass
class StepTraffic:
    """Bytes one rank moved in one step.

    ``pool_write``, ``pool_read``: what a CXL pool would move for this rank's
    low-bit groups (its own segments written, 1 bit per element, padding
    included; the response lines it reads: W-bit lanes, 32-bit lanes on
    the level-2 read, or 2 bits an element through a packed view).
    ``fp32_elements``: elements on the FP32 path (an FP32 pool would move
    4 bytes each way per element).  ``low_elements``:
    elements on a low-bit path.  ``gathered``: bytes this rank sent in
    all-gathers of segments (the cross-host pool; 0 on shared memory).
    """
    pool_write: int = 0
    pool_read: int = 0
    fp32_elements: int = 0
    low_elements: int = 0
    diag_elements: int = 0
    gathered: int = 0

    def fp32_bytes(self):
        """What an FP32 pool would move for every element: 4 bytes up and 4 down."""
        return 8 * (self.fp32_elements + self.low_elements)


def policy_of(mode):
    """A group's :class:`GroupPolicy` from a mode name (``"fp32"``,
    ``"gbinary"``, ``"gternary"``: the control plane's) or a policy."""
    if isinstance(mode, GroupPolicy):
        return mode
    if mode not in MODE_POLICY:
        raise ValueError(f"mode must be one of {sorted(MODE_POLICY)} or a GroupPolicy, not {mode!r}")
    return MODE_POLICY[mode]


@dataclass(frozen=True)
class FabricConfig:
    """Options of :class:`FabricState`.

    Parameters
    ----------
    line_bits : int
        The controllers' LINE_BITS: 64, 128, 256, 512 or 1024, whatever
        the sizes of the groups and buckets (at 64 bits, at most 8 ranks a
        controller: :func:`~neuron_fabric.models.controllers.check_line_bits`).
    ranks_per_controller : int, tuple of int or None
        How the ranks share controllers
        (:func:`~neuron_fabric.models.controllers.plan_controllers`).  None: the fewest controllers that
        serve the world size, their sizes
        differing by at most one rank (one controller up to 16 ranks, an
        odd number up to 7; 11 ranks are 6 + 5).  An int R: equal
        controllers of R ranks (the world size a multiple of R).  A tuple:
        each controller's ranks, in rank order, summing to the world size.
    layout : Layout
        How sign lines are written: WORKER_MAJOR (each rank its own
        segment, what a shared pool needs) or ELEMENT_MAJOR (the lines
        assembled from every rank's signs, as one writer holding them all
        would write them with MemWr).  Count lines are worker-major.
    pool : str
        ``"shm"`` (shared memory, ranks of a controller on one host),
        ``"gather"`` (all-gather of segments), ``"auto"`` (shm when every
        rank of the job is on one host).
    warmup_steps : int
        Steps on FP32 for every group before the groups' policies apply
        (paper section 3: training starts on FP32).  With a live control
        plane the Commander decides instead.
    error_feedback : bool
        Ours, beyond the paper (off by default): each rank keeps the
        residual ``e = p - mean|p| * sign(p)`` of ``p = g + e`` and packs the
        signs of ``p``.
    scale : bool
        On by default (the hook is then a drop-in: a working FP32 script
        that registers it keeps its optimiser and learning rate): a low-bit
        direction is multiplied by the mean over ranks of the piece's mean
        magnitude ``mean|g|``, so it has the gradient's scale (ours, beyond
        the paper).  ``scale=False`` is the paper's raw sign step, a
        direction in [-1, 1] that needs its own, much smaller rate.
    timeout_s : float
        The process group's timeout (given to ``init_process_group``): a
        collective that has not completed by then fails.
    census_s : float
        After a failed collective, how long the surviving ranks wait for each
        other in the store before naming the ranks that did not answer.
    diagnostics : bool
        On steps where every group is FP32, also aggregate the signs in low
        bit (one all-gather of 1 bit per element per rank) and record the
        cosine of each low-bit mode's direction with the FP32 mean per group
        (the Commander's warm-up diagnostic).  The live control plane turns
        it on when it wants them.
    regions : int
        Regions of each controller's region table (at least the number of
        groups).
    packed_view : bool or None
        Whether the controller has the packed result view (contract section
        6): with it, a SIGN-format group of a one-controller job reads its
        results through a view, 2 bits an element instead of a W-bit lane.
        None (the default): as the full profile has it (the feature
        ``packed_view``); True: a controller with the view (the replicas
        model one even where no exported build has it); False: lanes only.
    """
    line_bits: int = 512
    ranks_per_controller: int = None
    layout: Layout = Layout.WORKER_MAJOR
    pool: str = "auto"
    warmup_steps: int = 0
    error_feedback: bool = False
    scale: bool = True
    timeout_s: float = 60.0
    census_s: float = 5.0
    diagnostics: bool = False
    regions: int = 8
    packed_view: bool = None

    def __post_init__(self):
        if self.line_bits not in LINE_BITS_CHOICES:
            raise ValueError(f"FabricConfig.line_bits must be one of {LINE_BITS_CHOICES}, "
                             f"not {self.line_bits!r}")
        if self.pool not in ("auto", "shm", "gather"):
            raise ValueError(f"pool must be 'auto', 'shm' or 'gather', not {self.pool!r}")
        if self.layout not in tuple(Layout):
            raise ValueError(f"layout must be a Layout, not {self.layout!r}")
        r = self.ranks_per_controller
        if r is not None and not isinstance(r, int):
            object.__setattr__(self, "ranks_per_controller", r := tuple(r))
        sizes = () if r is None else (r,) if isinstance(r, int) else r
        if not all(isinstance(k, int) and k >= 1 for k in sizes) or r == ():
            raise ValueError(f"FabricConfig.ranks_per_controller must be None, a positive int "
                             f"or a tuple of them, not {r!r}")
