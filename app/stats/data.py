"""Everything the statistics need, read from a project in one snapshot into numpy arrays.

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
from ..store.assignments import any_assigned
from ..store.stats_queries import LABEL_CODE_BOTH_BAD, LABEL_CODE_TIE, RunVerdictRows, StatsRows

TIE = float(LABEL_CODE_TIE)
BOTH_BAD = float(LABEL_CODE_BOTH_BAD)


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
    confidence: np.ndarray | None = None  # each sample's confidence (NaN: none); None: no sample has one
    #: ``(item id, sample, scores JSON)`` of every parsed sample with scores, in sample order (step runs).
    score_rows: list[tuple[int, int, str]] = field(default_factory=list)


@dataclass(frozen=True)
class RankRows:
    """Rankings with ties (``app.rankings``: one dense rank per response, 1 = best), one row
    each: ``rows[j]`` is the item's row in the per-item arrays, ``ranks[j]`` its ranks padded
    with NaN past the item's responses (``ranks.shape[1]``: the most responses ranked)."""

    rows: np.ndarray
    ranks: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)


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
    sources: np.ndarray | None = None  # VL-RewardBench's query_source per item (None: not given)
    image_tokens: np.ndarray | None = None  # "<image>" tokens in the prompt as written
    adjudicated: np.ndarray | None = None  # the response the newest adjudication prefers (NaN: none)
    error_kind_order: tuple[str, ...] = ()  # the project's label schema's error types, in order
    #: (item id, response) → the dataset's mark of each step (True correct, False erroneous, None).
    reference_steps: dict[tuple[int, int], tuple[bool | None, ...]] = field(default_factory=dict)
    #: annotator → (item id, response, step) → the current label's mark (True: correct).
    step_marks: dict[str, dict[tuple[int, int, int], bool]] = field(default_factory=dict)
    #: Whether items were assigned (``pairscope assign``): the report then has its team section.
    assigned: bool = False
    #: annotator → the current labels that rank their responses (only annotators who ranked).
    label_ranks: dict[str, RankRows] = field(default_factory=dict)
    #: The dataset's reference rankings (``items.ref_ranks``); ``None`` when no item has one.
    reference_ranks: RankRows | None = None


def _ints(column: str | None) -> np.ndarray:
    """A comma-joined integer column from ``group_concat`` as an array."""
    return np.fromstring(column, sep=",", dtype=np.int64) if column else np.zeros(0, dtype=np.int64)


def _first_numbers(lists: str) -> np.ndarray:
    """The first number of each JSON integer list in ``lists`` (lists concatenated, as
    ``"[0, 1][1, 0]"``), read in numpy; ``0`` for an empty list (as SQL's ``CAST('' AS INTEGER)``)."""
    chars = np.frombuffer(lists.encode("ascii", "replace"), dtype=np.uint8)
    at = np.flatnonzero(chars == ord("[")) + 1
    padded = np.concatenate([chars, np.zeros(24, dtype=np.uint8)])
    while True:  # JSON may put spaces after "["
        space = padded[at] == ord(" ")
        if not space.any():
            break
        at = at + space
    value = np.zeros(len(at), dtype=np.int64)
    reading = np.ones(len(at), dtype=bool)
    negative = padded[at] == ord("-")
    at = at + negative
    for k in range(20):
        digit = padded[at + k].astype(np.int64) - ord("0")
        reading &= (digit >= 0) & (digit <= 9)
        if not reading.any():
            break
        value = np.where(reading, value * 10 + digit, value)
    return np.where(negative, -value, value)


