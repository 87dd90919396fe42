"""The control plane across ranks (paper sections 3 and 8).

The Predictor, Commander and Supervisor (:mod:`neuron_fabric.host.control`)
run on rank 0, in a :class:`~neuron_fabric.host.control.ControlPlane` over
rank 0's region table.  At every step boundary (:meth:`RankControl.before_step`,
called by :meth:`FabricState.begin_step`):

1. one all-reduce brings rank 0 the mean loss and forward/backward time of
   the last step over the ranks, and any rank's pending fault;
2. rank 0 feeds them to the plane (``after_step``: the Predictor gets the
   trace, the Supervisor the loss, the Commander the warm-up cosines the
   hook measured) and takes its decision for this step (``before_step``,
   which programs rank 0's regions);
3. one broadcast carries the decision (every group's mode, the reason, a
   fault flag, whether to measure diagnostics) to every rank, which
   programs its own regions before any bucket of the step: every rank
   switches on the same step, so a mode change never splits the ranks.

A fault on any rank (a region write its device refused, a failed read in
the hook) puts every group on FP32 on every rank, for the rest of the run:
through this broadcast, or, within a step, through the hook's barrier.
Every change is an :class:`~neuron_fabric.host.ddp.hook.Event` in
``state.events`` on every rank: ``admission``, ``re-admission``,
``recovery`` (the Supervisor's return to FP32) and ``fault``.
"""

import torch
import torch.distributed as dist

from neuron_fabric.host.control import (FP32, LOW_BIT_MODES, Commander, CommanderConfig,
                                        ControlPlane, Predictor, PredictorConfig, Supervisor,
                                        SupervisorConfig, TraceRecord)
from neuron_fabric.host.ddp.replica import run_untimed

__all__ = ["RankControl", "MODES"]

#: Mode names in broadcast order (code = index).
MODES = (FP32,) + LOW_BIT_MODES
_KINDS = ("", "default", "admission", "re-admission", "recovery")


def _kind(reason):
    if reason.startswith("Commander: re-admission"):
        return "re-admission"
    if reason.startswith("Commander"):
        return "admission"
    if reason.startswith("Supervisor"):
        return "recovery"
    return "default"


class RankControl:
    """The control plane of a :class:`FabricState`, live across ranks.

    Parameters
    ----------
    state : FabricState
        Attached to it (``state.control``); its groups start on FP32.
    commander, supervisor, predictor :
        The roles' configurations (:mod:`neuron_fabric.host.control`).
    delay_steps : int
        Apply each decision this many steps late.

    Call :meth:`record` after every step with the rank's loss and its
    forward + backward time; ``state.begin_step(step)`` before it.
    """

    def __init__(self, state, commander=CommanderConfig(), supervisor=SupervisorConfig(),
                 predictor=PredictorConfig(), *, delay_steps=0):
        if any(m != FP32 for m in state.modes.values()):
            raise ValueError("the control plane needs every group on FP32 at the start "
                             "(FabricConfig.warmup_steps, fixed policies: not with a plane)")
        self.state = state
        self.plane = None
        self.decisions = 0
        if state.rank == 0:
            plane = ControlPlane(state.regions, state.replicas.control_driver,
                                 Predictor(predictor), Commander(state.groups, commander),
                                 Supervisor(supervisor), delay_steps=delay_steps)
            self.plane = run_untimed(plane.start())
        self._loss = None
        self._compute_s = 0.0
        state.control = self
        state.diagnose = True

    def __getstate__(self):
        """A checkpoint of the hook's state keeps its control plane (rank 0's
        roles and decisions, this rank's last loss and time) without the
        state it is attached to: :meth:`FabricState.attach` links them."""
        return {k: v for k, v in vars(self).items() if k != "state"}

    def reattach(self, state):
        """Link a loaded control plane to its loaded state (:meth:`FabricState.attach`)."""
        self.state = state
        state.control = self
        if self.plane is not None:
            self.plane.bind(state.regions, state.replicas.control_driver)

    def record(self, loss, compute_s):
        """This rank's loss and forward + backward time of the step just done."""
        self._loss = float(loss)
        self._compute_s = float(compute_s)

    def before_step(self, step):
        s = self.state
        sent = torch.tensor([0.0 if self._loss is None else self._loss, self._compute_s,
                             0.0 if self._loss is None else 1.0,
                             1.0 if s.pending_fault is not None else 0.0], dtype=torch.float64)
        s.all_reduce("control-plane telemetry", sent)
        n = len(s.groups)
        decision = torch.zeros(4 + n, dtype=torch.int64)
        if s.rank == 0:
            decision = self._decide(step, sent)
        s.collective("control-plane broadcast",
                      lambda: dist.broadcast(decision, src=self._src(), group=s.group))
        faulted, kind, diagnose = int(decision[0]), _KINDS[int(decision[1])], bool(decision[2])
        if faulted and not s.faulted:
            s.fault(self._fault_detail())
        if not s.faulted:
            modes = {g: MODES[int(decision[4 + i])] for i, g in enumerate(s.groups)}
            s.apply_modes(modes, kind, program=s.rank != 0)
        s.diagnose = diagnose and not s.faulted
        self._loss = None

    def _src(self):
        s = self.state
        return 0 if s.group is dist.group.WORLD else dist.get_global_rank(s.group, 0)

    def _decide(self, step, sent):
        s, plane = self.state, self.plane
        world = s.world
        faulted = s.faulted or bool(sent[3]) or plane.faulted
        kind = 0
        if not faulted and sent[2] == world and step > 0:
            diag = s.diagnostics()
            full = diag if all(m == FP32 for m in plane.modes.values()) and \
                set(diag) == set(s.groups) else None
            trace = TraceRecord(step - 1, float(sent[1]) / world,
                                tuple((g, int(s.group_elements[g])) for g in s.groups))
            plane.after_step(trace, float(sent[0]) / world, full)
        if not faulted:
            before = len(plane.log)
            modes = run_untimed(plane.before_step(step))
            faulted = plane.faulted
            if len(plane.log) > before:
                kind = _KINDS.index(_kind(plane.log[-1].reason))
                self.decisions += 1
        else:
            modes = {g: FP32 for g in s.groups}
        diagnose = not faulted and all(m == FP32 for m in modes.values())
        out = [int(faulted), kind, int(diagnose), 0]
        out += [MODES.index(modes[g]) for g in s.groups]
        return torch.tensor(out, dtype=torch.int64)

    def _fault_detail(self):
        s = self.state
        details = [None] * s.world
        own = s.pending_fault
        if own is None and self.plane is not None and self.plane.faults:
            own = f"rank 0 control plane: {self.plane.faults[-1].error}"
        s.collective("fault report", lambda: dist.all_gather_object(details, own,
                                                                      group=s.group))
        return "; ".join(d for d in details if d) or "a fault"
