"""Virtual-worker training through NEURON-Fabric (JAX on the CPU).

* :mod:`.tasks`: the easy (``digits``) and hard (``pairs``) tasks;
* :mod:`.models`: a small CNN whose classifier head is its own group;
* :mod:`.policies`: FP32, G-Binary, G-Ternary, SignOfMean, G-Binary-MARGIN
  and the backbone/head splits;
* :mod:`.harness`: one training run (:func:`train`);
* :mod:`.experiments`, :mod:`.report`: ``make train``.

Command line: ``python -m neuron_fabric.experiments.train --help``.
"""

from neuron_fabric.experiments.train.harness import RunConfig, train
from neuron_fabric.experiments.train.policies import POLICIES
from neuron_fabric.experiments.train.tasks import TASKS

__all__ = ["RunConfig", "train", "POLICIES", "TASKS"]
