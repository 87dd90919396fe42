"""Generic gateware primitives the top is built from: pipeline registers
(``pipe``), credit counters (``credit``), queues (``queue``), one-hot and
unary helpers (``unary``, ``gather``) and wide counters (``counter``)."""
