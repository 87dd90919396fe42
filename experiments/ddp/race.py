"""``make race``: NEURON-Fabric's DDP hook against the software peers on the
same gradients, processes and machine, and the race projected onto real
links -> ``build/reports/race.{md,json}``, ``race.png``, ``race_links.png``.

    python -m neuron_fabric.experiments.ddp.race [--quick] [--repeats 5] [--out build/reports]

For each world size (2, 4, 8 ranks) and gradient size (4 KiB to 64 MiB of
FP32, a square matrix, by factors of 4) one job of processes on 127.0.0.1
(:func:`~neuron_fabric.host.ddp.launch.spawn`, bounded by a timeout) runs
every peer of :data:`.race_tables.PEERS` ``repeats`` times, interleaved
(:func:`.race_rank.race`).  A repeat's wall time is the slowest rank's, its
CPU time the ranks' mean; the tables give the median and the interquartile
range over the repeats.  Bytes per rank: the most frequent count over
the ranks and repeats (a peer's next barrier can start before a rank's
count ends and add its few dozen bytes to that call).  Wall times stand only where the ranks
do not outnumber the cores; above, the tables give CPU time and mark the
wall time as oversubscribed.  At more than 2 ranks FP32 through the pool
stops at 16 MiB: each rank reads every rank's gradient (R times the
gradient, copied again by the device model), which at 8 ranks and 64 MiB is
more memory than the machine should lend one benchmark.

The quick form (``SMOKE=1``): 2 ranks, 4 KiB and 64 KiB, 2 repeats.
"""

import json
import os
import pathlib
import time
from dataclasses import replace

import numpy as np

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.experiments.ddp import race_tables
from neuron_fabric.host.ddp.launch import spawn
from neuron_fabric.models import links
from neuron_fabric.models.envelope.params import ANCHOR

__all__ = ["SIZES", "WORLDS", "plan", "run", "main"]

#: Gradient sizes (bytes of FP32): 4 KiB .. 64 MiB by factors of 4, square matrices.
SIZES = tuple(4096 * 4 ** i for i in range(8))
WORLDS = (2, 4, 8)
#: The largest gradient of FP32 through the pool at more than 2 ranks.
FP32_POOL_MAX = 16 << 20
#: The projection's worker counts and Ethernet rates (Gb/s).
PROJECTED_WORKERS = (8, 64)
ETHERNET = (100.0, 400.0)


def plan(quick):
    """``[(world, size, peers)]``: the jobs of the race."""
    if quick:
        return [(2, size, list(race_tables.PEERS)) for size in (4096, 65536)]
    jobs = []
    for world in WORLDS:
        for size in SIZES:
            peers = [p for p in race_tables.PEERS
                     if not (p == "fp32-pool" and world > 2 and size > FP32_POOL_MAX)]
            jobs.append((world, size, peers))
    return jobs


def _stats(values):
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    return dict(median=float(med), q1=float(q1), q3=float(q3))


def _usual(counts):
    """The most frequent of ``counts`` (of equally frequent ones, the nearest
    the median): gloo's control messages of a neighbouring collective can
    land in one call's count, rarely in most."""
    values, freq = np.unique(counts, return_counts=True)
    top = values[freq == freq.max()]
    return int(top[np.argmin(np.abs(top - np.median(counts)))])


def _rows(world, size, results):
    """One row per peer from every rank's calls."""
    rows = []
    for peer in results[0]:
        calls = [r[peer] for r in results]                     # [rank][repeat]
        repeats = len(calls[0])
        per = lambda key, f: [f([c[i][key] for c in calls]) for i in range(repeats)]
        row = dict(world=world, size=size, peer=peer, repeats=repeats,
                   wall_ms=_stats([1e3 * v for v in per("wall_s", max)]),
                   cpu_ms=_stats([1e3 * v for v in per("cpu_s", np.mean)]),
                   device_ms=_stats([1e3 * v for v in per("device_s", np.mean)]))
        for key in ("gloo_write", "gloo_read", "pool_write", "pool_read"):
            row[key] = _usual([x[key] for c in calls for x in c])
        rows.append(row)
    return rows


