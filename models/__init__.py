"""Pure analytic models, free of Amaranth and of the benches: the timing
envelope of the datapath (``envelope``), the communication time of one
All-Reduce (``commtime``), multi-hop timing (``multihop``) and the paper's
gradient-traffic accounting (``traffic``).  The host runtime, the control
plane, the experiments and the reports all read them."""
