"""The interface contract as data: the bottom layer of NEURON-Fabric.

``facts`` holds every parameter range, encoding, opcode and module name;
``regmap`` the control register map; ``cli`` the command-line plumbing and
argument checks every entry point shares; ``paths`` the repository's build
folders.  Every other package reads these; this package imports none of them.
"""
