"""Timing envelope of the low-bit datapath: a CXL memory-service model.

``params`` names every parameter, ``model`` simulates a batch of reads and
``scenarios`` defines the paper's experiments on it.  The report writer and
the RTL comparison are benches: :mod:`neuron_fabric.sim.envelope`.
"""
