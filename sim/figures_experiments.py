"""The README's experiment figure blocks (``sim/figures.py``): training,
the control-plane pilots, the multi-hop study, the DDP runs, the evidence and the
race, each from its report's JSON."""

from neuron_fabric.experiments.ddp import race_tables
from neuron_fabric.experiments.ddp import tables as ddp_tables
from neuron_fabric.experiments.hierarchy.tables import hardware_table
from neuron_fabric.sim.figure_format import pm, stats, table

__all__ = ["training", "pilots", "hierarchy", "hierarchy_lanes", "ddp", "evidence", "race"]


def training(data):
    t = data["training.json"]
    e = t["experiments"]

    def acc(exp, policy, enc="negative"):
        row = e[exp]["policies"][policy]
        row = row.get(enc, row["negative"])
        return pm(row["accuracy_mean"], row["accuracy_std"])

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
             "with zeros abstaining (an upper bound: one writer holds every worker's signs); "
             "every low-bit gradient through the gradient runtime and "
             "the device model; cosines: contract's packing / abstaining:", ""]
    return lines + table(["result", "paper", "ours"], rows)


#: The paper's pilots (section 8, Fig. 6, CIFAR-10/100 and ResNet-18): the
#: recovery trace's low-bit steps, traffic against FP32 and final accuracy
#: (mean and std, %); the split its live loop chose.
PAPER_PILOTS = {"recovery": (0.8111, 0.214, 90.87, 1.04),
                "ladder": "G-Ternary backbone + FP32 head"}


def _split_name(modes):
    return " + ".join(f"{m} {g}" for g, m in modes.items())


