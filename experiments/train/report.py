"""Reports of the training experiments: ``training.json``, ``training.md``
and plots, each table with the paper's figures beside ours.

``training.json`` keys (accuracies in percent, over the seeds; std with
``ddof = 1``):

* ``experiments.<convergence|boundary|admission>.policies.<policy>``:
  ``label``, ``accuracy_mean``, ``accuracy_std``, ``accuracies``,
  ``traffic_ratio`` (measured payload ratio to FP32), ``round_trip_ratio``;
  admission rows add ``accounting_ratio`` (the paper's per-element
  accounting, 1.58 bits for G-Ternary, on our model's parameter counts),
  ``resnet18_traffic_ratio`` (the same on ResNet-18's), ``paper_accuracy_mean``,
  ``paper_accuracy_std``, ``paper_traffic_ratio``;
* ``experiments.diagnostics.<task>.<policy>``: ``global``, ``backbone``,
  ``head`` cosines, mean over seeds, and ``paper`` (Table 5's values);
* ``learning_rates.<task>.<aggregation>``, ``lr_trials``, ``setup``,
  ``seeds``, ``wall_seconds``.
"""

import json
import pathlib

import numpy as np

from neuron_fabric.experiments.train.catalogue import EXPERIMENTS
from neuron_fabric.experiments.train.models import GROUPS
from neuron_fabric.experiments.train.policies import AGGREGATIONS, POLICIES
from neuron_fabric.experiments.train.tasks import load_task
from neuron_fabric.models.traffic import (
    RESNET18_CIFAR100,
    TABLE6_PAPER,
    TABLE6_POLICIES,
    ParameterGroups,
    round_half_up,
    traffic_ratio,
)

__all__ = ["TABLE5_PAPER", "TABLE6_ACCURACY_PAPER", "summarize", "write"]

#: Paper Table 5 (epoch-20 cosines): our task -> the paper's data set it stands for.
TABLE5_PAPER = {
    "digits": ("CIFAR-10", {"gbinary": (0.505, 0.694, 0.531), "gternary": (0.415, 0.567, 0.435)}),
    "pairs": ("CIFAR-100", {"gbinary": (0.510, 0.723, 0.174), "gternary": (0.419, 0.591, 0.142)}),
}

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


def _runs_of(runs, task, policy):
    return sorted((r for r in runs if r["config"]["task"] == task and r["config"]["policy"] == policy),
                  key=lambda r: r["config"]["seed"])


def _mean_std(values):
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0


def _row(runs):
    accs = [100.0 * r["test"] for r in runs]
    mean, std = _mean_std(accs)
    total = runs[0]["traffic"]["total"]
    return dict(label=runs[0]["policy_label"], accuracy_mean=mean, accuracy_std=std,
                accuracies=accs, traffic_ratio=total["payload_ratio"],
                round_trip_ratio=total["round_trip_ratio"])


def summarize(runs, experiments):
    """The ``experiments`` part of ``training.json``."""
    out = {}
    for name, (task, policies) in experiments.items():
        rows = {p: _row(_runs_of(runs, task, p)) for p in policies}
        if name == "admission":
            for p, row in rows.items():
                paper = _table6_name(p)
                ours = ParameterGroups(task, _runs_of(runs, task, p)[0]["group_sizes"])
                row["accounting_ratio"] = traffic_ratio(ours, POLICIES[p].traffic_policy())
                row["resnet18_traffic_ratio"] = traffic_ratio(
                    RESNET18_CIFAR100, TABLE6_POLICIES[paper])
                row["paper_accuracy_mean"], row["paper_accuracy_std"] = TABLE6_ACCURACY_PAPER[paper]
                row["paper_traffic_ratio"] = TABLE6_PAPER[paper]
        out[name] = dict(task=task, policies=rows)
    diag = {}
    for task, (dataset, paper) in TABLE5_PAPER.items():
        diag[task] = {}
        for p, values in paper.items():
            mine = [r["diagnostics"] for r in _runs_of(runs, task, p)]
            diag[task][p] = {k: float(np.mean([d[k] for d in mine])) for k in ("global",) + GROUPS}
            diag[task][p]["paper"] = dict(zip(("global",) + GROUPS, values), dataset=dataset)
    out["diagnostics"] = diag
    return out


