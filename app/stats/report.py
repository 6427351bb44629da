"""The statistics report: agreement, judge accuracy and length bias for a project, as one dict
whose ``judges`` are typed :class:`~app.stats.scores.RunScores` (read them with
:func:`judges_of`), its JSON form (:func:`report_json`, what ``pairscope stats --json`` prints),
a text summary, and a Markdown report with figures."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..judge.modes import get_mode
from ..judge.votes import Accuracy
from ..store import Store
from .agreement import agreement_report
from .calibration import calibration_report
from .conventions import resolve
from .data import StatsData, load_stats_data
from .dataset import dataset_report
from .judge_metrics import frames_curve, pointwise_vs_pairwise, ties_accuracy
from .length_bias import length_report
from .prm import prm_report
from .rankings import has_rankings, rankings_report
from .scores import ConventionScores, RunScores, load_item_keys, score_run
from .scores_json import _CONVENTION_ONLY as CONVENTION_ONLY
from .scores_json import acc_plus, judges_json, judges_of


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
    # cal.py's datasets and the ids ACC+ groups by: one more read, only for runs that vote
    keys = load_item_keys(store, data) if any(get_mode(r.run.mode).votes_on_preference for r in runs) else None
    judges = {str(r.run.id): score_run(data, r, keys=keys) for r in runs}
    # each run's official verdicts, decided once for the length and calibration sections too
    verdicts = {int(s.run_id): s.official.verdict.copy() for s in judges.values() if s.official is not None}
    return {
        "items": int(len(data.item_ids)),
        "categories": _category_counts(data.categories),
        "length": length_report(data, verdicts),
        "agreement": agreement_report(data, bootstrap=bootstrap),
        "judges": judges,
        "frames_curve": frames_curve(data),
        "pointwise_vs_pairwise": pointwise_vs_pairwise(data),
        "dataset": dataset_report(data),
        "annotator_accuracy": {
            name: ties_accuracy(labels, data.ref_chosen, ~np.isnan(labels)) for name, labels in data.labels.items()
        },
        "steps": prm_report(data, runs=runs),
        "calibration": calibration_report(data, runs, verdicts=verdicts),
        # each run's accuracy on confirmed and corrected references; None (no key in the JSON)
        # without a judge run that votes or a reference review (docs/STATISTICS.md)
        "reference_noise": _reference_noise(store, data, run_id),
        # the lead's report (docs/TEAMWORK.md); None (no key in the JSON) when nothing was assigned
        "team": _team(store) if data.assigned else None,
        # agreement on rankings and accuracy over induced pairs; None (no key in the JSON) when no
        # item has a ranking label or a reference ranking (docs/STATISTICS.md, "Rankings")
        "rankings": rankings_report(data, bootstrap=bootstrap) if has_rankings(data) else None,
    }


def _category_counts(categories: np.ndarray) -> dict[str, int]:
    """Items per category (as ``str``), in order of first appearance."""
    return dict(Counter(map(str, np.asarray(categories, dtype=object).tolist())))


def _team(store: Store) -> Any:
    """:func:`.team_report.team_report`, for a project whose items were assigned
    (``StatsData.assigned``): it reads every current label, so others do not pay for it."""
    from .team_report import team_report

    return team_report(store)


def _reference_noise(store: Store, data: StatsData, run_id: int | None) -> Any:
    """The "reference noise" section (:func:`.suspects_report.reference_noise`); the model (and
    its imports) only when a reference was reviewed and some judge run votes on preferences."""
    from ..store.references import current_reference_reviews

    if not any(get_mode(r.run.mode).votes_on_preference for r in data.runs) or not current_reference_reviews(store):
        return None
    from .suspects_report import reference_noise

    return reference_noise(store, None if run_id is None else [run_id])


def report_json(report: Mapping[str, Any], convention: str = "vlrewardbench") -> dict[str, Any]:
    """The report as ``pairscope stats --json`` prints it: each run's scores as
    :func:`~app.stats.scores.to_json` writes them, the top level repeating ``convention``'s
    figures (``vote`` names it; default the official one)."""
    out = dict(report)
    judges = judges_json(judges_of(report))
    name = resolve(convention)
    if name != "vlrewardbench":
        for entry in judges.values():
            c = (entry.get("conventions") or {}).get(name)
            if c is not None:
                entry.update({k: v for k, v in c.items() if k not in CONVENTION_ONLY})
                entry["vote"] = name
    out["judges"] = judges
    noise = out.pop("reference_noise", None)
    if noise is not None:  # typed (ReferenceNoise), or a dict read back from stats.json
        out["reference_noise"] = noise if isinstance(noise, Mapping) else noise.as_dict()
    if "rankings" in out and out["rankings"] is None:
        del out["rankings"]
    team = out.pop("team", None)
    if team is not None:  # typed (AnnotatorRow list), or a dict read back from stats.json
        from .team_report import report_dict

        out["team"] = team if isinstance(team, Mapping) else report_dict(team)
    return out


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _group(a: Accuracy) -> str:
    ci = _ci(a.ci)
    return f"{_pct(a.accuracy)}{' ' + ci if ci else ''} of {a.decided} decided ({a.scored} scored)"


def _vote_line(run_id: str, s: RunScores, label: str, c: ConventionScores) -> str:
    o = c.overall
    return (
        f"judge run {run_id} ({s.mode}, k={s.k}, {label} vote): accuracy {_pct(o.accuracy)} {_ci(o.ci)} of"
        f" {o.decided} decided (undecided excluded), {_pct(o.accuracy_all)} {_ci(o.ci_all)} of {o.scored}"
        f" (undecided counted wrong); macro {_pct(c.macro)} / {_pct(c.macro_all)}; undecided {o.undecided}"
    )


def judge_lines(run_id: str, s: RunScores, convention: str = "vlrewardbench") -> list[str]:
    """One run's part of the summary: both vote conventions' accuracy, the samples (unparsed,
    ties and failures apart), the detail under ``convention`` and the "score as" table."""
    if not s.votes:
        return [f"judge run {run_id} ({s.mode}): {s.note}"]
    lines = []
    for name, label in (("vlrewardbench", "official"), ("plurality", "plurality")):
        c = s.conventions.get(name)
        if c is not None:
            lines.append(_vote_line(run_id, s, label, c))
    if s.samples is not None:
        lines.append(
            f"  samples: {s.samples.present} present, {s.samples.unparsed} unparsed, {s.samples.ties} ties,"
            f" {s.samples.failed} failed"
            + (f"; {s.failed_items} items failed (every sample failed: not scored)" if s.failed_items else "")
        )
    name = resolve(convention)
    c = s.conventions.get(name)
    if c is not None:
        if name not in ("vlrewardbench", "plurality"):
            lines.append(f"  as {name}: {_pct(c.headline)} ({c.headline_rule})")
        for category, a in c.per_category.items():
            lines.append(f"  {category}: {_group(a)}")
        for source, a in c.per_source.items():
            lines.append(f"  source {source}: {_group(a)}")
        for source, a in c.per_query_source.items():
            lines.append(f"  query_source {source}: {_group(a)}")
        if c.ties is not None and c.ties.with_ties.scored != c.ties.without_ties.scored:
            w, wo = c.ties.with_ties, c.ties.without_ties
            lines.append(
                f"  with ties {_pct(w.accuracy_all)} of {w.scored}, without ties {_pct(wo.accuracy_all)} of {wo.scored}"
            )
        bon = c.best_of_n
        if bon.items:
            lines.append(
                f"  best-of-N on {bon.items} items: {_pct(bon.accuracy.accuracy_all)} {_ci(bon.accuracy.ci_all)}"
                f" (random {_pct(bon.random)}, first response {_pct(bon.first_response)})"
            )
        for note in c.notes:
            lines.append(f"  note ({name}): {note}")
    plus = acc_plus(s)
    if plus is not None and plus.share is not None:
        lines.append(
            f"  ACC+ (mm-rlhf): {_pct(plus.share)} {_ci(plus.ci)} of {plus.groups} ids"
            f" ({plus.right} with every pair right)"
        )
    lines += score_as_lines(s)
    for annotator, kappa in s.human_kappa.items():
        lines.append(f"  Cohen's kappa judge ↔ {annotator}: {_num(kappa)}")
    if s.position_consistency is not None:
        lines.append(
            f"  position consistency {_pct(s.position_consistency)},"
            f" first-position preference {_pct(s.first_position_preference)}"
        )
    return lines


def score_as_lines(s: RunScores) -> list[str]:
    """The "score as" table of a run: the same samples under every convention, side by side."""
    if not s.conventions:
        return []
    lines = ["  score as:    convention      headline  rule         scored decided  extra"]
    for name, c in s.conventions.items():
        extra = ", ".join(
            f"{k} {_pct(v) if k not in ('tie_threshold', 'acc_plus_groups') else _num(v)}" for k, v in c.extra.items()
        )
        lines.append(
            f"               {name:<15} {_pct(c.headline):>8}  {c.headline_rule:<12} {c.overall.scored:>6}"
            f" {c.overall.decided:>7}  {extra}"
        )
    return lines


def _ci(interval: Sequence[float] | None) -> str:
    return "" if not interval else f"[95% CI {100 * interval[0]:.1f}–{100 * interval[1]:.1f}]"


def summary_text(report: Mapping[str, Any], convention: str = "vlrewardbench") -> str:
    """The human-readable summary ``pairscope stats`` prints; each run's detail (per category,
    source, ties, Best-of-N) under ``convention``, and its "score as" table."""
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
    lines += ranking_lines(report.get("rankings"))
    for run_id, scores in judges_of(report).items():
        lines += judge_lines(run_id, scores, convention)
    lines += calibration_lines(report)
    if report.get("reference_noise") is not None:
        from .suspects_report import ReferenceNoise, reference_noise_lines

        if isinstance(report["reference_noise"], ReferenceNoise):
            lines += reference_noise_lines(report["reference_noise"])
    if isinstance(report.get("team"), list):
        from .team_report import report_lines

        lines += report_lines(report["team"])
    for s in (report.get("steps") or {}).get("runs", []):
        lines.append(
            f"step run {s['run_id']} (erroneous = score ≤ {s['threshold']}): F1 erroneous"
            f" {_num(s['f1_erroneous'])}, correct {_num(s['f1_correct'])}, weighted {_num(s['f1_weighted'])}"
            f" over {s['steps']} steps; first-error accuracy {_pct(s['first_error_accuracy'])}"
            f" of {s['first_error_accuracy_n']}"
        )
    return "\n".join(lines)


def ranking_lines(rankings: Mapping[str, Any] | None) -> list[str]:
    """The "Rankings" part of the summary (:func:`.rankings.rankings_report`); nothing when no
    item has a ranking label or a reference ranking."""
    if not rankings:
        return []
    lines = [
        f"Rankings: {rankings['items_ranked']} items ranked ({rankings['ranking_labels']} ranking labels by"
        f" {len(rankings['annotators'])} annotators), {rankings['items_with_reference']} with a reference ranking"
    ]
    w, alpha = rankings["kendall_w"], rankings["krippendorff_alpha_ordinal"]
    if w["mean"] is not None or alpha["alpha"] is not None:
        lines.append(
            f"  Kendall's W (tie-corrected) mean {_num(w['mean'])}{_value_ci(w['ci'])} over {w['items']} items"
            f" ranked by ≥ 2; Krippendorff's alpha (ordinal, on ranks) {_num(alpha['alpha'])}"
            f"{_value_ci(alpha['ci'])} over {alpha['units']} (item, response) units"
        )
    else:
        lines.append("  agreement on rankings: needs two or more annotators ranking the same items")
    accuracy = rankings["pairwise_accuracy"]
    for name, a in accuracy["annotators"].items():
        if a["pairs"]:
            lines.append(
                f"  {name} vs reference ranking: {_pct(a['accuracy'])} {_ci(a['ci'])} of {a['pairs']} induced pairs"
                f" on {a['items']} items"
            )
    for run_id, a in (rankings.get("judges") or {}).items():
        if a["pairs"]:
            lines.append(
                f"  judge run {run_id} ({a['mode']}) vs reference ranking: {_pct(a['accuracy'])} {_ci(a['ci'])}"
                f" of {a['pairs']} induced pairs on {a['items']} items"
            )
    for pair, a in rankings["pairwise_agreement"]["pairs"].items():
        if a["pairs"]:
            lines.append(
                f"  pairwise agreement {pair.replace('|', ' ↔ ')}: {_pct(a['agreement'])} {_ci(a['ci'])}"
                f" of {a['pairs']} induced pairs on {a['items']} items"
            )
    if any(a["pairs"] for a in [accuracy["all"], *(rankings.get("judges") or {}).values()]):
        lines.append(f"  (pairwise accuracy: {accuracy['rule']}; CIs bootstrap over items)")
    return lines


def _value_ci(interval: Sequence[float] | None) -> str:
    return "" if not interval else f" [95% CI {interval[0]:.3f}–{interval[1]:.3f}]"


def calibration_lines(report: Mapping[str, Any]) -> list[str]:
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


def write_report(report: Mapping[str, Any], folder: Path) -> Path:
    """Write ``report.md``, ``stats.json`` and one PNG per figure into ``folder``."""
    import io
    import re

    from .plots import FIGURES

    pngs = {}
    for name, draw in FIGURES.items():  # every figure drawn before a file is written: never half a report
        buffer = io.BytesIO()
        draw(dict(report)).savefig(buffer, format="png", dpi=120)
        pngs[name] = buffer.getvalue()
    summary = summary_text(report)
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", summary)), default=0))  # data cannot close it
    parts = ["# PairScope statistics", "", fence, summary, fence, ""]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stats.json").write_text(json.dumps(report_json(report), indent=2, ensure_ascii=False))
    for name, png in pngs.items():
        (folder / f"{name}.png").write_bytes(png)
        parts += [f"![{name}]({name}.png)", ""]
    path = folder / "report.md"
    path.write_text("\n".join(parts))
    return path
