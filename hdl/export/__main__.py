"""``python -m neuron_fabric.hdl.export``: the ``neuron-fabric-export`` command."""

import sys

from neuron_fabric.hdl.export.verilog import main

sys.exit(main())
