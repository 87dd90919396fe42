"""The control plane: Predictor, Commander and Supervisor (paper sections 3 and 8).

The controller exposes a mode latch (DEFAULT_CFG) and a region table; this
module decides, per parameter group and per step, which aggregation path a
group takes, and writes only that mode metadata through the control-plane
driver (:class:`neuron_fabric.host.driver.Driver`), so the same code drives
the device model, the RTL under cocotb, or a memory-mapped device.

Roles (paper section 3, "Control interface"):

:class:`Predictor`
    Estimates collective pressure from trace-derived forecasts.  Its only
    input is a :class:`TraceRecord` of timings and volumes: it cannot be
    handed gradients, weights or loss.  Its All-Reduce times come from the
    communication-time model (:mod:`neuron_fabric.models.commtime`)
    and the datapath exposure from the timing-envelope model
    (:mod:`neuron_fabric.models.envelope.model`).
:class:`Commander`
    Proposes a mode per group with a deterministic ladder: the lowest-traffic
    mode whose cosine-alignment diagnostic (measured on FP32 warm-up steps)
    passes; a sensitive group (the classifier head) stays on FP32 unless
    every other group is admitted.
:class:`Supervisor`
    Keeps or returns every group to FP32 when training health degrades
    (CUSUM on the standardised loss, a non-finite loss), holds FP32
    for a cooldown, then reports recovery so the Commander may re-admit.
:class:`ControlPlane`
    Runs the three at step boundaries and writes the region CFG words.  A
    control-plane fault (SLVERR, a rejected CFG, a bus error, a read-back
    mismatch) puts every group on FP32 and is recorded; the runtime
    aggregates FP32 groups in software, so no group is ever in an unknown
    mode.

Mode names are the keys of :data:`neuron_fabric.models.traffic.BITS_PER_ELEMENT`
(``"fp32"``, ``"gbinary"``, ``"gternary"``); the ladder is that table sorted
by bits per element.

The package's modules hold one role each (``predictor``, ``commander``
with the mode names, ``supervisor``, ``plane``); every public name is
importable from here.
"""

from neuron_fabric.host.control.commander import (FP32, LOW_BIT_MODES, MODE_POLICY, Commander,
                                                  CommanderConfig)
from neuron_fabric.host.control.plane import ControlFault, ControlPlane, StepDecision
from neuron_fabric.host.control.predictor import Forecast, Predictor, PredictorConfig, TraceRecord
from neuron_fabric.host.control.supervisor import Supervisor, SupervisorConfig

__all__ = [
    "FP32", "LOW_BIT_MODES", "MODE_POLICY", "TraceRecord", "Forecast", "PredictorConfig",
    "Predictor", "CommanderConfig", "Commander", "SupervisorConfig", "Supervisor",
    "ControlFault", "StepDecision", "ControlPlane",
]
