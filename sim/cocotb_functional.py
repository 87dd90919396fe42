"""The cocotb test of the paper's section 6 functional check on the exported
top (run by ``python -m neuron_fabric.sim.functional``, ``make functional``):
packed sign packets of 8 workers written with MemWr, read back in identity,
G-Binary and G-Ternary, each mode against its oracle
(:func:`neuron_fabric.sim.functional.oracle`).

Parameters (the runner's ``params``): the TopParams fields, ``elements``
(gradient elements per worker) and ``out`` (the results' JSON file).
"""

import json

import cocotb
import numpy as np

from neuron_fabric.contract.facts import RwdOpcode
from neuron_fabric.host.golden import encode_signs
from neuron_fabric.sim.functional import BASE, MODES, WORKERS, oracle, results_table
from neuron_fabric.sim.tb_top import TopTB, top_params
from neuron_fabric.sim.toolchain import bench_params


@cocotb.test()
async def functional_check(dut):
    params, bench = top_params(), bench_params()
    tb = TopTB(dut, params, seed=11)
    await tb.reset()
    lb = params.line_bytes
    elements = bench.get("elements", 4000)
    rng = np.random.default_rng(6)
    grads = rng.standard_normal((WORKERS, elements)).astype(np.float32)
    lines = encode_signs(grads, params.line_bits)
    first = BASE // lb
    for i, row in enumerate(lines):
        tb.write(i, first + i, row.tobytes(), opcode=RwdOpcode.MEM_WR)
    await tb.drain()
    results = {}
    for k, (name, cfg) in enumerate(MODES.items()):
        await tb.driver.set_default(**cfg)
        got = {}
        tags = [10_000 * (k + 1) + i for i in range(len(lines))]
        for i, tag in enumerate(tags):
            tb.read(tag, first + i)
        # collect the responses as they come (the scoreboard checks them too)
        await tb.drain()
        for i, tag in enumerate(tags):
            got[i] = tb.responses[tag]
        want = oracle(lines, params.line_bits, BASE, cfg)
        mismatches = sum(got[i] != want[i].tobytes() for i in range(len(lines)))
        results[name] = {"lines": len(lines), "mismatches": int(mismatches)}
    out = bench.get("out")
    if out:
        with open(out, "w") as f:
            json.dump(results, f)
    print(results_table(results))
    assert all(r["mismatches"] == 0 for r in results.values()), results
    tb.check()
