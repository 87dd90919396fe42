"""The CXL.mem top ``neuron_fabric`` (:class:`.top.Top`) and its blocks: the
request pipeline, read issue, the read and write paths, the in-flight table,
the DRS and NDR arbiters, the control registers, the region table and the
PATTERN gate's phase."""
