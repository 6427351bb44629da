"""The statistics report: agreement, judge accuracy and length bias for a project, as one
JSON-ready dict (``pairscope stats --json``), a text summary, and a Markdown report with
figures."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..records import CONVENTIONS
from ..store import Store
from .agreement import agreement_report, judge_human_kappa
from .calibration import calibration_report
from .data import RunData, StatsData, load_stats_data
from .dataset import dataset_report
from .judge_metrics import (
    frames_curve,
    item_verdicts,
    pointwise_vs_pairwise,
    run_metrics,
    ties_accuracy,
)
from .length_bias import length_report
from .prm import prm_report


def compute_stats(
    store: Store, run_id: int | None = None, bootstrap: int = 200, data: StatsData | None = None
) -> dict[str, Any]:
    """Every statistic of a project (or only judge run ``run_id``), from ``data`` when the
    caller already read it (one snapshot for the report and whatever else it shows)."""
    if data is None:
        data = load_stats_data(store)
    runs = [r for r in data.runs if run_id is None or r.run.id == run_id]
    if run_id is not None and not runs:
        raise ValueError(f"no judge run {run_id} in this project")
    return {
        "items": int(len(data.item_ids)),
        "categories": dict(Counter(str(c) for c in data.categories)),
        "length": length_report(data),
        "agreement": agreement_report(data, bootstrap=bootstrap),
        "judges": {str(r.run.id): _judge(data, r) for r in runs},
        "frames_curve": frames_curve(data),
        "pointwise_vs_pairwise": pointwise_vs_pairwise(data),
        "dataset": dataset_report(data),
        "annotator_accuracy": {
            name: ties_accuracy(labels, data.ref_chosen, ~np.isnan(labels)) for name, labels in data.labels.items()
        },
        "steps": prm_report(data, runs=runs),
        "calibration": calibration_report(data, runs),
    }


def _judge(data: StatsData, run: RunData) -> dict[str, Any]:
    """A run's accuracy tables plus Cohen's kappa between its verdicts and each annotator."""
    metrics = run_metrics(data, run)
    verdicts = item_verdicts(data, run)
    kappas = judge_human_kappa(verdicts, data.labels) if data.labels and verdicts is not None else {}
    metrics["human_kappa"] = {name: (None if value != value else float(value)) for name, value in kappas.items()}
    return metrics


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _group(g: dict[str, Any]) -> str:
    decided = g.get("n", 0) - g.get("unparsed", 0)
    ci = _ci(g.get("ci"))
    return f"{_pct(g.get('accuracy'))}{' ' + ci if ci else ''} of {decided} decided ({g.get('n')} scored)"


def _ci(interval: Sequence[float] | None) -> str:
    return "" if not interval else f"[95% CI {100 * interval[0]:.1f}–{100 * interval[1]:.1f}]"


def summary_text(report: dict[str, Any]) -> str:
    """The human-readable summary ``pairscope stats`` prints."""
    lines = [f"items: {report['items']}  (" + ", ".join(f"{k}: {v}" for k, v in report["categories"].items()) + ")"]
    length = report["length"]
    lines.append(f"query words [q1, median, q3]: {length['query_words']}   response words: {length['response_words']}")
    hist = length["diff_hist"]
    lines.append(
        f"length difference (chosen − rejected) / chosen: mean {_num(hist.get('mean'))},"
        f" median {_num(hist.get('median'))} over {hist.get('n', 0)} pairs"
    )
    agreement = report["agreement"]
    if agreement.get("cohen_mean") is None:
        lines.append("agreement: needs two or more annotators on shared items")
    else:
        lines.append(
            f"agreement over {agreement.get('n_items')} items labelled by ≥ 2 annotators:"
            f" percent {_pct(agreement.get('percent'))}, Cohen's kappa mean {_num(agreement.get('cohen_mean'))},"
            f" Fleiss' kappa {_num(agreement.get('fleiss'))},"
            f" Krippendorff's alpha {_num(agreement.get('krippendorff_alpha'))}"
        )
        for pair, kappa in (agreement.get("cohen_pairs") or {}).items():
            lines.append(f"  kappa {pair.replace('|', ' ↔ ')}: {_num(kappa)}")
    errors = (report.get("dataset") or {}).get("error_types") or {}
    if errors.get("tags"):
        lines.append(
            f"dataset error tags ({errors['tags']} tags on {errors['items_tagged']} items): "
            + ", ".join(f"{k} {_pct(v['share'])}" for k, v in errors["kinds"].items())
        )
    for name, acc in (report.get("annotator_accuracy") or {}).items():
        w, wo = acc["with_ties"], acc["without_ties"]
        lines.append(
            f"annotator {name} vs reference: {_pct(w['accuracy'])} of {w['n']} with ties (a tie label is"
            f" wrong), {_pct(wo['accuracy'])} of {wo['n']} without (tie labels left out)"
        )
    for run_id, m in report["judges"].items():
        if m.get("official") is None:
            lines.append(f"judge run {run_id} ({m.get('mode')}): {m.get('note')}")
        for convention in CONVENTIONS:
            c = m.get(convention)
            if not c:
                continue
            lines.append(
                f"judge run {run_id} ({m.get('mode')}, k={m.get('k')}, {convention} vote):"
                f" accuracy {_pct(c.get('overall'))} {_ci(c.get('overall_ci'))} of {c.get('decided')}"
                f" decided (undecided excluded), {_pct(c.get('overall_unparsed_wrong'))}"
                f" {_ci(c.get('overall_unparsed_wrong_ci'))} of {m.get('scored')} (undecided counted wrong);"
                f" macro {_pct(c.get('macro'))} / {_pct(c.get('macro_unparsed_wrong'))};"
                f" undecided {c.get('unparsed')}"
            )
            if convention != "official":
                continue
            lines.append(f"  samples: {m.get('samples_unparsed')} unparsed, {m.get('samples_failed')} failed")
            for category, g in (c.get("per_category") or {}).items():
                lines.append(f"  {category}: {_group(g)}")
            for source, g in (c.get("per_source") or {}).items():
                lines.append(f"  source {source}: {_group(g)}")
            ties = c.get("ties") or {}
            if (ties.get("with_ties") or {}).get("n") != (ties.get("without_ties") or {}).get("n"):
                lines.append(
                    f"  with ties {_pct(ties['with_ties']['accuracy'])} of {ties['with_ties']['n']},"
                    f" without ties {_pct(ties['without_ties']['accuracy'])} of {ties['without_ties']['n']}"
                )
            bon = c.get("best_of_n") or {}
            if bon.get("items"):
                lines.append(
                    f"  best-of-N on {bon['items']} items: {_pct(bon['accuracy'])} {_ci(bon['accuracy_ci'])}"
                    f" (random {_pct(bon['random'])}, first response {_pct(bon['first_response'])})"
                )
        for name, kappa in (m.get("human_kappa") or {}).items():
            lines.append(f"  Cohen's kappa judge ↔ {name}: {_num(kappa)}")
        if m.get("position_consistency") is not None:
            lines.append(
                f"  position consistency {_pct(m['position_consistency'])},"
                f" first-position preference {_pct(m.get('first_position_preference'))}"
            )
    lines += calibration_lines(report)
    for s in (report.get("steps") or {}).get("runs", []):
        lines.append(
            f"step run {s['run_id']} (erroneous = score ≤ {s['threshold']}): F1 erroneous"
            f" {_num(s['f1_erroneous'])}, correct {_num(s['f1_correct'])}, weighted {_num(s['f1_weighted'])}"
            f" over {s['steps']} steps; first-error accuracy {_pct(s['first_error_accuracy'])}"
            f" of {s['first_error_accuracy_n']}"
        )
    return "\n".join(lines)


def calibration_lines(report: dict[str, Any]) -> list[str]:
    """The calibration part of the summary: per run ECE, mean confidence against accuracy and
    the accuracy of the most confident fifth (see ``calibration``)."""
    lines = []
    for run_id, c in (report.get("calibration") or {}).items():
        if not c.get("n"):
            lines.append(f"calibration run {run_id}: {c.get('note')}")
            continue
        fifth = next((p for p in c["coverage"] if abs(p["coverage"] - 0.2) < 1e-9), None)
        targets = c.get("target_counts") or {}
        lines.append(
            f"calibration run {run_id} (official vote, item confidence; {c['n']} items vs"
            f" {targets.get('reference', 0)} references, {targets.get('adjudication', 0)} adjudications):"
            f" ECE {_num(c['ece'])}; mean confidence {_pct(c['mean_confidence'])}, accuracy {_pct(c['accuracy'])}"
            + (f"; top 20% most confident: {_pct(fifth['accuracy'])} of {fifth['n']}" if fifth else "")
            + f"; {c.get('decided_without_confidence', 0)} decided items without a confidence"
        )
        lines.append(
            "  reliability (confidence bin: n, accuracy): "
            + ", ".join(f"{b['low']:.1f}–{b['high']:.1f}: {b['n']}, {_pct(b['accuracy'])}" for b in c["bins"] if b["n"])
        )
    return lines


def write_report(report: dict[str, Any], folder: Path) -> Path:
    """Write ``report.md``, ``stats.json`` and one PNG per figure into ``folder``."""
    import io
    import re

    from .plots import FIGURES

    pngs = {}
    for name, draw in FIGURES.items():  # every figure drawn before a file is written: never half a report
        buffer = io.BytesIO()
        draw(report).savefig(buffer, format="png", dpi=120)
        pngs[name] = buffer.getvalue()
    summary = summary_text(report)
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", summary)), default=0))  # data cannot close it
    parts = ["# PairScope statistics", "", fence, summary, fence, ""]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stats.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    for name, png in pngs.items():
        (folder / f"{name}.png").write_bytes(png)
        parts += [f"![{name}]({name}.png)", ""]
    path = folder / "report.md"
    path.write_text("\n".join(parts))
    return path
