"""Pure analytic models, free of Amaranth and of the benches: the timing
envelope of the datapath (``envelope``), the communication time of one
All-Reduce (``commtime``), multi-hop timing (``multihop``), the paper's
gradient-traffic accounting (``traffic``) and how a job's workers share
controllers (``controllers``).  The host runtime, the control plane, the
experiments and the reports all read them."""
