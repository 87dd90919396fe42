"""``make envelope``: tables, plots and ``envelope.json`` for the timing envelope.

Command line: ``python -m neuron_fabric.sim.envelope [--out DIR] [--quick]``.
Writes ``envelope.md``, ``envelope.json`` and ``envelope_*.png`` into DIR
(default ``build/reports``).
"""

import dataclasses
import json
import pathlib
import time

import numpy as np

from neuron_fabric.contract import paths
from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import PROFILES, STAGES_RANGE
from neuron_fabric.experiments.plotting import pyplot, save
from neuron_fabric.models import commtime
from neuron_fabric.models.envelope import scenarios
from neuron_fabric.models.envelope.params import ANCHOR, TOP_FRONT_END_CYCLES, ServiceParams
from neuron_fabric.synth import ge

__all__ = ["build", "main"]

_PARAM_SOURCES = {
    "workers": "paper (8 virtual workers)",
    "window": "assumption: the paper's 1-request stream",
    "line_bytes": "paper",
    "bandwidth_gib_s": "paper",
    "fixed_latency_ns": "paper",
    "llc_bytes": "paper",
    "llc_latency_ns": "assumption: typical server LLC hit latency",
    "llc_policy": "assumption: address-order sweeps under LRU",
    "footprint_per_worker_bytes": "paper (2 MiB/GPU)",
    "controller_ghz": "paper",
    "datapath_cycles": "paper (five-cycle datapath)",
    "port_cycles_per_line": "assumption: one 512-bit line per cycle per stack",
    "stacks": "paper default (one controller)",
    "interleave_bytes": "assumption: finest CXL 2.0 HDM interleave",
    "front_end_cycles": f"0 in the paper's model; {TOP_FRONT_END_CYCLES} for our RTL (measured "
                        "BYPASS read, docs/top.md)",
    "max_outstanding": "unlimited in the paper's model; 32 in our RTL",
    "request_cycles": "0 in the paper's model; 1 for our RTL",
}


def _fmt(x, nd=2):
    return f"{x:.{nd}f}"


def _pct(x):
    return "hidden (%.3f)" % x if x < scenarios.HIDDEN_PCT else _fmt(x)


def _range(values):
    return [min(values), max(values)]


def _rng(r):
    lo, hi = r
    return f"{_pct(lo)}–{_pct(hi)}" if abs(hi - lo) >= 0.005 else _pct(lo)


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _plot(path, title, xlabel, series, *, xlog=False, gate=None, ylabel="exposed overhead (%)",
          dashed=""):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for label, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o", label=label,
                linestyle="--" if dashed and dashed in label else "-")
    if gate is not None:
        ax.axhline(gate, color="k", linestyle="--", linewidth=1, label=f"{gate}% gate")
    if xlog:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, path, dpi=120)


def _bars(path, title, groups, series, ylabel):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    x = np.arange(len(groups))
    width = 0.8 / len(series)
    for i, (label, ys) in enumerate(series.items()):
        ax.bar(x + (i - (len(series) - 1) / 2) * width, ys, width, label=label)
    ax.set_xticks(x, groups, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, path, dpi=120)


def _params_section():
    rows = []
    for f in dataclasses.fields(ServiceParams):
        rows.append([f"`{f.name}`", getattr(ANCHOR, f.name), _PARAM_SOURCES[f.name]])
    derived = (f"Derived at the defaults: link gate {ANCHOR.link_cycles_per_line:.3f} cycles/line, "
               f"effective gate {ANCHOR.gate_cycles:.3f} cycles/line, unloaded miss round trip "
               f"{ANCHOR.miss_round_trip_cycles:.1f} cycles "
               f"({ANCHOR.miss_round_trip_cycles / ANCHOR.controller_ghz:.1f} ns), "
               f"datapath {ANCHOR.datapath_cycles} cycles = "
               f"{ANCHOR.datapath_cycles / ANCHOR.controller_ghz:.2f} ns.")
    return _table(["parameter", "default", "source"], rows) + "\n\n" + derived


