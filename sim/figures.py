"""``make figures``: README's figure blocks, rewritten from the reports' JSON.

A figure block is the text between two markers in README.md::

    <!-- figure:NAME:begin -->
    ...
    <!-- figure:NAME:end -->

one block per report (:data:`FIGURES`: summary, route, envelope, bench,
training, pilots, hierarchy, ddp).  Each block is rewritten from its report's
JSON under ``build/reports`` and states the command that makes that JSON.
A block whose JSON is absent is left as it is, and the tool says which it
skipped; text outside the blocks is never touched.

    python -m neuron_fabric.sim.figures [--readme README.md] [--reports build/reports]
"""

import dataclasses
import json
import pathlib
import re
import statistics
import sys

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import DEFAULTS, TOP_MODULE
from neuron_fabric.contract.paths import REPO, REPORTS
from neuron_fabric.experiments.ddp import tables as ddp_tables
from neuron_fabric.models.commtime import PAPER_GPT2XL_MS
from neuron_fabric.synth import summary as hw_summary
from neuron_fabric.synth.report import PAPER, TARGETS

__all__ = ["Figure", "FIGURES", "BLOCK", "render", "update", "main"]

#: One figure block: ``<!-- figure:NAME:begin -->``, its body, ``<!-- figure:NAME:end -->``.
BLOCK = re.compile(r"(<!-- figure:(?P<name>[\w-]+):begin -->\n)(?P<body>.*?)"
                   r"(<!-- figure:(?P=name):end -->)", re.S)


@dataclasses.dataclass(frozen=True)
class Figure:
    """A README block: the JSON files it is made from (under the reports
    folder), the command that writes them, and the function that turns the
    loaded JSON (``{file name: data}``) into the block's Markdown lines."""
    files: tuple
    command: str
    render: object


# -- small formatting helpers ---------------------------------------------------------

def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    return lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def _pm(mean, std):
    return f"{mean:.2f} ± {std:.2f}"


def _span(values, fmt="{:.2f}"):
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else \
        f"{fmt.format(lo)}–{fmt.format(hi)}"


def _stats(per_seed, key):
    """Mean and sample standard deviation (ddof 1; 0 for one seed) over seeds."""
    values = [r[key] for r in per_seed.values()]
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


# -- the blocks -----------------------------------------------------------------------

def _summary(data):
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


def _route(data):
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
    return lines + _table(["design", "LINE_BITS", "Fmax by seed (MHz)", "median",
                           "LUT4 / flip-flops"], out)


def _envelope(data):
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
    return lines + _table(["result", "paper", "ours"], rows)


def _bench(data):
    golden, runtime = data["golden_bench.json"], data["runtime_bench.json"]
    workers = sorted({r["workers"] for r in golden} | {r["workers"] for r in runtime})
    rows = []
    for w in workers:
        g = [r["gib_per_s"] for r in golden if r["workers"] == w]
        rt = [r for r in runtime if r["workers"] == w]
        rows.append([f"W {w}", _span(g) if g else "—",
                     _span([r["gb_per_s"] for r in rt]) if rt else "—",
                     _span([r["golden_gb_per_s"]["decode"] for r in rt], "{:.1f}") if rt else "—",
                     _span([r["golden_gb_per_s"]["transform"] for r in rt], "{:.1f}") if rt else "—"])
    mib = {r["mib"] for r in golden}
    lines = [f"One core; the golden model on {'/'.join(map(str, sorted(mib)))} MiB of "
             "512-bit lines, every low-bit mode (best of 3); the gradient runtime's step "
             "through the device model, GB/s of FP32 payload (64 MiB a step):", ""]
    return lines + _table(["workers", "golden model (GiB/s)", "runtime step (GB/s)",
                           "golden decode alone (GB/s)", "golden read transform alone (GB/s)"], rows)


