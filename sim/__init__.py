"""Simulation side of NEURON-Fabric: cocotb testbenches, bus and system
models, the timing envelope.  Importable as ``neuron_fabric.sim``."""