def _setup(runs):
    setup = {}
    for r in runs:
        c = r["config"]
        if c["task"] in setup:
            continue
        t = load_task(c["task"], 0)
        setup[c["task"]] = dict(classes=t.classes, image_shape=list(t.image_shape),
                                train=len(t.y_train), val=len(t.y_val), test=len(t.y_test),
                                group_sizes=r["group_sizes"], steps=c["steps"],
                                batch_per_worker=c["batch"], workers=c["workers"])
    return setup


# -- Markdown -------------------------------------------------------------------

def _pm(mean, std):
    return f"{mean:.2f} ± {std:.2f}"


def _accuracy_table(exp, fp32_key="fp32"):
    rows = exp["policies"]
    base = rows[fp32_key]["accuracy_mean"]
    out = ["| policy | test accuracy (%) | vs FP32 (points) | payload vs FP32 | round trip vs FP32 |",
           "|---|---:|---:|---:|---:|"]
    for p, r in rows.items():
        out.append(f"| {r['label']} | {_pm(r['accuracy_mean'], r['accuracy_std'])} | "
                   f"{r['accuracy_mean'] - base:+.2f} | {r['traffic_ratio']:.4f} | "
                   f"{r['round_trip_ratio']:.4f} |")
    return out


def _diagnostics_table(diag):
    out = ["| task (paper's data set) | policy | global ours / paper | backbone ours / paper | "
           "head ours / paper |", "|---|---|---:|---:|---:|"]
    for task, per in diag.items():
        for p, d in per.items():
            cells = " | ".join(f"{d[k]:.3f} / {d['paper'][k]:.3f}" for k in ("global",) + GROUPS)
            out.append(f"| {task} ({d['paper']['dataset']}) | {POLICIES[p].label} | {cells} |")
    return out


