"""Training with the DDP hook of :mod:`neuron_fabric.host.ddp` under torchrun:
the harness's CNN in torch (``model``), the training script (``train``), its
report (``report``, ``make ddp``) and the hook's speed benchmark (``bench``)."""
