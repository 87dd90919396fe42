"""Reports of the training experiments: ``training.json``, ``training.md``
and plots, each table with the paper's figures beside ours.

``training.json`` keys (accuracies in percent, over the seeds; std with
``ddof = 1``):

* ``experiments.<convergence|boundary|admission|batch64>``: ``task``,
  ``batch``, ``policies.<policy>.<encoding>`` (``negative``, the contract's
  packing of a zero, or ``abstain``; FP32-only policies have ``negative``
  alone): ``label``, ``accuracy_mean``, ``accuracy_std``, ``accuracies``,
  ``val_mean``, ``traffic_ratio`` (measured payload ratio to FP32),
  ``round_trip_ratio``; admission rows add ``accounting_ratio`` (the
  paper's per-element accounting, 1.58 bits for G-Ternary, on our model's
  parameter counts), ``resnet18_traffic_ratio`` (the same on ResNet-18's),
  ``paper_accuracy_mean``, ``paper_accuracy_std``, ``paper_traffic_ratio``
  (the ablation rows: the paper's section 7 figures);
* ``table5.<task>.batch<b>.<point>.<row>.<global|backbone|head>``: Table 5
  on the same gradients (:mod:`.probe`), mean over the seeds' FP32 runs at
  ``point`` (fraction of training); rows ``<mode>/<encoding>``,
  ``signofmean`` (the ceiling ``cos(sgn(m), m)``), ``ternary-ceiling``;
  ``table5_ratio.<task>.<encoding>.<group>``: G-Ternary (fixed gate) over
  G-Binary at 30%, beside ``sqrt(2/3)`` and the paper's;
* ``zeros.<task>.batch<b>.<point>``: fraction of exact-zero gradient
  entries and of all-zero lanes per group;
* ``diagnostics_own_trajectory.<task>.<policy>``: each low-bit run's own
  direction against the FP32 mean of its own gradients (the old Table 5,
  different weights per policy), and ``paper``;
* ``learning_rates.<task>.<aggregation>``, ``lr_trials``, ``setup``,
  ``seeds``, ``wall_seconds``, ``full``, ``quick``.
"""

import json
import pathlib

import numpy as np

from neuron_fabric.experiments.train.catalogue import ENCODINGS, EXPERIMENTS
from neuron_fabric.experiments.train.models import GROUPS
from neuron_fabric.experiments.train.policies import POLICIES
from neuron_fabric.experiments.train.probe import PROBE_AT
from neuron_fabric.experiments.train.tasks import load_task
from neuron_fabric.models.traffic import (
    RESNET18_CIFAR100,
    TABLE6_PAPER,
    ParameterGroups,
    round_half_up,
    traffic_ratio,
)

__all__ = ["TABLE5_PAPER", "TABLE6_ACCURACY_PAPER", "summarize", "write"]

#: Paper Table 5 (epoch-20 cosines): our task -> the paper's data set it stands for.
TABLE5_PAPER = {
    "digits": ("CIFAR-10", {"gbinary": (0.505, 0.694, 0.531), "gternary": (0.415, 0.567, 0.435)}),
    "pairs-hard": ("CIFAR-100", {"gbinary": (0.510, 0.723, 0.174),
                                 "gternary": (0.419, 0.591, 0.142)}),
}
#: The ratio a fixed 2-of-3 gate costs a cosine: sqrt(2/3).
GATE_RATIO = (2 / 3) ** 0.5
#: The paper's section 7 ablation (head on FP32 at the low-bit rate).
ABLATION_PAPER = {"gbinary-backbone+fp32-head@low-bit-lr": (73.24, 0.56),
                  "gternary-backbone+fp32-head@low-bit-lr": (73.22, 0.31)}

#: Paper Table 6 accuracy (mean, std), by the policy names of traffic.TABLE6_POLICIES.
TABLE6_ACCURACY_PAPER = {
    "FP32 all": (74.45, 0.28),
    "G-Binary all": (62.33, 0.31),
    "G-Ternary all": (62.22, 0.64),
    "G-Binary backbone + FP32 head": (73.11, 0.11),
    "G-Ternary backbone + FP32 head": (73.04, 0.32),
    "FP32 backbone + G-Binary head": (72.46, 0.36),
    "FP32 backbone + G-Ternary head": (67.26, 0.30),
}

