"""Everything the statistics need, loaded from a project into numpy arrays in a few queries.

Preference labels are coded per item as categories so that agreement libraries can use
them directly: ``0 … n-1`` = that response index preferred, ``TIE`` = tie, ``BOTH_BAD`` =
both bad, ``NaN`` = no label (or discarded). Items are in store order; every per-item array
has one entry per item.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..store import RunRecord, Store

TIE = 100.0
BOTH_BAD = 101.0


@dataclass
class RunData:
    """One judge run's samples, item-aligned: ``choices[i, s]`` is the response index sample
    ``s`` picked for item ``i`` (NaN: unparsed, error or not judged); ``first_shown[i, s]`` the
    response shown first; ``parsed``/``judged`` are booleans of the same shape."""

    run: RunRecord
    choices: np.ndarray
    first_shown: np.ndarray
    parsed: np.ndarray
    judged: np.ndarray
    scores: np.ndarray | None = None  # pointwise runs: the parsed score of each sample


@dataclass
class StatsData:
    item_ids: np.ndarray
    categories: np.ndarray  # str
    n_responses: np.ndarray
    ref_chosen: np.ndarray  # float, NaN when the dataset has no reference
    error_kinds: list[tuple[str, ...]]  # the dataset's error tags per item
    query_words: np.ndarray
    response_words: np.ndarray  # (items, 2): words of responses 0 and 1 (NaN if absent)
    annotators: list[str]
    labels: dict[str, np.ndarray] = field(default_factory=dict)  # annotator → coded preference
    runs: list[RunData] = field(default_factory=list)
    media_kind: np.ndarray | None = None  # "none" | "image" | "video" per item


# SQLite takes the bare columns of an aggregate query from the row holding max(): the
# newest label per (item, annotator), answered from the covering index labels_current.
# Coded in SQL (see the module docstring; -1 = no preference) and returned as one
# comma-joined string per column, which numpy parses in C: ~2-3x faster than row tuples.
_CURRENT_LABELS = """
SELECT group_concat(item_id), group_concat(annotator_id), group_concat(code) FROM (
    SELECT item_id, annotator_id,
           CASE outcome WHEN 'prefer' THEN coalesce(preferred, -1) WHEN 'tie' THEN 100
                        WHEN 'both_bad' THEN 101 ELSE -1 END AS code,
           max(created_at)
    FROM labels WHERE kind = 'label' GROUP BY item_id, annotator_id)"""


def _ints(column: str | None) -> np.ndarray:
    """A comma-joined integer column from ``group_concat`` as an array."""
    return np.fromstring(column, sep=",", dtype=np.int64) if column else np.zeros(0, dtype=np.int64)


def load_stats_data(store: Store) -> StatsData:
    """Read items, current labels and every judge run's verdicts."""
    ids, n_resp, chosen, words = store.query(
        "SELECT group_concat(id), group_concat(n_responses), group_concat(coalesce(ref_chosen, -1)),"
        " group_concat(prompt_words) FROM (SELECT * FROM items ORDER BY id)"
    )[0]
    item_ids, n_responses = _ints(ids), _ints(n_resp)
    n = len(item_ids)
    ref_chosen = _ints(chosen).astype(float)
    ref_chosen[ref_chosen < 0] = np.nan
    query_words = _ints(words).astype(float)
    text_rows = store.query("SELECT category, media_kind FROM items ORDER BY id")
    categories = np.array([r[0] for r in text_rows], dtype=object)
    media_kind = np.array([r[1] for r in text_rows], dtype=object)

    response_words = np.full((n, 2), np.nan)
    r_items, r_idx, r_words = (_ints(c) for c in store.query(
        "SELECT group_concat(item_id), group_concat(idx), group_concat(words) FROM responses WHERE idx < 2")[0])
    response_words[np.searchsorted(item_ids, r_items), r_idx] = r_words

    index = {int(item_id): i for i, item_id in enumerate(item_ids)}
    tags: list[list[str]] = [[] for _ in range(n)]
    for item_id, kind in store.query("SELECT item_id, kind FROM ref_error_tags ORDER BY item_id, idx"):
        tags[index[item_id]].append(kind)

    names = dict(store.query("SELECT id, name FROM annotators"))
    labels = {name: np.full(n, np.nan) for name in names.values()}
    label_items, label_annotators, label_codes = (_ints(c) for c in store.query(_CURRENT_LABELS)[0])
    label_rows = np.searchsorted(item_ids, label_items)
    for annotator_id, name in names.items():
        mine = (label_annotators == annotator_id) & (label_codes >= 0)
        labels[name][label_rows[mine]] = label_codes[mine]
    labels = {name: coded for name, coded in labels.items() if not np.all(np.isnan(coded))}

    runs = [_run_data(store, run, item_ids) for run in store.runs()]
    return StatsData(item_ids, categories, n_responses, ref_chosen, [tuple(t) for t in tags], query_words,
                     response_words, sorted(labels), labels, runs, media_kind)


def _run_data(store: Store, run: RunRecord, item_ids: np.ndarray) -> RunData:
    # first shown = the first number of the JSON order list, cut out in SQL
    columns = store.query(
        "SELECT group_concat(item_id), group_concat(sample_idx), group_concat(coalesce(choice, -1)),"
        " group_concat(parsed), group_concat(error IS NULL),"
        " group_concat(CAST(substr(order_shown, 2, CASE WHEN instr(order_shown, ',') > 0"
        " THEN instr(order_shown, ',') - 2 ELSE length(order_shown) - 2 END) AS INTEGER))"
        " FROM verdicts WHERE run_id = ?",
        (run.id,),
    )[0]
    n = len(item_ids)
    table = np.stack([_ints(c) for c in columns], axis=1) if columns[0] else np.zeros((0, 6), dtype=np.int64)
    samples = int(table[:, 1].max()) + 1 if len(table) else 1
    rows_of = np.searchsorted(item_ids, table[:, 0])
    known = (rows_of < n) & (item_ids[np.minimum(rows_of, n - 1)] == table[:, 0]) if n else np.zeros(0, bool)
    table, rows_of = table[known], rows_of[known]
    cols = table[:, 1]
    choices = np.full((n, samples), np.nan)
    first = np.full((n, samples), np.nan)
    parsed = np.zeros((n, samples), dtype=bool)
    judged = np.zeros((n, samples), dtype=bool)
    ok = table[:, 3].astype(bool)
    judged[rows_of, cols] = table[:, 4].astype(bool)
    parsed[rows_of, cols] = ok
    picked = ok & (table[:, 2] >= 0)
    choices[rows_of[picked], cols[picked]] = table[picked, 2]
    first[rows_of, cols] = table[:, 5]
    scores = None
    if run.mode == "pointwise":
        scores = np.full((n, samples), np.nan)
        for item_id, sample, score_json in store.query(
            "SELECT item_id, sample_idx, scores FROM verdicts WHERE run_id = ? AND parsed = 1 AND scores IS NOT NULL",
            (run.id,),
        ):
            value = json.loads(score_json)[0]
            i = int(np.searchsorted(item_ids, item_id))
            if value is not None and i < n and item_ids[i] == item_id:
                scores[i, sample] = value
    return RunData(run, choices, first, parsed, judged, scores)
