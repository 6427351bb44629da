"""The statistics figures, drawn with matplotlib from a stats report (the dict that
``pairscope stats --json`` prints). No pyplot and no Qt: each function returns a
``matplotlib.figure.Figure`` that the window embeds and the report saves.

matplotlib is imported when a figure is first drawn (~0.4 s), never at start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .scores_json import judges_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


#: Longest dataset text (a category, an annotator's name) a figure shows.
LABEL_LIMIT = 60


def _literal(value: object, limit: int = LABEL_LIMIT) -> str:
    """Dataset text as a figure shows it: literal (every ``$`` escaped, so matplotlib never
    reads it as mathtext: ``$\\undefinedmacro$`` would fail the whole report) and cut to ``limit``."""
    text = str(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("$", r"\$")


def _figure(width: float = 6.4, height: float = 3.6) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


def length_histogram(report: dict[str, Any]) -> Figure:
    """(chosen − rejected words) / chosen words over the dataset's reference pairs."""
    fig, ax = _figure()
    hist = report["length"]["diff_hist"]
    counts, edges = hist.get("counts") or [], hist.get("edges") or []
    if not hist.get("n"):
        _empty(ax, "No reference pairs to measure")
        return fig
    if counts:
        widths = [b - a for a, b in zip(edges, edges[1:])]
        ax.bar(edges[:-1], counts, width=widths, align="edge", color="#4c8bf5", edgecolor="white")
        ax.axvline(0, color="#333", linewidth=1, linestyle="--")
    ax.set_xlabel("(chosen words − rejected words) / chosen words")
    ax.set_ylabel("pairs")
    ax.set_title(f"Length bias of the reference labels (n = {hist.get('n', 0)})")
    return fig


def _errors(values: list[float], cis: list[Any]) -> list[list[float]]:
    """Error-bar lengths below and above each value from ``[low, high]`` intervals (NaN where
    the value or its interval is undefined: no bar drawn)."""
    nan = float("nan")
    low = [v - c[0] if c and v == v else nan for v, c in zip(values, cis)]
    high = [c[1] - v if c and v == v else nan for v, c in zip(values, cis)]
    return [low, high]


def _value(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def _top_legend(ax: Axes, entries: int) -> None:
    """Accuracy axes 0–1 with the legend in a band above 1, clear of the bars and their
    error bars."""
    ax.set_ylim(0, 1.22)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.legend(fontsize="small", loc="upper center", ncols=min(entries, 3), frameon=False)


def _empty(ax: Axes, message: str) -> None:
    """Say in the figure itself that there is nothing to draw (the report folder's PNGs)."""
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True, fontsize=11, color="#555")


def category_accuracy(report: dict[str, Any]) -> Figure:
    """Accuracy per category for every judge run (official vote, undecided excluded), with the
    95 % Wilson interval as error bars; a category without a decided item has no bar."""
    fig, ax = _figure()
    runs = {k: c for k, r in judges_of(report).items() if (c := r.official) is not None and c.per_category}
    if not runs:
        _empty(ax, "No judge run with preference verdicts yet")
        return fig
    scores = judges_of(report)
    categories = sorted({c for r in runs.values() for c in r.per_category})
    width = 0.8 / max(len(runs), 1)
    for n, (run_id, official) in enumerate(runs.items()):
        per = official.per_category
        values = [_value(per[c].accuracy) if c in per else float("nan") for c in categories]
        cis: list[Any] = [per[c].ci if c in per else None for c in categories]
        xs = [i + n * width for i in range(len(categories))]
        ax.bar(
            xs,
            values,
            width=width,
            yerr=_errors(values, cis),
            capsize=3,
            ecolor="#333",
            label=_literal(f"run {run_id} ({scores[run_id].mode}, official vote)", 120),
        )
    ax.set_xticks(
        [i + width * (len(runs) - 1) / 2 for i in range(len(categories))],
        [_literal(c) for c in categories],
        rotation=20 if len(categories) > 3 else 0,
        ha="right" if len(categories) > 3 else "center",
    )
    _top_legend(ax, len(runs))
    ax.set_ylabel("accuracy (undecided excluded)")
    ax.set_title("Judge accuracy per category (error bars: 95% Wilson CI)")
    return fig


