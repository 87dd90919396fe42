"""``make race``'s tables and plots, from ``build/reports/race.json``
(torch-free: ``make figures`` renders the README's ``race`` block from the
same JSON).

A row of ``race.json``: ``world`` (ranks), ``size`` (FP32 bytes of the
gradient), ``peer``, ``repeats``, ``wall_ms`` / ``cpu_ms`` / ``device_ms``
(``median``, ``q1``, ``q3`` over the repeats), and the bytes per rank of
one call: ``gloo_write``, ``gloo_read`` (TCP payload sent and received),
``pool_write``, ``pool_read`` (what the rank wrote to and read from the
pool).  ``projection``: :func:`neuron_fabric.experiments.ddp.race.projection`.
"""

__all__ = ["PEERS", "LABELS", "size_label", "timing_table", "bytes_table", "projection_lines",
           "block", "report", "plot"]

#: The race's peers, in the order of the tables: name -> (aggregation, transport).
PEERS = {
    "allreduce": ("FP32 (allreduce_hook)", "gloo all-reduce"),
    "fp16": ("FP16 (fp16_compress_hook)", "gloo all-reduce"),
    "bf16": ("BF16 (bf16_compress_hook)", "gloo all-reduce"),
    "powersgd-1": ("PowerSGD rank 1", "gloo all-reduce"),
    "powersgd-4": ("PowerSGD rank 4", "gloo all-reduce"),
    "vote": ("majority vote in software", "gloo all-gather"),
    "fp32-pool": ("FP32 through the pool (BYPASS read)", "shared memory"),
    "gbinary-shm": ("NEURON-Fabric G-Binary", "shared memory"),
    "gternary-shm": ("NEURON-Fabric G-Ternary", "shared memory"),
    "gbinary-gather": ("NEURON-Fabric G-Binary", "gloo all-gather"),
    "gternary-gather": ("NEURON-Fabric G-Ternary", "gloo all-gather"),
}
LABELS = {p: f"{a}, {t}" for p, (a, t) in PEERS.items()}


def size_label(nbytes):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes} B"


def _at(rows, world):
    return [r for r in rows if r["world"] == world]


def timing_table(rows, world, key):
    """Median [interquartile range] of ``key`` (``wall_ms``, ``cpu_ms``) of
    every peer at every size, ``world`` ranks."""
    rows = _at(rows, world)
    sizes = sorted({r["size"] for r in rows})
    cell = {(r["peer"], r["size"]): r[key] for r in rows}
    out = ["| peer | transport | " + " | ".join(size_label(s) for s in sizes) + " |",
           "|---|---|" + "---:|" * len(sizes)]
    for p, (label, transport) in PEERS.items():
        if not any((p, s) in cell for s in sizes):
            continue
        vals = [cell.get((p, s)) for s in sizes]
        out.append(f"| {label} | {transport} | " + " | ".join(
            f"{v['median']:.2f} [{v['q1']:.2f}–{v['q3']:.2f}]" if v else "—" for v in vals) + " |")
    return out


def bytes_table(rows, world, size):
    """Bytes per rank of one call at ``world`` ranks and gradient ``size``."""
    rows = {r["peer"]: r for r in _at(rows, world) if r["size"] == size}
    out = ["| peer | transport | gloo sent | gloo received | pool written | pool read | "
           "device model ms (CPU) |", "|---|---|---:|---:|---:|---:|---:|"]
    for p, (label, transport) in PEERS.items():
        r = rows.get(p)
        if r:
            dev = f"{r['device_ms']['median']:.2f}" if r["device_ms"]["median"] else "—"
            out.append(f"| {label} | {transport} | {r['gloo_write']:,} | {r['gloo_read']:,} | "
                       f"{r['pool_write']:,} | {r['pool_read']:,} | {dev} |")
    return out