def _training(data):
    t = data["training.json"]
    e = t["experiments"]

    def acc(exp, policy, enc="negative"):
        row = e[exp]["policies"][policy]
        row = row.get(enc, row["negative"])
        return _pm(row["accuracy_mean"], row["accuracy_std"])

    def both(exp, policy):
        """Accuracy under the contract's packing / abstaining zeros."""
        return f"{acc(exp, policy)} / {acc(exp, policy, 'abstain')}"

    adm = e["admission"]["policies"]
    paper = {p: adm[p]["negative"] for p in adm}
    cos = t["table5"]["pairs-hard"]["batch16"]["0.3"]
    ratio = t["table5_ratio"]["pairs-hard"]

    def cosines(agg):
        return "; ".join(" / ".join(f"{cos[f'{agg}/{enc}'][g]:.3f}"
                                    for enc in ("negative", "abstain"))
                         for g in ("backbone", "head"))

    split, ablation = "gbinary-backbone+fp32-head", "gbinary-backbone+fp32-head@low-bit-lr"
    rows = [
        ["Fig. 4, easy task: FP32; G-Binary; G-Ternary", "within 2 points of FP32 (CIFAR-10)",
         f"{acc('convergence', 'fp32')}; {both('convergence', 'gbinary')}; "
         f"{both('convergence', 'gternary')} (digits)"],
        ["Fig. 5, hard task: FP32; G-Binary; G-Ternary; SignOfMean",
         f"{paper['fp32']['paper_accuracy_mean']:.2f}; {paper['gbinary']['paper_accuracy_mean']:.2f}"
         f"; {paper['gternary']['paper_accuracy_mean']:.2f}; — (CIFAR-100)",
         f"{acc('boundary', 'fp32')}; {both('boundary', 'gbinary')}; "
         f"{both('boundary', 'gternary')}; {acc('boundary', 'signofmean')} (`pairs-hard`)"],
        ["Table 5, same gradients at 30%: G-Binary cosine, backbone; head",
         ".723; .174 (CIFAR-100, own trajectories)",
         f"{cosines('gbinary')} (ceiling cos(sgn(m), m): {cos['signofmean']['backbone']:.3f}; "
         f"{cos['signofmean']['head']:.3f})"],
        ["Table 5: G-Ternary / G-Binary cosine, global", f"{ratio['paper']['global']:.3f}",
         f"{ratio['negative']['global']:.3f} / {ratio['abstain']['global']:.3f} "
         f"(√(2/3) = {ratio['sqrt(2/3)']:.3f})"],
        ["Table 6, G-Binary backbone + FP32 head: accuracy at measured traffic",
         f"{paper[split]['paper_accuracy_mean']:.2f} at {paper[split]['paper_traffic_ratio']:.4f}",
         f"{both('admission', split)} at {paper[split]['traffic_ratio']:.4f}"],
        ["Table 6 ablation: the FP32 head at the low-bit rate",
         f"{paper[ablation]['paper_accuracy_mean']:.2f}", both("admission", ablation)],
    ]
    seeds = {k: ", ".join(map(str, v["seeds"])) for k, v in e.items()}
    lines = [("QUICK SMOKE RUN, not results. " if t.get("quick") else "")
             + f"Test accuracy (%), mean ± std (seeds {seeds['convergence']} on the easy task, "
             f"{seeds['boundary']} on the hard task), under the contract's packing of a zero / "
             "with zeros abstaining; every low-bit gradient through the gradient runtime and "
             "the device model; cosines: contract's packing / abstaining:", ""]
    return lines + _table(["result", "paper", "ours"], rows)


#: The paper's pilots (section 8, Fig. 6, CIFAR-10/100 and ResNet-18): the
#: recovery trace's low-bit steps, traffic against FP32 and final accuracy
#: (mean and std, %); the split its live loop chose.
PAPER_PILOTS = {"recovery": (0.8111, 0.214, 90.87, 1.04),
                "ladder": "G-Ternary backbone + FP32 head"}


def _split_name(modes):
    return " + ".join(f"{m} {g}" for g, m in modes.items())