def _bars_with_ci(ax: Axes, n: int, values: list[float], cis: list[Any], color: str, label: str) -> list[float]:
    """The ``n``-th bar (of two) per group with ``cis`` as error bars; returns the bars' x positions."""
    width = 0.3
    xs = [i + (n - 0.5) * width for i in range(len(values))]
    ax.bar(xs, values, width=width, color=color, yerr=_errors(values, cis), capsize=4, ecolor="#333", label=label)
    return xs


def judge_accuracy(report: dict[str, Any]) -> Figure:
    """Each run's overall accuracy under both vote conventions (undecided excluded), with the
    95 % Wilson interval as error bars and n = decided items under each bar."""
    fig, ax = _figure()
    runs = {k: r for k, r in judges_of(report).items() if r.votes}
    if not runs:
        _empty(ax, "No judge run with preference verdicts yet")
        return fig
    for n, (name, label, color) in enumerate(
        (("vlrewardbench", "official", "#4c8bf5"), ("plurality", "plurality", "#f5a04c"))
    ):
        overall = [runs[k].conventions[name].overall for k in runs]
        values = [_value(a.accuracy) for a in overall]
        xs = _bars_with_ci(ax, n, values, [a.ci for a in overall], color, f"{label} vote")
        for x, a in zip(xs, overall):
            ax.text(x, 0.02, f"n={a.decided}", ha="center", va="bottom", fontsize=8, color="white")
    ax.axhline(0.5, color="#999", linewidth=1, linestyle=":")
    names = [_literal(f"run {k}\n{r.mode}, K={r.k}") for k, r in runs.items()]
    ax.set_xticks(range(len(runs)), names)
    ax.set_xlim(-0.75, len(runs) - 0.25)
    _top_legend(ax, 2)
    ax.set_ylabel("accuracy (undecided excluded)")
    ax.set_title("Judge accuracy per run (error bars: 95% Wilson CI)")
    return fig


def annotator_accuracy(report: dict[str, Any]) -> Figure:
    """Each annotator's agreement with the dataset's reference, tie labels counted wrong and
    left out, with the 95 % Wilson interval as error bars."""
    fig, ax = _figure()
    accuracy = {k: a for k, a in (report.get("annotator_accuracy") or {}).items() if a["with_ties"]["n"]}
    if not accuracy:
        _empty(ax, "No annotator labels on items with a reference")
        return fig
    for n, (key, label, color) in enumerate(
        (("with_ties", "ties counted wrong", "#6a9f58"), ("without_ties", "ties left out", "#b0cfa5"))
    ):
        blocks = [a[key] for a in accuracy.values()]
        _bars_with_ci(ax, n, [_value(b.get("accuracy")) for b in blocks], [b.get("ci") for b in blocks], color, label)
    ax.set_xticks(range(len(accuracy)), [_literal(name) for name in accuracy])
    ax.set_xlim(-0.75, len(accuracy) - 0.25)
    _top_legend(ax, 2)
    ax.set_ylabel("share matching the reference")
    ax.set_title("Annotators vs the dataset reference (error bars: 95% Wilson CI)")
    return fig


def k_curve(report: dict[str, Any]) -> Figure:
    """Accuracy of the vote over the first K samples, per run and convention."""
    fig, ax = _figure()
    drawn, all_ks = False, set()
    for run_id, scores in judges_of(report).items():
        for name, label, style in (("vlrewardbench", "official", "-"), ("plurality", "plurality", "--")):
            c = scores.conventions.get(name)
            ks = sorted(c.k_curve) if c is not None else []
            if c is not None and ks:
                ys = [_value(c.k_curve[k].accuracy) for k in ks]
                ax.plot(ks, ys, marker="o", linestyle=style, label=f"run {run_id} ({label})")
                drawn = True
                all_ks.update(ks)
    if not drawn:
        _empty(ax, "No judge run with preference verdicts yet")
        return fig
    ax.set_xlabel("K (samples voted: official = more than half of those present, plurality = most named)")
    ax.set_xticks(sorted(all_ks))
    ax.set_xlim(min(all_ks) - 0.5, max(all_ks) + 0.5)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy (undecided excluded)")
    ax.set_title("Accuracy vs K")
    ax.legend(fontsize="small", loc="lower right")
    return fig