def load_stats_data(store: Store) -> StatsData:
    """Read items, current labels and every judge run's verdicts (one read snapshot,
    :meth:`Store.stats_rows`) into item-aligned arrays."""
    rows = store.stats_rows()
    item_ids, n_responses = _ints(rows.item_ids_csv), _ints(rows.n_responses_csv)
    n = len(item_ids)
    ref_chosen = _ints(rows.ref_chosen_csv).astype(float)
    ref_chosen[ref_chosen < 0] = np.nan
    query_words = _ints(rows.prompt_words_csv).astype(float)
    categories = np.array(rows.categories, dtype=object)
    media_kind = np.array(rows.media_kinds, dtype=object)
    sources = np.array(rows.query_sources, dtype=object)
    image_tokens = _ints(rows.image_tokens_csv).astype(float)
    if n > 1 and not np.all(item_ids[1:] > item_ids[:-1]):  # the scan came back out of id order
        order = np.argsort(item_ids, kind="stable")
        item_ids, n_responses, ref_chosen, query_words = (
            a[order] for a in (item_ids, n_responses, ref_chosen, query_words)
        )
        categories, media_kind, sources, image_tokens = (
            a[order] for a in (categories, media_kind, sources, image_tokens)
        )

    response_words = np.full((n, 2), np.nan)
    r_items, r_idx, r_words = (
        _ints(c) for c in (rows.response_item_ids_csv, rows.response_idx_csv, rows.response_words_csv)
    )
    response_words[np.searchsorted(item_ids, r_items), r_idx] = r_words

    tags = _error_tags(rows.error_tags, item_ids)

    names = rows.annotators
    labels = {name: np.full(n, np.nan) for name in names.values()}
    label_items, label_annotators, label_codes = (
        _ints(c) for c in (rows.label_item_ids_csv, rows.label_annotator_ids_csv, rows.label_codes_csv)
    )
    label_rows = np.searchsorted(item_ids, label_items)
    for annotator_id, name in names.items():
        mine = (label_annotators == annotator_id) & (label_codes >= 0)
        labels[name][label_rows[mine]] = label_codes[mine]
    labels = {name: coded for name, coded in labels.items() if not np.all(np.isnan(coded))}

    runs = [_run_data(run_rows, item_ids) for run_rows in rows.runs]
    adjudicated = np.full(n, np.nan)
    for item_id, preferred in rows.adjudicated:
        i = int(np.searchsorted(item_ids, item_id))
        if i < n and item_ids[i] == item_id:
            adjudicated[i] = preferred
    return StatsData(
        item_ids,
        categories,
        n_responses,
        ref_chosen,
        tags,
        query_words,
        response_words,
        sorted(labels),
        labels,
        runs,
        media_kind,
        sources,
        image_tokens,
        adjudicated,
        _error_kind_order(store),
        _reference_steps(rows.reference_steps),
        _step_marks(rows.step_marks, names),
        any_assigned(store),
        _label_ranks(rows, item_ids, n_responses, names),
        _reference_ranks(rows, item_ids, n_responses),
    )


def _error_tags(per_kind: list[tuple[str, str, str]], item_ids: np.ndarray) -> list[tuple[str, ...]]:
    """Each item's error tags in their order (``idx``), from the columnar rows of
    :meth:`Store.stats_rows` (per kind: item ids, tag indices)."""
    tags: list[tuple[str, ...]] = [()] * len(item_ids)
    if not per_kind:
        return tags
    kinds = [kind for kind, _, _ in per_kind]
    items, places = [_ints(c) for _, c, _ in per_kind], [_ints(c) for _, _, c in per_kind]
    code = np.repeat(np.arange(len(kinds)), [len(a) for a in items])
    item, place = np.concatenate(items), np.concatenate(places)
    order = np.lexsort((place, item))  # (item, idx) order
    rows, code = np.searchsorted(item_ids, item[order]), code[order]
    starts = np.flatnonzero(np.diff(rows, prepend=-1))  # one tuple per run of an item's rows
    ends = np.append(starts[1:], len(rows))
    one = ends - starts == 1  # most items have one tag: one shared 1-tuple per kind
    single = np.empty(len(kinds), dtype=object)
    for j, kind in enumerate(kinds):
        single[j] = (kind,)
    list(map(tags.__setitem__, rows[starts[one]].tolist(), single[code[starts[one]]].tolist()))
    for start, end in zip(starts[~one].tolist(), ends[~one].tolist()):
        tags[int(rows[start])] = tuple(kinds[c] for c in code[start:end].tolist())
    return tags


def _rank_rows(
    item_ids: np.ndarray, n_responses: np.ndarray, ids: str | None, lengths: str | None, values: str | None
) -> tuple[RankRows, np.ndarray] | None:
    """Comma-joined rankings (item ids, ranks per ranking, every ranking's ranks in turn) as
    :class:`RankRows`, in numpy, with the mask of the input rows kept: their item is known and
    has three or more responses (a ranking of two is the preference the pairwise figures
    count); ``None`` when there are none."""
    of_item, count, flat = _ints(ids), _ints(lengths), _ints(values)
    if not len(of_item) or len(count) != len(of_item) or int(count.sum()) != len(flat):
        return None  # none, or ranks the store would not write (it checks them)
    rows = np.searchsorted(item_ids, of_item)
    known = (rows < len(item_ids)) & (item_ids[np.minimum(rows, max(len(item_ids) - 1, 0))] == of_item)
    known &= n_responses[np.minimum(rows, max(len(item_ids) - 1, 0))] > 2
    ranks = np.full((len(rows), int(count.max())), np.nan)
    at = np.arange(len(flat)) - np.repeat(np.cumsum(count) - count, count)  # position within its ranking
    ranks[np.repeat(np.arange(len(rows)), count), at] = flat
    return RankRows(rows[known], ranks[known]), known


def _reference_ranks(rows: StatsRows, item_ids: np.ndarray, n_responses: np.ndarray) -> RankRows | None:
    table = _rank_rows(
        item_ids, n_responses, rows.ref_rank_item_ids_csv, rows.ref_rank_lengths_csv, rows.ref_rank_values_csv
    )
    return table[0] if table is not None and len(table[0]) else None


