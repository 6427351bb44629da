"""Which item the annotator labels next (``U``): the queue orders.

``id``
    The next item without this annotator's label, in store order (what ``U`` always did).
``judges_disagree``
    Items whose judges' verdicts differ — the runs' item verdicts (the one vote, official
    convention, as stored in ``judge_items``), "no majority" counting as an answer of its own.
    Most split first: the share of judges outside the largest group (1–1–1 before 2–2 before
    2–1), then more judges first.
``least_confident``
    Items the judges are least sure of: per run, the item confidence (``app.judge.confidence``:
    the mean probability the samples gave the decision) or, where no sample has one, the vote
    share of its decision (votes for it of K, 0 of K without a majority) — then the mean over
    the runs.
    Lowest first.
``annotators_disagree``
    Items whose current labels (other annotators') state different preferences (a response,
    tie, both bad), most split first, then more annotators first.
``suspect_reference``
    Items whose dataset reference some evidence contradicts, most probably wrong first (the
    score of ``app.stats.suspects``, which the window computes off the GUI thread and hands to
    :func:`suspect_reference`; this module does not fit the model).

Every order keeps only items this annotator has not labeled, breaks ties by item id (so the
same project gives the same order), and says why an item is next (:attr:`QueueEntry.reason`,
e.g. "judges split 2–1 (runs 3, 4, 5)"). When no item is left in an order, ``U`` falls back to
id order and says so. The judge orders read the window's ensemble, else every run that casts
preference votes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from ..store import Store
from ..store.queue_queries import queue_judge_rows, queue_label_rows, queue_stamp

#: Order name → what the window's menu says ("Next item by: …").
ORDERS: dict[str, str] = {
    "id": "id order",
    "judges_disagree": "judges disagree",
    "least_confident": "least confident",
    "annotators_disagree": "annotators disagree",
    "suspect_reference": "suspect reference first",
}
DEFAULT_ORDER = "id"


def check_order(order: str) -> str:
    if order not in ORDERS:
        raise ValueError(f"queue order must be one of {', '.join(ORDERS)}, got {order!r}")
    return order


@dataclass(frozen=True)
class QueueEntry:
    """One item of a queue and why it is where it is."""

    item_id: int
    reason: str
    key: tuple  # the sort key (lower first); its last element is the item id


def split_sizes(answers: Iterable) -> tuple[int, ...]:
    """Group sizes of equal answers, largest first: ``[1, 1, 0]`` → ``(2, 1)``."""
    return tuple(sorted(Counter(answers).values(), reverse=True))


def split_text(sizes: Sequence[int]) -> str:
    return "–".join(str(s) for s in sizes)


def _runs_text(run_ids: Sequence[int]) -> str:
    return ("run " if len(run_ids) == 1 else "runs ") + ", ".join(str(r) for r in run_ids)


def judges_disagree(store: Store, run_ids: Sequence[int], skip: Collection[int]) -> list[QueueEntry]:
    """Items with at least two judges whose item verdicts differ, most split first."""
    by_item: dict[int, list[tuple[int, int | None]]] = defaultdict(list)
    for item_id, run_id, choice in queue_judge_rows(store, run_ids):
        if item_id not in skip:
            by_item[item_id].append((run_id, choice))
    out = []
    for item_id, votes in by_item.items():
        sizes = split_sizes(choice for _, choice in votes)
        if len(votes) < 2 or len(sizes) < 2:
            continue
        n = len(votes)
        undecided = sum(1 for _, c in votes if c is None)
        note = f"; {undecided} without a majority" if undecided else ""
        reason = f"judges split {split_text(sizes)} ({_runs_text([r for r, _ in votes])}{note})"
        out.append(QueueEntry(item_id, reason, (-(n - sizes[0]) / n, -n, item_id)))
    return sorted(out, key=lambda e: e.key)


def run_confidences(store: Store, run_ids: Sequence[int], item_ids: Collection[int]) -> dict:
    """``(item_id, run_id) → (item confidence or None, votes for the decision, K)``: the item
    confidence stored with the item verdict (``app.judge.confidence``, the one definition) and
    the vote share of the runs' item verdicts (the one vote, ``results.item_verdicts``)."""
    from .modes import get_mode
    from .results import item_verdicts

    out = {}
    for run_id in run_ids:
        run = store.run(run_id)
        if not get_mode(run.mode).votes_on_preference:
            continue
        verdicts = item_verdicts(store, run, item_ids)
        confidences = store.item_confidences(run_id, list(verdicts))
        for item_id, v in verdicts.items():
            votes = v.counts.get(v.official, 0) if v.official is not None else 0
            out[item_id, run_id] = (confidences.get(item_id), votes, v.planned)
    return out