def _pilots(data):
    p = data["pilots.json"]
    rec, ladder, late = p.get("recovery", {}), p.get("ladder", {}), p.get("late", {})

    def acc(per_seed):
        return _pm(*(100 * x for x in _stats(per_seed, "final_accuracy")))

    def trio(per_seed):
        return (f"{100 * _stats(per_seed, 'low_bit_share')[0]:.2f}% / "
                f"{_stats(per_seed, 'traffic_ratio')[0]:.3f}x / {acc(per_seed)}%")

    share, traffic, a, s = PAPER_PILOTS["recovery"]
    rows = []
    if "gbinary-default" in rec:
        rows.append(["recovery from a device fault, G-Binary-default: low-bit steps / traffic / accuracy",
                     f"{100 * share:.2f}% / {traffic:.3f}x / {_pm(a, s)}%",
                     trio(rec["gbinary-default"])])
    if "fp32-default" in rec:
        rows.append(["recovery, FP32-default (admission)", "—", trio(rec["fp32-default"])])
    refs = [t for t in ("always-fp32", "always-gbinary") if t in rec]
    if refs:
        rows.append(["recovery references: " + " / ".join(refs) + ", accuracy",
                     "within run-to-run variation",
                     " / ".join(acc(rec[t]) + "%" for t in refs)])
    if "live ladder" in ladder:
        live = ladder["live ladder"]
        chosen = "; ".join(sorted({_split_name(r["modes"][-1]) for r in live.values()}))
        fixed = [f"{t} {acc(v)}%" for t, v in ladder.items() if t != "live ladder"]
        rows.append(["live ladder on the hard task: split chosen (every seed's)",
                     PAPER_PILOTS["ladder"],
                     f"{chosen}: {acc(live)}% at {_stats(live, 'traffic_ratio')[0]:.3f}x"
                     + (f" (fixed splits: {', '.join(fixed)})" if fixed else "")])
    if late:
        rows.append(["late mode update: accuracy at delay k = "
                     + " / ".join(t.split()[-1] for t in late) + " steps", "—",
                     " / ".join(f"{100 * _stats(v, 'final_accuracy')[0]:.1f}%"
                                for v in late.values())])
    noise = p.get("label-noise", {})
    if noise:
        rows.append(["label-noise control (FP32 cannot fix it): always-FP32 / always-G-Binary / "
                     "G-Binary-default, accuracy", "—",
                     " / ".join(acc(noise[t]) + "%" for t in
                                ("always-fp32", "always-gbinary", "gbinary-default") if t in noise)])
    sections = [p[k] for k in ("recovery", "label-noise", "ladder", "late") if k in p]
    seeds = sorted({s for pilot in sections for per_seed in pilot.values() for s in per_seed})
    lines = [f"Device model, W 8, 512-bit lines, seeds {', '.join(seeds)}; accuracy is the "
             "final test accuracy, mean ± std; traffic the measured bytes up over FP32's:", ""]
    return lines + _table(["pilot", "paper", "ours"], rows)


def _hierarchy(data):
    h = data["hierarchy.json"]
    lines = []
    settings = h.get("training") or []
    if settings:
        schemes = list(dict.fromkeys(s for tr in settings for s in tr["schemes"]))
        rows = []
        for s in schemes:
            row = [next(tr["schemes"][s]["label"] for tr in settings if s in tr["schemes"])]
            for tr in settings:
                r = tr["schemes"].get(s)
                row.append(_pm(r["accuracy_mean"], r["accuracy_std"]) if r else "—")
            rows.append(row)
        lines += [("QUICK SMOKE RUN, not results. " if h.get("quick") else "")
                  + "Training at 64 virtual workers (8 controllers x 8 workers), test accuracy "
                  "mean ± std (%):", ""]
        lines += _table(["scheme"] + [f"{tr['batch']} examples a worker" for tr in settings],
                        rows)
    t = h.get("timing")
    if t:
        ns = sorted({r["controllers"] for r in t["ring"]})
        ns = [n for n in ns if n in (8, 64)] or ns[-1:]
        rows = [[f"`{s}`"] + [f"{1e3 * r['seconds']:.2f}" for n in ns for r in t["ring"]
                       if r["scheme"] == s and r["controllers"] == n]
                for s in dict.fromkeys(r["scheme"] for r in t["ring"])]
        lines += ["" if lines else None, f"Ring All-Reduce of {t['n']:.3g} coordinates among N "
                  f"controllers of W {t['workers']} workers (ms; schemes as in docs/hierarchy.md):", ""]
        lines += _table(["scheme"] + [f"N {n}" for n in ns], rows)
    return [x for x in lines if x is not None]