_PAPER_NAME = {"fp32": "FP32 all", "gbinary": "G-Binary all", "gternary": "G-Ternary all"}

#: What the paper reports for Fig. 4 and Fig. 5 (in its text; the figures' endpoints).
FIG4_PAPER = ("CIFAR-10/ResNet-18: G-Binary and G-Ternary within 2 points of FP32 "
              "and within 1 point of MajoritySignSGD")
FIG5_PAPER = ("CIFAR-100/ResNet-18: G-Binary and G-Ternary on every layer about 11.6 "
              "points below FP32 (Table 6: 62.33 / 62.22 against 74.45) and about 8 "
              "points below the sign-gradient references")


def _table6_name(policy):
    return _PAPER_NAME.get(policy, POLICIES[policy].label)


def _runs_of(runs, task, policy, encoding="negative", batch=16):
    return sorted((r for r in runs if r["config"]["task"] == task
                   and r["config"]["policy"] == policy
                   and r["config"].get("encoding", "negative") == encoding
                   and r["config"]["batch"] == batch),
                  key=lambda r: r["config"]["seed"])


def _mean_std(values):
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0


def _row(runs):
    accs = [100.0 * r["test"] for r in runs]
    mean, std = _mean_std(accs)
    total = runs[0]["traffic"]["total"]
    return dict(label=runs[0]["policy_label"], accuracy_mean=mean, accuracy_std=std,
                accuracies=accs, val_mean=float(np.mean([100.0 * r["val"] for r in runs])),
                traffic_ratio=total["payload_ratio"],
                round_trip_ratio=total["round_trip_ratio"])


def _encodings(policy):
    return ENCODINGS if POLICIES[policy].low_bit else ENCODINGS[:1]


def _paper_admission(row, policy, runs, task):
    if policy in ABLATION_PAPER:
        row["paper_accuracy_mean"], row["paper_accuracy_std"] = ABLATION_PAPER[policy]
        base = policy.split("@")[0]
        row["paper_traffic_ratio"] = TABLE6_PAPER[_table6_name(base)]
        traffic = POLICIES[base].traffic_policy()
    else:
        paper = _table6_name(policy)
        row["paper_accuracy_mean"], row["paper_accuracy_std"] = TABLE6_ACCURACY_PAPER[paper]
        row["paper_traffic_ratio"] = TABLE6_PAPER[paper]
        traffic = POLICIES[policy].traffic_policy()
    ours = ParameterGroups(task, runs[0]["group_sizes"])
    row["accounting_ratio"] = traffic_ratio(ours, traffic)
    row["resnet18_traffic_ratio"] = traffic_ratio(RESNET18_CIFAR100, traffic)


def summarize(runs, experiments):
    """The ``experiments`` part of ``training.json``."""
    out = {}
    for name, exp in experiments.items():
        rows = {}
        for p in exp.policies:
            rows[p] = {}
            for enc in _encodings(p):
                mine = _runs_of(runs, exp.task, p, enc, exp.batch)
                rows[p][enc] = _row(mine)
                if name == "admission":
                    _paper_admission(rows[p][enc], p, mine, exp.task)
        seeds = sorted({r["config"]["seed"] for r in runs if r["config"]["task"] == exp.task
                        and r["config"]["batch"] == exp.batch and r["config"]["policy"] in
                        exp.policies})
        out[name] = dict(task=exp.task, batch=exp.batch, seeds=seeds, policies=rows)
    return out


def own_trajectory(runs, experiments):
    """The old Table 5: each low-bit run's own cosines, mean over seeds."""
    diag = {}
    for task, (dataset, paper) in TABLE5_PAPER.items():
        if not any(e.task == task for e in experiments.values()):
            continue
        diag[task] = {}
        for p, values in paper.items():
            mine = [r["diagnostics"] for r in _runs_of(runs, task, p)]
            if not mine:
                continue
            diag[task][p] = {k: float(np.mean([d[k] for d in mine])) for k in ("global",) + GROUPS}
            diag[task][p]["paper"] = dict(zip(("global",) + GROUPS, values), dataset=dataset)
    return diag


