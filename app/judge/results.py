"""The verdict of a run on an item (the one definition every reader uses) and a run's headline
summary. The vote rule is ``votes``; how a mode's samples become votes is ``modes``.

Writing verdicts goes through :func:`record_verdicts`, which stores the samples and the item
verdicts they change (``judge_items``, read by the filters) in one transaction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..store import RunRecord, Store, VerdictRecord
from .modes import get_mode
from .votes import CONVENTIONS, DEFAULT_CONVENTION, Accuracy, ItemVerdict


def item_verdict(run: RunRecord, verdicts: Sequence[VerdictRecord], n_responses: int) -> ItemVerdict | None:
    """The verdict of ``run`` on one item from its stored samples (``None``: the mode casts no
    preference votes, e.g. step runs)."""
    item_id = verdicts[0].item_id if verdicts else -1
    return get_mode(run.mode).item_verdict(item_id, n_responses, verdicts, run.k, run.both_orders)


def judge_item(run: RunRecord, verdicts: Sequence[VerdictRecord], n_responses: int | None = None) -> ItemVerdict | None:
    """:func:`item_verdict`, with the number of responses read from the samples when not given
    (pairwise samples show every response)."""
    if n_responses is None:
        n_responses = max((max(v.order_shown) for v in verdicts if v.order_shown), default=-1) + 1
    return item_verdict(run, verdicts, n_responses)


def _samples_by_item(store: Store, run: RunRecord, item_ids: Iterable[int] | None) -> dict[int, list[VerdictRecord]]:
    """A run's stored samples per item (of these items, or of every item it judged)."""
    wanted = None if item_ids is None else set(item_ids)
    by_item: dict[int, list[VerdictRecord]] = {}
    if wanted is not None and len(wanted) < 64:
        for item_id in wanted:
            by_item[item_id] = store.verdicts(run.id, item_id)
    else:
        for v in store.verdicts(run.id):
            if wanted is None or v.item_id in wanted:
                by_item.setdefault(v.item_id, []).append(v)
    return by_item


def _decide(
    store: Store, run: RunRecord, by_item: dict[int, list[VerdictRecord]]
) -> tuple[dict[int, ItemVerdict], dict[int, int]]:
    n = store.items_n_responses(list(by_item))
    ids = [item_id for item_id, verdicts in by_item.items() if verdicts]
    decided = get_mode(run.mode).item_verdicts(
        ids, [n.get(i, 0) for i in ids], [by_item[i] for i in ids], run.k, run.both_orders
    )
    return ({} if decided is None else dict(zip(ids, decided, strict=True))), n


def item_verdicts(store: Store, run: RunRecord, item_ids: Iterable[int] | None = None) -> dict[int, ItemVerdict]:
    """The verdict of a run on every item it judged (or on these items)."""
    return _decide(store, run, _samples_by_item(store, run, item_ids))[0]


def verdict_phrases(verdict: ItemVerdict | None, screen: Callable[[int], str], reference: int | None) -> list[str]:
    """How the judge panel words a run's verdict on an item: the official decision with its
    votes of K, the plurality when it differs, unparsed and failed samples apart, agreement
    with the dataset and across orders. ``screen(index)`` names a response as the user sees it."""
    if verdict is None:
        return ["Judge: no preference verdict (this mode scores steps)"]
    official, plurality = verdict.official, verdict.plurality
    votes = verdict.counts.get(official, 0) if official is not None else max(verdict.counts.values(), default=0)
    if not verdict.present:
        return [f"Judge: no sample present — {verdict.failed} failed: {verdict.errors[0] if verdict.errors else ''}"]
    parts = [
        f"Judge: {screen(official) if official is not None else 'no majority'} ({votes} of {verdict.present} samples"
        + (f"; {verdict.planned - verdict.present} failed or missing" if verdict.present < verdict.planned else "")
        + ")"
    ]
    if plurality != official:
        parts.append(f"plurality: {screen(plurality) if plurality is not None else 'tied'}")
    if verdict.unparsed:
        parts.append(f"{verdict.unparsed} unparsed")
    if verdict.failed:
        parts.append(f"{verdict.failed} failed: {verdict.errors[0]}")
    if official is not None and reference is not None:
        parts.append("agrees with the dataset ✓" if official == reference else "disagrees with the dataset ✗")
    if verdict.consistent is not None:
        parts.append("consistent across orders" if verdict.consistent else "INCONSISTENT across orders")
    return parts


