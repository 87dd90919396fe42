"""Timing envelope of the low-bit datapath: a CXL memory-service model.

``params`` names every parameter, ``model`` simulates a batch of reads,
``scenarios`` defines the paper's experiments on it, ``commtime`` models
one All-Reduce by path, and ``report`` writes the tables and plots.
"""
