"""Hardware flows of NEURON-Fabric: Yosys generic-cell synthesis, ECP5 place
and route, the gate-equivalent model, flip-flop endpoint analysis and the
hardware report.  Each flow runs as ``python -m neuron_fabric.synth.<flow>``."""
