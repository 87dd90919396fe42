"""The multi-hop study (``make hierarchy``): exact count forwarding against
re-quantizing per hop, on real and synthetic gradients, training at 64
virtual workers and the multi-hop timing.

* :mod:`.study`: the comparison study, the equal-bits sweep, the timing;
* :mod:`.training`: training at 64 virtual workers through a two-level
  hierarchy (JAX, the harness of :mod:`neuron_fabric.experiments.train`);
* :mod:`.runs`: the training runs and their learning rates;
* :mod:`.tables`, :mod:`.plots`: ``hierarchy.md`` and ``hierarchy_*.png``;
* :mod:`.report`: :func:`~.report.run_all` and the command line.

Command line: ``python -m neuron_fabric.experiments.hierarchy.report --help``.
"""