def kappa_matrix(report: dict[str, Any]) -> Figure:
    """Cohen's kappa for every annotator pair."""
    fig, ax = _figure(5.2, 4.2)
    agreement = report.get("agreement") or {}
    names = agreement.get("annotators") or []
    pairs = agreement.get("cohen_pairs") or {}
    import numpy as np

    if len(names) < 2 or not any(v is not None for v in pairs.values()):
        _empty(ax, "Needs two annotators on shared items")
        return fig
    matrix = np.full((len(names), len(names)), np.nan)
    for i, a in enumerate(names):
        matrix[i, i] = 1.0
        for j, b in enumerate(names):
            value = pairs.get(f"{a}|{b}", pairs.get(f"{b}|{a}"))
            if value is not None:
                matrix[i, j] = value
    image = ax.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu")
    ax.set_xticks(range(len(names)), [_literal(n) for n in names], rotation=45, ha="right")
    ax.set_yticks(range(len(names)), [_literal(n) for n in names])
    for i in range(len(names)):
        for j in range(len(names)):
            if not np.isnan(matrix[i, j]):
                dark = abs(matrix[i, j]) > 0.5
                color = "white" if dark else "black"
                ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=10, color=color)
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title("Cohen's kappa between annotators")
    return fig


def calibration(report: dict[str, Any]) -> Figure:
    """Per run with confidences: the reliability diagram (each non-empty confidence bin's mean
    confidence against its accuracy, the marker's area growing with its item count, written
    beside it; the diagonal = perfectly calibrated) and the coverage–accuracy curve (accuracy
    of the most confident share of items)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.5, 4.2), layout="constrained")
    reliability, coverage = fig.subplots(1, 2)
    runs = {k: c for k, c in (report.get("calibration") or {}).items() if c.get("n")}
    if not runs:
        fig.delaxes(coverage)
        _empty(reliability, "No confidences: the judge runs stored no log-probabilities")
        return fig
    low = min(b["low"] for c in runs.values() for b in c["bins"] if b["n"])
    for run_id, c in runs.items():
        bins = [b for b in c["bins"] if b["n"]]
        xs, ys = [b["confidence"] for b in bins], [b["accuracy"] for b in bins]
        (line,) = reliability.plot(xs, ys, marker="o", markersize=0, linewidth=1.5)
        label = f"run {run_id}: ECE {c['ece']:.3f}, {c['n']} items"
        reliability.scatter(xs, ys, s=[18 + 6 * b["n"] for b in bins], color=line.get_color(), zorder=3, label=label)
        for x, y, b in zip(xs, ys, bins):
            reliability.annotate(
                str(b["n"]), (x, y), textcoords="offset points", xytext=(7, -10), fontsize=8, color=line.get_color()
            )
        points = c["coverage"]
        coverage.plot(
            [100 * p["coverage"] for p in points],
            [p["accuracy"] for p in points],
            marker="o",
            markersize=3,
            label=f"run {run_id} (all {c['n']} items: {100 * c['accuracy']:.1f}%)",
        )
    reliability.plot([0, 1], [0, 1], color="#777", linestyle="--", linewidth=1, label="perfectly calibrated")
    for edge in range(11):  # the bins' edges
        reliability.axvline(edge / 10, color="#eee", linewidth=0.8, zorder=0)
    reliability.set_xlim(max(0.0, low - 0.02), 1.02)
    reliability.set_xlabel("item confidence (mean in each bin of 0.1)")
    reliability.set_ylabel("accuracy in the bin (official vote)")
    reliability.set_title("Reliability diagram (numbers: items per bin)")
    coverage.set_xlim(0, 102)
    coverage.set_xlabel("coverage: % of items kept, most confident first")
    coverage.set_ylabel("accuracy of the items kept")
    coverage.set_title("Coverage–accuracy")
    for ax in (reliability, coverage):
        ax.set_ylim(-0.03, 1.25)
        ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
        ax.legend(fontsize="small", loc="upper left", frameon=False)
    return fig


#: Every figure of the statistics view and report, by file name.
FIGURES: dict[str, Callable[[dict[str, Any]], Figure]] = {
    "length_bias": length_histogram,
    "judge_accuracy": judge_accuracy,
    "judge_per_category": category_accuracy,
    "k_curve": k_curve,
    "annotator_accuracy": annotator_accuracy,
    "annotator_kappa": kappa_matrix,
    "calibration": calibration,
}