def same_gradients(runs):
    """``(table5, zeros)``: the FP32 runs' probes, mean over seeds, by task,
    batch and probe point."""
    table5, zeros = {}, {}
    for r in runs:
        c = r["config"]
        if c["policy"] != "fp32" or not r.get("probes"):
            continue
        for point, rows in r["probes"].items():
            cell = table5.setdefault(c["task"], {}).setdefault(f"batch{c['batch']}", {}) \
                .setdefault(point, {})
            for row, cols in rows.items():
                for col, v in cols.items():
                    cell.setdefault(row, {}).setdefault(col, []).append(v)
    for task, per_batch in table5.items():
        for b, per_point in per_batch.items():
            for point, rows in per_point.items():
                for row, cols in rows.items():
                    rows[row] = {col: float(np.mean(v)) for col, v in cols.items()}
                zeros.setdefault(task, {}).setdefault(b, {})[point] = rows.pop("zeros")
    return table5, zeros


def gate_ratios(table5, point=f"{PROBE_AT[1]:g}"):
    """G-Ternary (fixed gate) over G-Binary per task, encoding and group, at ``point``."""
    out = {}
    for task, per_batch in table5.items():
        rows = per_batch.get("batch16", {}).get(point)
        if not rows:
            continue
        out[task] = {}
        for enc in ENCODINGS:
            gb, gt = rows.get(f"gbinary/{enc}"), rows.get(f"gternary/{enc}")
            if gb and gt:
                out[task][enc] = {k: gt[k] / gb[k] if gb[k] else float("nan")
                                  for k in ("global",) + GROUPS}
        if task in TABLE5_PAPER:
            pb, pt = TABLE5_PAPER[task][1]["gbinary"], TABLE5_PAPER[task][1]["gternary"]
            out[task]["paper"] = dict(zip(("global",) + GROUPS, (t / b for t, b in zip(pt, pb))))
        out[task]["sqrt(2/3)"] = GATE_RATIO
    return out


def _setup(runs):
    setup = {}
    for r in runs:
        c = r["config"]
        key = f"{c['task']} batch{c['batch']}"
        if key in setup:
            continue
        t = load_task(c["task"], 0)
        sizes = r["group_sizes"]
        setup[key] = dict(task=c["task"], classes=t.classes, image_shape=list(t.image_shape),
                          train=len(t.y_train), val=len(t.y_val), test=len(t.y_test),
                          group_sizes=sizes,
                          head_share=sizes["head"] / (sizes["backbone"] + sizes["head"]),
                          model=dict(channels=list(c["channels"]), hidden=c["hidden"],
                                     wide=c.get("wide", 0)),
                          steps=c["steps"], batch_per_worker=c["batch"], workers=c["workers"])
    return setup


# -- Markdown -------------------------------------------------------------------

def _pm(mean, std):
    return f"{mean:.2f} ± {std:.2f}"


def _enc_cells(per_enc, key="accuracy_mean", std="accuracy_std"):
    return [(_pm(per_enc[e][key], per_enc[e][std]) if e in per_enc else "=") for e in ENCODINGS]


def _accuracy_table(exp):
    rows = exp["policies"]
    base = rows["fp32"]["negative"]["accuracy_mean"]
    head = " | ".join(f"test acc. (%), {e}" for e in ENCODINGS)
    out = [f"| policy | {head} | vs FP32 (points), {' / '.join(ENCODINGS)} | payload vs FP32 |",
           "|---|" + "---:|" * (len(ENCODINGS) + 2)]
    for p, per in rows.items():
        delta = " / ".join(f"{per[e]['accuracy_mean'] - base:+.2f}" if e in per else "="
                           for e in ENCODINGS)
        out.append(f"| {per['negative']['label']} | {' | '.join(_enc_cells(per))} | {delta} | "
                   f"{per['negative']['traffic_ratio']:.4f} |")
    return out