def _admission_table(exp):
    out = ["| policy | paper acc. (%) | ours acc. (%) | paper traffic | ours measured payload | "
           "ours round trip | ours, paper's accounting | ResNet-18 recomputed |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for p, r in exp["policies"].items():
        out.append(f"| {_table6_name(p)} | {_pm(r['paper_accuracy_mean'], r['paper_accuracy_std'])} | "
                   f"{_pm(r['accuracy_mean'], r['accuracy_std'])} | {r['paper_traffic_ratio']:.4f} | "
                   f"{r['traffic_ratio']:.4f} | {r['round_trip_ratio']:.4f} | "
                   f"{r['accounting_ratio']:.4f} | {round_half_up(r['resnet18_traffic_ratio']):.4f} |")
    return out


def _rates_table(rates, trials):
    out = ["| task | aggregation | grid | chosen (best validation accuracy, seed 0) |",
           "|---|---|---|---:|"]
    for task, per in rates.items():
        for a, lr in per.items():
            tried = [x for x in trials if x["task"] == task and x["aggregation"] == a]
            grid = ", ".join(f"{x['lr']:g}: {100 * x['val']:.1f}%" for x in tried) or \
                ", ".join(f"{v:g}" for v in AGGREGATIONS[a].lr_grid)
            out.append(f"| {task} | {a} | {grid} | {lr:g} |")
    return out


def _setup_table(setup):
    out = ["| task | classes | image | train / val / test | backbone / head parameters | "
           "steps | batch per worker × W |", "|---|---:|---|---|---|---:|---|"]
    for task, s in setup.items():
        g = s["group_sizes"]
        out.append(f"| {task} | {s['classes']} | {s['image_shape'][0]}×{s['image_shape'][1]} | "
                   f"{s['train']} / {s['val']} / {s['test']} | {g['backbone']:,} / {g['head']:,} | "
                   f"{s['steps']} | {s['batch_per_worker']} × {s['workers']} |")
    return out


def _head_share(data):
    sizes = data["setup"][data["experiments"]["admission"]["task"]]["group_sizes"]
    return sizes["head"] / (sizes["backbone"] + sizes["head"])


def markdown(data):
    """``training.md`` from the ``training.json`` dictionary."""
    e = data["experiments"]
    lines = [
        "# Training through NEURON-Fabric: ours beside the paper's",
        "",
        f"Generated by `make train` ({'QUICK SMOKE RUN, not results: ' if data['quick'] else ''}"
        f"seeds {', '.join(map(str, data['seeds']))}; {data['jobs']} processes; "
        f"wall time {data['wall_seconds'] / 60:.1f} min). Every low-bit gradient went through "
        "the gradient runtime and the device model (`host/runtime.py`, `host/device.py`). "
        "Accuracies are test-split top-1, mean ± std (ddof 1) over the seeds.",
        "",
        "## Setup", "", *_setup_table(data["setup"]), "",
        "Learning rates: each aggregation on every group, seed 0, chosen on the validation split "
        "(a split policy uses each group's aggregation's rate):", "",
        *_rates_table(data["learning_rates"], data["lr_trials"]), "",
        "## Convergence (paper Fig. 4): easy task, every policy", "",
        f"Paper: {FIG4_PAPER}. Ours (digits, 10 classes):", "",
        *_accuracy_table(e["convergence"]), "",
        "![convergence](training_convergence.png)", "",
        "## Boundary (paper Fig. 5): hard task, every policy", "",
        f"Paper: {FIG5_PAPER}. Ours (digit pairs, 100 classes):", "",
        *_accuracy_table(e["boundary"]), "",
        "![boundary](training_boundary.png)", "",
        "## Diagnostics (paper Table 5): cosine of the low-bit direction with the FP32 mean", "",
        "Each low-bit run's own direction against the FP32 mean of the same workers' gradients, "
        "averaged over 20 steps from 30% of training and over the seeds (paper: epoch 20).", "",
        *_diagnostics_table(e["diagnostics"]), "",
        "## Layer-aware admission (paper Table 6): hard task", "",
        "Measured payload: bytes the runtime wrote to the device over FP32's `W * n * 4` "
        "(G-Ternary moves the same sign lines as G-Binary; the paper counts 1.58 bits). "
        "Round trip adds the bytes read back. The paper's accounting (`models/traffic.py`: 32, 1 "
        "and 1.58 bits per element) on our model's parameter counts, and on "
        "ResNet-18/CIFAR-100's (our head is "
        f"{_head_share(data):.1%} of the parameters, ResNet-18's 0.46%).", "",
        *_admission_table(e["admission"]), "",
        "![admission](training_admission.png)", "",
    ]
    return "\n".join(lines)


# -- plots ------------------------------------------------------------------------

def _curves(path, runs, task, policies, title):
    import matplotlib  # deferred: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: matplotlib
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for p in policies:
        mine = _runs_of(runs, task, p)
        steps = [pt["step"] for pt in mine[0]["curve"]]
        acc = 100 * np.array([[pt["test"] for pt in r["curve"]] for r in mine])
        mean, std = acc.mean(axis=0), acc.std(axis=0)
        ax.plot(steps, mean, label=POLICIES[p].label)
        ax.fill_between(steps, mean - std, mean + std, alpha=0.2)
    ax.set_xlabel("step")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _admission_plot(path, exp):
    import matplotlib  # deferred: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: matplotlib
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for p, r in exp["policies"].items():
        ax.errorbar(r["traffic_ratio"], r["accuracy_mean"], yerr=r["accuracy_std"], fmt="o",
                    capsize=3, label=_table6_name(p))
    ax.set_xscale("log")
    ax.set_xlabel("measured gradient payload vs FP32")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("Layer-aware admission, hard task (paper Table 6)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(out, *, runs, rates, trials, seeds, quick, wall_seconds, jobs):
    """Write ``training.json``, ``training.md`` and the plots into ``out``; return the paths."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data = dict(quick=quick, seeds=list(seeds), jobs=jobs, wall_seconds=wall_seconds,
                setup=_setup(runs), learning_rates=rates, lr_trials=trials,
                experiments=summarize(runs, EXPERIMENTS))
    paths = [out / "training.json", out / "training.md", out / "training_convergence.png",
             out / "training_boundary.png", out / "training_admission.png"]
    paths[0].write_text(json.dumps(data, indent=1))
    paths[1].write_text(markdown(data))
    (task, policies) = EXPERIMENTS["convergence"]
    _curves(paths[2], runs, task, policies, "Convergence, easy task (paper Fig. 4)")
    (task, policies) = EXPERIMENTS["boundary"]
    _curves(paths[3], runs, task, policies, "Boundary, hard task (paper Fig. 5)")
    _admission_plot(paths[4], data["experiments"]["admission"])
    (out / "training_runs.json").write_text(json.dumps(runs))
    return paths
