"""The ``stats --json`` form of :class:`~app.stats.scores.RunScores`: :func:`to_json` is the one
way from the typed record to its documented keys (pinned by tests/test_scoring_json.py) and
:func:`from_json` the way back (a saved ``stats.json`` draws the same figures). Readers take a
report's runs typed through :func:`judges_of`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..judge.votes import Accuracy, wilson_ci
from .scores import BestOfN, ConventionScores, RunScores, SampleCounts, TiesAccuracy


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else float(x)


def accuracy_json(a: Accuracy) -> dict[str, Any]:
    """A group's figures as ``stats --json`` writes them."""
    return {
        "n": a.scored,
        "accuracy": a.accuracy,
        "accuracy_unparsed_wrong": a.accuracy_all,
        "unparsed": a.undecided,
        "ci": a.ci,
        "ci_unparsed_wrong": a.ci_all,
    }


def _error_json(a: Accuracy) -> dict[str, Any]:
    wrong = a.decided - a.correct
    return {
        "n": a.scored,
        "error_rate": wrong / a.decided if a.decided else None,
        "error_rate_unparsed_wrong": (a.scored - a.correct) / a.scored if a.scored else None,
        "unparsed": a.undecided,
        "ci": wilson_ci(wrong, a.decided),
    }


def _ties_json(t: TiesAccuracy | None) -> dict[str, Any]:
    if t is None:
        return {}
    return {
        name: {"n": a.scored, "accuracy": a.accuracy_all, "ci": a.ci_all}
        for name, a in (("with_ties", t.with_ties), ("without_ties", t.without_ties))
    }


def best_of_n_json(b: BestOfN) -> dict[str, Any]:
    return {
        "items": b.items,
        "accuracy": b.accuracy.accuracy_all,
        "accuracy_ci": b.accuracy.ci_all,
        "random": b.random,
        "first_response": b.first_response,
        "gain_over_random": b.gain_over_random,
        "gain_over_first": b.gain_over_first,
    }


def convention_json(c: ConventionScores) -> dict[str, Any]:
    """One convention's figures under the documented keys."""
    o = c.overall
    return {
        "decided": o.decided,
        "correct": _num(o.correct),
        "unparsed": o.undecided,
        "overall": o.accuracy,
        "overall_unparsed_wrong": o.accuracy_all,
        "overall_ci": o.ci,
        "overall_unparsed_wrong_ci": o.ci_all,
        "per_category": {k: accuracy_json(a) for k, a in c.per_category.items()},
        "macro": c.macro,
        "macro_categories": c.macro_categories,
        "macro_unparsed_wrong": c.macro_all,
        "macro_unparsed_wrong_categories": c.macro_all_categories,
        "per_source": {k: accuracy_json(a) for k, a in c.per_source.items()},
        "per_query_source": {k: accuracy_json(a) for k, a in c.per_query_source.items()},
        "ties": _ties_json(c.ties),
        "best_of_n": best_of_n_json(c.best_of_n),
        "per_error_type": {k: _error_json(a) for k, a in c.per_error_type.items()},
        "k_curve": {str(k): a.accuracy for k, a in c.k_curve.items()},
        "k_curve_counts": {str(k): [a.scored, a.decided, _num(a.correct)] for k, a in c.k_curve.items()},
        "headline": c.headline,
        "headline_rule": c.headline_rule,
        "extra": dict(c.extra),
        "notes": list(c.notes),
    }


@dataclass(frozen=True)
class AccPlus:
    """MM-RLHF-RewardBench's ACC+ of a run: ``share`` of the ``groups`` (dataset ids: an id's
    pairs share it) whose every pair is right, ``right`` of them, the 95 % Wilson ``ci`` over
    ids. Read from the ``mm-rlhf`` convention's figures (the one implementation of the rule);
    ``share`` is ``None`` where it is n/a (no id has two pairs, or the ids are unknown)."""

    share: float | None
    groups: int
    right: int | None
    ci: list[float] | None


def acc_plus(s: RunScores) -> AccPlus | None:
    """The run's :class:`AccPlus`; ``None`` for runs the ``mm-rlhf`` convention did not score."""
    c = s.conventions.get("mm-rlhf")
    if c is None:
        return None
    share, groups = c.extra.get("acc_plus"), int(c.extra.get("acc_plus_groups") or 0)
    if share is None or not groups:
        return AccPlus(None, groups, None, None)
    right = int(round(share * groups))
    return AccPlus(share, groups, right, wilson_ci(right, groups))


