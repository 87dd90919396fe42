"""Formatting shared by the README's figure blocks (``sim/figures.py``):
Markdown tables, mean ± std, spans and per-seed statistics."""

import statistics

__all__ = ["table", "pm", "span", "stats"]


def table(header, rows):
    """A Markdown table: the first column left-aligned, the rest right."""
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    return lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def pm(mean, std):
    """``mean ± std`` to two places."""
    return f"{mean:.2f} ± {std:.2f}"


def span(values, fmt="{:.2f}"):
    """``lo–hi`` of ``values``, or one figure when both print the same."""
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else \
        f"{fmt.format(lo)}–{fmt.format(hi)}"


def stats(per_seed, key):
    """Mean and sample standard deviation (ddof 1; 0 for one seed) over seeds."""
    values = [r[key] for r in per_seed.values()]
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0
