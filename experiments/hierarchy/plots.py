"""``hierarchy_*.png``: the multi-hop report's plots (``make hierarchy``, see
:mod:`.report`)."""

import numpy as np

from neuron_fabric.experiments.plotting import pyplot, save
from neuron_fabric.experiments.hierarchy.tables import (SCHEME_LABEL, hop_total, scheme_label,
                                                        timed_label)
from neuron_fabric.host import hierarchy as hy


def _save(fig, ax, path):
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    save(fig, path, dpi=120)
    return path


def _bits_plot(plt, out, sweep, training):
    """Disagreement with the exact majority and training accuracy against
    bits per coordinate on the top hop, each scheme a line or a point."""
    fig, axes = plt.subplots(1, 3 if training else 2, figsize=(15 if training else 10, 4.2))
    for ax, source in zip(axes, ("real", "synthetic")):
        rows = [r for r in sweep[source] if (r["workers"], r["fanin"], r["hops"]) == (8, 8, 1)]
        for i, (scheme, rounding) in enumerate([(s, r) for s in ("dq-sign", "dq-grad")
                                                for r in hy.ROUNDINGS]):
            pts = sorted((hop_total(r), 100 * r["disagreement_decided"]) for r in rows
                         if r["scheme"] == scheme and r["rounding"] == rounding)
            if pts:
                ax.plot(*zip(*pts), "o-" if rounding == "correlated" else "s--", ms=4,
                        color=f"C{i // 2}", alpha=1 if rounding == "correlated" else 0.6,
                        label=f"{SCHEME_LABEL[scheme]}, {rounding}")
        for j, scheme in enumerate(("exact", "mom", "mom-ternary")):
            for r in rows:
                if r["scheme"] == scheme:
                    ax.plot(hop_total(r), 100 * r["disagreement_decided"], "*", ms=11,
                            color=f"C{j + 2}", label=SCHEME_LABEL[scheme])
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bits per coordinate on the hop (payload + scales)")
        ax.set_title(f"{source} gradients, W 8 x fan-in 8 (64 workers)", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("sign disagreement with the exact majority,\nnon-tie coordinates (%)")
    axes[0].legend(fontsize=6)
    if training:
        ax = axes[2]
        tr = training[0]
        for i, v in enumerate(("sign", "grad")):
            pts = sorted((int(k.split("-b")[1]) + hy.META_BITS, r["accuracy_mean"], r["accuracy_std"])
                         for k, r in tr["schemes"].items() if k.startswith(f"dq-{v}-b"))
            if pts:
                x, y, e = zip(*pts)
                ax.errorbar(x, y, yerr=e, fmt="o-", capsize=3, color=f"C{i}",
                            label=f"DynamiQ-style {'vote' if v == 'sign' else 'gradient'} sums, "
                                  "correlated")
        for j, (scheme, bits) in enumerate((("exact", hy.partial_bits("exact", 8)[0]),
                                            ("mom", 1.0), ("mom-ternary", 1.58))):
            r = tr["schemes"].get(scheme)
            if r:
                ax.errorbar(bits, r["accuracy_mean"], yerr=r["accuracy_std"], fmt="*", ms=11,
                            capsize=3, color=f"C{j + 2}", label=SCHEME_LABEL[scheme])
        if "fp32" in tr["schemes"]:
            ax.axhline(tr["schemes"]["fp32"]["accuracy_mean"], color="k", lw=0.8, ls=":",
                       label="FP32 (32 bits)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bits per coordinate on the hop (payload + scales)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"training, {tr['task']}, 8 x 8 workers, {tr['batch']} examples a worker",
                     fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    path = out / "hierarchy_bits.png"
    save(fig, path, dpi=120)
    return path


def write_plots(out, result):
    plt = pyplot()
    paths = []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, source in zip(axes, ("real", "synthetic")):
        rows = [r for r in result["study"][source] if r["workers"] == 8]
        keys = [k for k in dict.fromkeys((r["scheme"], r["bits"]) for r in rows)
                if k[0] != "exact"]
        for color, key in enumerate(keys):
            for fanin, marker in zip(sorted({r["fanin"] for r in rows}), "os^"):
                pts = sorted((r["total"], 100 * r["disagreement_decided"]) for r in rows
                             if (r["scheme"], r["bits"]) == key and r["fanin"] == fanin)
                if pts:
                    ax.plot(*zip(*pts), marker=marker, ms=4, color=f"C{color}",
                            label=scheme_label(dict(scheme=key[0], bits=key[1]))
                            if fanin == rows[0]["fanin"] else None)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("workers K (W 8; fan-in 4 o, 8 s, 16 ^; 1-3 hops along a line)")
        ax.set_title(f"{source} gradients")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("sign disagreement with the exact majority,\nnon-tie coordinates (%)")
    paths.append(_save(fig, axes[0], out / "hierarchy_disagreement.png"))

    t = result["timing"]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for s in dict.fromkeys(r["scheme"] for r in t["ring"]):
        pts = [(r["controllers"], 1e3 * r["seconds"]) for r in t["ring"] if r["scheme"] == s]
        ax.plot(*zip(*pts), "o-", ms=3, label=timed_label(s))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("controllers N in the ring (W 8 workers each)")
    ax.set_ylabel(f"ring All-Reduce time of {t['n']:.2g} coordinates (ms)")
    ax.set_ylim(top=12 * max(r["seconds"] for r in t["ring"]) * 1e3)    # room for the legend
    paths.append(_save(fig, ax, out / "hierarchy_timing.png"))

    sweep = result.get("sweep")
    if sweep:
        paths.append(_bits_plot(plt, out, sweep, result.get("training")))

    settings = result.get("training")
    if settings:
        fig, axes = plt.subplots(1, len(settings), figsize=(5.5 * len(settings), 4.2),
                                 squeeze=False)
        for ax, tr in zip(axes[0], settings):
            for s, r in tr["schemes"].items():
                steps = [p["step"] for p in r["curves"][0]]
                acc = np.array([[100 * p["test"] for p in c] for c in r["curves"]])
                ax.plot(steps, acc.mean(axis=0), "-", label=f"{r['label']} (lr {r['lr']:g})")
            ax.set_xlabel("step")
            ax.set_title(f"{tr['task']}, 8 x 8 workers, {tr['batch']} examples a worker")
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel("test accuracy (%), mean over seeds")
        paths.append(_save(fig, axes[0][-1], out / "hierarchy_training.png"))
    return paths