def pilots(data):
    p = data["pilots.json"]
    rec, ladder, late = p.get("recovery", {}), p.get("ladder", {}), p.get("late", {})

    def acc(per_seed):
        return pm(*(100 * x for x in stats(per_seed, "final_accuracy")))

    def trio(per_seed):
        return (f"{100 * stats(per_seed, 'low_bit_share')[0]:.2f}% / "
                f"{stats(per_seed, 'traffic_ratio')[0]:.3f}x / {acc(per_seed)}%")

    share, traffic, a, s = PAPER_PILOTS["recovery"]
    rows = []
    if "gbinary-default" in rec:
        rows.append(["recovery from a device fault, G-Binary-default: low-bit steps / traffic / accuracy",
                     f"{100 * share:.2f}% / {traffic:.3f}x / {pm(a, s)}%",
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
        rows.append([f"live ladder on `{p.get('ladder_task', 'pairs')}` (the hard task without "
                     "`pairs-hard`'s corruptions): split chosen (every seed's)",
                     PAPER_PILOTS["ladder"],
                     f"{chosen}: {acc(live)}% at {stats(live, 'traffic_ratio')[0]:.3f}x"
                     + (f" (fixed splits: {', '.join(fixed)})" if fixed else "")])
    for r in p.get("fault_rows", []):
        if r["trace"] == "gbinary-default":
            delay = "—" if r["mean_delay"] is None else f"{r['mean_delay']:.1f} steps"
            rows.append([f"fault '{r['fault']}' from step {r['start']} to the end, "
                         "G-Binary-default: detected / mean delay / false alarms / accuracy / "
                         "traffic", "—",
                         f"{r['detected']} of {r['seeds']} / {delay} / {r['false_alarms']} / "
                         f"{pm(r['accuracy_mean'], r['accuracy_std'])}% / "
                         f"{r['traffic_ratio']:.3f}x"])
    if late:
        rows.append(["late mode update: accuracy at delay k = "
                     + " / ".join(t.split()[-1] for t in late) + " steps", "—",
                     " / ".join(f"{100 * stats(v, 'final_accuracy')[0]:.1f}%"
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
    return lines + table(["pilot", "paper", "ours"], rows)


def hierarchy(data):
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
                row.append(pm(r["accuracy_mean"], r["accuracy_std"]) if r else "—")
            rows.append(row)
        lines += [("QUICK SMOKE RUN, not results. " if h.get("quick") else "")
                  + "Training at 64 virtual workers (8 controllers x 8 workers), test accuracy "
                  "mean ± std (%):", ""]
        lines += table(["scheme"] + [f"{tr['batch']} examples a worker" for tr in settings],
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
        lines += table(["scheme"] + [f"N {n}" for n in ns], rows)
    return [x for x in lines if x is not None]


def hierarchy_lanes(data):
    """docs/hierarchy.md's block: which hierarchies the exact counts fit
    (``hierarchy.json``'s ``hardware``, worked from the contract's count
    widths; no training)."""
    return ["Exact count widths per hop (hop 0: a worker's sign), whether every forwarded "
            "count fits b = 4 / b = 8 bits, and the contract operand that carries each hop:",
            ""] + hardware_table(data["hierarchy.json"]["hardware"])


def ddp(data):
    d = data["ddp.json"]
    train, speed, base = ddp_tables.by_kind(d["rows"])
    procs = sorted({r["procs"] for r in train})
    lines = [("QUICK SMOKE RUN, not results. " if d.get("quick") else "")
             + f"The digits task under torchrun, {train[0]['steps'] if train else 0} steps, "
             f"seed 0, {' / '.join(map(str, procs))} processes on 127.0.0.1 (load average "
             f"{d.get('load_average', float('nan')):.1f} at the end; times move with the "
             "machine, accuracies and bytes are exact reruns):", ""]
    lines += ddp_tables.table(train, base, d.get("cpus")) + [""]
    lines += ddp_tables.event_lines(train)
    lines += ddp_tables.speed_lines(speed, d.get("bench"))
    return lines


#: How the "Does it work?" block names the encodings of a zero.
_ENCODING_NAMES = {"negative": "packing", "alternate": "alternate", "random": "random",
                   "abstain": "abstain (upper bound)"}


def _interval(d, fmt="{:+.2f}"):
    return f"{fmt.format(d['mean'])} [{fmt.format(d['lo'])}, {fmt.format(d['hi'])}]"


def evidence(data):
    """The "Does it work?" block: each claim of the paper beside ours, one
    row per claim and batch, every encoding of a zero in the row."""
    e = data["evidence.json"]
    groups = {}
    for c in e["claims"]:
        groups.setdefault((c["claim"], c["batch"]), []).append(c)
    rows = []
    for (claim, batch), cs in groups.items():
        cosine = claim.startswith("Table 5")
        fmt = "{:.3f}" if cosine else "{:+.2f}"
        ours = "; ".join((f"{_ENCODING_NAMES[c['encoding']]} " if c["encoding"] else "")
                         + _interval(c["ours"], fmt) for c in cs if c["ours"])
        verdicts = list(dict.fromkeys(c["verdict"] for c in cs))
        verdict = verdicts[0] if len(verdicts) == 1 else "; ".join(
            f"{_ENCODING_NAMES[c['encoding']]}: {c['verdict']}" for c in cs)
        rows.append([claim, str(batch or "—"), cs[0]["paper_text"], ours or "—", verdict,
                     cs[0]["reason"]])
    sizes = e["group_sizes"]["pairs-hard"]
    head = sizes["head"] / (sizes["head"] + sizes["backbone"])
    interior = sum(t["interior"] for t in e["tuning"])
    zeros = ", ".join(f"{z:.1%} at {b}" for b, z in e.get("zeros", {}).items())
    fp32 = ", ".join(f"{pm(r['fp32']['accuracy_mean'], r['fp32']['accuracy_std'])}% at {b}"
                     for b, r in e["rows"].get("pairs-hard", {}).items() if "fp32" in r)
    parts = e.get("parts") or []

    def took(q):
        return (f"{q['wall_seconds'] / 60:.0f} min, {q['jobs']} "
                f"process{'es' if q['jobs'] > 1 else ''}")

    wall = (f"Run in {len(parts)} parts: " + "; ".join(
        f"batch {', '.join(map(str, q['batches']))}{' and the pilot' if q['pilots'] else ''} "
        f"{took(q)}" for q in parts) if len(parts) > 1 else f"Wall time {took(e)}")
    lines = [("QUICK SMOKE RUN, not results. " if e.get("quick") else "")
             + f"`pairs-hard` (100 classes) on a normalised CNN (group normalisation; head "
             f"{head:.2%} of {sizes['head'] + sizes['backbone']:,} parameters, ResNet-18's "
             f"share), {e['steps']['pairs-hard']} steps; `digits` for Fig. 4; W 8; examples "
             f"per worker {', '.join(map(str, e['batches']))}; seeds "
             f"{', '.join(map(str, e['seeds']))}. Each row's rate chosen on the validation "
             f"split of seed {e['tune_seed']} at its own batch size ({interior} of "
             f"{len(e['tuning'])} chosen rates interior to the rates tried). Ours: the per-seed "
             "paired difference against FP32 in points (Table 5: the cosine; the ablation: "
             "against its split), mean [95% t-interval]; \"agrees\" only where the paper's "
             "figure lies inside it. Encodings of a zero: packing (the contract's g > 0), "
             "alternate and random (worker-local), abstain (upper bound: one writer holds "
             "every worker's signs; software majority vote with sgn(0) = 0). "
             + (f"FP32's test accuracy on `pairs-hard`, mean ± std: {fp32}. " if fp32 else "")
             + f"Exact zeros in the FP32 gradients: {zeros}. {wall}:", ""]
    lines += table(["claim", "batch", "paper", "ours", "verdict", "regime / why"], rows)
    for r in e["pilots"].get("noise_rows", []):
        if r["trace"] == "gbinary-default":
            lines += ["", f"Negative control (label noise from step {r['start']}, which FP32 "
                      f"cannot fix): G-Binary-default − always-FP32 {_interval(r['vs_fp32'])} "
                      f"points; the Supervisor returned to FP32 in {r['detected']} of "
                      f"{r['seeds']} seeds (each a false alarm)."]
    return lines


def race(data):
    return race_tables.block(data["race.json"])