def _ddp(data):
    d = data["ddp.json"]
    train, speed, base = ddp_tables.by_kind(d["rows"])
    procs = sorted({r["procs"] for r in train})
    lines = [("QUICK SMOKE RUN, not results. " if d.get("quick") else "")
             + f"The digits task under torchrun, {train[0]['steps'] if train else 0} steps, "
             f"seed 0, {' / '.join(map(str, procs))} processes on 127.0.0.1 (load average "
             f"{d.get('load_average', float('nan')):.1f} at the end; times move with the "
             "machine, accuracies and bytes are exact reruns):", ""]
    lines += ddp_tables.table(train, base) + [""]
    lines += ddp_tables.event_lines(train)
    lines += ddp_tables.speed_lines(speed, d.get("bench"))
    return lines


#: Every figure block, by name.
FIGURES = {
    "summary": Figure(("summary.json",), "make summary", _summary),
    "route": Figure(("route.json",), "make route", _route),
    "envelope": Figure(("envelope.json",), "make envelope", _envelope),
    "bench": Figure(("golden_bench.json", "runtime_bench.json"), "make bench", _bench),
    "training": Figure(("training.json",), "make train", _training),
    "pilots": Figure(("pilots.json",), "make pilots", _pilots),
    "hierarchy": Figure(("hierarchy.json",), "make hierarchy", _hierarchy),
    "ddp": Figure(("ddp.json",), "make ddp", _ddp),
}


def render(name, reports):
    """The body of block ``name`` (ending in a newline) from the JSON under
    ``reports``, or None when one of its files is absent."""
    fig = FIGURES[name]
    paths = [pathlib.Path(reports) / f for f in fig.files]
    if not all(p.is_file() for p in paths):
        return None
    data = {p.name: json.loads(p.read_text()) for p in paths}
    made = ", ".join(f"`build/reports/{f}`" for f in fig.files)
    return "\n".join([f"`{fig.command}` → {made}", ""] + fig.render(data)) + "\n"


def update(text, reports):
    """``(new text, updated, skipped)``: every figure block of ``text``
    rewritten from ``reports``; ``skipped`` maps a block left as it was to
    the reason."""
    updated, skipped = [], {}

    def one(m):
        name = m["name"]
        if name not in FIGURES:
            skipped[name] = "no such figure"
            return m[0]
        body = render(name, reports)
        if body is None:
            missing = [f for f in FIGURES[name].files if not (pathlib.Path(reports) / f).is_file()]
            skipped[name] = f"no {', '.join(missing)} (run `{FIGURES[name].command}`)"
            return m[0]
        updated.append(name)
        return m[1] + body + m[4]

    return BLOCK.sub(one, text), updated, skipped


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.sim.figures",
                        description=__doc__.splitlines()[0])
    ap.add_argument("--readme", default=str(REPO / "README.md"), help="file to rewrite")
    ap.add_argument("--reports", default=str(REPORTS), help="folder of the reports' JSON")
    args = ap.parse_args(argv)
    path = pathlib.Path(args.readme)
    text = path.read_text()
    opened = len(re.findall(r"<!-- figure:[\w-]+:begin -->", text))
    new, updated, skipped = update(text, args.reports)
    if opened != len(updated) + len(skipped):
        ap.error(f"{path}: a figure block's begin marker has no matching end marker")
    if new != text:
        path.write_text(new)
    for name in updated:
        print(f"updated {name}")
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