def _rows(store: Store, run: RunRecord, item_ids: Iterable[int] | None) -> list[tuple]:
    """``judge_items`` rows: the item verdict under both conventions and the item confidence
    (``app.judge.confidence``), decided here once for every reader (filters, queue, panels)."""
    from .confidence import item_confidence_of  # numpy: only where samples are recorded

    ids = None if item_ids is None else list(item_ids)
    samples = _samples_by_item(store, run, ids)
    verdicts, n = _decide(store, run, samples)
    ref = store.ref_chosen(list(verdicts))
    rows: list[tuple] = []
    for item_id in ids if ids is not None else list(verdicts):
        v = verdicts.get(item_id)
        if v is None:
            rows.append((item_id,))
            continue
        r = ref.get(item_id)
        rows.append(
            (
                item_id,
                v.official,
                v.outcome(r, "official"),
                v.plurality,
                v.outcome(r, "plurality"),
                int(v.consistent is False),
                v.unparsed,
                v.failed,
                item_confidence_of(v, samples[item_id], n.get(item_id, 0)),
            )
        )
    return rows


def refresh_item_verdicts(store: Store, run: RunRecord, item_ids: Iterable[int] | None = None) -> None:
    """Recompute the stored item verdicts (``judge_items``) of a run, for some items or all."""
    with store.transaction():
        store.put_item_verdicts(run.id, _rows(store, run, item_ids))


def record_verdicts(store: Store, run: RunRecord, verdicts: Sequence[VerdictRecord]) -> None:
    """Store samples and the item verdicts they change, in one transaction."""
    if not verdicts:
        return
    with store.transaction():
        if not store.has_verdicts() and store.meta("judge_items_rule") is None:
            store.mark_item_verdicts_fresh()  # a first run: decided under the current rule
        store.add_verdicts(verdicts)
        store.put_item_verdicts(run.id, _rows(store, run, sorted({v.item_id for v in verdicts})))


def clear_failed(store: Store, run: RunRecord) -> None:
    """Drop a run's failed samples (a resume retries them) and re-decide the items they touched."""
    with store.transaction():
        touched = store.clear_failed(run.id)
        if touched:
            store.put_item_verdicts(run.id, _rows(store, run, touched))


def ensure_item_verdicts(store: Store) -> bool:
    """Rebuild every run's stored item verdicts if the project predates them (schema 4);
    returns whether it did. A read-only project is left as it is."""
    if store.readonly or not store.item_verdicts_stale():
        return False
    with store.transaction():
        for run in store.runs():
            refresh_item_verdicts(store, run)
        store.mark_item_verdicts_fresh()
    return True


#: Accuracy of a run under one vote convention: the one :class:`~.votes.Accuracy` record.
ConventionSummary = Accuracy


