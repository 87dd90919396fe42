"""``hierarchy.md``: the multi-hop report's tables (``make hierarchy``, see
:mod:`.report`)."""

from neuron_fabric.experiments.hierarchy.study import (REAL_BATCH, SYNTH_N, SYNTH_RHO, TASK,
                                                       TIME_BITS)
from neuron_fabric.host import hierarchy as hy

SCHEME_LABEL = {
    "exact": "exact counts", "mom": "majority of majorities (1-bit)",
    "mom-ternary": "majority of majorities (ternary)", "dq-sign": "DynamiQ-style vote sums",
    "dq-grad": "DynamiQ-style gradient sums", "signofmean": "sign of FP32 mean (reference)",
    "fp32": "FP32",
}


def _table(header, rows):
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
        ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def timed_label(scheme):
    """The label of a timed scheme."""
    return scheme_label(dict(scheme=scheme, bits=TIME_BITS if scheme.startswith("dq") else None))


def scheme_label(row):
    label = SCHEME_LABEL[row["scheme"]]
    return f"{label}, b = {row['bits']}" if row.get("bits") else label


def _hops(row):
    return " / ".join(f"{p:g}" + (f"+{m:g}" if m else "") for p, m in row["hop_bits"])


def _study_table(rows):
    out = _table(["hierarchy", "K", "n", "ties", "scheme", "disagree (all)",
                  "disagree (no tie)", "vs sign of mean", "cos to mean",
                  "bits/coord per hop (0..)", "sum"],
                 [[f"W {r['workers']}, fan-in {r['fanin']}, {r['hops']} hop(s)", r["total"],
                   r["n"], f"{100 * r['ties']:.1f}%", scheme_label(r),
                   f"{100 * r['disagreement']:.2f}%", f"{100 * r['disagreement_decided']:.2f}%",
                   f"{100 * r['disagreement_mean_sign']:.2f}%", f"{r['cosine']:.3f}",
                   _hops(r), f"{r['bits_per_coord']:.2f}"] for r in rows])
    return out


def hardware_table(hw):
    """Which hierarchies the exact counts fit: per hierarchy of ``hw``
    (``hierarchy.json``'s ``hardware``), the count widths per hop, whether
    b = 4 and b = 8 hold them, and the contract operand of each hop."""
    return _table(["hierarchy", "K", "exact count bits per hop (0..)", "b = 4 holds",
                   "b = 8 holds", "contract operand per hop (1..)"],
                  [[f"W {w}, fan-in {f}, {h} hop(s)", w * f ** h,
                    " / ".join(str(int(x)) for x in d["widths"]),
                    "yes" if d["b4"] else "no", "yes" if d["b8"] else "no",
                    "; ".join(f"hop {k}: " + (op or f"none ({why})")
                              for k, (op, why) in enumerate(zip(d["operands"], d["why"]), 1))]
                   for (w, f, h), d in ((tuple(map(int, k.split("-"))), v)
                                        for k, v in hw.items())])


def _timing_tables(t):
    ms = lambda s: f"{1e3 * s:.2f}"      # noqa: E731
    rings = sorted({r["controllers"] for r in t["ring"]})
    ring = _table(["scheme"] + [f"ring N={c} (ms)" for c in rings],
                  [[timed_label(s)] + [ms(r["seconds"]) for r in t["ring"] if r["scheme"] == s]
                   for s in dict.fromkeys(r["scheme"] for r in t["ring"])])
    trees = list(dict.fromkeys((r["fanin"], r["controllers"]) for r in t["tree"]))
    tree = _table(["scheme"] + [f"tree fan-in {f}, N={c} (ms)" for f, c in trees],
                  [[timed_label(s)] + [ms(r["seconds"]) for r in t["tree"] if r["scheme"] == s]
                   for s in dict.fromkeys(r["scheme"] for r in t["tree"])])
    return ring, tree, _traffic_table(t)


