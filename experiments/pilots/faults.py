"""The recovery pilot under realistic faults on the low-bit path: what the
control plane detects, how late, and what it costs.

Besides the recovery pilot's 75% flips (which make a return to FP32
trivially right), four faults of :class:`~.config.DeviceFault`, each from
:data:`FAULT_START` to the end of the run (a hardware fault stays until it
is repaired): 75% and 1% bit flips, lane 0 of every line stuck at 1, and
worker 0's segment left stale.  Each runs the G-Binary-default trace (the
control plane on) and always-G-Binary (no plane: what the fault does
unchecked); always-FP32 is the reference (the fault never reaches it).

Per fault and seed (:func:`fault_metrics`): the detection delay (steps from
the fault's start to the Supervisor's first return to FP32; None when it
never returns), the false alarms (Supervisor returns before the fault),
final test accuracy and the traffic (payload over FP32's).
"""

import numpy as np

from neuron_fabric.experiments.pilots.config import DeviceFault, LoopConfig
from neuron_fabric.experiments.train.models import GROUPS
from neuron_fabric.host.control import FP32

__all__ = ["FAULTS", "FAULT_START", "FAULT_TRACES", "faults", "fault_runs", "fault_metrics",
           "fault_rows"]

#: Step at which the faults start (the easy task's 300 steps; the recovery
#: pilot's window starts there too).
FAULT_START = 150

#: The faulty traces, by name: the control plane on, and no plane.
FAULT_TRACES = {
    "gbinary-default": dict(default_mode="gbinary"),
    "always-gbinary": dict(fixed={g: "gbinary" for g in GROUPS}),
}


def faults(steps, start=FAULT_START):
    """The faults by name, each from ``start`` to ``steps`` (the run's end)."""
    return {"flip 75%": DeviceFault(start, steps, 0.75),
            "flip 1%": DeviceFault(start, steps, 0.01),
            "stuck lane": DeviceFault(start, steps, kind="stuck-lane"),
            "stale worker": DeviceFault(start, steps, kind="stale-worker")}


#: The faults of a 300-step run.
FAULTS = faults(300)


def fault_runs(seeds, easy, start=FAULT_START):
    """``(fault, trace, cfg)`` of every faulty run, and ``("reference",
    "always-fp32", cfg)`` per seed; ``easy``: LoopConfig keywords of the
    task (``steps``, ``lr``, ...)."""
    runs = [(name, trace, LoopConfig(seed=s, fault=fault, **easy, **kw))
            for name, fault in faults(easy["steps"], start).items()
            for trace, kw in FAULT_TRACES.items() for s in seeds]
    runs += [("reference", "always-fp32", LoopConfig(seed=s, fixed={g: FP32 for g in GROUPS},
                                                     **easy)) for s in seeds]
    return runs


def _supervisor_steps(summary):
    return [d["step"] for d in summary["decisions"] if d["reason"].startswith("Supervisor")]


def fault_metrics(summary, start):
    """``detection_delay`` (steps from ``start`` to the first Supervisor
    return at or after it, None when none), ``false_alarms`` (Supervisor
    returns before ``start``), ``final_accuracy``, ``traffic_ratio``,
    ``low_bit_share`` of one run's summary."""
    steps = _supervisor_steps(summary)
    after = [s - start for s in steps if s >= start]
    return dict(detection_delay=after[0] if after else None,
                false_alarms=sum(s < start for s in steps),
                final_accuracy=summary["final_accuracy"],
                traffic_ratio=summary["traffic_ratio"],
                low_bit_share=summary["low_bit_share"])


def fault_rows(results, start):
    """One dict per fault and trace of ``results`` (``{fault: {trace:
    {seed: summary}}}``) whose faults start at ``start``: ``fault``,
    ``trace``, ``start``, ``seeds``, ``detected`` (seeds with a return to
    FP32 at or after the start), ``mean_delay`` (over those; None when
    none), ``false_alarms`` (summed over the seeds), ``accuracy_mean`` and
    ``accuracy_std`` (%, ddof 1), ``traffic_ratio`` (mean)."""
    out = []
    for name, traces in results.items():
        for trace, per_seed in traces.items():
            m = [fault_metrics(r, start) for r in per_seed.values()]
            delays = [x["detection_delay"] for x in m if x["detection_delay"] is not None]
            acc = 100 * np.array([x["final_accuracy"] for x in m])
            out.append(dict(fault=name, trace=trace, start=start, seeds=len(m),
                            detected=len(delays),
                            mean_delay=float(np.mean(delays)) if delays else None,
                            false_alarms=sum(x["false_alarms"] for x in m),
                            accuracy_mean=float(acc.mean()),
                            accuracy_std=float(acc.std(ddof=1)) if len(acc) > 1 else 0.0,
                            traffic_ratio=float(np.mean([x["traffic_ratio"] for x in m]))))
    return out
