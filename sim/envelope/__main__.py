import sys

from neuron_fabric.sim.envelope.report import main

sys.exit(main())
