"""The paper's control-plane pilots (section 8, Fig. 6, Fig. 3d) on our tasks.

A training loop with the control plane in it: each step the plane applies
its due mode changes (region CFG writes through the driver), the workers'
gradients are aggregated by the gradient runtime through a device (the
transaction-level model here; the RTL under cocotb in
:mod:`neuron_fabric.sim.cocotb_train`), and the plane takes the step's
trace, loss and, on FP32 steps, the cosine diagnostics.

Pilots (``python -m neuron_fabric.experiments.pilots``, ``make pilots``):

* learning rates: each mode on every group (fixed, no control plane, no
  fault), the easy task, seed 0, every rate of :data:`LR_GRID`; the rate
  with the best final *validation* accuracy is kept (:func:`tune_rates`).
* ``recovery`` (Fig. 6): the easy task, seeds :data:`SEEDS`, four traces:
  always-FP32, always-G-Binary, FP32-default (admission) and
  G-Binary-default (recovery), all with the same fault window on the
  low-bit path (:data:`DEVICE_FAULT`: a fraction of the sign bits flipped
  in device memory after every write, :class:`~neuron_fabric.host.
  fault_injection.FaultPort`).  The FP32 path never reads the device, so
  a return to FP32 can help.
* ``faults``: the subtler faults of :mod:`.faults` (1% flips, a stuck lane,
  a stale worker segment, and the 75% flips), from the window's start to
  the end: detection delay, false alarms, accuracy and traffic.
* ``label-noise`` (negative control): the same traces with a window of
  random labels instead (:data:`DEGRADATION`), which FP32 cannot fix: what
  a Supervisor alarm costs when returning to FP32 does not help.
* ``ladder``: ``pairs`` (:data:`LADDER_TASK`, the hard task without
  ``pairs-hard``'s corruptions) with the live ladder against fixed splits.
* ``late`` (Fig. 3d, in the loop): G-Binary-default with the device fault
  and every mode write applied ``k`` steps late.

Writes ``pilots.md``, ``pilots.json`` and ``pilots_*.png`` (see
``docs/control.md`` and the README for the keys).

The package: :mod:`.config` (:class:`LoopConfig`, the windows, rates and
Commander), :mod:`.loop` (the training loop), :mod:`.runs` (the pilots'
runs), :mod:`.faults` (the realistic faults and their metrics), :mod:`.markdown` (``pilots.md``), :mod:`.plots` (the figures) and
:mod:`.cli` (the command line); every name is re-exported here.
"""

from neuron_fabric.experiments.pilots.config import (DEGRADATION, DEVICE_FAULT, LR, LR_GRID,
                                                     PILOT_COMMANDER, RTL_CONFIG, Degradation,
                                                     DeviceFault, LoopConfig,
                                                     loop_config_from_json, loop_config_to_json)
from neuron_fabric.experiments.pilots.loop import diagnostics, run_on_model, train_loop
from neuron_fabric.experiments.pilots.runs import (LADDER_SEEDS, LADDER_SPLITS, LADDER_TASK,
                                                   LATE_DELAYS, RECOVERY_TRACES, SEEDS,
                                                   run_pilots, tune_rates)
from neuron_fabric.experiments.pilots.faults import FAULTS, fault_metrics
from neuron_fabric.experiments.pilots.markdown import PAPER, report
from neuron_fabric.experiments.pilots.plots import plot_ladder_and_late, plot_recovery
from neuron_fabric.experiments.pilots.cli import main

__all__ = ["Degradation", "DeviceFault", "LoopConfig", "DEGRADATION", "DEVICE_FAULT", "LR",
           "LR_GRID", "PILOT_COMMANDER", "RTL_CONFIG", "loop_config_to_json",
           "loop_config_from_json", "PAPER", "train_loop", "run_on_model", "tune_rates",
           "main", "diagnostics", "SEEDS", "LADDER_SEEDS", "RECOVERY_TRACES", "LADDER_SPLITS",
           "LATE_DELAYS", "run_pilots", "report", "plot_recovery", "plot_ladder_and_late",
           "LADDER_TASK", "FAULTS", "fault_metrics"]
