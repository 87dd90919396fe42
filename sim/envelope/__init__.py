"""The timing envelope's benches: ``report`` writes its tables and plots
(``make envelope``) from the analytic model in
:mod:`neuron_fabric.models.envelope`, and ``rtl`` runs the exported top under
Verilator against it (``make envelope-rtl``)."""