def _traffic_table(t, ring_n=8, tree_at=(8, 64)):
    """Bits per coordinate on each step (DynamiQ's accounting) and bytes
    per controller, ring of ``ring_n`` and one tree (the largest ring and
    the last tree timed when those were not)."""
    if ring_n not in {r["controllers"] for r in t["ring"]}:
        ring_n = max(r["controllers"] for r in t["ring"])
    if tree_at not in {(r["fanin"], r["controllers"]) for r in t["tree"]}:
        tree_at = (t["tree"][-1]["fanin"], t["tree"][-1]["controllers"])
    rows = []
    for s in dict.fromkeys(r["scheme"] for r in t["ring"]):
        ring = next(r for r in t["ring"] if r["scheme"] == s and r["controllers"] == ring_n)
        tree = next(r for r in t["tree"] if r["scheme"] == s
                    and (r["fanin"], r["controllers"]) == tree_at)
        half = len(ring["bits_per_step"]) // 2
        rows.append([timed_label(s),
                     " / ".join(f"{b:.3g}" for b in ring["bits_per_step"][:half]),
                     f"{ring['bits_per_step'][-1]:.3g}",
                     f"{ring['bytes_per_controller'] / 1e6:.1f}",
                     " / ".join(f"{b:.3g}" for b in tree["bits_per_level"]),
                     f"{tree['bytes_per_parent_link'] / 1e6:.1f}"])
    return _table(["scheme", f"ring N={ring_n}: reduce-scatter bits/coord per step",
                   "all-gather bits/coord", "MB sent per controller",
                   f"tree fan-in {tree_at[0]}, N={tree_at[1]}: bits/coord per level (up)",
                   "MB through the busiest parent link"], rows)


def _training_table(tr):
    fp32 = tr["schemes"]["fp32"]["accuracy_mean"]
    return _table(["scheme", "lr (val.)", "test accuracy (%)", "vs FP32 (points)",
                   "cos to FP32 mean"],
                  [[r["label"], f"{r['lr']:g}", f"{r['accuracy_mean']:.2f} ± {r['accuracy_std']:.2f}",
                    f"{r['accuracy_mean'] - fp32:+.2f}", f"{r['cosine']:.3f}"]
                   for r in tr["schemes"].values()])



def hop_total(row):
    return sum(row["hop_bits_top"])


def _sweep_table(rows):
    return _table(["hierarchy", "source", "scheme", "rounding", "b", "bits/coord on the top hop",
                   "disagree (no tie)", "vs sign of mean", "cos to mean"],
                  [[f"W {r['workers']} x {r['fanin']}^{r['hops']}", src, SCHEME_LABEL[r["scheme"]],
                    r["rounding"] or "", r["bits"] or "", f"{hop_total(r):.2f}",
                    f"{100 * r['disagreement_decided']:.2f}%",
                    f"{100 * r['disagreement_mean_sign']:.2f}%", f"{r['cosine']:.3f}"]
                   for src, rs in rows.items() for r in rs])