_T5_ROWS = (("gbinary", "G-Binary"), ("gternary", "G-Ternary, fixed 2-of-3 gate"),
            ("gternary-rotating", "G-Ternary, rotating gate"),
            ("gternary-margin", "G-Ternary, MARGIN gate"),
            ("gbinary-margin", "G-Binary MARGIN (a/W)"))
_T5_ENCODINGS = ("negative", "abstain", "alternate")


def _table5_table(task, rows, dataset, paper):
    cols = ("global",) + GROUPS
    out = ["| aggregation | encoding | " + " | ".join(cols) + " | paper (" + dataset + ") |",
           "|---|---|" + "---:|" * (len(cols) + 1)]
    for key, label in _T5_ROWS:
        for e in _T5_ENCODINGS:
            r = rows.get(f"{key}/{e}")
            if r is None:
                continue
            ref = paper.get(key)
            ref = " / ".join(f"{v:.3f}" for v in ref) if ref and e == "negative" else ""
            out.append(f"| {label} | {e} | " + " | ".join(f"{r[c]:.3f}" for c in cols) +
                       f" | {ref} |")
    for key, label in (("signofmean", "SignOfMean = ceiling cos(sgn(m), m)"),
                       ("ternary-ceiling", "ternary ceiling: sgn(m) under the 2-of-3 gate")):
        if key in rows:
            out.append(f"| {label} | - | " + " | ".join(f"{rows[key][c]:.3f}" for c in cols) +
                       " | |")
    return out


def _points_table(per_point):
    pts = sorted(per_point, key=float)
    out = ["| aggregation / encoding | " + " | ".join(
        f"{100 * float(p):.0f}%: global / backbone / head" for p in pts) + " |",
        "|---|" + "---:|" * len(pts)]
    for key in ("gbinary/negative", "gbinary/abstain", "gternary/negative", "gternary/abstain",
                "signofmean"):
        if all(key in per_point[p] for p in pts):
            out.append(f"| {key} | " + " | ".join(
                " / ".join(f"{per_point[p][key][c]:.3f}" for c in ("global",) + GROUPS)
                for p in pts) + " |")
    return out


def _ratio_table(ratios):
    out = ["| task | encoding | global | backbone | head |", "|---|---|---:|---:|---:|"]
    for task, per in ratios.items():
        for e, r in per.items():
            if isinstance(r, dict):
                out.append(f"| {task} | {e} | " + " | ".join(f"{r[c]:.3f}" for c in
                                                         ("global",) + GROUPS) + " |")
        out.append(f"| {task} | sqrt(2/3) | {GATE_RATIO:.3f} | {GATE_RATIO:.3f} | "
                   f"{GATE_RATIO:.3f} |")
    return out


def _zeros_table(zeros):
    out = ["| task | batch per worker | point | exact zeros: global / backbone / head | "
           "all-zero lanes: global / backbone / head |", "|---|---:|---:|---|---|"]
    for task, per_batch in zeros.items():
        for b, per_point in per_batch.items():
            for p in sorted(per_point, key=float):
                z = per_point[p]
                out.append(f"| {task} | {b[5:]} | {100 * float(p):.0f}% | " +
                           " / ".join(f"{100 * z[f'{g}_zero']:.1f}%" for g in ("global",) + GROUPS)
                           + " | " + " / ".join(f"{100 * z[f'{g}_all_zero_lanes']:.1f}%"
                                                for g in ("global",) + GROUPS) + " |")
    return out


def _own_table(diag):
    out = ["| task (paper's data set) | policy | global ours / paper | backbone ours / paper | "
           "head ours / paper |", "|---|---|---:|---:|---:|"]
    for task, per in diag.items():
        for p, d in per.items():
            cells = " | ".join(f"{d[k]:.3f} / {d['paper'][k]:.3f}" for k in ("global",) + GROUPS)
            out.append(f"| {task} ({d['paper']['dataset']}) | {POLICIES[p].label} | {cells} |")
    return out


