"""Gradient-runtime throughput: one step's aggregation through the device model.

    python -m neuron_fabric.sim.bench_runtime [--mib 64] [--repeat 3]

For each W and low-bit policy, one parameter group whose FP32 gradient
payload (``W * n * 4`` bytes, what the workers would send in FP32) is
``--mib`` MiB goes through :meth:`GradientRuntime.step` on a
:class:`~neuron_fabric.host.device.Device` (check, pack, MemWr, MemRd with the
read transform, decode).  Reports the best of ``--repeat`` steps in GB/s of
FP32 payload, beside the golden model's pieces on the same data: packing
(:func:`golden.encode_signs`), the read transform (:func:`golden.transform`
on the packed lines) and decoding (:func:`golden.decode`).  One core, no
other work in the process.  Writes ``build/reports/runtime_bench.json``.
"""

import asyncio
import time

import numpy as np

from neuron_fabric.host import golden
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.contract.facts import TopParams
from neuron_fabric.host.runtime import G_BINARY, G_BINARY_MARGIN, G_TERNARY, GradientRuntime

from neuron_fabric.experiments.timing import best_of
from neuron_fabric.sim.benchcli import bench_command

CASES = [
    ("G-Binary SIGN", G_BINARY),
    ("G-Ternary SIGN, 2-of-3 gate", G_TERNARY),
    ("G-Binary MARGIN", G_BINARY_MARGIN),
]


async def _runtime_seconds(grads, policy, params, repeat):
    dev = Device(params)
    rt = await GradientRuntime.create(dev, Driver(dev, params), {"g": grads.shape[1]},
                                      {"g": policy})
    best = float("inf")
    for _ in range(repeat + 1):                       # the first step allocates device memory
        start = time.perf_counter()
        await rt.step({"g": grads})
        best = min(best, time.perf_counter() - start)
    return best


def _golden_seconds(grads, policy, params, repeat):
    lines = golden.encode_signs(grads, params.line_bits)
    mask = golden.gate_pattern(params.lanes, policy.period, policy.keep,
                               golden.line_phase(np.arange(len(lines)), params.lanes, policy.period))
    return {
        "encode_signs": best_of(lambda: golden.encode_signs(grads, params.line_bits), repeat),
        "transform": best_of(lambda: golden.transform(
            lines, params.workers, policy.mode, policy.format, policy.gate_kind,
            threshold=policy.threshold, gate_mask=mask), repeat),
        "decode": best_of(lambda: golden.decode(lines, params.workers, policy.format,
                                              grads.shape[1]), repeat),
    }


def bench(mib, repeat, workers_list=(4, 8, 16), seed=0):
    rng = np.random.default_rng(seed)
    payload = mib * 2**20
    rows = []
    for workers in workers_list:
        params = TopParams(workers=workers)
        grads = rng.standard_normal((workers, payload // (4 * workers)), dtype=np.float32)
        for name, policy in CASES:
            seconds = asyncio.run(_runtime_seconds(grads, policy, params, repeat))
            pieces = _golden_seconds(grads, policy, params, repeat)
            row = {"workers": workers, "case": name, "fp32_payload_bytes": payload,
                   "elements": grads.shape[1], "seconds": seconds,
                   "gb_per_s": payload / seconds / 1e9,
                   "golden_seconds": pieces,
                   "golden_gb_per_s": {k: payload / v / 1e9 for k, v in pieces.items()}}
            rows.append(row)
            print(f"W={workers:<3} {name:<28} runtime {seconds * 1e3:7.1f} ms = "
                  f"{row['gb_per_s']:5.2f} GB/s FP32 payload; golden pack / transform / decode "
                  + " / ".join(f"{v:5.2f}" for v in row["golden_gb_per_s"].values()) + " GB/s",
                  flush=True)
    return rows


main = bench_command("neuron_fabric.sim.bench_runtime", __doc__, size_help="FP32 payload per step in MiB",
                     out="build/reports/runtime_bench.json")


if __name__ == "__main__":
    raise SystemExit(main())
