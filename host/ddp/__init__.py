"""NEURON-Fabric in a PyTorch training stack: a DDP communication hook."""
