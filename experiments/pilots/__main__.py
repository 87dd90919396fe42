"""``python -m neuron_fabric.experiments.pilots``: the pilots' command line
(:func:`neuron_fabric.experiments.pilots.cli.main`)."""

import sys

from neuron_fabric.experiments.pilots.cli import main

sys.exit(main())