def least_confident(store: Store, run_ids: Sequence[int], skip: Collection[int]) -> list[QueueEntry]:
    """Every judged item this annotator has not labeled, least confident first."""
    judged = [(i, r) for i, r, _ in queue_judge_rows(store, run_ids) if i not in skip]
    known = run_confidences(store, run_ids, {i for i, _ in judged})
    per_item: dict[int, list[tuple[int, float, str]]] = defaultdict(list)
    for item_id, run_id in judged:
        if (item_id, run_id) not in known:
            continue
        confidence, top, k = known[item_id, run_id]
        if confidence is not None:
            per_item[item_id].append((run_id, confidence, "stored"))
        else:
            per_item[item_id].append((run_id, top / k if k else 0.0, f"{top} of {k} votes"))
    out = []
    for item_id, values in per_item.items():
        mean = sum(v for _, v, _ in values) / len(values)
        sources = {s == "stored" for _, _, s in values}
        if sources == {True}:
            how = "item confidence"
        elif sources == {False}:
            how = "vote share, no stored confidence"
            if len(values) == 1:
                how = f"vote share {values[0][2]}, no stored confidence"
        else:
            how = "item confidence and vote share"
        reason = f"judge confidence {mean:.2f} ({how}; {_runs_text([r for r, _, _ in values])})"
        out.append(QueueEntry(item_id, reason, (round(mean, 9), item_id)))
    return sorted(out, key=lambda e: e.key)


def annotators_disagree(store: Store, annotator: str, skip: Collection[int]) -> list[QueueEntry]:
    """Items whose other annotators' current preferences differ, most split first."""
    by_item: dict[int, list[tuple[str, object]]] = defaultdict(list)
    for item_id, name, outcome, preferred in queue_label_rows(store):
        if item_id not in skip and name != annotator:
            by_item[item_id].append((name, preferred if outcome == "prefer" else outcome))
    out = []
    for item_id, labels in by_item.items():
        sizes = split_sizes(answer for _, answer in labels)
        if len(sizes) < 2:
            continue
        n = len(labels)
        reason = f"annotators split {split_text(sizes)} ({', '.join(name for name, _ in labels)})"
        out.append(QueueEntry(item_id, reason, (-(n - sizes[0]) / n, -n, item_id)))
    return sorted(out, key=lambda e: e.key)


def suspect_reference(scores: Sequence[tuple[int, float]], skip: Collection[int]) -> list[QueueEntry]:
    """The suspect queue (item id, P(the reference is wrong)), most suspect first, without
    the items this annotator has labeled."""
    out = [
        QueueEntry(item_id, f"suspect reference: probably wrong ({score:.2f}, pairscope suspects)", (-score, item_id))
        for item_id, score in scores
        if item_id not in skip
    ]
    return sorted(out, key=lambda e: e.key)


def preference_runs(store: Store) -> list[int]:
    """Every run that casts preference votes (the judge orders' runs without an ensemble)."""
    from .modes import get_mode

    return [r.id for r in store.runs() if get_mode(r.mode).votes_on_preference]


def ranked(
    store: Store, order: str, annotator: str, labeled: Collection[int], run_ids: Sequence[int] | None = None
) -> list[QueueEntry]:
    """The queue of ``order`` (not ``id``): items this annotator has not labeled, best first."""
    check_order(order)
    if order == "annotators_disagree":
        return annotators_disagree(store, annotator, labeled)
    runs = list(run_ids) if run_ids else preference_runs(store)
    if order == "judges_disagree":
        return judges_disagree(store, runs, labeled)
    if order == "least_confident":
        return least_confident(store, runs, labeled)
    return []


class QueueCache:
    """The last queue ranked, kept while its inputs are unchanged, so that ``U`` after ``U``
    does not rank every item again (least confident reads every sample of every run: ~0.2 s
    for 4 runs of 2,000 items; bench/queue_bench.py). Ranked over every item; this annotator's
    labeled items are left out when read, so labeling does not make it stale."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._entries: list[QueueEntry] = []

    def ranked(
        self, store: Store, order: str, annotator: str, labeled: Collection[int], run_ids: Sequence[int] | None = None
    ) -> list[QueueEntry]:
        """:func:`ranked`, from the cache when the order, runs and stored data are the same."""
        check_order(order)
        runs = list(run_ids) if run_ids else preference_runs(store)
        reads_labels = order == "annotators_disagree"
        key = (store.path, order, annotator, tuple(runs), queue_stamp(store, None if reads_labels else runs))
        if key != self._key:
            self._entries = ranked(store, order, annotator, (), runs)
            self._key = key
        return [e for e in self._entries if e.item_id not in labeled]


def next_in_queue(entries: Sequence[QueueEntry], current: int | None) -> QueueEntry | None:
    """The entry after ``current`` when the current item is in the queue (``U`` on an item not
    yet labeled moves on, cyclically), else the first."""
    if not entries:
        return None
    ids = [e.item_id for e in entries]
    if current in ids:
        at = ids.index(current)
        return entries[(at + 1) % len(entries)]  # the current item alone: it stays
    return entries[0]


def empty_reason(order: str, run_ids: Sequence[int]) -> str:
    """Why ``U`` went by id order although ``order`` was chosen."""
    if order == "judges_disagree" and len(run_ids) < 2:
        return "judges disagree needs two or more judge runs (Ensemble… picks them); next by id"
    if order == "least_confident" and not run_ids:
        return "least confident needs a judge run; next by id"
    if order == "suspect_reference":
        return "no unlabeled item with a suspect reference (or the scores are still computing); next by id"
    return f"no unlabeled item left where {ORDERS[order]}; next by id"


__all__ = [
    "DEFAULT_ORDER",
    "ORDERS",
    "QueueCache",
    "QueueEntry",
    "annotators_disagree",
    "check_order",
    "empty_reason",
    "judges_disagree",
    "least_confident",
    "next_in_queue",
    "preference_runs",
    "ranked",
    "split_sizes",
    "split_text",
    "suspect_reference",
]