def closing_stages(compute):
    """The STAGES at which each profile's core closes 2 GHz in the GE model.

    From ``build/reports/ge.json`` (``make ge``) when it has the rows; else,
    if ``compute``, from the same model run now on the configurations needed
    (line width and workers of the envelope's anchor).  See
    :func:`neuron_fabric.synth.ge.closing_stages`.
    """
    return ge.closing_stages(sorted(PROFILES), ANCHOR.line_bytes * 8, ANCHOR.workers,
                             compute=compute)


def _closed_rows(closing, batch):
    """``closing`` with the Table 4 results at each profile's closing STAGES."""
    depths = {p: c["stages"] for p, c in closing.items() if c["stages"]}
    at = scenarios.table4_at_depths(depths.values(), batch)
    return {p: dict(c, **at.get(c["stages"], {})) for p, c in closing.items()}


def build(out_dir, quick=False, closing=None):
    """Run every scenario, write the report files, return the JSON dict.

    ``closing`` is :func:`closing_stages`'s result; by default it is read
    from ``ge.json`` only (nothing is synthesised).
    """
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    batch = scenarios.Batch.make(quick)
    P = scenarios.PAPER
    t_all = time.perf_counter()

    t0, c0 = time.perf_counter(), time.process_time()
    t4 = scenarios.table4(batch)
    t4_wall, t4_cpu = time.perf_counter() - t0, time.process_time() - c0

    replay = scenarios.bucket_replay(batch=batch)
    bw = scenarios.sweep_bandwidth(batch=batch)
    lat = scenarios.sweep_latency(batch=batch)
    fp = scenarios.sweep_footprint(batch=batch)
    gpt2 = replay[("healthy", "GPT-2 XL")]
    # Step = forward (half the backward, by FLOPs) + backward + exposed tail.
    step_ms = gpt2["step_ms_bypass"] + 0.5 * gpt2["comm_ms_bypass"]
    tele = scenarios.sweep_telemetry(step_ms, batch=batch)
    anchor_pct = t4["full_llc_miss_pct"]
    closed = _closed_rows(closing_stages(False) if closing is None else closing, batch)
    comm = {m.name: commtime.allreduce_times_ms(m.params, anchor_pct) for m in scenarios.MODELS}

    streams = list(t4["streams_pct"].values())
    result = {
        "single_stream_pct": t4["single_stream_pct"],
        "streams_1_8_pct": _range(streams),
        "full_llc_miss_pct": anchor_pct,
        "scaleout_healthy_pct": _range(list(t4["scaleout_healthy"].values())),
        "scaleout_congested_pct": _range(list(t4["scaleout_congested"].values())),
        "streams_pct": {str(k): v for k, v in t4["streams_pct"].items()},
        "workers_own_footprint_pct": {str(k): v for k, v in t4["workers_own_footprint_pct"].items()},
        "scaleout_healthy_by_stacks": {str(k): v for k, v in t4["scaleout_healthy"].items()},
        "scaleout_congested_by_stacks": {str(k): v for k, v in t4["scaleout_congested"].items()},
        "replay": {f"{c}/{m}": v for (c, m), v in replay.items()},
        "replay_healthy_comm_increment_pct": _range(
            [v["comm_increment_pct"] for (c, _), v in replay.items() if c == "healthy"]),
        "replay_congested_comm_increment_pct": _range(
            [v["comm_increment_pct"] for (c, _), v in replay.items() if c == "congested"]),
        "sweep_bandwidth_pct": {f"window{w}/{b}GiB/s/{d}cyc": v for (w, b, d), v in bw.items()},
        "sweep_latency_pct": {f"{l}ns/{d}cyc": v for (l, d), v in lat.items()},
        "sweep_footprint": {f"{pol}/{r}": v for (pol, r), v in fp.items()},
        "telemetry_step_ms": step_ms,
        "telemetry": {f"{k}ms": v for k, v in tele.items()},
        "allreduce_ms": comm,
        "closed_stages": closed,
        "paper": P,
        "params": dataclasses.asdict(ANCHOR),
        "table4_seconds": {"wall": t4_wall, "cpu": t4_cpu},
        "quick": quick,
    }

    md = _markdown(result, t4, replay, bw, lat, fp, tele, comm, step_ms, closed)
    _figures(out, t4, replay, bw, lat, fp, tele, comm)
    result["report_seconds"] = time.perf_counter() - t_all
    md += (f"\n\nTable 4 reproduction: {t4_wall:.2f} s wall, {t4_cpu:.2f} s CPU on one core; "
           f"whole report {result['report_seconds']:.1f} s"
           f"{' (quick mode: small batches)' if quick else ''}.\n")
    (out / "envelope.md").write_text(md)
    (out / "envelope.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return result


def _markdown(r, t4, replay, bw, lat, fp, tele, comm, step_ms, closed):
    """The report's markdown, one section after another."""
    s = _intro()
    s += _table4_section(r, t4, replay)
    s.append(_closed_section(r, closed))
    s += _fig2_section(replay)
    s += _fig3ab_sections(bw, lat)
    s += _fig3cd_sections(fp, tele, step_ms)
    s.append(_rtl_section())
    s += _fig7_section(r, comm)
    return "\n".join(s)


def _intro():
    """Title, what the report measures, and the model's parameters."""
    return ["# Timing envelope of the low-bit datapath\n",
            "Generated by `make envelope` (`python -m neuron_fabric.sim.envelope`). "
            "Model: `sim/envelope/` (event-driven, deterministic); method and "
            "assumptions: `docs/envelope.md`.\n",
            "**Exposed overhead** = relative increase of the completion time of a fixed "
            "batch of line reads when every read passes the datapath (a low-bit mode) "
            "versus BYPASS, same traffic, in percent. Values below "
            f"{scenarios.HIDDEN_PCT}% are marked *hidden*: only the last read of the "
            "batch pays the datapath.\n",
            "## Parameters\n\n" + _params_section() + "\n"]


def _table4_section(r, t4, replay):
    """Table 4 beside the paper, where and why we differ, and the GPT-scale check."""
    P = scenarios.PAPER
    s = ["## Table 4: measured G-Binary datapath exposure\n"]
    rows = [
        ["1-request stream", _fmt(P["single_stream_pct"]), _pct(r["single_stream_pct"])],
        ["1–8 request streams", _rng(P["streams_1_8_pct"]), _rng(r["streams_1_8_pct"])],
        ["full LLC miss", _fmt(P["full_llc_miss_pct"]), _pct(r["full_llc_miss_pct"])],
        ["scale-out 1–8 stacks, healthy", _rng(P["scaleout_healthy_pct"]),
         _rng(r["scaleout_healthy_pct"])],
        ["scale-out 1–8 stacks, congested", "hidden–1.11", _rng(r["scaleout_congested_pct"])],
    ]
    s.append(_table(["result", "paper (%)", "ours (%)"], rows) + "\n")
    s.append(_table(["stacks", "healthy (%)", "congested (%)"],
                    [[k, _pct(t4["scaleout_healthy"][k]), _pct(t4["scaleout_congested"][k])]
                     for k in t4["scaleout_healthy"]]) + "\n")
    s.append(_table(["streams"] + [str(n) for n in t4["streams_pct"]],
                    [["sharing the 16 MiB anchor (%)"]
                     + [_fmt(v, 3) for v in t4["streams_pct"].values()],
                     ["own 2 MiB each, LLC filter (%)"]
                     + [_pct(v) for v in t4["workers_own_footprint_pct"].values()]]) + "\n")
    s.append(_table4_differences(r))
    s.append("The second row reads the paper's streams as workers with their own 2 MiB: up "
             "to four of them fit in the 8 MiB LLC, no read reaches the controller and "
             "nothing is exposed; from five on the sweep thrashes the LRU cache and every "
             "read pays d/RTT. The paper's 0.55% floor fits neither reading exactly.\n")
    s.append("GPT-scale sanity check (paper: All-Reduce window x 1.67%; here our healthy replay "
             "window x our anchor exposure):\n")
    paper_cycles = {"BERT-large": "0.78M", "GPT-2 XL": "3.4M", "GPT-3": "399M"}
    rows = []
    for m in scenarios.MODELS:
        v = replay[("healthy", m.name)]
        cyc = v["comm_ms_bypass"] * 1e-3 * ANCHOR.controller_ghz * 1e9 * r["full_llc_miss_pct"] / 100
        rows.append([m.name, _fmt(v["comm_ms_bypass"], 1), f"{cyc / 1e6:.2f}M", paper_cycles[m.name]])
    s.append(_table(["model", "our window (ms)", "our exposed cycles", "paper"], rows) + "\n")
    return s


def _table4_differences(r):
    """Where Table 4 differs from the paper's, and why."""
    rtt = ANCHOR.miss_round_trip_cycles
    ceiling = 100 * ANCHOR.datapath_cycles / (ANCHOR.fixed_cycles + ANCHOR.gate_cycles)
    return f"""Where we differ, and why:

- *Single stream* ({_fmt(r['single_stream_pct'])}% vs 1.11%): one read in flight pays the
  datapath once per round trip, so the overhead is d / RTT = 5 / {rtt:.0f} cycles. The round
  trip is 20 ns LLC lookup (our assumption) + 200 ns fixed latency + one gate interval; the
  paper's 1.11% corresponds to a 225 ns round trip, i.e. ~1% apart.
- *Full LLC miss* ({_fmt(r['full_llc_miss_pct'])}% vs 1.67%) and the top of the *1–8 streams*
  range (1.88%): for any latency-bound stream with a 2.5 ns datapath and a 200 ns fixed latency
  the overhead cannot exceed d / (fixed latency + gate) = {ceiling:.3f}%. The paper's 1.67% and
  1.88% therefore imply either an effective round trip of 150 ns and 133 ns (below the stated
  200 ns) or a datapath delay of 3.8–4.2 ns (7.5–8.5 cycles at 2 GHz), e.g. from clock-domain
  rounding in the gem5 set-up. Our model keeps the stated 200 ns and five 2 GHz cycles.
- *1–8 streams* (flat in our model): at 128 GiB/s eight single-read streams occupy eight
  1-cycle gate slots of every {rtt:.0f}-cycle round trip (~2% link load), so there is neither
  queueing to hide the datapath nor a way to expose more than d per read. The paper's spread
  (0.55–1.88%) needs per-read latency variation (for instance DRAM bank and row timing in
  gem5's DDR5-like back end), which a fixed-latency service model does not have.
- *Scale-out, healthy* (flat): one read in flight per worker is latency-bound at any stack
  count, so splitting the controller changes nothing; the paper reports 1.07–1.67%.
- *Scale-out, congested* (agrees in shape): with {scenarios.CONGESTED_WINDOW} reads in flight per
  worker one stack is gate-bound and hides the datapath; two or more stacks (each with its own
  128 GiB/s gate) remove the queue and the overlap with it, and the overhead returns to ~d/RTT.
  The paper's "hidden–1.11%".
"""


def _fig2_section(replay):
    """Fig. 2: the 32 MiB gradient-bucket replay."""
    s = ["## Fig. 2: 32 MiB gradient-bucket replay\n"]
    s.append(f"FP32 buckets of 32 MiB, read by 8 workers (each its 4 MiB share); healthy = "
             f"{scenarios.HEALTHY_REPLAY_WINDOW} reads in flight per worker (latency-bound, "
             f"~58% link load), congested = {scenarios.CONGESTED_WINDOW} (gate-bound). Buckets "
             "become ready evenly through a backward pass as long as the baseline "
             "communication and are sent one after another. Increment = extra time with the "
             "datapath, over the baseline communication window (first bucket ready to last "
             "done) and over the backward-plus-tail span.\n")
    rows = []
    for (cond, name), v in replay.items():
        rows.append([name, cond, v["buckets"], _fmt(v["comm_ms_bypass"], 1),
                     _pct(v["comm_increment_pct"]), _pct(v["step_increment_pct"]),
                     "1.25–1.65" if cond == "healthy" else "hidden"])
    s.append(_table(["model", "CXL", "buckets", "baseline comm (ms)", "comm increment (%)",
                     "span increment (%)", "paper (%)"], rows) + "\n")
    s.append("Burstiness does not raise the exposure: in the healthy case every bucket is "
             "latency-bound and pays d/RTT per read, so the increment equals the anchor "
             "value; the paper's 1.25–1.65% is above our ceiling for the reasons given "
             "under Table 4. Congested buckets hide the datapath completely.\n")
    return s


def _fig3ab_sections(bw, lat):
    """Fig. 3a (bandwidth x datapath depth) and Fig. 3b (fixed latency)."""
    s = ["## Fig. 3a: bandwidth x datapath depth (anchor, 2% gate)\n"]
    wins = sorted({w for w, _, _ in bw})
    bws = sorted({b for _, b, _ in bw})
    depths = sorted({d for _, _, d in bw})
    cols = [(w, d) for w in wins for d in depths]
    s.append(_table(["GiB/s"] + [f"{w} in flight, {d} cyc (%)" for w, d in cols],
                    [[b] + [_pct(bw[(w, b, d)]) for w, d in cols] for b in bws]) + "\n")
    s.append(f"Columns: reads in flight per worker (8 workers). The 5-cycle datapath stays "
             f"under the 2% gate everywhere (paper: same). 10 and 20 cycles exceed it wherever "
             f"the loop is latency-bound and are hidden once the reads in flight fill a round "
             f"trip (workers x window x gate interval >= RTT + d). With one read per worker that "
             f"happens only below ~{_crossing(bw, 1, 10)} GiB/s; with "
             f"{scenarios.HEALTHY_REPLAY_WINDOW} per worker (the healthy replay's depth) the "
             f"10-cycle datapath crosses the gate at ~{_crossing(bw, scenarios.HEALTHY_REPLAY_WINDOW, 10)} "
             "GiB/s, i.e. only at high bandwidth, which is the paper's observation. Above ~119 "
             "GiB/s the one-line-per-cycle response port, not the link, sets the gate, so 128 "
             "and 256 GiB/s agree.\n")
    s.append("## Fig. 3b: fixed access latency\n")
    lats = sorted({l for l, _ in lat})
    s.append(_table(["latency (ns)"] + [f"{d} cycles (%)" for d in depths],
                    [[l] + [_pct(lat[(l, d)]) for d in depths] for l in lats]) + "\n")
    s.append("Overhead falls as 1/RTT: longer fixed latency dilutes the datapath; the 5-cycle "
             "datapath never approaches the memory-service cost (paper: same conclusion).\n")
    return s


def _fig3cd_sections(fp, tele, step_ms):
    """Fig. 3c (footprint relative to the LLC) and Fig. 3d (late mode updates)."""
    s = ["## Fig. 3c: active footprint relative to LLC\n"]
    ratios = sorted({x for _, x in fp})
    pols = sorted({p for p, _ in fp})
    s.append(_table(["footprint / LLC"] + [f"{p}: miss frac, overhead (%)" for p in pols],
                    [[x] + [f"{fp[(p, x)]['miss_fraction']:.2f}, {_pct(fp[(p, x)]['pct'])}"
                            for p in pols] for x in ratios]) + "\n")
    s.append("Only reads that miss reach the controller. Under LRU with address-order sweeps "
             "the LLC holds all or nothing, so the exposure jumps to the anchor value once the "
             "footprint exceeds the LLC; with random replacement it grows with the miss "
             "fraction. Either way the full-LLC-miss point is the conservative case (paper: same).\n")
    s.append("## Fig. 3d: late mode-telemetry updates\n")
    s.append(f"The mode latch is cleared from G-Binary to BYPASS and the update arrives late; "
             f"reads accepted meanwhile still pass the datapath (anchor, latency-bound: worst "
             f"case). Step = our GPT-2 XL healthy replay span plus a forward pass of half the "
             f"backward: {step_ms:.1f} ms.\n")
    rows = [[k, f"{v['extra_ms']:.5f}", f"{v['pct_of_step']:.4f}"] for k, v in tele.items()]
    s.append(_table(["delay (ms)", "extra time (ms)", "% of step"], rows) + "\n")
    if 10.0 in tele:
        ten = tele[10.0]["extra_ms"]
        s.append(f"A 10 ms late update costs {ten:.3f} ms, i.e. the delay times "
                 f"d/(RTT+d). That is below the paper's 0.04% for steps longer than "
                 f"{ten / 0.0004:.0f} ms; our {step_ms:.0f} ms GPT-2 XL step is shorter than "
                 "that, so here it costs more than the paper's bound. The paper's step length "
                 "is not stated; the cost is linear in the delay and inverse in the step.\n")
    return s


def _fig7_section(r, comm):
    """Fig. 7: one All-Reduce by path, GPT-2 XL beside the paper, then every model."""
    s = ["## Fig. 7: one All-Reduce, by path\n"]
    s.append("Model and assumptions: `models/commtime.py` (8 GPUs, 50 GB/s network per "
             "GPU, 5 us per ring step, 128 GiB/s CXL link, write-then-read through the "
             "controller, bits per element from `neuron_fabric.models.traffic`, low-bit rows times "
             f"1 + our anchor exposure {_fmt(r['full_llc_miss_pct'])}%). Parameter counts: "
             + ", ".join(f"{m.name} {m.params:.3g}" + (f" (released checkpoint: {m.released})"
                                                      if m.released else "")
                         for m in scenarios.MODELS) + ".\n")
    g = comm["GPT-2 XL"]
    pp = commtime.PAPER_GPT2XL_MS
    rows = []
    for k, v in g.items():
        paper = pp.get(k)
        if paper is None and k.startswith("FP32"):
            paper = "87.31–228.00 (range)"
        rows.append([k, _fmt(v), paper if paper is not None else "—"])
    s.append("GPT-2 XL (1.5e9 parameters):\n\n" + _table(["path", "ours (ms)", "paper (ms)"], rows) + "\n")
    names = list(g)
    s.append(_table(["path"] + [m.name + " (ms)" for m in scenarios.MODELS],
                    [[k] + [_fmt(comm[m.name][k]) for m in scenarios.MODELS] for k in names]) + "\n")
    s.append("The paper's low end, 87.31 ms, equals 2 x 6 GB / 128 GiB/s exactly: FP32 written "
             "and read back over the CXL link. Its G-Binary and G-Ternary rows equal that time "
             "scaled by 1/32 and 1.58/32 and by 1.0167 (its 1.67% exposure); ours use our "
             "exposure, hence 0.5% lower. Its upper end (228.00 ms) is an FP32 ring over an "
             "unstated network (an effective 46 GB/s per GPU); ours assumes 50 GB/s. Our "
             "hardware stores G-Ternary as one sign bit per element and derives the zero gate "
             "on the read side, so in this project G-Ternary costs the G-Binary time; the "
             "1.58-bit row follows the paper's accounting.\n")
    s.append("What a read returns decides the rest. The paper's rows count a 1-bit read "
             "(\"G-Binary (CXL-side)\": 1 bit written and 1 bit read an element). Under "
             "today's contract a G-Binary read returns a W-bit lane an element (W = 8 for 8 "
             "workers: 1 + 8 bits, the row \"today's read\"); the packed result view of "
             "contract section 6 returns 2 bits an element (1 + 2 bits, the row \"packed "
             "view\"). The three rows are the same write at three read sizes.\n")
    return s


#: Table 4 rows of the closed-STAGES comparison: (result key, label).
_CLOSED_ROWS = (("single_stream_pct", "1-request stream"),
                ("streams_1_8_pct", "1–8 request streams"),
                ("full_llc_miss_pct", "full LLC miss"),
                ("scaleout_healthy_pct", "scale-out 1–8 stacks, healthy"),
                ("scaleout_congested_pct", "scale-out 1–8 stacks, congested"))


def _cell(value):
    return _rng(value) if isinstance(value, list) else _pct(value)


def _closed_section(r, closing):
    """Table 4 at the datapath depth each profile closes at 2 GHz."""
    closed = {p: c for p, c in closing.items() if c["stages"]}
    open_ = {p: c for p, c in closing.items() if not c["stages"]}
    P = scenarios.PAPER
    d = ANCHOR.datapath_cycles
    head = ("### At the STAGES each profile closes at 2 GHz\n\n"
            f"The paper's datapath takes {d} cycles at 2 GHz. In the gate-equivalent model "
            "(`make ge`: generic cells, 20 ps per gate level; "
            f"{ANCHOR.line_bytes * 8} bits, W {ANCHOR.workers}) each profile of our core has "
            "positive slack at 2 GHz from the STAGES below; the same envelope model with that "
            "many datapath cycles gives:\n")
    if not closing:
        return head + ("\nNot computed: no `ge.json` rows in this build folder "
                       "(`make ge`; `make envelope` computes the rows it needs).\n")
    order = sorted(closed)
    header = ["result", f"paper, {d} cycles (%)", f"ours, {d} cycles (%)"] + [
        f"{p} profile, {closed[p]['stages']} cycle{'s' * (closed[p]['stages'] > 1)} "
        f"({closed[p]['slack_ps_2ghz']:+.0f} ps) (%)" for p in order]
    rows = []
    for key, label in _CLOSED_ROWS:
        paper = "hidden–1.11" if key == "scaleout_congested_pct" else _cell(P[key])
        rows.append([label, paper, _cell(r[key])] + [_cell(closed[p][key]) for p in order])
    where = {"ge.json": "`build/reports/ge.json` (`make ge`)",
             "computed": "the GE model run by `make envelope` on the configurations it "
                         "needed (no `ge.json`)"}
    sources = " and ".join(sorted({where.get(c["source"], c["source"])
                                   for c in closing.values()}))
    never = "".join(f" The {p} profile has no positive slack up to STAGES "
                    f"{STAGES_RANGE[-1]} ({c['slack_ps_2ghz']:+.0f} ps there)."
                    for p, c in open_.items())
    return (head + "\n" + _table(header, rows) + "\n\n"
            f"STAGES and slack from {sources}. On a latency-bound stream the exposure is "
            "d / RTT, so it falls in proportion to the cycles the datapath takes." + never
            + "\n")


def _rtl_section():
    """The RTL-in-the-loop comparison, if ``make envelope-rtl`` has run."""
    head = ("## RTL in the loop\n\n`make envelope-rtl` runs the exported top under Verilator "
            "behind a latency- and bandwidth-gated AXI memory with the same traffic shapes "
            "and compares it with this model in cycles (`envelope_rtl.md`).")
    path = paths.BUILD / "reports" / "envelope_rtl.json"
    if not path.exists():
        return head + " It has not been run in this build folder.\n"
    rows = json.loads(path.read_text())["rows"]
    table = _table(["configuration", "RTL (%)", "model (%)", "rel. diff"],
                   [[r["name"], _fmt(r["rtl_pct"], 3), _fmt(r["model_pct"], 3),
                     f"{r['rel_diff']:.2%}"] for r in rows])
    return head + " Last run:\n\n" + table + "\n"


def _crossing(bw, window, depth, gate=2.0):
    """Lowest swept bandwidth at which ``depth`` exceeds the gate."""
    over = sorted(b for (w, b, d), v in bw.items() if w == window and d == depth and v > gate)
    return over[0] if over else "—"


def _figures(out, t4, replay, bw, lat, fp, tele, comm):
    P = scenarios.PAPER
    stacks = list(t4["scaleout_healthy"])
    _plot(out / "envelope_table4.png", "Table 4: exposure vs streams and stacks", "streams / stacks",
          {"streams (ours)": (list(t4["streams_pct"]), list(t4["streams_pct"].values())),
           "stacks, healthy (ours)": (stacks, list(t4["scaleout_healthy"].values())),
           "stacks, congested (ours)": (stacks, list(t4["scaleout_congested"].values())),
           "paper full LLC miss": ([1, 8], [P["full_llc_miss_pct"]] * 2)})
    names = [m.name for m in scenarios.MODELS]
    _bars(out / "envelope_fig2.png", "Fig. 2b: bucket replay, G-Binary increment", names,
          {"healthy (ours)": [replay[("healthy", n)]["comm_increment_pct"] for n in names],
           "congested (ours)": [replay[("congested", n)]["comm_increment_pct"] for n in names],
           "paper healthy, max": [P["replay_healthy_pct"][1]] * len(names)},
          "communication increment (%)")
    wins = sorted({w for w, _, _ in bw})
    bws = sorted({b for _, b, _ in bw})
    depths = sorted({d for _, _, d in bw})
    _plot(out / "envelope_fig3a.png", "Fig. 3a: bandwidth x datapath depth", "CXL bandwidth (GiB/s)",
          {f"{d} cycles, {w} in flight": (bws, [bw[(w, b, d)] for b in bws])
           for w in wins for d in depths},
          xlog=True, gate=P["datapath_gate_pct"], dashed=f"{scenarios.HEALTHY_REPLAY_WINDOW} in flight")
    lats = sorted({l for l, _ in lat})
    _plot(out / "envelope_fig3b.png", "Fig. 3b: fixed access latency", "fixed latency (ns)",
          {f"{d} cycles": (lats, [lat[(l, d)] for l in lats]) for d in depths},
          xlog=True, gate=P["datapath_gate_pct"])
    ratios = sorted({x for _, x in fp})
    _plot(out / "envelope_fig3c.png", "Fig. 3c: footprint / LLC", "active footprint / LLC capacity",
          {pol: (ratios, [fp[(pol, x)]["pct"] for x in ratios]) for pol in sorted({p for p, _ in fp})})
    if tele:
        ks = sorted(tele)
        _plot(out / "envelope_fig3d.png", "Fig. 3d: late mode update", "update delay (ms)",
              {"ours": (ks, [tele[k]["pct_of_step"] for k in ks]),
               "paper bound at 10 ms": ([ks[0], ks[-1]], [P["telemetry_10ms_pct_max"]] * 2)},
              xlog=True, ylabel="step cost (%)")
    _fig7(out / "envelope_fig7.png", comm["GPT-2 XL"])


def _fig7(path, times):
    plt = pyplot()
    paper = commtime.PAPER_GPT2XL_MS
    names = list(times)
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    ax.barh(names, [times[n] for n in names], color="tab:blue", label="ours")
    for i, n in enumerate(names):
        if n in paper:
            ax.plot(paper[n], i, "k|", markersize=14)
    lo, hi = paper["FP32 collectives"]
    ax.axvspan(lo, hi, color="tab:orange", alpha=0.2, label="paper FP32 range")
    ax.plot([], [], "k|", markersize=14, label="paper")
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("time of one All-Reduce (ms), GPT-2 XL")
    ax.tick_params(axis="y", labelsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    save(fig, path, dpi=120)


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.sim.envelope",
                        description="Timing-envelope report (Table 4, Fig. 2, 3, 7).")
    ap.add_argument("--out", default="build/reports", help="output folder (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="small batches (smoke test)")
    args = ap.parse_args(argv)
    r = build(args.out, quick=args.quick, closing=closing_stages(compute=not args.quick))
    t = r["table4_seconds"]
    print(f"Table 4 reproduction: {t['wall']:.2f} s wall, {t['cpu']:.2f} s CPU; "
          f"report {r['report_seconds']:.1f} s")
    for key in ("single_stream_pct", "streams_1_8_pct", "full_llc_miss_pct",
                "scaleout_healthy_pct", "scaleout_congested_pct"):
        print(f"  {key:24s} ours {r[key]}  paper {r['paper'][key]}")
    print(f"wrote {pathlib.Path(args.out) / 'envelope.md'}, envelope.json, envelope_*.png")
    return 0
