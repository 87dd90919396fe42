"""The gateware of NEURON-Fabric (Amaranth 0.5): the low-bit datapath core,
the control registers and the CXL.mem top.  The facts they implement
(parameters, encodings, opcodes, the register map) live in the Amaranth-free
:mod:`neuron_fabric.contract.facts` and :mod:`neuron_fabric.contract.regmap`.
"""
