"""Simulation side of NEURON-Fabric: cocotb testbenches, bus models and
system models.  Importable as ``neuron_fabric_sim``."""
