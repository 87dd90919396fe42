"""Simulation side of NEURON-Fabric: cocotb testbenches, bus and system
models, the timing envelope.  Importable as ``neuron_fabric.sim``.

Module names say what a module is:

``cocotb_<bench>.py``
    A cocotb test module: what a simulator loads (``test_module=`` of
    :func:`~neuron_fabric.sim.toolchain.run_cocotb`).  It holds the bench's
    ``@cocotb.test`` functions, and any piece only it uses.
``tb_<block>.py``
    The bench pieces of a block (bus models, reference models, scoreboards,
    the ``<Block>TB`` harness) that cocotb test modules and tests import.
    Never a cocotb test; importable without a simulator running.
``conformance/``
    The clean-room benches, written from the contract alone: one cocotb test
    module a contract section (``<block>_section<N>[_<topic>].py``) and
    their plumbing (see :mod:`neuron_fabric.sim.conformance`).

Other modules are command lines and runners (``functional``, ``latency``,
``lint``, ``formal*``, ``bench_*``), the simulator set-up (``toolchain``) and
models (``rtl_port``, ``envelope``).
"""