def markdown(r):
    lines = ["# Multi-hop aggregation: exact counts, majority of majorities, DynamiQ-style "
             "partial sums", "",
             f"{'Quick smoke run (not results). ' if r['quick'] else ''}"
             f"{'REDUCED training: ' + '; '.join(r['reduced']) + '. ' if r.get('reduced') else ''}"
             f"Generated by `make hierarchy` in {r['wall_seconds']:.0f} s "
             "(python -m neuron_fabric.experiments.hierarchy.report). "
             "Method and reading: docs/hierarchy.md.", "",
             "## Which hierarchies the exact counts fit", "",
             "Exact count widths per hop (hop 0: a worker's sign), whether every forwarded count "
             "fits b = 4 / b = 8 bits, and which contract operand carries each hop (a 32-bit "
             "count lane holds fan-in x b bits; COUNTS4 totals up to 120, COUNTS8 up to 1020).",
             ""]
    lines += hardware_table(r["hardware"])
    s = r["setup"]
    lines += ["", "## Study: real gradients", "",
              f"The harness's CNN on `{TASK}` after a {s['real_steps']}-step FP32 run "
              f"(W 8, validation accuracy {100 * s['real_val']:.1f}%); worker k's gradient on "
              f"{REAL_BATCH} training examples at those parameters; the first K of "
              f"{s['real_pool']} workers; n = {s['real_n']} coordinates (both groups). "
              f"{100 * s['real_zero']:.1f}% of the workers' gradient entries are exactly 0 "
              "(ReLU units and border pixels that two examples leave untouched); a 0 votes "
              "negative, as the sign lines pack it (> 0), which is why the majority sign "
              "and the sign of the mean disagree so often here. "
              "Ties: the exact vote is 0 when exactly half the workers are positive; "
              "'disagree (all)' counts a coordinate whose scheme sign differs (-1/0/+1 "
              "as values), 'no tie' the same over coordinates where the exact vote is not 0. "
              "Bits per coordinate per hop: payload+metadata, upward only.", ""]
    lines += _study_table(r["study"]["real"])
    lines += ["", "## Study: synthetic correlated Gaussian gradients", "",
              f"Synthetic, not from training: `synthetic_gradients(K, n, rho={SYNTH_RHO})`: "
              "a shared mean per coordinate (correlation rho between two workers), "
              f"log-normal scale per group of {hy.GROUP}; n = 2^24 / K within {SYNTH_N}.", ""]
    lines += _study_table(r["study"]["synthetic"])
    ring, tree, traffic = _timing_tables(r["timing"])
    t = r["timing"]
    lines += ["", "## Timing: All-Reduce among N controllers", "",
              f"{t['n']:.3g} coordinates, W {t['workers']} workers per controller, "
              "models/commtime.py's link (50 GB/s, 5 us per step); "
              "models/multihop.py. Ring: reduce-scatter with partial results that widen "
              "(exact) or stay b bits + metadata (DynamiQ-style), then all-gather of the "
              "result. Tree: whole messages stored and forwarded, no pipelining.", ""]
    lines += ring + [""] + tree + ["", "Traffic, bits per coordinate per step (payload + "
                                   "scale metadata, DynamiQ's accounting):", ""] + traffic
    if r.get("sweep"):
        lines += ["", "## Equal bits: DynamiQ-style sums at b = 1, 2, 3, 4, 8", "",
                  "Each hop's partial sums re-quantized to b bits (plus the 8-bit group and "
                  "16-bit super-group scales), with independent or the seed's correlated "
                  "rounding (`host/hierarchy.py`), on vote counts and on gradients, beside "
                  "exact counts (their width grows a hop) and majority of majorities "
                  "(1 or 1.58 bits). Plot: `hierarchy_bits.png`.", ""]
        lines += _sweep_table(r["sweep"])
    for tr in r.get("training") or []:
        lines += ["", f"## Training at 64 virtual workers (8 controllers x 8 workers), "
                  f"{tr['batch']} examples a worker", "",
                  f"`{tr['task']}`, {tr['steps']} steps, {tr['batch']} examples per worker and "
                  f"step ({64 * tr['batch']} a step), seeds {tr['seeds']}, test accuracy "
                  "mean ± std (ddof 1); " +
                  ("rates: the second of each grid, not selected. "
                   if any("no learning-rate" in x for x in r.get("reduced", ()))
                   else "rates chosen on the validation split (seed 0). ") +
                  "Cosine: the direction against the FP32 mean, 20 steps from 30% of the run.", ""]
        lines += _training_table(tr)
        lines += ["", "Rates tried (validation accuracy, seed 0):", ""]
        lines += _table(["scheme", "lr", "val (%)"],
                        [[x["scheme"], f"{x['lr']:g}", f"{100 * x['val']:.2f}"]
                         for x in tr["trials"]])
    lines += ["", "Plots: " + ", ".join(f"`{p}`" for p in r["plots"]), ""]
    return "\n".join(lines)