def projection_lines(projection):
    """The link model's fastest peer by gradient size, for each worker count
    and Ethernet rate, and every peer's time at three sizes."""
    labels = projection["labels"]
    lk = projection["links"]
    out = [f"Link model (`models/links.py`): Ethernet ring at 100 or 400 Gb/s per host and "
           f"{lk['ring_step_us']:g} us a message step; a CXL 2.0 x16 link per host "
           f"({lk['cxl_gb_s']:g} GB/s each way); each controller serves one {lk['line_bytes']}-byte "
           "line a cycle (a write, partial or full, or a read) at the top's routed Fmax "
           f"({projection['clocks_mhz'][0]:g} MHz) or at the envelope's controller clock "
           f"({projection['clocks_mhz'][1]:g} MHz), shared by its ranks (at most 16 a "
           "controller, the level-2 lines on one); wire and controller only, no host "
           "arithmetic.", "",
           "| workers | Ethernet | fastest peer, by gradient size (FP32 bytes) |", "|---:|---:|---|"]
    for run in projection["runs"]:
        spans = "; ".join(f"{labels[p]}: {size_label(a)}–{size_label(b)}"
                          for a, b, p in run["winners"])
        out.append(f"| {run['workers']} | {run['ethernet_gbit_s']:g} Gb/s | {spans} |")
    out += ["", "Time of one step's communication (ms) in the model:", ""]
    picks = [s for s in (1 << 20, 64 << 20) if s in projection["runs"][0]["sizes"]]
    head = [f"{run['workers']} w, {run['ethernet_gbit_s']:g} G, {size_label(s)}"
            for run in projection["runs"] for s in picks]
    out += ["| peer | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    for p, label in labels.items():
        vals = [run["times_ms"][p][run["sizes"].index(s)] for run in projection["runs"]
                for s in picks]
        out.append(f"| {label} | " + " | ".join(f"{v:.3g}" for v in vals) + " |")
    return out


def _load(data):
    end = data["load_average_end"][0]
    start = data["load_average_start"][0]
    return (f"{data['cpus']} cores, load average {start:.1f} at the start and {end:.1f} at "
            f"the end (other work shared the machine)")


def block(data):
    """The README's block: 2 ranks' wall time, 8 ranks' CPU time, the bytes,
    the projection."""
    rows = data["rows"]
    worlds = sorted({r["world"] for r in rows})
    sizes = sorted({r["size"] for r in rows})
    lines = [("QUICK SMOKE RUN, not results. " if data.get("quick") else "")
             + f"One call of each hook on one bucket (a square FP32 matrix), "
             f"{data['repeats']} interleaved repeats a point, median [interquartile range]; "
             f"{_load(data)}; {data['seconds'] / 60:.1f} min.", "",
             f"**Wall ms per call, {worlds[0]} ranks** (ranks ≤ cores):", "",
             *timing_table(rows, worlds[0], "wall_ms"), ""]
    for w in worlds[1:]:
        lines += [f"**Process CPU ms per call, {w} ranks** (rank mean; {w} processes on "
                  f"{data['cpus']} cores: wall times oversubscribed, in race.md only):", "",
                  *timing_table(rows, w, "cpu_ms"), ""]
    big = max(s for s in sizes if any(r["size"] == s and r["world"] == worlds[-1] for r in rows))
    lines += [f"**Bytes per rank of one call, {worlds[-1]} ranks, {size_label(big)}** (the "
              "most frequent count over ranks and repeats: pool bytes and gloo's sent bytes "
              "repeat exactly, its received bytes within a few dozen; the device model's CPU "
              "ms is the emulated device's work, not the host's):", "",
              *bytes_table(rows, worlds[-1], big), ""]
    return lines + projection_lines(data["projection"])


def report(data):
    rows = data["rows"]
    worlds = sorted({r["world"] for r in rows})
    md = ["# The race: NEURON-Fabric against the software peers", "", *block(data), "",
          "## Every table", ""]
    for w in worlds:
        oversub = w > data["cpus"]
        md += [f"### {w} ranks" + (" (oversubscribed)" if oversub else ""), "",
               "Wall ms" + (" (OVERSUBSCRIBED: waits for a core, not the hook's cost)"
                            if oversub else "") + ":", "", *timing_table(rows, w, "wall_ms"), "",
               "Process CPU ms (gloo's threads included):", "", *timing_table(rows, w, "cpu_ms"),
               ""]
        for s in sorted({r["size"] for r in _at(rows, w)}):
            md += [f"Bytes per rank, {size_label(s)}:", "", *bytes_table(rows, w, s), ""]
    return md


def plot(data, measured_path, links_path):
    import matplotlib  # deferred: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: matplotlib
    rows = data["rows"]
    worlds = sorted({r["world"] for r in rows})
    fig, axes = plt.subplots(1, len(worlds), figsize=(5.5 * len(worlds), 4.2), squeeze=False)
    for ax, w in zip(axes[0], worlds):
        key = "wall_ms" if w <= data["cpus"] else "cpu_ms"
        for j, (p, (label, transport)) in enumerate(PEERS.items()):
            pts = sorted((r["size"], r[key]) for r in _at(rows, w) if r["peer"] == p)
            if pts:
                x = [s for s, _ in pts]
                ax.errorbar(x, [v["median"] for _, v in pts],
                            yerr=[[v["median"] - v["q1"] for _, v in pts],
                                  [v["q3"] - v["median"] for _, v in pts]],
                            label=f"{label} ({transport})", marker=".", capsize=2,
                            color=plt.get_cmap("tab20").colors[j],
                            ls="--" if "gather" in p else "-")
        _log_axes(ax, f"{w} ranks: {'wall' if key == 'wall_ms' else 'process CPU'} ms per call")
    _save(plt, fig, axes, measured_path, 6)
    proj = data["projection"]
    runs = proj["runs"]
    workers = sorted({r["workers"] for r in runs})
    bases = list(dict.fromkeys(p.split("@")[0] for p in proj["labels"]))
    colors = plt.get_cmap("tab20").colors
    fig, axes = plt.subplots(1, len(workers), figsize=(7 * len(workers), 7.5), squeeze=False)
    for ax, n in zip(axes[0], workers):
        for i, run in enumerate(r for r in runs if r["workers"] == n):
            for p, label in proj["labels"].items():
                base, _, mhz = p.partition("@")
                if mhz and i:
                    continue                    # the pool does not use the Ethernet rate
                style = ("-" if float(mhz) == proj["clocks_mhz"][0] else "--") if mhz \
                    else ("-" if i == 0 else ":")
                ax.plot(run["grid"], run["grid_ms"][p], color=colors[bases.index(base) % 20],
                        ls=style, lw=2 if mhz else 1,
                        label=label + ("" if mhz else f", {run['ethernet_gbit_s']:g} Gb/s"))
            for a, _, _ in run["winners"][1:]:
                ax.axvline(a, color="k", alpha=0.3, lw=0.8, ls="-" if i == 0 else ":")
        _log_axes(ax, f"{n} workers (grey: where the fastest peer changes, "
                      f"solid {runs[0]['ethernet_gbit_s']:g} Gb/s, dotted {runs[1]['ethernet_gbit_s']:g})")
        ax.set_ylabel("communication ms per step (model)")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=2, fontsize=6.5)
    fig.tight_layout(rect=(0, 0.3, 1, 1))
    fig.savefig(links_path, dpi=110)
    plt.close(fig)


def _log_axes(ax, title):
    ax.set(xscale="log", yscale="log", xlabel="gradient (FP32 bytes)", title=title)
    ax.grid(True, alpha=0.3)


def _save(plt, fig, axes, path, legend_size):
    axes[0][0].legend(fontsize=legend_size)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
