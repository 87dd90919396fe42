"""The DDP report's tables, from the rows ``make ddp`` records in
``build/reports/ddp.json`` (torch-free: ``make figures`` renders the
README's block from the same JSON).

A row: ``kind`` (``train`` or ``speed``), ``procs``, ``hook``, ``label``,
``test``, ``step_ms``, ``hook_ms``, ``hook_cpu_ms``, ``gloo_bytes``,
``pool_write``, ``pool_read``, ``pool`` (None for a hook without a pool),
``low_share``, ``events``, ``parameters``, ``workers``, ``steps``.
"""

__all__ = ["LABELS", "by_kind", "table", "event_lines", "speed_lines"]

LABELS = {"fp32": "FP32 (allreduce_hook)", "powersgd": "PowerSGD (rank 1)",
          "gbinary": "G-Binary", "gternary": "G-Ternary (2-of-3 gate)",
          "split": "G-Binary backbone + FP32 head (20 FP32 steps first)",
          "control": "control plane live",
          "drop-in": "G-Binary drop-in (the hook's defaults, FP32's rate)"}


def by_kind(rows):
    """``(train rows, speed rows, {processes: allreduce_hook's ms a step})``."""
    train = [r for r in rows if r["kind"] == "train"]
    speed = [r for r in rows if r["kind"] == "speed"]
    return train, speed, {r["procs"]: r["step_ms"] for r in train if r["hook"] == "fp32"}


def table(rows, base, cpus=None):
    """The training runs' table: a row a run, its step time against
    ``base`` (allreduce_hook's at the same process count), marked
    oversubscribed where the processes outnumber ``cpus`` (the machine's
    cores: the times then follow the waits for a core, not the hooks)."""
    out = ["| processes | hook | test acc. (%) | ms / step | vs allreduce_hook | "
           "hook ms / step (CPU) | gloo bytes / step / rank | pool bytes / step / rank "
           "(write + read) | low-bit steps |",
           "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ref = base.get(r["procs"])
        over = f"{r['step_ms'] - ref:+.2f} ms ({100 * (r['step_ms'] / ref - 1):+.0f} %)" \
            if ref else "-"
        if ref and cpus and r["procs"] > cpus:
            over = "oversubscribed"
        pool = f"{r['pool_write']:,.0f} + {r['pool_read']:,.0f}" if r["pool"] else "-"
        hook_ms = f"{r['hook_ms']:.2f} ({r['hook_cpu_ms']:.2f})" if r["pool"] else "-"
        out.append(f"| {r['procs']} | {r['label']} | {100 * r['test']:.2f} | {r['step_ms']:.2f} "
                   f"| {over} | {hook_ms} | {r['gloo_bytes']:,.0f} | {pool} | "
                   f"{100 * r['low_share']:.0f} % |")
    return out


def speed_lines(rows, bench):
    """The speed rows of an earlier ``make ddp`` (FP32 against G-Binary on the
    large model, 8 processes on 2 cores: oversubscribed, so no speed verdict;
    ``make race`` compares the hooks) and the one-core pack and decode
    figures of ``bench`` (``ddp_bench.json``); a part whose data is absent is
    left out."""
    by = {r["hook"]: r for r in rows}
    fp, gb = by.get("fp32"), by.get("gbinary")
    lines = []
    if fp and gb:
        n, procs = gb["parameters"], gb["procs"]
        write_ratio = gb["pool_write"] / (4 * n)
        trip_ratio = (gb["pool_write"] + gb["pool_read"]) / (8 * n)
        lines += [
            f"Model of {n:,} parameters, {procs} processes, {gb['steps']} steps (the first 5 "
            f"not counted); {procs} processes on the machine's cores, so the times per step "
            "are OVERSUBSCRIBED (they follow how often a process waits for a core) and are no "
            "speed comparison: `make race` is.", "",
            "| hook | ms / step (oversubscribed) | gloo bytes / step / rank | "
            "pool bytes / step / rank |",
            "|---|---:|---:|---:|",
            f"| FP32 (allreduce_hook) | {fp['step_ms']:.1f} | {fp['gloo_bytes']:,.0f} | "
            f"{8 * n:,} (an FP32 pool: 4 B up, 4 B down an element) |",
            f"| G-Binary | {gb['step_ms']:.1f} | {gb['gloo_bytes']:,.0f} | "
            f"{gb['pool_write']:,.0f} + {gb['pool_read']:,.0f} |", "",
            f"- pool bytes against FP32's: writes {write_ratio:.4f} (1 bit per element "
            f"against 32: {'<=' if write_ratio <= 1 / 25 else '>'} 1/25); writes and reads "
            f"{trip_ratio:.4f} ({'<=' if trip_ratio <= 1 / 25 else '>'} 1/25): the read returns "
            f"a W-bit lane per element (W = {gb['workers']}), W/32 of FP32's read, which is "
            "what keeps the round trip above 1/25.",
        ]
    if bench:
        lines += ["", "Pack plus decode on one core (`make bench-ddp`, "
                  "`build/reports/ddp_bench.json`), GB/s of one rank's FP32 gradient:", "",
                  "| W | pack | decode | pack + decode | device model read | "
                  "numpy runtime (golden encode + decode, per worker) |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for b in bench["rows"]:
            lines.append(f"| {b['workers']} | {b['pack_gbs']:.2f} | {b['decode_gbs']:.2f} | "
                         f"{b['pack_decode_gbs']:.2f} | {b['device_gbs']:.2f} | "
                         f"{b['numpy_gbs']:.2f} |")
    return lines


def event_lines(train):
    """The control plane's events of each ``control`` run, a line each."""
    runs = [r for r in train if r["hook"] == "control"]
    if not runs:
        return []
    lines = ["Control plane events (every rank logs the same):", ""]
    for r in runs:
        kinds = ", ".join(f"{e['kind']} at step {e['step']}" for e in r["events"]) or "none"
        lines.append(f"- {r['procs']} processes: {kinds}")
    return lines + [""]