def _admission_table(exp):
    out = ["| policy | paper acc. (%) | ours, negative (%) | ours, abstain (%) | paper traffic | "
           "ours measured payload | ours, paper's accounting | ResNet-18 recomputed |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for p, per in exp["policies"].items():
        r = per["negative"]
        name = POLICIES[p].label if p in ABLATION_PAPER else _table6_name(p)
        cells = _enc_cells(per)
        out.append(f"| {name} | {_pm(r['paper_accuracy_mean'], r['paper_accuracy_std'])} | "
                   f"{cells[0]} | {cells[1]} | {r['paper_traffic_ratio']:.4f} | "
                   f"{r['traffic_ratio']:.4f} | {r['accounting_ratio']:.4f} | "
                   f"{round_half_up(r['resnet18_traffic_ratio']):.4f} |")
    return out


def rates_table(rates, trials, recorded=()):
    """Rows of the learning-rate table; the tasks of ``recorded`` took the
    rates ``make train-rates`` recorded."""
    out = ["| task | aggregation | tried (validation accuracy, seed 0) | chosen |",
           "|---|---|---|---:|"]
    for task, per in rates.items():
        for a, lr in per.items():
            tried = [x for x in trials if x["task"] == task and x["aggregation"] == a]
            grid = ", ".join(f"{x['lr']:g}: {100 * x['val']:.1f}%" for x in tried) or \
                ("(recorded by `make train-rates`: learning_rates.md)" if task in recorded
                 else "(no selection: the grid's middle)")
            out.append(f"| {task} | {a} | {grid} | {lr:g} |")
    return out


def _setup_table(setup):
    out = ["| task | classes | image | train / val / test | model (channels, wide, hidden) | "
           "backbone / head parameters (head share) | steps | batch per worker × W |",
           "|---|---:|---|---|---|---|---:|---|"]
    for s in setup.values():
        g, m = s["group_sizes"], s["model"]
        out.append(f"| {s['task']} | {s['classes']} | {s['image_shape'][0]}×{s['image_shape'][1]} | "
                   f"{s['train']} / {s['val']} / {s['test']} | {tuple(m['channels'])}, "
                   f"{m['wide']}, {m['hidden']} | {g['backbone']:,} / {g['head']:,} "
                   f"({100 * s['head_share']:.2f}%) | {s['steps']} | "
                   f"{s['batch_per_worker']} × {s['workers']} |")
    return out


def _table5_section(data):
    """The Table 5 diagnostics and exact-zero sections of ``training.md``
    (none when the run probed no gradients)."""
    t5 = data.get("table5", {})
    if not t5:
        return []
    lines = ["## Diagnostics (paper Table 5) on the same gradients", "",
             "At 10%, 30% and 60% of each FP32 run, the same per-worker gradients of "
             f"{data.get('probe_steps', 5)} consecutive steps go through every aggregation "
             "(each through its own runtime and device model); the cosine of each "
             "direction with the FP32 mean of those gradients, averaged over the steps and "
             "the seeds. No {-1, +1} vector beats SignOfMean's cosine (`|m|_1 / (sqrt(n) "
             "|m|_2)`, n the non-zero entries of m): it is the ceiling of a {-1, +1} "
             "direction (a direction with zeros, a tie or a gate, can exceed it).", ""]
    for task, per_batch in t5.items():
        dataset, paper = TABLE5_PAPER.get(task, ("-", {}))
        rows = per_batch.get("batch16", {}).get(f"{PROBE_AT[1]:g}")
        if rows:
            lines += [f"### {task}, 16 examples per worker, at 30% of training", "",
                      *_table5_table(task, rows, dataset, paper), ""]
        for b, per_point in per_batch.items():
            lines += [f"{task}, {b[5:]} examples per worker, along the run:", "",
                      *_points_table(per_point), ""]
    lines += ["G-Ternary (fixed gate) over G-Binary, same gradients, at 30%, beside "
              "sqrt(2/3) (what a fixed 2-of-3 mask costs a cosine) and the paper's "
              "Table 5 ratio:", "", *_ratio_table(data["table5_ratio"]), ""]
    lines += ["## Exact zeros in the gradients", "",
              "Fraction of the workers' gradient entries that are exactly 0, and of lanes "
              "(elements) where all W workers hold 0: under the contract's packing such a "
              "lane returns a = -W, a full negative step.", "",
              *_zeros_table(data["zeros"]), ""]
    return lines


def _admission_section(data, admission):
    """The layer-aware admission section (Table 6) of ``training.md``."""
    task = admission["task"]
    share = next(s["head_share"] for s in data["setup"].values() if s["task"] == task)
    return ["## Layer-aware admission (paper Table 6): hard task", "",
            "Measured payload: bytes the runtime wrote to the device over FP32's "
            "`W * n * 4` (G-Ternary moves the same sign lines as G-Binary, so its measured "
            "payload is G-Binary's; the paper counts 1.58 bits, the 'paper's accounting' "
            "column). The paper's accounting (`models/traffic.py`: 32, 1 and 1.58 bits "
            f"per element) on our parameter counts (head {100 * share:.2f}% of the "
            "parameters; ResNet-18/CIFAR-100's 0.46%), and on ResNet-18's. The last two "
            "rows are the paper's section 7 ablation: the head on FP32 aggregation at the "
            f"low-bit learning rate. Seeds {admission['seeds']}.", "",
            *_admission_table(admission), "",
            "![admission](training_admission.png)", ""]


def _seeds_by_task(experiments):
    """``0, 1, 2 on digits; 0, 1 on pairs-hard``: each task's seeds."""
    per = {}
    for exp in experiments.values():
        per.setdefault(exp["task"], exp["seeds"])
    return "; ".join(f"{', '.join(map(str, seeds))} on {task}" for task, seeds in per.items())


def markdown(data):
    """``training.md`` from the ``training.json`` dictionary."""
    e = data["experiments"]
    kind = "QUICK SMOKE RUN, not results: " if data["quick"] else \
        ("make train-full: " if data.get("full") else "make train: ")
    if data.get("reduced"):
        kind = f"a REDUCED run ({'; '.join(data['reduced'])}): "
    lines = [
        "# Training through NEURON-Fabric: ours beside the paper's",
        "",
        f"Generated by {kind}seeds {_seeds_by_task(e)}; {data['jobs']} "
        f"processes; wall time {data['wall_seconds'] / 60:.1f} min. Every low-bit gradient went "
        "through the gradient runtime and the device model (`host/runtime/`, "
        "`host/device.py`). Accuracies are test-split top-1, mean ± std (ddof 1) over the seeds. "
        "Each low-bit policy ran under two encodings of an exact zero gradient "
        "(`host/encoding.py`): *negative*, the contract's `g > 0` (a zero votes negative), and "
        "*abstain* (the zeros of an element cancel; the SIGN lane is the sign of the summed "
        "signs, 0 on a tie). FP32 and SignOfMean carry no bits (`=`: the same run).",
        "",
        "## Setup", "", *_setup_table(data["setup"]), "",
        "Learning rates, chosen on the validation split (seed 0; each encoding of a zero its "
        "own, `@abstain`; a split policy uses each group's aggregation's rate, the ablation "
        "the low-bit rate for its FP32 head; on `pairs-hard` a low-bit rate is chosen on the "
        "split policy, the head at FP32's rate, and `make train` takes the rates `make "
        "train-rates` recorded):", "",
        *rates_table(data["learning_rates"], data["lr_trials"], data.get("recorded_rates", ())), "",
    ]
    if "convergence" in e:
        lines += ["## Convergence (paper Fig. 4): easy task, every policy", "",
                  f"Paper: {FIG4_PAPER}. Ours (digits, 10 classes, seeds "
                  f"{e['convergence']['seeds']}):", "",
                  *_accuracy_table(e["convergence"]), "",
                  "![convergence](training_convergence.png)", ""]
    if "boundary" in e:
        lines += ["## Boundary (paper Fig. 5): hard task", "",
                  f"Paper: {FIG5_PAPER}. Ours ({e['boundary']['task']}, 100 classes, seeds "
                  f"{e['boundary']['seeds']}):", "",
                  *_accuracy_table(e["boundary"]), "",
                  "![boundary](training_boundary.png)", ""]
    lines += _table5_section(data)
    if data.get("diagnostics_own_trajectory"):
        lines += ["Each low-bit run's own cosine on its own trajectory (different weights per "
                  "policy, so not Table 5's comparison; kept for reference):", "",
                  *_own_table(data["diagnostics_own_trajectory"]), ""]
    if "admission" in e:
        lines += _admission_section(data, e["admission"])
    if "batch64" in e:
        lines += ["## 64 examples per worker (hard task)", "",
                  *_accuracy_table(e["batch64"]), ""]
    return "\n".join(lines)


# -- plots ------------------------------------------------------------------------

def _curves(path, runs, exp, title):
    import matplotlib  # deferred: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: matplotlib
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, p in enumerate(exp.policies):
        for enc, style in zip(_encodings(p), ("-", "--")):
            mine = _runs_of(runs, exp.task, p, enc, exp.batch)
            steps = [pt["step"] for pt in mine[0]["curve"]]
            acc = 100 * np.array([[pt["test"] for pt in r["curve"]] for r in mine])
            mean, std = acc.mean(axis=0), acc.std(axis=0)
            label = POLICIES[p].label + ("" if enc == "negative" else f" ({enc})")
            ax.plot(steps, mean, style, color=f"C{i}", label=label)
            ax.fill_between(steps, mean - std, mean + std, color=f"C{i}", alpha=0.12)
    ax.set_xlabel("step")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title + " (dashed: zeros abstain)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _admission_plot(path, exp):
    import matplotlib  # deferred: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: matplotlib
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, (p, per) in enumerate(exp["policies"].items()):
        for enc, marker in zip(ENCODINGS, "os"):
            if enc in per:
                r = per[enc]
                ax.errorbar(r["traffic_ratio"], r["accuracy_mean"], yerr=r["accuracy_std"],
                            fmt=marker, color=f"C{i}", capsize=3,
                            label=f"{r['label']}" + ("" if enc == "negative" else f" ({enc})"))
    ax.set_xscale("log")
    ax.set_xlabel("measured gradient payload vs FP32")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("Layer-aware admission, hard task (paper Table 6; squares: zeros abstain)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(out, *, runs, rates, trials, seeds, quick, wall_seconds, jobs, experiments=EXPERIMENTS,
          full=False, reduced=(), recorded=()):
    """Write ``training.json``, ``training.md`` and the plots into ``out``; return the paths
    (``recorded``: the tasks whose rates were recorded, not selected in this run)."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table5, zeros = same_gradients(runs)
    probe_steps = next((r["config"]["probe_steps"] for r in runs if r.get("probes")), None)
    data = dict(quick=quick, full=full, reduced=list(reduced), seeds=list(seeds), jobs=jobs,
                wall_seconds=wall_seconds, setup=_setup(runs), learning_rates=rates, lr_trials=trials,
                recorded_rates=list(recorded), experiments=summarize(runs, experiments), table5=table5,
                table5_ratio=gate_ratios(table5), zeros=zeros, probe_steps=probe_steps,
                diagnostics_own_trajectory=own_trajectory(runs, experiments))
    paths = [out / "training.json", out / "training.md"]
    paths[0].write_text(json.dumps(data, indent=1))
    paths[1].write_text(markdown(data))
    for name, title in (("convergence", "Convergence, easy task (paper Fig. 4)"),
                        ("boundary", "Boundary, hard task (paper Fig. 5)")):
        if name in experiments:
            paths.append(out / f"training_{name}.png")
            _curves(paths[-1], runs, experiments[name], title)
    if "admission" in experiments:
        paths.append(out / "training_admission.png")
        _admission_plot(paths[-1], data["experiments"]["admission"])
    (out / "training_runs.json").write_text(json.dumps(runs))
    return paths