def run(quick, repeats, timeout_s):
    """Every job of :func:`plan`; the rows of the report."""
    rows = []
    for world, size, peers in plan(quick):
        t0 = time.monotonic()
        results = spawn("neuron_fabric.experiments.ddp.race_rank:race", world,
                        dict(sizes=[size], peers=peers, repeats=repeats), timeout_s=timeout_s)
        bad = [r for r in results if not r.ok]
        if bad:
            raise RuntimeError(f"{world} ranks, {size:,} B: rank {bad[0].rank} failed: "
                               f"{bad[0].error or bad[0].stderr[-3000:]}")
        values = [{p: r.value[(p, size)] for p in peers} for r in results]
        rows += _rows(world, size, values)
        print(f"{world} ranks, {size:>10,} B: {len(peers)} peers x {repeats} repeats "
              f"({time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f})", flush=True)
    return rows


def projection(sizes=SIZES):
    """The link model (:mod:`neuron_fabric.models.links`) at ``sizes`` for
    each worker count and Ethernet rate, the pool's peers with the
    controller at the top's routed Fmax and at the envelope's 2 GHz: every
    peer's time (ms) and the fastest peer's runs on a fine grid of sizes."""
    grid = sorted({int(4096 * 2 ** (i / 8)) // 4 * 4 for i in range(8 * 14 + 1)})
    base = links.Links()
    clocks = (base.fmax_mhz, 1e3 * ANCHOR.controller_ghz)
    labels, entries = {}, {}
    for p, (label, kind) in links.PEERS.items():
        for mhz in ((None,) if kind == "ethernet" else clocks):
            key = p if mhz is None else f"{p}@{mhz:g}"
            labels[key] = label if mhz is None else f"{label}, controller at {mhz:g} MHz"
            entries[key] = (p, base if mhz is None else replace(base, fmax_mhz=mhz))
    out = []
    for n in PROJECTED_WORKERS:
        for gbit in ETHERNET:
            at = lambda pts: {k: [1e3 * links.comm_time_s(p, s // 4, n, lk, gbit) for s in pts]
                              for k, (p, lk) in entries.items()}
            on_grid = at(grid)
            out.append(dict(workers=n, ethernet_gbit_s=gbit, sizes=list(sizes), times_ms=at(sizes),
                            grid=grid, grid_ms=on_grid, winners=links.winners(on_grid, grid)))
    return dict(links=vars(base), clocks_mhz=list(clocks), labels=labels, runs=out)


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.experiments.ddp.race")
    ap.add_argument("--quick", action="store_true", help="2 ranks, 2 sizes, 2 repeats (smoke)")
    ap.add_argument("--repeats", type=int, default=None, help="timed calls a point (default 5)")
    ap.add_argument("--timeout", type=float, default=600.0, help="per job, s")
    ap.add_argument("--out", default="build/reports")
    a = ap.parse_args(argv)
    repeats = a.repeats or (2 if a.quick else 5)
    if repeats < 1:
        ap.error(f"--repeats must be at least 1, not {repeats}")
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t0, load0 = time.monotonic(), os.getloadavg()
    rows = run(a.quick, repeats, a.timeout)
    data = dict(rows=rows, quick=a.quick, repeats=repeats, cpus=os.cpu_count(),
                load_average_start=list(load0), load_average_end=list(os.getloadavg()),
                seconds=time.monotonic() - t0, labels=race_tables.LABELS,
                projection=projection())
    (out / "race.json").write_text(json.dumps(data, indent=1))
    (out / "race.md").write_text("\n".join(race_tables.report(data)) + "\n")
    race_tables.plot(data, out / "race.png", out / "race_links.png")
    print(f"wrote {out / 'race.md'}, race.json, race.png, race_links.png "
          f"({data['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