def acc_plus_json(s: RunScores) -> dict[str, Any] | None:
    """A run's ``acc_plus`` in ``stats --json``: ``acc_plus``, ``groups``, ``groups_right``,
    ``ci`` and the ``convention`` it is read from (``None``: no vote convention scored the run)."""
    a = acc_plus(s)
    if a is None:
        return None
    return {"acc_plus": a.share, "groups": a.groups, "groups_right": a.right, "ci": a.ci, "convention": "mm-rlhf"}


#: The keys a convention's JSON always holds (tests/test_scoring_json.py pins them).
CONVENTION_KEYS = tuple(
    "decided correct unparsed overall overall_unparsed_wrong overall_ci overall_unparsed_wrong_ci per_category"
    " macro macro_categories macro_unparsed_wrong macro_unparsed_wrong_categories per_source per_query_source"
    " ties best_of_n per_error_type k_curve k_curve_counts headline headline_rule extra notes".split()
)


def to_json(s: RunScores) -> dict[str, Any]:
    """A run's ``stats --json`` entry: its counts, position keys, each convention under its name
    (``conventions``), ``official`` (= ``vlrewardbench``) and ``plurality`` as before, and the
    official figures repeated at the top level (``vote`` says so)."""
    out: dict[str, Any] = {
        "run_id": s.run_id,
        "mode": s.mode,
        "frames": s.frames,
        "k": s.k,
        "both_orders": s.both_orders,
        "judged": s.judged,
        "scored": s.scored,
        "failed_items": s.failed_items,
        "note": s.note,
        "vote": "official",
        "samples_unparsed": None if s.samples is None else s.samples.unparsed,
        "samples_failed": None if s.samples is None else s.samples.failed,
        "samples_ties": None if s.samples is None else s.samples.ties,
        "position_consistency": s.position_consistency,
        "position_consistency_items": s.position_consistency_items,
        "first_position_preference": s.first_position_preference,
        "human_kappa": dict(s.human_kappa),
    }
    conventions = {name: convention_json(c) for name, c in s.conventions.items()}
    out["acc_plus"] = acc_plus_json(s)
    out["conventions"] = conventions
    out["score_as"] = score_as_json(s)
    out["official"] = conventions.get("vlrewardbench")
    out["plurality"] = conventions.get("plurality")
    if out["official"] is not None:
        out.update({k: v for k, v in out["official"].items() if k not in _CONVENTION_ONLY})
    else:
        for key in (
            "decided",
            "correct",
            "unparsed",
            "overall",
            "overall_unparsed_wrong",
            "macro",
            "macro_unparsed_wrong",
        ):
            out[key] = None
        out.update(
            macro_categories=[], macro_unparsed_wrong_categories=[], per_category={}, per_error_type={}, k_curve={}
        )
    return out


_CONVENTION_ONLY = ("headline", "headline_rule", "extra", "notes", "k_curve_counts")


def _accuracy_of(g: Mapping[str, Any] | None) -> Accuracy:
    """An :class:`Accuracy` back from a group's JSON (``n``, ``unparsed``, an accuracy)."""
    g = g or {}
    n = int(g.get("n") or 0)
    decided = n - int(g.get("unparsed") or 0)
    share = g.get("accuracy_unparsed_wrong")
    correct = share * n if share is not None else (g.get("accuracy") or 0.0) * decided
    return Accuracy(n, decided, _num(round(correct, 9)))


def _error_of(g: Mapping[str, Any]) -> Accuracy:
    n = int(g.get("n") or 0)
    decided = n - int(g.get("unparsed") or 0)
    rate = g.get("error_rate_unparsed_wrong")
    return Accuracy(n, decided, _num(round(n - rate * n, 9)) if rate is not None else 0)


