"""The host side of NEURON-Fabric, free of Amaranth (numpy only).

``facts`` holds every parameter, encoding, opcode and address width;
``golden`` defines each read mode bit-exactly; ``regmap`` is the control
register map and ``driver`` the control-plane driver built on it;
``traffic`` the gradient-traffic accounting.  The gateware (``neuron_fabric.hdl``)
reads the same facts.
"""
