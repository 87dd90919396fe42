"""``pilots.md``: the pilots' tables beside the paper's section 8 figures
(:func:`report`)."""

import numpy as np

from neuron_fabric.host.control import FP32

__all__ = ["PAPER", "report"]

#: The paper's section 8 figures.
PAPER = {
    "recovery": {"low_bit_share": 0.8111, "traffic_ratio": 0.214, "accuracy": (90.87, 1.04)},
    "ladder": {"backbone": "gternary", "head": FP32},
    "late_10ms_pct_max": 0.04,
}


def _stats(per_seed, key):
    """Mean and sample standard deviation (ddof 1, 0 for one seed) over seeds,
    as the training report gives them."""
    values = np.array([r[key] for r in per_seed.values()], dtype=float)
    return float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0


def _split_name(modes):
    return " + ".join(f"{m} {g}" for g, m in modes.items())


def _at(curve, step, key="test"):
    """Accuracy at ``step`` of a curve (None when not evaluated there)."""
    return next((c[key] for c in curve if c["step"] == step), None)


def _window_change(per_seed, window):
    """Mean test-accuracy change over the window (stop minus start), in points."""
    if window is None:
        return None
    deltas = [_at(r["curve"], window["stop"]) - _at(r["curve"], window["start"])
              for r in per_seed.values()
              if _at(r["curve"], window["start"]) is not None
              and _at(r["curve"], window["stop"]) is not None]
    return 100 * float(np.mean(deltas)) if deltas else None


def _first(decisions, prefix, after=-1):
    return next((d["step"] for d in decisions if d["reason"].startswith(prefix)
                 and d["step"] > after), None)


def _trace_table(traces, window):
    lines = ["| trace | low-bit steps | traffic vs FP32 | final accuracy (%) | "
             "change over the window (points) |", "|---|---:|---:|---:|---:|"]
    for trace, per_seed in traces.items():
        share, traffic, (acc, std) = (_stats(per_seed, "low_bit_share")[0],
                                      _stats(per_seed, "traffic_ratio")[0],
                                      _stats(per_seed, "final_accuracy"))
        change = _window_change(per_seed, window)
        lines.append(f"| {trace} | {100 * share:.2f}% | {traffic:.3f}x | "
                     f"{100 * acc:.2f} ± {100 * std:.2f} | "
                     f"{'' if change is None else f'{change:+.2f}'} |")
    return lines


def _per_seed_table(traces):
    """Final accuracy of each trace per seed; for the G-Binary-default trace
    the Supervisor's first return to FP32 and the re-admission after it."""
    seeds = sorted({s for per in traces.values() for s in per}, key=int)
    lines = ["| seed | " + " | ".join(traces) + " | gbinary-default: return to FP32 at step | "
             "re-admitted at step |", "|---:|" + "---:|" * (len(traces) + 2)]
    for s in seeds:
        cells = [f"{100 * traces[t][s]['final_accuracy']:.2f}" if s in traces[t] else ""
                 for t in traces]
        dec = traces.get("gbinary-default", {}).get(s, {}).get("decisions", [])
        back = _first(dec, "Supervisor")
        again = _first(dec, "Commander", back) if back is not None else None
        lines.append(f"| {s} | " + " | ".join(cells) + f" | {back if back is not None else '-'} | "
                     f"{again if again is not None else '-'} |")
    return lines


def _false_alarm(traces):
    """``(mean, std)`` points the G-Binary-default trace loses to always-G-Binary, per seed."""
    a, b = traces.get("gbinary-default"), traces.get("always-gbinary")
    if not a or not b:
        return None
    diffs = [100 * (a[s]["final_accuracy"] - b[s]["final_accuracy"]) for s in a if s in b]
    return float(np.mean(diffs)), float(np.std(diffs, ddof=1)) if len(diffs) > 1 else 0.0


