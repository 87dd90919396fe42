"""Figures written to files, for the reports of the experiments and of the
benches above them (``sim`` may import ``experiments``): matplotlib's
pyplot on the Agg backend, and a figure laid out, written and closed."""

__all__ = ["pyplot", "save"]


def pyplot():
    """matplotlib's pyplot on the Agg backend (files only, no display)."""
    import matplotlib  # deferred: matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: matplotlib
    return plt


def save(fig, path, dpi):
    """Lay ``fig`` out tightly, write it to ``path`` at ``dpi`` and close it."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
