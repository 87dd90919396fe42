"""The conformance benches: cocotb tests of the exported Verilog written from
the interface contract (docs/contract.md) alone.

They share plumbing only, never the project's own models: no module here
imports ``host/golden/``, ``contract/facts.py`` or ``contract/regmap.py``;
the contract's constants they need are deliberate clean-room copies, so a
mistake in the project's models cannot hide a departure of the design.

* ``common``: the lane reference of contract section 2 and the runner (one
  export and one simulation a parameter set and session, each cocotb test a
  pytest item);
* ``datapath_section3``: the core against contract section 3;
* ``top_contract`` (section 4's register map, opcodes and CFG word) and
  ``top_bench`` (the top's bench, register model and repeated checks), then
  one cocotb test module a section of contract section 4:
  ``top_section4_1_ports``, ``top_section4_2_opcodes``,
  ``top_section4_2_traffic``, ``top_section4_3_transform``,
  ``top_section4_4_registers``, and ``top_section6_view`` for section 6;
  :data:`TOP_MODULES` lists them for one simulation.
"""

#: The cocotb test modules of the top's conformance, by contract section.
TOP_MODULES = tuple(f"neuron_fabric.sim.conformance.top_section{name}" for name in (
    "4_1_ports", "4_2_opcodes", "4_2_traffic", "4_3_transform", "4_4_registers", "6_view"))
