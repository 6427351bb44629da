"""What the statistics read (``app.stats.data``): items, current labels and verdicts, in one snapshot.

Integer columns come back as one comma-joined string per column (``group_concat``), which
numpy parses in C: about 2-3x faster than row tuples on 100,000 items (bench/stats_bench.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .connection import loads
from .judge import JudgeMixin, RunRecord
from .snapshot import SnapshotMixin

#: How :meth:`StatsMixin.stats_rows` codes a current label: a response index when one is
#: preferred, these for a tie / both bad, ``-1`` for no preference (discarded, prefer without index).
LABEL_CODE_TIE = 100
LABEL_CODE_BOTH_BAD = 101

# The current label per (item, annotator) is label_current's row (kept by trigger; cleared = none).
_CURRENT_LABELS = f"""
SELECT group_concat(item_id), group_concat(annotator_id), group_concat(code) FROM (
    SELECT item_id, annotator_id,
           CASE outcome WHEN 'prefer' THEN coalesce(preferred, -1) WHEN 'tie' THEN {LABEL_CODE_TIE}
                        WHEN 'both_bad' THEN {LABEL_CODE_BOTH_BAD} ELSE -1 END AS code
    FROM label_current WHERE kind = 'label' AND outcome != 'cleared')"""

# Every current adjudication, oldest first (the newest per item decides, as in export).
_CURRENT_ADJUDICATIONS = (
    "SELECT item_id, outcome, preferred FROM label_current WHERE kind = 'adjudication' AND outcome != 'cleared'"
    " ORDER BY created_at, label_rowid"
)

# The step marks of current labels on step items (the JSON stays in SQLite for labels that mark
# none; a project without step items reads no label row: the IN list is empty).
_CURRENT_STEP_MARKS = (
    "SELECT lc.annotator_id, lc.item_id, l.step_marks FROM label_current lc JOIN labels l ON l.rowid = lc.label_rowid"
    " WHERE lc.kind = 'label' AND lc.item_id IN (SELECT DISTINCT item_id FROM steps)"
    " AND lc.outcome != 'cleared' AND l.step_marks != '[]'"
)

# The current labels that rank their responses (``labels.ranks``, migration 10), as comma-joined
# columns: item, annotator, how many ranks, the ranks ("2, 1, 2" without brackets). A scan of
# labels whose only per-row work is ``ranks != '[]'`` (the currency check runs on ranking rows
# alone): ~5x cheaper than joining every current label to its row. Read only when some item has
# three or more responses (a ranking of two is the preference the pairwise figures count).
_CURRENT_RANKS = (
    "SELECT group_concat(l.item_id), group_concat(l.annotator_id),"
    " group_concat(length(l.ranks) - length(replace(l.ranks, ',', '')) + 1),"
    " group_concat(substr(l.ranks, 2, length(l.ranks) - 2))"
    " FROM labels l WHERE l.ranks != '[]' AND l.kind = 'label' AND EXISTS (SELECT 1 FROM label_current lc"
    " WHERE lc.kind = 'label' AND lc.item_id = l.item_id AND lc.annotator_id = l.annotator_id"
    " AND lc.label_rowid = l.rowid)"
)

# The items' reference rankings (items.ref_ranks, NULL: none) in the same form; read only when
# the item scan counted some.
_REFERENCE_RANKS = (
    "SELECT group_concat(id), group_concat(length(ref_ranks) - length(replace(ref_ranks, ',', '')) + 1),"
    " group_concat(substr(ref_ranks, 2, length(ref_ranks) - 2)) FROM items WHERE length(ref_ranks) > 2"
)

# One pass over a run's verdicts, in (item, sample) order: the item ids comma-joined, the other
# integer columns packed into one number per sample (RunVerdictRows: one text to build and parse
# instead of four), and the scores and confidences of the samples that have them as JSON
# [item, sample, value] rows. The JSON order lists come back concatenated ("[0, 1][1, 0]…"): numpy
# reads each one's first number (``app.stats.data``), about 3x cheaper than cutting it out in SQL.
_RUN_VERDICTS = (
    "SELECT group_concat(item_id),"
    " group_concat(sample_idx * 4294967296 + CASE WHEN choice BETWEEN 0 AND 1073741822 THEN choice * 4 + 4 ELSE 0 END"
    " + (parsed != 0) * 2 + (error IS NULL)), group_concat(order_shown, ''),"
    " json_group_array(json_array(item_id, sample_idx, scores)) FILTER (WHERE parsed = 1 AND scores IS NOT NULL),"
    " json_group_array(json_array(item_id, sample_idx, confidence)) FILTER (WHERE confidence IS NOT NULL)"
    " FROM verdicts WHERE run_id = ?"  # walks the covering index verdicts_run_read (migration 11): (item, sample) order
)

# The dataset's error tags, one row per kind: the item ids and each tag's place in its item's list,
# comma-joined. The kind index covers the table (kind, item, idx): no row per tag to build in
# Python, about 5x cheaper than reading (item, kind) rows in (item, idx) order at 100k tags.
_ERROR_TAGS = "SELECT kind, group_concat(item_id), group_concat(idx) FROM ref_error_tags GROUP BY kind"

# One pass over the items (in id order in practice): integer columns comma-joined, text columns as JSON arrays.
_ITEM_COLUMNS = (
    "SELECT group_concat(id), group_concat(n_responses), group_concat(coalesce(ref_chosen, -1)),"
    " group_concat(prompt_words), json_group_array(category), json_group_array(media_kind),"
    " json_group_array(json_extract(extra, '$.query_source')),"
    " group_concat(CASE WHEN instr(coalesce(prompt_raw, prompt), '<image>') THEN (length(coalesce(prompt_raw,"
    " prompt)) - length(replace(coalesce(prompt_raw, prompt), '<image>', ''))) / 7 ELSE 0 END),"
    " max(n_responses), count(ref_ranks)"  # whether rankings are worth reading (lost in the scan's noise at 100k)
    " FROM items"  # a scan of the rowid table: id order (a subquery ORDER BY id costs a co-routine,
    # ~40 % of this query at 100k items); app.stats.data puts the rows in id order should they not be
)


@dataclass(frozen=True)
class RunVerdictRows:
    """One judge run's verdicts as comma-joined columns: item id; then per sample one number,
    ``sample index · 2³² + (choice + 1) · 4 + parsed · 2 + judged`` (choice ``-1``: none; judged
    = no error); then the JSON order lists shown, concatenated without separator (the first
    number of each is the response shown first). ``scores`` holds ``(item id, sample index,
    scores JSON)`` of parsed pointwise samples."""

    run: RunRecord
    columns: tuple[str | None, ...]
    scores: list[tuple[int, int, str]] = field(default_factory=list)
    #: ``(item id, sample index, confidence)`` of the samples that have a confidence.
    confidences: list[tuple[int, int, float]] = field(default_factory=list)


@dataclass(frozen=True)
class StatsRows:
    """Everything the statistics read, from one snapshot. ``*_csv`` fields are comma-joined
    integer columns; items are in id order, every per-item field aligned with ``item_ids_csv``."""

    item_ids_csv: str | None
    n_responses_csv: str | None
    ref_chosen_csv: str | None  # -1: no reference
    prompt_words_csv: str | None
    categories: list[str]
    media_kinds: list[str]
    response_item_ids_csv: str | None  # responses 0 and 1 of every item
    response_idx_csv: str | None
    response_words_csv: str | None
    #: The dataset's error tags per kind: ``(kind, item ids, tag indices)``, ids and indices comma-joined.
    error_tags: list[tuple[str, str, str]]
    annotators: dict[int, str]
    label_item_ids_csv: str | None  # the current labels, coded (LABEL_CODE_*)
    label_annotator_ids_csv: str | None
    label_codes_csv: str | None
    runs: list[RunVerdictRows]
    query_sources: list[str | None] = field(default_factory=list)  # VL-RewardBench's query_source per item
    image_tokens_csv: str | None = None  # "<image>" tokens in the prompt as written, per item
    #: ``(item id, preferred response)`` of each item whose newest current adjudication prefers one.
    adjudicated: list[tuple[int, int]] = field(default_factory=list)
    #: ``(item id, response, step, reference mark: 1 correct, 0 erroneous, None)`` of every step.
    reference_steps: list[tuple[int, int, int, int | None]] = field(default_factory=list)
    #: ``(annotator id, item id, step marks JSON)`` of the current labels that mark steps.
    step_marks: list[tuple[int, int, str]] = field(default_factory=list)
    #: The current labels that rank responses, comma-joined: item ids, annotator ids, ranks per
    #: label, then every label's ranks in turn (``None``: no such label).
    rank_item_ids_csv: str | None = None
    rank_annotator_ids_csv: str | None = None
    rank_lengths_csv: str | None = None
    rank_values_csv: str | None = None
    #: The items' reference rankings (``items.ref_ranks``) in the same form, by item id.
    ref_rank_item_ids_csv: str | None = None
    ref_rank_lengths_csv: str | None = None
    ref_rank_values_csv: str | None = None


class StatsMixin(JudgeMixin, SnapshotMixin):
    """Mixed into :class:`pairscope.app.store.Store`."""

    def run_item_counts(self) -> dict[int, int]:
        """How many items each judge run has a verdict on (run id → items)."""
        return dict(self.query("SELECT run_id, count(*) FROM judge_items GROUP BY run_id"))

    def stats_rows(self) -> StatsRows:
        """Items, current labels and every judge run's verdicts, read in one read transaction
        (:meth:`read_snapshot`): labels committed meanwhile by others are all in or all out."""
        with self.read_snapshot():
            (ids, n_resp, chosen, words, categories, media_kinds, sources, image_tokens, widest, ranked) = self.query(
                _ITEM_COLUMNS
            )[0]
            r_items, r_idx, r_words = self.query(
                "SELECT group_concat(item_id), group_concat(idx), group_concat(words) FROM responses WHERE idx < 2"
            )[0]
            tags = self.query(_ERROR_TAGS)
            names = dict(self.query("SELECT id, name FROM annotators"))
            l_items, l_annotators, l_codes = self.query(_CURRENT_LABELS)[0]
            adjudications = self.query(_CURRENT_ADJUDICATIONS)
            runs = [self._run_verdict_rows(run) for run in self.runs()]
            reference_steps = self.query("SELECT item_id, response_idx, idx, ref_correct FROM steps")
            step_marks = self.current_step_marks()
            ranks = self.query(_CURRENT_RANKS)[0] if (widest or 0) > 2 else (None,) * 4
            ref_ranks = self.query(_REFERENCE_RANKS)[0] if ranked else (None,) * 3
        return StatsRows(
            ids,
            n_resp,
            chosen,
            words,
            loads(categories),
            loads(media_kinds),
            r_items,
            r_idx,
            r_words,
            tags,
            names,
            l_items,
            l_annotators,
            l_codes,
            runs,
            loads(sources),
            image_tokens,
            _newest_adjudications(adjudications),
            reference_steps,
            step_marks,
            *ranks,
            *ref_ranks,
        )

    def item_key_columns(self) -> tuple[str | None, list[str], str | None, list[str]]:
        """:meth:`~.items.ItemsMixin.item_keys` as columns: the item ids comma-joined (in id
        order in practice) with each one's dataset id, then the ids of the items with media
        comma-joined with each one's first media ref as written (one pass per table)."""
        with self.read_snapshot():
            ids, groups = self.query(
                "SELECT group_concat(id), json_group_array(coalesce(source_id, ext_id)) FROM items"
            )[0]
            media_ids, refs = self.query(  # the bare ref comes from the row of min(idx) (SQLite's rule)
                "SELECT group_concat(item_id), json_group_array(ref) FROM"
                " (SELECT item_id, ref, min(idx) FROM media GROUP BY item_id)"
            )[0]
        return ids, loads(groups), media_ids, loads(refs)

    def current_step_marks(self) -> list[tuple[int, int, str]]:
        """``(annotator id, item id, step marks JSON)`` of the current labels that mark steps,
        on items that have steps only: without step items no label row is read."""
        return self.query(_CURRENT_STEP_MARKS)

    def _run_verdict_rows(self, run: RunRecord) -> RunVerdictRows:
        *columns, scores, confidences = self.query(_RUN_VERDICTS, (run.id,))[0]
        return RunVerdictRows(
            run,
            tuple(columns),
            sorted(tuple(row) for row in loads(scores)) if scores else [],
            [tuple(row) for row in loads(confidences)] if confidences else [],
        )


def _newest_adjudications(rows: list[tuple]) -> list[tuple[int, int]]:
    """Per item, the response its newest current adjudication prefers (rows come oldest
    first); an item whose newest adjudication prefers none (tie, both bad, discard) has none."""
    newest: dict[int, tuple] = {}
    for item_id, outcome, preferred in rows:
        newest[item_id] = (outcome, preferred)
    return [(i, p) for i, (o, p) in newest.items() if o == "prefer" and p is not None]