@dataclass(frozen=True)
class RunSummary:
    """What a run's samples came to: item counts, accuracy under every convention, and the
    samples that failed (with their reasons) kept apart from those that were unparsed. Samples
    are vote samples (a pointwise sample scores every response; equal top scores are a tie);
    ``failed_items`` had every sample fail and are left out of the accuracy."""

    run_id: int
    mode: str
    items: int
    with_reference: int
    samples: int
    unparsed: int
    ties: int
    failed: int
    failure_reasons: dict[str, int]
    conventions: dict[str, Accuracy] = field(default_factory=dict)
    consistency: float | None = None
    votes: bool = True
    failed_items: int = 0

    def line(self) -> str:
        """One plain-text paragraph for the CLI and the judge panel; every figure labelled."""

        def pct(x: float | None) -> str:
            return "n/a" if x is None else f"{100 * x:.1f}%"

        if self.samples and self.failed == self.samples and self.failure_reasons:
            reason, count = max(self.failure_reasons.items(), key=lambda kv: kv[1])
            hint = " — see `pairscope info --missing`" if reason.startswith("media") else ""
            return f"{self.failed} of {self.samples} samples failed: {reason}{hint}"
        text = f"run {self.run_id}: {self.items} item{'s' if self.items != 1 else ''} judged"
        if not self.votes:
            text += f" ({self.mode} run: no preference votes; see `pairscope stats` for step metrics)"
        else:
            n = self.with_reference - self.failed_items
            text += f"; vs dataset reference ({n} item{'s' if n != 1 else ''}"
            text += f", {self.failed_items} failed items left out):" if self.failed_items else "):"
            for name, c in self.conventions.items():
                text += (
                    f" {name} vote {pct(c.accuracy)} ({c.correct}/{c.decided}, undecided excluded),"
                    f" {pct(c.accuracy_undecided_wrong)} (undecided counted wrong);"
                )
            text = text.rstrip(";")
            if self.consistency is not None:
                text += f"; both-orders consistency {pct(self.consistency)}"
        text += f". Samples: {self.samples}, {self.unparsed} unparsed, {self.ties} ties, {self.failed} failed"
        if self.failure_reasons:
            text += (
                " ("
                + "; ".join(f"{n}× {r}" for r, n in sorted(self.failure_reasons.items(), key=lambda kv: -kv[1])[:3])
                + ")"
            )
        return text


def summarize(store: Store, run: RunRecord) -> RunSummary:
    """Headline figures of a run against the dataset's reference, under every convention
    (counted by :class:`~.votes.Accuracy`, as the statistics count them)."""
    samples = store.verdicts(run.id)
    reasons = Counter(_reason(v.error) for v in samples if v.error)
    votes = get_mode(run.mode).votes_on_preference
    judged = {v.item_id for v in samples}
    verdicts = item_verdicts(store, run) if votes else {}
    ref = {i: r for i, r in store.ref_chosen(list(verdicts)).items() if r is not None}
    scored = {i: r for i, r in ref.items() if verdicts[i].present}
    conventions = {
        name: Accuracy.of_pairs([(verdicts[i].choice(name), r) for i, r in scored.items()]) for name in CONVENTIONS
    }
    consistent = [v.consistent for v in verdicts.values() if v.consistent is not None]
    if votes:  # vote samples: what the accuracy is decided from
        n_samples = sum(v.planned - v.missing for v in verdicts.values())
        unparsed = sum(v.unparsed for v in verdicts.values())
        ties = sum(v.ties for v in verdicts.values())
        failed = sum(v.failed for v in verdicts.values())
    else:
        n_samples = len(samples)
        unparsed = sum(1 for v in samples if v.error is None and not v.parsed)
        ties = 0
        failed = sum(reasons.values())
    return RunSummary(
        run.id,
        run.mode,
        len(judged),
        len(ref),
        n_samples,
        unparsed,
        ties,
        failed,
        dict(reasons),
        conventions,
        sum(consistent) / len(consistent) if consistent else None,
        votes,
        len(ref) - len(scored),
    )


def _reason(error: str) -> str:
    """A failure's reason without its item-specific detail (file names), for grouping."""
    head, _, rest = error.partition(": ")
    if head == "media":
        return "media: image or video not found or unreadable" if rest else "media"
    return error if len(error) <= 80 else error[:77] + "…"


__all__ = [
    "DEFAULT_CONVENTION",
    "ItemVerdict",
    "RunSummary",
    "clear_failed",
    "ensure_item_verdicts",
    "item_verdict",
    "item_verdicts",
    "judge_item",
    "record_verdicts",
    "refresh_item_verdicts",
    "summarize",
    "verdict_phrases",
]
