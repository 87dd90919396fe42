"""``pilots_recovery.png`` and ``pilots_ladder_late.png``: the recovery
traces, and the live ladder beside the late mode update."""

from dataclasses import asdict

import numpy as np

from neuron_fabric.experiments.pilots.config import DEVICE_FAULT
from neuron_fabric.experiments.pilots.markdown import _stats
from neuron_fabric.experiments.plotting import pyplot, save
from neuron_fabric.experiments.train.models import GROUPS

__all__ = ["plot_recovery", "plot_ladder_and_late"]


def plot_recovery(results, path):
    """Per-epoch trace of each recovery trace (seed 0): loss per step, test
    accuracy, and each group's low-bit steps shaded."""
    plt = pyplot()
    traces = results["recovery"]
    fig, axes = plt.subplots(len(traces), 1, figsize=(8, 2.2 * len(traces)), sharex=True)
    colours = {"gbinary": "tab:orange", "gternary": "tab:green"}
    for ax, (trace, per_seed) in zip(np.atleast_1d(axes), traces.items()):
        r = per_seed[min(per_seed)]
        steps = np.arange(len(r["loss"]))
        for row, g in enumerate(GROUPS):
            for mode, colour in colours.items():
                on = np.array([ms[g] == mode for ms in r["modes"]])
                ax.fill_between(steps, row / len(GROUPS), (row + 1) / len(GROUPS), where=on,
                                color=colour, alpha=0.25, step="post", linewidth=0,
                                transform=ax.get_xaxis_transform(),
                                label=f"{g} {mode}" if trace == next(iter(traces)) else None)
        ax.plot(steps, r["loss"], color="tab:blue", linewidth=0.6, label="loss")
        ax2 = ax.twinx()
        ax2.plot([c["step"] for c in r["curve"]], [c["test"] for c in r["curve"]], "k.-",
                 linewidth=1, label="test acc.")
        for other in sorted(per_seed, key=int)[1:]:
            o = per_seed[other]
            ax2.plot([c["step"] for c in o["curve"]], [c["test"] for c in o["curve"]], "-",
                     color="grey", linewidth=0.5, alpha=0.6)
        ax2.set_ylim(0, 1)
        w = results.get("windows", {}).get("device_fault") or asdict(DEVICE_FAULT)
        ax.axvspan(w["start"], w["stop"], color="red", alpha=0.08)
        ax.set_title(f"{trace}: low-bit {100 * r['low_bit_share']:.1f}% of steps, "
                     f"traffic {r['traffic_ratio']:.3f}x, acc. {100 * r['final_accuracy']:.1f}%",
                     fontsize=9)
        ax.set_ylabel("loss")
    np.atleast_1d(axes)[0].legend(fontsize=6, loc="upper right", ncol=3)
    np.atleast_1d(axes)[-1].set_xlabel("step (shading: lower half backbone, upper half head "
                                       "on a low-bit mode; red: device fault window;\n"
                                       "black: seed 0's test accuracy, grey: the other seeds)")
    save(fig, path, dpi=110)


def plot_ladder_and_late(results, path):
    """Two panels: accuracy against traffic for the live ladder and the fixed
    splits (hard task), and accuracy and traffic against the delay k of a
    late mode update (easy task); mean and std over seeds."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for trace, per_seed in results.get("ladder", {}).items():
        acc, std = _stats(per_seed, "final_accuracy")
        traffic = _stats(per_seed, "traffic_ratio")[0]
        live = trace == "live ladder"
        left.errorbar(traffic, 100 * acc, yerr=100 * std, fmt="*" if live else "o",
                      markersize=12 if live else 6, capsize=3, label=trace)
    left.set_xscale("log")
    left.set_xlabel("traffic vs FP32 (measured payload)")
    left.set_ylabel("final test accuracy (%)")
    left.set_title("live ladder against fixed splits, hard task", fontsize=9)
    left.legend(fontsize=6)
    late = results.get("late", {})
    if late:
        ks = [int(t.split()[-1]) for t in late]
        acc = np.array([_stats(v, "final_accuracy") for v in late.values()])
        traffic = [_stats(v, "traffic_ratio")[0] for v in late.values()]
        right.errorbar(ks, 100 * acc[:, 0], yerr=100 * acc[:, 1], fmt="k.-", capsize=3,
                       label="accuracy")
        right.set_xlabel("mode write delayed by k steps")
        right.set_ylabel("final test accuracy (%)")
        other = right.twinx()
        other.plot(ks, traffic, "s--", color="tab:orange", label="traffic")
        other.set_ylabel("traffic vs FP32", color="tab:orange")
        right.set_title("late mode update in the loop, easy task", fontsize=9)
    save(fig, path, dpi=110)