def _faults_section(results):
    rows = results.get("fault_rows", [])
    if not rows:
        return []
    lines = ["## Realistic faults on the low-bit path", "",
             "Each fault from the device-fault window's first step to the end of the run "
             "(`experiments/pilots/faults.py`): 75% and 1% of the written bits flipped, lane 0 "
             "of every line stuck at 1, worker 0's segment left stale. Detection delay: steps "
             "from the fault's start to the Supervisor's first return to FP32; false alarms: "
             "its returns before the fault.", "",
             "| fault | trace | detected (seeds) | mean delay (steps) | false alarms | "
             "final accuracy (%) | traffic vs FP32 |", "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        delay = "-" if r["mean_delay"] is None else f"{r['mean_delay']:.1f}"
        lines.append(f"| {r['fault']} | {r['trace']} | {r['detected']} of {r['seeds']} | {delay} | "
                     f"{r['false_alarms']} | {r['accuracy_mean']:.2f} ± {r['accuracy_std']:.2f} | "
                     f"{r['traffic_ratio']:.3f}x |")
    return lines + [""]


def report(results):
    """pilots.md text."""
    windows = results.get("windows", {})
    lines = ["# Control-plane pilots", "",
             "Generated by `make pilots` (`python -m neuron_fabric.experiments.pilots`). "
             "Device: the transaction-level model (W = 8, 512-bit lines). Accuracy is test "
             "top-1, mean ± std (ddof 1) over seeds; traffic is the runtime's measured payload "
             "ratio (bytes up / FP32 bytes up); low-bit share is the fraction of steps on which "
             "any group took a low-bit path.", ""]
    lr = results.get("learning_rates")
    if lr:
        lines += ["Learning rates, chosen on the validation split (each mode fixed on every "
                  "group, easy task, seed 0, no fault): " +
                  ", ".join(f"{m} {r:g}" for m, r in lr["rates"].items()) +
                  (" (tried: " + "; ".join(f"{t['mode']} {t['lr']:g}: {100 * t['val']:.1f}%"
                                           for t in lr["trials"]) + ")" if lr["trials"]
                   else " (quick: the grid's middle, no selection)") + ".", ""]
    paper = PAPER["recovery"]
    fault = windows.get("device_fault")
    lines += ["## Recovery pilot (Fig. 6): easy task (digits), fault on the low-bit path", "",
              f"Fault window: steps {fault['start']}..{fault['stop'] - 1}, each sign bit the "
              f"runtime writes flipped in device memory with probability {fault['fraction']} "
              "(host/fault_injection.py). FP32 never reads the device." if fault else "", "",
              *_trace_table(results.get("recovery", {}), fault)]
    lines.append(f"| paper, G-Binary-default (CIFAR-10/ResNet-18) | "
                 f"{100 * paper['low_bit_share']:.2f}% | {paper['traffic_ratio']:.3f}x | "
                 f"{paper['accuracy'][0]:.2f} ± {paper['accuracy'][1]:.2f} | |")
    if results.get("recovery"):
        lines += ["", "Per seed (final test accuracy, %):", "",
                  *_per_seed_table(results["recovery"])]
    lines += ["", "![recovery trace](pilots_recovery.png)", ""]
    lines += _faults_section(results)
    noise = results.get("label-noise")
    if noise:
        w = windows.get("label_noise")
        cost = _false_alarm(noise)
        lines += ["## Negative control: label noise", "",
                  f"Steps {w['start']}..{w['stop'] - 1} train on labels of which "
                  f"{w['noise']:.0%} are random: FP32 cannot fix that, so a Supervisor alarm "
                  "here is a false alarm.", "", *_trace_table(noise, w), "",
                  "Per seed (final test accuracy, %):", "", *_per_seed_table(noise), ""]
        if cost:
            lines += [f"A false alarm's cost: G-Binary-default minus always-G-Binary, "
                      f"{cost[0]:+.2f} ± {cost[1]:.2f} points over the seeds.", ""]
    ladder = results.get("ladder", {})
    if ladder:
        lines += [f"## Live ladder on `{results.get('ladder_task', 'pairs')}` (100 classes)", "",
                  "| policy | split chosen (per seed) | traffic vs FP32 | final accuracy (%) |",
                  "|---|---|---:|---:|"]
        for trace, per_seed in ladder.items():
            chosen = "; ".join(sorted({_split_name(r["modes"][-1]) for r in per_seed.values()}))
            acc, std = _stats(per_seed, "final_accuracy")
            lines.append(f"| {trace} | {chosen} | {_stats(per_seed, 'traffic_ratio')[0]:.4f}x | "
                         f"{100 * acc:.2f} ± {100 * std:.2f} |")
        lines += ["", f"Paper (CIFAR-100 live loop): {_split_name(PAPER['ladder'])}.", "",
                  "![ladder and late update](pilots_ladder_late.png)", ""]
    late = results.get("late", {})
    if late:
        lines += ["## Late mode update (Fig. 3d) in the loop", "",
                  "G-Binary-default with the device fault window; every mode write applied "
                  "k steps after the decision.", "",
                  "| delay k (steps) | low-bit steps | traffic vs FP32 | final accuracy (%) |",
                  "|---:|---:|---:|---:|"]
        for trace, per_seed in late.items():
            acc, std = _stats(per_seed, "final_accuracy")
            lines.append(f"| {trace.split()[-1]} | {100 * _stats(per_seed, 'low_bit_share')[0]:.2f}% | "
                         f"{_stats(per_seed, 'traffic_ratio')[0]:.3f}x | "
                         f"{100 * acc:.2f} ± {100 * std:.2f} |")
        lines += ["", "The paper's Fig. 3d measures the *time* a late update costs (a 10 ms late "
                  f"update adds < {PAPER['late_10ms_pct_max']}% step cost; `make envelope` "
                  "reproduces it); here it is what k late steps cost in accuracy and traffic.", ""]
    return "\n".join(lines)