def _convention_of(name: str, c: Mapping[str, Any]) -> ConventionScores:
    decided = int(c.get("decided") or 0)
    overall = Accuracy(decided + int(c.get("unparsed") or 0), decided, c.get("correct") or 0)
    ties = c.get("ties") or {}
    bon = c.get("best_of_n") or {}
    n_bon = int(bon.get("items") or 0)
    counts = c.get("k_curve_counts") or {}
    k_curve = {int(k): Accuracy(int(v[0]), int(v[1]), v[2]) for k, v in counts.items()}
    if not counts:  # JSON without counts: the share over a unit denominator
        k_curve = {int(k): Accuracy(1, 1 if v is not None else 0, v or 0) for k, v in (c.get("k_curve") or {}).items()}

    def tie(key: str) -> Accuracy:
        t = ties.get(key) or {}
        n = int(t.get("n") or 0)
        return Accuracy(n, n, _num(round((t.get("accuracy") or 0.0) * n, 9)))

    default_rule = "overall" if name in ("vlrewardbench", "plurality") else "overall_all"
    return ConventionScores(
        name=name,
        headline_rule=c.get("headline_rule") or default_rule,
        overall=overall,
        per_category={k: _accuracy_of(g) for k, g in (c.get("per_category") or {}).items()},
        per_source={k: _accuracy_of(g) for k, g in (c.get("per_source") or {}).items()},
        per_query_source={k: _accuracy_of(g) for k, g in (c.get("per_query_source") or {}).items()},
        per_error_type={k: _error_of(g) for k, g in (c.get("per_error_type") or {}).items()},
        best_of_n=BestOfN(
            Accuracy(n_bon, n_bon, _num(round((bon.get("accuracy") or 0.0) * n_bon, 9))),
            bon.get("random"),
            bon.get("first_response"),
        ),
        ties=TiesAccuracy(tie("with_ties"), tie("without_ties")) if ties else None,
        k_curve=k_curve,
        extra=dict(c.get("extra") or {}),
        notes=tuple(c.get("notes") or ()),
    )


def from_json(m: Mapping[str, Any]) -> RunScores:
    """A run's :class:`RunScores` back from its ``stats --json`` entry (a saved ``stats.json``),
    so the figures and tables draw from the file as from a fresh report. Per-item verdicts are
    not in the JSON: ``verdict`` is empty."""
    conventions = dict(m.get("conventions") or {})
    if not conventions:  # a report written before the registry: the two vote conventions
        conventions = {"vlrewardbench": m.get("official"), "plurality": m.get("plurality")}
    samples = None
    if m.get("samples_unparsed") is not None:
        samples = SampleCounts(
            0, int(m["samples_unparsed"]), int(m.get("samples_ties") or 0), int(m.get("samples_failed") or 0)
        )
    return RunScores(
        run_id=int(m.get("run_id") or 0),
        mode=str(m.get("mode")),
        frames=m.get("frames"),
        k=int(m.get("k") or 0),
        both_orders=bool(m.get("both_orders")),
        judged=int(m.get("judged") or 0),
        scored=int(m.get("scored") or 0),
        failed_items=int(m.get("failed_items") or 0),
        samples=samples,
        conventions={n: _convention_of(n, c) for n, c in conventions.items() if c is not None},
        note=m.get("note"),
        position_consistency=m.get("position_consistency"),
        position_consistency_items=m.get("position_consistency_items"),
        first_position_preference=m.get("first_position_preference"),
        human_kappa=dict(m.get("human_kappa") or {}),
    )


def score_as_json(s: RunScores) -> list[dict[str, Any]]:
    """The "score as" rows: the same samples under every convention, side by side."""
    return [
        {
            "convention": name,
            "headline": c.headline,
            "headline_rule": c.headline_rule,
            "overall": c.overall.accuracy,
            "overall_unparsed_wrong": c.overall.accuracy_all,
            "macro": c.macro,
            "macro_unparsed_wrong": c.macro_all,
            "scored": c.overall.scored,
            "decided": c.overall.decided,
            "correct": _num(c.overall.correct),
            "extra": dict(c.extra),
        }
        for name, c in s.conventions.items()
    ]


def judges_of(report: Mapping[str, Any]) -> dict[str, RunScores]:
    """The typed scores of a report's judge runs (``report.compute_stats``), by run id; a report
    read back from ``stats.json`` is typed again with :func:`from_json`."""
    judges = dict(report.get("judges") or {})
    return {run_id: s if isinstance(s, RunScores) else from_json(s) for run_id, s in judges.items()}


def judges_json(judges: Mapping[str, RunScores]) -> dict[str, Any]:
    return {run_id: to_json(s) for run_id, s in judges.items()}


__all__ = [
    "CONVENTION_KEYS",
    "AccPlus",
    "acc_plus",
    "acc_plus_json",
    "accuracy_json",
    "best_of_n_json",
    "convention_json",
    "from_json",
    "judges_json",
    "judges_of",
    "score_as_json",
    "to_json",
]
