"""NEURON-Fabric: low-bit gradient aggregation IP for a CXL.mem controller.

``neuron_fabric.params`` and ``neuron_fabric.golden`` are plain Python
(numpy) and never import Amaranth; the HDL lives in the other modules.
"""
