"""The SQL of the item filters (:class:`~pairscope.app.records.ItemFilter`): the condition
over ``items i`` that the table's pages and counts read (:func:`_filter_sql`), the table's
order (:func:`_order_sql`), and the one query of the ids a filter selects that the window
reads when its filter changes (:func:`_ids_sql`, ``ItemsMixin.filtered_items``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..records import ItemFilter
from .search import fts_query

_ANNOTATOR_ID = "(SELECT id FROM annotators WHERE name = ?)"
# A constant subquery (SQLite evaluates it once per statement). Parameter: the run id.


SMALL, UNKNOWN, LARGE = 0, 1, 2

_PLAIN_KIND = re.compile(r"[A-Za-z0-9_ -]+")  # characters JSON writes as they are, in any writer


@dataclass(frozen=True)
class _Set:
    """A filter condition that is a set of item ids: ``ids`` selects them (for ``i.id IN``);
    ``probe``, if given, is the same condition tested for the one item ``i.id`` (an index
    lookup). ``size``: SMALL sets usually hold few items, LARGE ones most of them. ``stream``,
    if given, is the same set as a query of distinct ids (column ``id``, same parameters)
    that an index gives in id order (``ORDER BY id`` costs no sort): a large set that leads a
    filter is walked that way, a negated one merged away (``EXCEPT``), instead of being copied
    into a temporary index and looked up item by item (:func:`_ids_sql`). A negated set's
    stream is one plain SELECT (not a compound). ``row_probe``: the probe reads the item's
    row (not only ``i.id``)."""

    ids: str
    params: tuple = ()
    probe: str | None = None
    size: int = SMALL
    negate: bool = False
    stream: str | None = None
    row_probe: bool = False


def _label_sets(f: ItemFilter) -> list[_Set]:
    """Conditions on labels: they read ``label_current`` (the current row per kind, item and
    annotator, ``cleared`` rows included; ``labeled``: the row makes its item labeled) and
    ``label_disagreements``, which triggers derive from ``labels`` (schema migrations 2, 5)."""
    sets = []
    if f.status in ("labeled", "unlabeled"):
        unlabeled = f.status == "unlabeled"
        if f.annotator:
            labeled = f"annotator_id = {_ANNOTATOR_ID} AND kind = ? AND labeled"
            sets.append(
                _Set(
                    f"SELECT item_id FROM label_current WHERE {labeled}",
                    (f.annotator, f.label_kind),
                    f"EXISTS (SELECT 1 FROM label_current WHERE annotator_id = {_ANNOTATOR_ID} AND kind = ?"
                    " AND item_id = i.id AND labeled)",
                    size=LARGE,
                    negate=unlabeled,
                    stream=f"SELECT item_id AS id FROM label_current WHERE {labeled}",  # one row per item
                )
            )
        else:
            sets.append(
                _Set(
                    "SELECT item_id FROM label_current WHERE kind = ? AND labeled",
                    (f.label_kind,),
                    "EXISTS (SELECT 1 FROM label_current WHERE kind = ? AND item_id = i.id AND labeled)",
                    size=LARGE,
                    negate=unlabeled,
                    stream="SELECT DISTINCT item_id AS id FROM label_current WHERE kind = ? AND labeled",
                )
            )
    elif f.status in ("adjudicated", "not_adjudicated"):
        sets.append(
            _Set(
                "SELECT item_id FROM label_current WHERE kind = 'adjudication' AND labeled",
                negate=f.status == "not_adjudicated",
                stream="SELECT DISTINCT item_id AS id FROM label_current WHERE kind = 'adjudication' AND labeled",
            )
        )
    if f.disagreement == "annotators":
        sets.append(
            _Set("SELECT item_id FROM label_disagreements", stream="SELECT item_id AS id FROM label_disagreements")
        )
    elif f.disagreement == "reference":
        sql = "SELECT item_id FROM label_current WHERE kind = 'label' AND against_ref"
        sets.append(_Set(f"{sql} AND annotator_id = {_ANNOTATOR_ID}", (f.annotator,)) if f.annotator else _Set(sql))
    if f.error_type:
        # A kind of plain letters and digits stands in the JSON text as it is written: a label
        # whose error types do not hold it in quotes is passed over before json_each decodes them.
        plain = _PLAIN_KIND.fullmatch(f.error_type) is not None
        by_labels = (
            "SELECT lc.item_id FROM label_current lc, json_each(lc.error_types) e"
            " WHERE lc.kind = 'label' AND lc.error_types != '[]'"
            + (" AND instr(lc.error_types, ?)" if plain else "")
            + " AND json_extract(e.value, '$.kind') = ?"
        )
        by_labels_params = (f'"{f.error_type}"', f.error_type) if plain else (f.error_type,)
        by_ref = "SELECT item_id FROM ref_error_tags WHERE kind = ?"
        source = f.error_source or "any"
        if source == "any":
            sets.append(_Set(f"{by_ref} UNION ALL {by_labels}", (f.error_type, *by_labels_params)))
        elif source == "reference":
            sets.append(_Set(by_ref, (f.error_type,)))
        else:
            sets.append(_Set(by_labels, by_labels_params))
    if f.discard_reason:
        sets.append(
            _Set(
                "SELECT lc.item_id FROM label_current lc, json_each(lc.discard_reasons) e"
                " WHERE lc.kind = 'label' AND lc.discard_reasons != '[]' AND e.value = ?",
                (f.discard_reason,),
            )
        )
    return sets


def _judge_set(run: int, judge: str | None) -> _Set:
    """Conditions on a judge run, read from ``judge_items`` (one row per judged item whose mode
    votes, written by ``app.judge.results.record_verdicts``: the vote is decided there)."""
    if judge is None:
        return _Set(
            "SELECT DISTINCT item_id FROM verdicts WHERE run_id = ?",
            (run,),
            "EXISTS (SELECT 1 FROM verdicts WHERE run_id = ? AND item_id = i.id)",
            size=LARGE,
            stream="SELECT DISTINCT item_id AS id FROM verdicts WHERE run_id = ?",
        )
    if judge == "confident_wrong":
        test = "verdict = 'wrong' AND confidence IS NOT NULL"
        return _Set(
            f"SELECT item_id FROM judge_items WHERE run_id = ? AND {test}",
            (run,),
            f"EXISTS (SELECT 1 FROM judge_items WHERE run_id = ? AND item_id = i.id AND {test})",
        )
    test = {"inconsistent": "inconsistent", "failed": "failed > 0", "unparsed": "verdict = 'undecided'"}.get(
        judge, f"verdict = '{judge}'"
    )
    return _Set(
        f"SELECT item_id FROM judge_items WHERE run_id = ? AND {test}",
        (run,),
        f"EXISTS (SELECT 1 FROM judge_items WHERE run_id = ? AND item_id = i.id AND {test})",
        size=LARGE if judge == "right" else SMALL,
        stream=f"SELECT item_id AS id FROM judge_items WHERE run_id = ? AND {test}",
    )


# An item's confidence in a run (parameter: the run id), as the judge layer stored it with the
# item verdict (``app.judge.results.record_verdicts``; definition in ``app.judge.confidence``).
_ITEM_CONFIDENCE = "(SELECT confidence FROM judge_items WHERE run_id = ? AND item_id = i.id)"


def _order_sql(f: ItemFilter) -> tuple[str, tuple]:
    """The table's order under a filter: store order, except "confident and wrong", which
    puts the most confident failures first (item confidence descending, then store order)."""
    if f.judge == "confident_wrong" and f.judge_run is not None:
        return f"{_ITEM_CONFIDENCE} DESC, i.id", (f.judge_run,)
    return "i.id", ()


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _filter_sql(f: ItemFilter) -> tuple[str, list]:
    """SQL condition and parameters for an :class:`ItemFilter` over ``items i`` (every
    field's meaning is documented on the class); each field that is set adds a condition.

    Conditions on labels, verdicts, tags and collections are sets of item ids. SQLite builds
    each ``i.id IN (set)`` once per statement and walks the first one, looking the others
    up, so the smaller sets go first. A set that usually holds most items (an annotator's
    labels, a run's judged or right items) is, when a smaller set leads, tested per item
    instead (``probe``): building it would cost more than the lookups.
    """
    clauses, params = ["1"], []
    if f.category:
        clauses.append("i.category = ?")
        params.append(f.category)
    return _where(clauses, params, _sets(f))


def _sets(f: ItemFilter) -> list[_Set]:
    """The conditions of a filter that are sets of item ids (all but the category)."""
    sets = []
    text = f.text.strip()
    if text:
        by_id = "SELECT id FROM items WHERE ext_id LIKE ? ESCAPE '\\'"
        # The ids' index is narrower than the table: scanned whole (LIMIT -1 keeps SQLite from
        # flattening it into an ordered scan of the table), its few matches sorted afterwards.
        by_id_sorted = f"SELECT id FROM ({by_id} LIMIT -1)"
        match = fts_query(text)
        if match is None:
            sets.append(_Set(by_id, (_like(text),), size=UNKNOWN, stream=by_id_sorted))
        else:
            fts = "SELECT rowid FROM item_text WHERE item_text MATCH ?"
            sets.append(
                _Set(
                    f"{fts} UNION ALL {by_id}",
                    (match, _like(text)),
                    f"(i.id IN ({fts}) OR i.ext_id LIKE ? ESCAPE '\\')",
                    size=UNKNOWN,
                    # FTS5 gives its rowids in order: SQLite merges them with the sorted id matches.
                    stream=f"SELECT rowid AS id FROM item_text WHERE item_text MATCH ? UNION {by_id_sorted}",
                    row_probe=True,
                )
            )
    sets += _label_sets(f)
    if f.judge_run is not None:
        sets.append(_judge_set(f.judge_run, f.judge))
    if f.collection:
        sets.append(
            _Set(
                "SELECT item_id FROM collection_items"
                " WHERE collection_id = (SELECT id FROM collections WHERE name = ?)",
                (f.collection,),
            )
        )
    if f.item_ids is not None:
        sets.append(_Set("SELECT value FROM json_each(?)", (json.dumps([int(i) for i in f.item_ids]),)))
    return sets


def _where(clauses: list[str], params: list, sets: list[_Set], led: bool | None = None) -> tuple[str, list]:
    """``clauses`` and every set's condition on ``i.id``, joined (:func:`_filter_sql`); ``led``:
    a small set is walked first (by default: one of ``sets``), so large ones are probed."""
    if led is None:
        led = any(s.size == SMALL and not s.negate for s in sets)
    for s in sorted(sets, key=lambda s: (s.negate, s.size)):
        if led and s.size != SMALL and s.probe:
            clauses.append(f"NOT {s.probe}" if s.negate else s.probe)
        else:
            clauses.append(f"i.id {'NOT IN' if s.negate else 'IN'} ({s.ids})")
        params += s.params
    return " AND ".join(clauses), params


def _ids_sql(f: ItemFilter) -> tuple[str, list]:
    """A query of the ids a filter selects in table order (column ``id``): the rows of
    :func:`_filter_sql`'s condition, read without the wide items table where it can be. The
    set :func:`_where` would walk first is walked as its ``stream`` from its index, the
    other sets tested against it as there (probed per item after a small set); with no
    large set to lead, negated sets are merged away with ``EXCEPT`` (both sides in id order)
    from every item's id (the narrow ``items_ids`` index of migration 12) instead of probed
    id by id. A set without a stream, a probe that reads the item's row, and the "confident
    and wrong" order take :func:`_filter_sql`'s query itself."""
    sets = _sets(f)
    if f.category:
        by_category = "SELECT id FROM items WHERE category = ?"  # its index holds (category, id)
        probe = "EXISTS (SELECT 1 FROM items c WHERE c.id = i.id AND c.category = ?)"
        sets.append(_Set(by_category, (f.category,), probe, size=UNKNOWN, stream=by_category))
    order, order_params = _order_sql(f)
    first = min((s for s in sets if not s.negate), key=lambda s: s.size, default=None)  # what _where walks first
    small = first is not None and first.size == SMALL  # then the others are probed per item
    merged = [] if small else [s for s in sets if s.negate and s.stream]
    rest = [s for s in sets if s is not first and all(s is not m for m in merged)]
    if (
        order_params
        or (first is None and not merged)
        or (first is not None and not first.stream)
        or (small and any(s.row_probe for s in rest))
    ):
        where, params = _filter_sql(f)
        return f"SELECT i.id AS id FROM items i WHERE {where} ORDER BY {order}", [*params, *order_params]
    if first is None:  # every item (their ids from the narrow items_ids index), less the negated sets
        source, params = "items i", []
    else:
        source, params = f"({first.stream} ORDER BY id) i", list(first.params)
    where, params = _where(["1"], params, rest, led=small)
    sql = f"SELECT i.id AS id FROM {source} WHERE {where}"
    if not merged:
        # No ORDER BY here: SQLite keeps a FROM subquery's order in a single-table query that
        # has none of its own (sorting the stream again would cost what walking it saves).
        return sql, params
    for s in merged:
        sql += f" EXCEPT {s.stream}"
        params += s.params
    return f"{sql} ORDER BY 1", params
