"""Suspect references: how strongly the project's evidence says the dataset's own preference
is wrong, per item, and each judge's accuracy with and without the suspects.

**The model** (a one-coin Dawid–Skene estimate, fitted by EM; docs/STATISTICS.md, "Suspect
references"). Each item with a reference and N ≥ 2 responses has an unknown better response
``t``. Its prior is the dataset's reference: ``P(t = reference) = π``, the rest spread evenly
over the other N − 1 responses; ``π`` (the estimated accuracy of the dataset's references) is
fitted. The evidence is a set of *votes*, each naming one response:

- each judge run's item verdict (the official vote of its K samples, ``judge_items``), with its
  item confidence (``app.judge.confidence``) where the run has one;
- each annotator's current ``prefer`` label (ties, both bad and discards name no response and
  are shown, not counted).

A vote from source ``s`` is right with probability ``q`` and otherwise names one of the other
responses at random (``(1 − q)/(N − 1)`` each): the one-coin restriction of Dawid & Skene's
confusion matrices (1979), because a response's position carries no meaning of its own here.
An annotator has one ``q`` (its agreement with what the rest of the evidence says the truth
is, Beta(3, 1)-smoothed). A run's ``q`` depends on its confidence: ``q = σ(b₀ + b₁·logit(c))``
(a verdict without a confidence has its own level), a Platt scaling fitted against the latent
truth instead of the possibly wrong reference — the run's calibration, measured by the model.
Reliabilities are kept in [0.02, 0.98]. Votes are independent given ``t`` (so a reparse of a
run, the same generations read again, is left out when its source run is in).

Human decisions are final: an item's current reference review (``app/store/references.py``:
"reference is wrong" fixes ``t`` to the corrected response, or only rules the reference out
when none is named; "confirmed" fixes it to the reference) and otherwise its newest current
adjudication that prefers a response fix ``t``; fixed items take part in fitting ``π`` and
every ``q``, as known truth.

EM starts from the votes at ``q = 0.7``, ``π = 0.9`` and alternates the posterior of every ``t``
(E) and ``π`` and the reliabilities (M) until no posterior moves by more than 1e-6. The
**score** of an item is ``1 − P(t = reference)``: the probability the reference is wrong.
An item that no vote contradicts scores at most ``1 − π`` and is never in the suspect queue.

Why not a library: cleanlab's ``multiannotator.get_label_quality_multiannotator`` (CROWDLAB)
scores a consensus from annotators and *one* classifier's predicted probabilities over a
fixed class set; here the classes are an item's own responses (2, or more), the "classifier"
is several judges that each cover some items with or without a confidence, the dataset's
reference is a noisy source of its own and adjudications are final. It is also not
installed here (AGPL-3.0, against this project's Apache-2.0). crowd-kit's ``OneCoinDawidSkene``
has no per-vote confidence and no fixed items. The estimate is small enough to state here in
numpy, with scikit-learn's logistic regression for each run's calibration.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..judge.ensemble import short_label
from ..judge.modes import get_mode
from ..judge.runs import RunChoice, run_choices
from ..store import Store
from ..store.references import ReferenceReview, current_reference_reviews

#: Reliabilities are kept inside this range (no single vote is ever certain).
Q_MIN, Q_MAX = 0.02, 0.98
#: Where EM starts: every source right 70% of the time, references right 90% of the time.
Q_START, PI_START = 0.7, 0.9
#: An annotator's reliability is smoothed towards 0.75 by 3 right and 1 wrong pseudo-votes.
ANNOTATOR_PRIOR = (3.0, 1.0)
#: The estimated reference accuracy is smoothed by 9 right and 1 wrong pseudo-items, kept ≥ 0.5.
REFERENCE_PRIOR = (9.0, 1.0)
#: An item at or above this score is a suspect (left out of "accuracy without suspects").
SUSPECT_THRESHOLD = 0.5
MAX_ITERATIONS = 200
TOLERANCE = 1e-6


@dataclass(frozen=True)
class Vote:
    """One source naming one response of one item (``item`` indexes the model's items)."""

    item: int
    response: int
    source: int
    confidence: float | None = None


@dataclass(frozen=True)
class Source:
    """A judge run (``kind="run"``) or an annotator (``kind="annotator"``)."""

    kind: str
    key: str  # run id or annotator name
    label: str


@dataclass
class Fit:
    """What EM found: the posterior of each item's better response, ``π`` and each vote's reliability."""

    posterior: list[np.ndarray]
    reference_accuracy: float
    vote_reliability: np.ndarray  # per vote, P(it names the better response)
    iterations: int
    converged: bool


def _logit(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.01, 0.99)
    return np.asarray(np.log(x / (1 - x)))


def _features(conf: np.ndarray) -> np.ndarray:
    """A run's vote features: logit(confidence) where there is one, and "no confidence"."""
    has = ~np.isnan(conf)
    return np.column_stack([np.where(has, _logit(np.nan_to_num(conf, nan=0.5)), 0.0), (~has).astype(float)])


def fit_dawid_skene(
    n_responses: Sequence[int],
    reference: Sequence[int],
    votes: Sequence[Vote],
    sources: Sequence[Source],
    fixed: dict[int, int | None] | None = None,
) -> Fit:
    """EM for the one-coin Dawid–Skene model of the module docstring.

    ``n_responses``/``reference`` per item (every item N ≥ 2 with a reference); ``fixed``: item →
    its known better response, or ``None`` for "not the reference" (a correction naming none)."""
    from sklearn.linear_model import LogisticRegression

    fixed = fixed or {}
    n = np.asarray(n_responses, dtype=int)
    ref = np.asarray(reference, dtype=int)
    m = len(n)
    width = int(n.max()) if m else 2
    exists = np.arange(width)[None, :] < n[:, None]
    item = np.array([v.item for v in votes], dtype=int)
    said = np.array([v.response for v in votes], dtype=int)
    src = np.array([v.source for v in votes], dtype=int)
    conf = np.array([np.nan if v.confidence is None else v.confidence for v in votes], dtype=float)
    q = np.full(len(votes), Q_START)
    pi = PI_START
    models: dict[int, Any] = {}
    posterior = np.zeros((m, width))
    converged, iterations = False, 0
    rows = np.arange(m)
    for step in range(1, MAX_ITERATIONS + 1):
        iterations = step
        # E: log prior + every vote's log-likelihood, per item and candidate response
        others = np.log((1 - pi) / np.maximum(n - 1, 1))
        logp = np.where(exists, others[:, None], -np.inf)
        logp[rows, ref] = math.log(pi)
        wrong = np.log((1 - q) / np.maximum(n[item] - 1, 1))
        np.add.at(logp, item, np.where(exists[item], wrong[:, None], 0.0))
        np.add.at(logp, (item, said), np.log(q) - wrong)
        for i, truth in fixed.items():
            if truth is None:
                logp[i, ref[i]] = -np.inf
            else:
                logp[i] = np.where(np.arange(width) == truth, 0.0, -np.inf)
        logp -= logp.max(axis=1, keepdims=True)
        new = np.exp(logp)
        new /= new.sum(axis=1, keepdims=True)
        change = float(np.abs(new - posterior).max()) if m else 0.0
        posterior = new
        if change < TOLERANCE:
            converged = True
            break
        # M: the reference's accuracy, each source's reliability
        right_ref = float(posterior[rows, ref].sum())
        a, b = REFERENCE_PRIOR
        pi = float(np.clip((right_ref + a) / (m + a + b), 0.5, Q_MAX))
        p_right = posterior[item, said] if len(votes) else np.zeros(0)
        for s, source in enumerate(sources):
            mine = src == s
            if not mine.any():
                continue
            if source.kind == "annotator":
                a, b = ANNOTATOR_PRIOR
                q[mine] = (p_right[mine].sum() + a) / (mine.sum() + a + b)
                continue
            x = _features(conf[mine])
            y = np.r_[np.ones(mine.sum()), np.zeros(mine.sum())]
            w = np.r_[p_right[mine], 1 - p_right[mine]]
            model = models.get(s)
            if model is None:
                model = LogisticRegression(C=1.0, warm_start=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(np.vstack([x, x]), y, sample_weight=w + 1e-9)
            models[s] = model
            q[mine] = model.predict_proba(x)[:, 1]
        q = np.clip(q, Q_MIN, Q_MAX)
    split = [posterior[i, : n[i]].copy() for i in range(m)]
    return Fit(split, pi, q.copy(), iterations, converged)


# -- a project's evidence ------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence on an item. ``says``: the response it names (``None``: a tie,
    both bad or a discard, which name none); ``agrees``: with the dataset's reference;
    ``reliability``: the model's probability that this vote names the better response;
    ``weight``: its log-likelihood ratio for the response it names against any other."""

    source: str  # run | annotator | adjudication | review
    name: str
    says: int | None
    agrees: bool | None
    confidence: float | None = None
    reliability: float | None = None
    weight: float = 0.0
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "name": self.name,
            "says": self.says,
            "agrees": self.agrees,
            "confidence": json_number(self.confidence),
            "reliability": json_number(self.reliability),
            "weight": json_number(self.weight),
            "note": self.note,
        }


@dataclass(frozen=True)
class Suspect:
    """One item with a reference: its score and the evidence behind it."""

    item_id: int
    ext_id: str
    category: str
    reference: int
    n_responses: int
    score: float  # P(the reference is wrong)
    alternative: int | None  # the most probable other response
    posterior: tuple[float, ...]
    evidence: tuple[Evidence, ...]
    status: str  # open | wrong | confirmed | adjudicated
    review: ReferenceReview | None = None

    @property
    def contradicted(self) -> bool:
        """Some vote names another response than the reference, or a human ruled it out."""
        return self.status == "wrong" or any(e.agrees is False for e in self.evidence)

    def against(self) -> list[Evidence]:
        return [e for e in self.evidence if e.agrees is False]

    def as_dict(self) -> dict[str, Any]:
        review = self.review
        return {
            "item": self.ext_id,
            "item_id": self.item_id,
            "category": self.category,
            "reference": self.reference,
            "score": json_number(self.score),
            "alternative": self.alternative,
            "posterior": [json_number(p) for p in self.posterior],
            "status": self.status,
            "review": None
            if review is None
            else {
                "verdict": review.verdict,
                "corrected": review.corrected,
                "by": review.reviewer,
                "at": review.created_at,
                "why": review.reason,
            },
            "evidence": [e.as_dict() for e in self.evidence],
        }


@dataclass(frozen=True)
class SourceFigure:
    """What the model says of one source: votes cast, how often it names the reference, its
    mean reliability (``q``), and for runs the fitted calibration's coefficients."""

    kind: str
    key: str
    label: str
    votes: int
    agree_with_reference: int
    reliability: float | None


@dataclass(frozen=True)
class SuspectReport:
    """Every item with a reference, most suspect first, and what the model fitted."""

    items: tuple[Suspect, ...]
    reference_accuracy: float
    sources: tuple[SourceFigure, ...]
    runs: tuple[RunChoice, ...]
    left_out_runs: tuple[tuple[int, str], ...]
    iterations: int
    converged: bool
    #: run id → item id → the run's official decision (None: undecided).
    decisions: dict[int, dict[int, int | None]] = field(default_factory=dict)
    #: items whose reference humans confirmed (docs/STATISTICS.md).
    confirmed: frozenset[int] = frozenset()

    def queue(self, top: int | None = None, reviewed: bool = True) -> list[Suspect]:
        """The suspect queue: items some evidence contradicts, most suspect first (``reviewed``
        False: without those a reviewer already decided)."""
        out = [s for s in self.items if s.contradicted and (reviewed or s.status == "open")]
        return out if top is None else out[:top]

    def by_id(self) -> dict[int, Suspect]:
        return {s.item_id: s for s in self.items}


def json_number(x: float | None) -> float | None:
    """``x`` rounded to 6 places for JSON; ``None`` for none, NaN or infinity."""
    return None if x is None or not math.isfinite(x) else round(float(x), 6)


def _current_human(store: Store) -> tuple[dict[str, dict[int, int | None]], dict[int, tuple[str, int | None]]]:
    """Annotator → item → the response their current label prefers (``None``: tie, both bad or
    discard); item → (adjudicator, preferred) of its newest current adjudication."""
    labels: dict[str, dict[int, int | None]] = {}
    newest: dict[int, tuple[str, str, int | None]] = {}
    for name in store.annotators():
        mine = {i: lab.preferred for i, lab in store.current_labels(name).items() if lab.is_labeled}
        if mine:
            labels[name] = mine
        for i, lab in store.current_labels(name, kind="adjudication").items():
            stamp = lab.created_at or ""
            if lab.is_labeled and (i not in newest or stamp >= newest[i][0]):
                newest[i] = (stamp, name, lab.preferred)
    return labels, {i: (who, pref) for i, (_t, who, pref) in newest.items()}


def _choose_runs(store: Store, run_ids: Sequence[int] | None) -> tuple[list[RunChoice], list[tuple[int, str]]]:
    choices = {c.id: c for c in run_choices(store)}
    records = {r.id: r for r in store.runs()}
    if run_ids is not None:
        for run_id in run_ids:
            if run_id not in choices:
                known = ", ".join(str(i) for i in choices) or "none"
                raise ValueError(f"no judge run {run_id} in this project (runs: {known})")
            if not get_mode(choices[run_id].mode).votes_on_preference:
                raise ValueError(f"run {run_id} ({choices[run_id].mode}) casts no preference votes")
        wanted = list(run_ids)
    else:
        wanted = [i for i, c in choices.items() if get_mode(c.mode).votes_on_preference]
    left_out: list[tuple[int, str]] = []
    chosen: list[RunChoice] = []
    for run_id in wanted:
        source = records[run_id].derived_from
        if source is not None and source in wanted:
            left_out.append((run_id, f"reparse of run {source}: the same generations, counted once"))
            continue
        chosen.append(choices[run_id])
    return chosen, left_out


def load_suspects(store: Store, run_ids: Sequence[int] | None = None) -> SuspectReport:
    """Read the evidence of every item with a reference (one read snapshot) and fit the model.
    ``run_ids``: the judge runs to use (default: every run that votes on preferences, a reparse
    left out when its source run is in). ``ValueError`` for an unknown run or one without votes."""
    with store.read_snapshot():
        runs, left_out = _choose_runs(store, run_ids)
        refs = {i: r for i, r in store.ref_chosen().items() if r is not None}
        n_resp = store.items_n_responses()
        ids = sorted(i for i in refs if n_resp.get(i, 0) >= 2 and 0 <= refs[i] < n_resp[i])
        decisions: dict[int, dict[int, int | None]] = {}
        confidences: dict[int, dict[int, float | None]] = {}
        for run in runs:
            rows = store.item_verdict_rows(run.id)
            decisions[run.id] = {i: row[1] for i, row in rows.items()}
            confidences[run.id] = {i: row[8] for i, row in rows.items()}
        labels, adjudicated = _current_human(store)
        reviews = current_reference_reviews(store)
        summaries = {s.id: s for s in store.item_summaries_by_id(ids)} if ids else {}
    index = {item_id: k for k, item_id in enumerate(ids)}
    sources: list[Source] = [Source("run", str(r.id), short_label(r)) for r in runs]
    sources += [Source("annotator", name, name) for name in sorted(labels)]
    votes: list[Vote] = []
    for s, source in enumerate(sources):
        if source.kind == "run":
            run_id = int(source.key)
            for item_id, choice in decisions[run_id].items():
                if item_id in index and choice is not None and 0 <= choice < n_resp[item_id]:
                    votes.append(Vote(index[item_id], int(choice), s, confidences[run_id].get(item_id)))
        else:
            for item_id, preferred in labels[source.key].items():
                if item_id in index and preferred is not None:
                    votes.append(Vote(index[item_id], int(preferred), s))
    fixed: dict[int, int | None] = {}
    status: dict[int, str] = {}
    for item_id in ids:
        review = reviews.get(item_id)
        if review is not None and review.verdict == "wrong":
            fixed[index[item_id]], status[item_id] = review.corrected, "wrong"
        elif review is not None and review.verdict == "confirmed":
            fixed[index[item_id]], status[item_id] = refs[item_id], "confirmed"
        elif item_id in adjudicated and adjudicated[item_id][1] is not None:
            fixed[index[item_id]], status[item_id] = adjudicated[item_id][1], "adjudicated"
    fit = fit_dawid_skene([n_resp[i] for i in ids], [refs[i] for i in ids], votes, sources, fixed)
    by_item: dict[int, list[Evidence]] = {}
    for k, vote in enumerate(votes):
        item_id = ids[vote.item]
        q = float(fit.vote_reliability[k])
        weight = math.log(q * (n_resp[item_id] - 1) / (1 - q))
        source = sources[vote.source]
        by_item.setdefault(item_id, []).append(
            Evidence(
                source.kind, source.label, vote.response, vote.response == refs[item_id], vote.confidence, q, weight
            )
        )
    for name in sorted(labels):
        for item_id, preferred in labels[name].items():
            if item_id in index and preferred is None:
                by_item.setdefault(item_id, []).append(
                    Evidence("annotator", name, None, None, note="no preferred response (tie, both bad or discard)")
                )
    for item_id, (who, preferred) in adjudicated.items():
        if item_id in index:
            note = "final" if status.get(item_id) == "adjudicated" else "no preferred response"
            agrees = None if preferred is None else preferred == refs[item_id]
            by_item.setdefault(item_id, []).append(Evidence("adjudication", who, preferred, agrees, note=note))
    for item_id, review in reviews.items():
        if item_id in index:
            agrees = review.verdict == "confirmed"
            when = (review.created_at or "")[:19].replace("T", " ")
            note = f"reference {'confirmed' if agrees else 'is wrong'}, {when} UTC"
            if review.reason:
                note += f": {review.reason}"
            by_item.setdefault(item_id, []).append(
                Evidence("review", review.reviewer, review.corrected, agrees, note=note)
            )
    suspects = []
    for item_id in ids:
        post = fit.posterior[index[item_id]]
        ref = refs[item_id]
        others = [(float(p), r) for r, p in enumerate(post) if r != ref]
        best = max(others)[1] if others and max(others)[0] > 0 else None
        summary = summaries.get(item_id)
        suspects.append(
            Suspect(
                item_id,
                summary.ext_id if summary else f"#{item_id}",
                summary.category if summary else "",
                ref,
                n_resp[item_id],
                float(1 - post[ref]),
                best,
                tuple(float(p) for p in post),
                tuple(by_item.get(item_id, ())),
                status.get(item_id, "open"),
                reviews.get(item_id),
            )
        )
    suspects.sort(key=lambda s: (-s.score, s.item_id))
    figures = []
    for s, source in enumerate(sources):
        mine = [k for k, v in enumerate(votes) if v.source == s]
        agree = sum(1 for k in mine if votes[k].response == refs[ids[votes[k].item]])
        rel = float(np.mean(fit.vote_reliability[mine])) if mine else None
        figures.append(SourceFigure(source.kind, source.key, source.label, len(mine), agree, rel))
    confirmed = frozenset(
        i for i in ids if _confirmed(i, refs[i], status.get(i), reviews.get(i), adjudicated.get(i), labels)
    )
    return SuspectReport(
        tuple(suspects),
        fit.reference_accuracy,
        tuple(figures),
        tuple(runs),
        tuple(left_out),
        fit.iterations,
        fit.converged,
        decisions,
        confirmed,
    )


def _confirmed(
    item_id: int,
    reference: int,
    status: str | None,
    review: ReferenceReview | None,
    adjudication: tuple[str, int | None] | None,
    labels: dict[str, dict[int, int | None]],
) -> bool:
    """Humans confirmed the reference: a "confirmed" review; else the newest adjudication
    prefers it; else (neither) at least one annotator prefers a response and all who do
    prefer the reference. A "wrong" review is never confirmed."""
    if review is not None:
        return review.verdict == "confirmed"
    if adjudication is not None:
        return adjudication[1] == reference
    prefs = [mine[item_id] for mine in labels.values() if mine.get(item_id) is not None]
    return bool(prefs) and all(p == reference for p in prefs)


__all__ = [
    "Evidence",
    "Fit",
    "SUSPECT_THRESHOLD",
    "Source",
    "SourceFigure",
    "Suspect",
    "SuspectReport",
    "Vote",
    "fit_dawid_skene",
    "json_number",
    "load_suspects",
]
