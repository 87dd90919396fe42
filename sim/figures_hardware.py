"""The README's hardware figure blocks (``sim/figures.py``): the silicon
summary, the routed frequencies, the timing envelope and the golden model's
throughput, each from its report's JSON."""

import statistics

from neuron_fabric.contract.facts import DEFAULTS, TOP_MODULE
from neuron_fabric.models.commtime import PAPER_GPT2XL_MS
from neuron_fabric.sim.figure_format import span, table
from neuron_fabric.synth import summary as hw_summary
from neuron_fabric.synth.report import PAPER, TARGETS

__all__ = ["summary", "route", "envelope", "bench"]


def summary(data):
    s = data["summary.json"]
    c = next(iter(s["configurations"].values()))
    lines = [f"{c['line_bits']} bits, WORKERS {c['workers']}, STAGES {c['stages']}; the top "
             f"`{TOP_MODULE}` around the full-profile core (REGIONS {DEFAULTS['regions']}, "
             f"MAX_OUTSTANDING {DEFAULTS['max_outstanding']}); one ECP5 route, seed {s['seed']}"
             + (" (smoke: no timing-driven placement)" if s.get("smoke") else "") + ":", ""]
    lines += hw_summary.table(s["figures"], c["line_bits"], s["seed"]).splitlines()
    lines += ["", f"The paper's figures are its datapath's (Table 7). Measured in "
              f"{s['seconds']:.0f} s of the summary's steps (2 jobs)."]
    return lines


def route(data):
    rows = data["route.json"]
    groups = {}
    for r in rows:
        if r["workers"] != DEFAULTS["workers"] or r["stages"] != DEFAULTS["stages"]:
            continue
        key = (r["module"] == TOP_MODULE, r["profile"], r["line_bits"])
        groups.setdefault(key, []).append(r)
    out = []
    for (top, profile, line_bits), rs in sorted(groups.items()):
        rs = sorted(rs, key=lambda r: r["seed"])
        f = [r["fmax_mhz"] for r in rs]
        out.append([("top, " if top else "core, ") + f"{profile} profile", line_bits,
                    " / ".join(f"{x:.1f}" for x in f), f"**{statistics.median(f):.1f}**",
                    f"{rs[0]['lut4']:,} / {rs[0]['ff']:,}"])
    lines = [f"ECP5 out of context (LFE5U-85F, CABGA381, speed 6), WORKERS "
             f"{DEFAULTS['workers']}, STAGES {DEFAULTS['stages']}; Fmax at each seed and the "
             f"median (the core's targets: {TARGETS['fmax_512']:.0f} MHz at 512 bits, "
             f"{TARGETS['fmax_every_width']:.0f} at the other widths; the paper's datapath: "
             + ", ".join(f"{v} MHz at {k} bits" for k, v in sorted(PAPER["fmax_mhz"].items()))
             + "):", ""]
    return lines + table(["design", "LINE_BITS", "Fmax by seed (MHz)", "median",
                           "LUT4 / flip-flops"], out)


def envelope(data):
    e = data["envelope.json"]
    p = e["paper"]

    def pct(x):
        return f"hidden ({x:.3f})" if x < 0.1 else f"{x:.2f}"

    def rng(v):
        if isinstance(v, list):
            return pct(v[0]) if abs(v[1] - v[0]) < 0.005 else f"{pct(v[0])}–{pct(v[1])}"
        return pct(v)

    rows = [["1-request stream", rng(p["single_stream_pct"]), rng(e["single_stream_pct"])],
            ["1–8 request streams", rng(p["streams_1_8_pct"]), rng(e["streams_1_8_pct"])],
            ["full LLC miss", rng(p["full_llc_miss_pct"]), rng(e["full_llc_miss_pct"])],
            ["scale-out 1–8 stacks, healthy", rng(p["scaleout_healthy_pct"]),
             rng(e["scaleout_healthy_pct"])],
            ["scale-out 1–8 stacks, congested", "hidden–1.11", rng(e["scaleout_congested_pct"])]]
    g = e["allreduce_ms"].get("GPT-2 XL", {})
    keys = ("G-Binary (CXL-side)", "G-Ternary (CXL-side)")
    if all(k in g for k in keys):
        rows.append(["GPT-2 XL All-Reduce, G-Binary / G-Ternary (ms)",
                     " / ".join(f"{PAPER_GPT2XL_MS[k]:.2f}" for k in keys),
                     " / ".join(f"{g[k]:.2f}" for k in keys)])
    for profile, c in sorted(e.get("closed_stages", {}).items()):
        if c.get("stages") and "full_llc_miss_pct" in c:
            rows.append([f"{profile} profile's core at STAGES {c['stages']} (fewest with "
                         "positive 2 GHz slack), full LLC miss", "—",
                         rng(c["full_llc_miss_pct"])])
    lines = ["Exposed overhead of the five-cycle datapath (%), the paper's defaults:", ""]
    return lines + table(["result", "paper", "ours"], rows)


def bench(data):
    golden, runtime = data["golden_bench.json"], data["runtime_bench.json"]
    workers = sorted({r["workers"] for r in golden} | {r["workers"] for r in runtime})
    rows = []
    for w in workers:
        g = [r["gib_per_s"] for r in golden if r["workers"] == w]
        rt = [r for r in runtime if r["workers"] == w]
        rows.append([f"W {w}", span(g) if g else "—",
                     span([r["gb_per_s"] for r in rt]) if rt else "—",
                     span([r["golden_gb_per_s"]["decode"] for r in rt], "{:.1f}") if rt else "—",
                     span([r["golden_gb_per_s"]["transform"] for r in rt], "{:.1f}") if rt else "—"])
    mib = {r["mib"] for r in golden}
    lines = [f"One core; the golden model on {'/'.join(map(str, sorted(mib)))} MiB of "
             "512-bit lines, every low-bit mode (best of 3); the gradient runtime's step "
             "through the device model, GB/s of FP32 payload (64 MiB a step):", ""]
    return lines + table(["workers", "golden model (GiB/s)", "runtime step (GB/s)",
                           "golden decode alone (GB/s)", "golden read transform alone (GB/s)"], rows)
