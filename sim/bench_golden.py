"""Golden-model throughput: transform a buffer of lines in every low-bit mode.

    python -m neuron_fabric.sim.bench_golden [--mib 64] [--repeat 3]

Prints one row per (W, mode, format, gate) with the best time of
``--repeat`` runs and the throughput in GiB/s, and writes
``build/reports/golden_bench.json``.
"""


import numpy as np

from neuron_fabric.contract.facts import Format, GateKind, Mode
from neuron_fabric.host import golden
from neuron_fabric.experiments.timing import best_of
from neuron_fabric.sim.benchcli import bench_command

#: (name, mode, format, gate kind, whether the gate is given as the core's
#: per-line mask rather than as P, K and the line phases)
CASES = [
    ("G-Binary COUNT", Mode.GBINARY, Format.COUNT, GateKind.PATTERN, False),
    ("G-Binary SIGN", Mode.GBINARY, Format.SIGN, GateKind.PATTERN, False),
    ("G-Ternary COUNT, 2-of-3 gate", Mode.GTERNARY, Format.COUNT, GateKind.PATTERN, False),
    ("G-Ternary COUNT, 2-of-3 gate mask", Mode.GTERNARY, Format.COUNT, GateKind.PATTERN, True),
    ("G-Ternary MARGIN, margin gate", Mode.GTERNARY, Format.MARGIN, GateKind.MARGIN, False),
]


def bench(mib, repeat, line_bits=512, workers_list=(4, 8, 16), seed=0):
    rng = np.random.default_rng(seed)
    n_lines = mib * 2**20 // (line_bits // 8)
    lines = rng.integers(0, 256, (n_lines, line_bits // 8), dtype=np.uint8)
    rows = []
    for workers in workers_list:
        lanes = line_bits // workers
        phases = golden.line_phase(np.arange(n_lines), lanes, 3)
        gate = {False: dict(period=3, keep=2, threshold=2, phase=phases),
                True: dict(threshold=2, gate_mask=golden.gate_pattern(lanes, 3, 2, phases))}
        for name, mode, fmt, kind, mask in CASES:
            best = best_of(lambda: golden.transform(lines, workers, mode, fmt, kind,
                                                    **gate[mask]), repeat)
            rows.append({"workers": workers, "case": name, "mib": mib,
                         "seconds": best, "gib_per_s": mib / 1024 / best})
            print(f"W={workers:<3} {name:<32} {mib} MiB in {best * 1e3:7.1f} ms "
                  f"= {mib / 1024 / best:6.2f} GiB/s", flush=True)
    return rows


main = bench_command("neuron_fabric.sim.bench_golden", __doc__, size_help="buffer size in MiB",
                     out="build/reports/golden_bench.json")


if __name__ == "__main__":
    raise SystemExit(main())
