"""The statistics figures, drawn with matplotlib from a stats report (the dict that
``pairscope stats --json`` prints). No pyplot and no Qt: each function returns a
``matplotlib.figure.Figure`` that the window embeds and the report saves.

matplotlib is imported when a figure is first drawn (~0.4 s), never at start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _figure(width: float = 6.4, height: float = 3.6):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


def length_histogram(report: dict[str, Any]):
    """(chosen − rejected words) / chosen words over the dataset's reference pairs."""
    fig, ax = _figure()
    hist = report["length"]["diff_hist"]
    counts, edges = hist.get("counts") or [], hist.get("edges") or []
    if counts:
        widths = [b - a for a, b in zip(edges, edges[1:])]
        ax.bar(edges[:-1], counts, width=widths, align="edge", color="#4c8bf5", edgecolor="white")
        ax.axvline(0, color="#333", linewidth=1, linestyle="--")
    ax.set_xlabel("(chosen words − rejected words) / chosen words")
    ax.set_ylabel("pairs")
    ax.set_title(f"Length bias of the reference labels (n = {hist.get('n', 0)})")
    return fig


def category_accuracy(report: dict[str, Any]):
    """Accuracy per category for every judge run (official vote, undecided excluded), with the
    95 % Wilson interval as error bars."""
    fig, ax = _figure()
    runs = {k: r for k, r in (report.get("judges") or {}).items() if r.get("per_category")}
    categories = sorted({c for r in runs.values() for c in (r.get("per_category") or {})})
    width = 0.8 / max(len(runs), 1)
    for n, (run_id, metrics) in enumerate(runs.items()):
        per = metrics.get("per_category") or {}
        values = [(per.get(c) or {}).get("accuracy") or 0.0 for c in categories]
        cis = [(per.get(c) or {}).get("ci") or [v, v] for c, v in zip(categories, values)]
        errors = [[v - lo for v, (lo, _) in zip(values, cis)], [hi - v for v, (_, hi) in zip(values, cis)]]
        xs = [i + n * width for i in range(len(categories))]
        ax.bar(
            xs,
            values,
            width=width,
            yerr=errors,
            capsize=3,
            ecolor="#333",
            label=f"run {run_id} ({metrics.get('mode')}, {metrics.get('vote', 'official')} vote)",
        )
    ax.set_xticks([i + width * (len(runs) - 1) / 2 for i in range(len(categories))], categories)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy (undecided excluded)")
    ax.set_title("Judge accuracy per category (error bars: 95% Wilson CI)")
    if runs:
        ax.legend(fontsize="small")
    return fig


def k_curve(report: dict[str, Any]):
    """Accuracy of the vote over the first K samples, per run and convention."""
    fig, ax = _figure()
    for run_id, metrics in (report.get("judges") or {}).items():
        for convention, style in (("official", "-"), ("plurality", "--")):
            curve = (metrics.get(convention) or {}).get("k_curve") or {}
            ks = sorted(int(k) for k in curve)
            ys = [curve[str(k)] for k in ks]
            if ks:
                ax.plot(ks, ys, marker="o", linestyle=style, label=f"run {run_id} ({convention})")
    ax.set_xlabel("K (samples voted: official = more than K/2, plurality = most named)")
    ax.set_ylabel("accuracy")
    ax.set_title("Accuracy vs K")
    if report.get("judges"):
        ax.legend(fontsize="small")
    return fig


def kappa_matrix(report: dict[str, Any]):
    """Cohen's kappa for every annotator pair."""
    fig, ax = _figure(5.2, 4.2)
    agreement = report.get("agreement") or {}
    names = agreement.get("annotators") or []
    pairs = agreement.get("cohen_pairs") or {}
    import numpy as np

    matrix = np.full((len(names), len(names)), np.nan)
    for i, a in enumerate(names):
        matrix[i, i] = 1.0
        for j, b in enumerate(names):
            value = pairs.get(f"{a}|{b}", pairs.get(f"{b}|{a}"))
            if value is not None:
                matrix[i, j] = value
    image = ax.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), names)
    for i in range(len(names)):
        for j in range(len(names)):
            if not np.isnan(matrix[i, j]):
                ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=9)
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title("Cohen's kappa between annotators")
    return fig


#: Every figure of the statistics view and report, by file name.
FIGURES: dict[str, Callable[[dict[str, Any]], Any]] = {
    "length_bias": length_histogram,
    "judge_per_category": category_accuracy,
    "k_curve": k_curve,
    "annotator_kappa": kappa_matrix,
}
