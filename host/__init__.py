"""The host side of NEURON-Fabric, free of Amaranth (numpy only, torch for
``ddp``).

``golden`` defines each read mode bit-exactly; ``device`` is the
transaction-level model of the top and ``driver`` the control-plane driver
on the register map (:mod:`neuron_fabric.contract.regmap`); ``runtime``
aggregates gradients through a device (its ``engine`` holds the one write,
read and decode step); ``control`` is the control plane; ``ddp`` the
PyTorch DDP communication hook; ``hierarchy`` the multi-hop study.  Every
package here reads the contract's facts (:mod:`neuron_fabric.contract.facts`)
as the gateware does.
"""