def _label_ranks(
    rows: StatsRows, item_ids: np.ndarray, n_responses: np.ndarray, names: dict[int, str]
) -> dict[str, RankRows]:
    """annotator → the rankings of their current labels (:class:`RankRows`, items in order)."""
    table = _rank_rows(item_ids, n_responses, rows.rank_item_ids_csv, rows.rank_lengths_csv, rows.rank_values_csv)
    if table is None:
        return {}
    every, known = table
    annotators = _ints(rows.rank_annotator_ids_csv)[known]
    out = {}
    for annotator_id in np.unique(annotators).tolist():
        mine = np.flatnonzero(annotators == annotator_id)
        mine = mine[np.argsort(every.rows[mine], kind="stable")]
        out[names[annotator_id]] = RankRows(every.rows[mine], every.ranks[mine])
    return dict(sorted(out.items()))


def _reference_steps(rows: list[tuple[int, int, int, int | None]]) -> dict[tuple[int, int], tuple[bool | None, ...]]:
    marks: dict[tuple[int, int], dict[int, bool | None]] = {}
    for item_id, response, step, correct in rows:
        marks.setdefault((item_id, response), {})[step] = None if correct is None else bool(correct)
    return {key: tuple(by_step.get(k) for k in range(max(by_step) + 1)) for key, by_step in marks.items()}


def _step_marks(rows: list[tuple[int, int, str]], names: dict[int, str]) -> dict[str, dict[tuple[int, int, int], bool]]:
    out: dict[str, dict[tuple[int, int, int], bool]] = {}
    for annotator_id, item_id, marks in sorted(rows, key=lambda row: row[0]):  # annotators in id order
        mine = out.setdefault(names[annotator_id], {})
        for response, step, correct in json.loads(marks):
            mine[(item_id, response, step)] = bool(correct)
    return out


def _error_kind_order(store: Store) -> tuple[str, ...]:
    """The newest stored label schema's error types (empty: the built-in order)."""
    from ..labeling.schema import schema_from_json
    from ..store.label_schemas import label_schema_row

    row = label_schema_row(store)
    return schema_from_json(row.schema).error_names if row is not None else ()


def _run_data(rows: RunVerdictRows, item_ids: np.ndarray) -> RunData:
    run, columns = rows.run, rows.columns
    n = len(item_ids)
    if columns[0]:  # RunVerdictRows packs sample, choice, parsed and judged into one number
        item, packed, shown = _ints(columns[0]), _ints(columns[1]), _first_numbers(columns[2] or "")
    else:
        item, packed, shown = (np.zeros(0, dtype=np.int64) for _ in range(3))
    stored = packed >> 32  # each sample's index
    samples = int(stored.max()) + 1 if len(stored) else 1
    rows_of = np.searchsorted(item_ids, item)
    known = (rows_of < n) & (item_ids[np.minimum(rows_of, n - 1)] == item) if n else np.zeros(0, bool)
    if not known.all():
        rows_of, packed, shown, stored = rows_of[known], packed[known], shown[known], stored[known]
    cell = rows_of * samples + np.where(stored < 0, stored + samples, stored)  # each sample's place, flat
    choice = ((packed >> 2) & (2**30 - 1)) - 1
    ok = (packed & 2) != 0
    flat_choices, flat_first = np.full(n * samples, np.nan), np.full(n * samples, np.nan)
    flat_parsed, flat_judged = np.zeros(n * samples, dtype=bool), np.zeros(n * samples, dtype=bool)
    flat_judged[cell] = (packed & 1) != 0
    flat_parsed[cell] = ok
    picked = ok & (choice >= 0)
    flat_choices[cell[picked]] = choice[picked]
    flat_first[cell] = shown
    choices, first, parsed, judged = (
        a.reshape(n, samples) for a in (flat_choices, flat_first, flat_parsed, flat_judged)
    )
    scores = None
    if rows.scores:  # the first score of each parsed sample (pointwise; step runs: step 1)
        scores = np.full((n, samples), np.nan)
        for item_id, sample, score_json in rows.scores:
            value = json.loads(score_json)[0]
            i = int(np.searchsorted(item_ids, item_id))
            if value is not None and i < n and item_ids[i] == item_id:
                scores[i, sample] = value
    confidence = None
    if rows.confidences:
        confidence = np.full((n, samples), np.nan)
        c_items, c_samples, values = np.array(rows.confidences, dtype=float).reshape(-1, 3).T
        at = np.minimum(np.searchsorted(item_ids, c_items), max(n - 1, 0))
        here = (item_ids[at] == c_items) & (c_samples < samples) if n else np.zeros(len(at), bool)
        confidence[at[here], c_samples[here].astype(np.int64)] = values[here]
    return RunData(run, choices, first, parsed, judged, scores, confidence, rows.scores)
