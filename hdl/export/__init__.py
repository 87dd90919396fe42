"""Flat Verilog from the gateware: the contract's port names (``flat``),
Amaranth's RTLIL through Yosys (``convert``) and the exports, their cache
and the ``neuron-fabric-export`` command line (``verilog``)."""
