"""Which items an export considers: a collection's, the table's selection, or every item;
and the parts of a table filter that select something (recorded in the manifest)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import fields, replace
from typing import Any

from ..rankings import groups_from_ranks, order_from_ranks, ranks_from_groups
from ..records import Item, ItemFilter
from ..store import Store
from ..store.references import ReferenceReview, corrected_ranking, current_reference_reviews

_PAGE = 5000


def describe_table_filter(item_filter: ItemFilter) -> dict[str, Any]:
    """The parts of a table filter that select something (``{}``: the table shows every
    item); the annotator and label kind only where the filter reads them."""
    defaults = ItemFilter()
    out = {
        f.name: getattr(item_filter, f.name)
        for f in fields(ItemFilter)
        if getattr(item_filter, f.name) != getattr(defaults, f.name)
    }
    reads_annotator = item_filter.status in ("labeled", "unlabeled") or item_filter.disagreement == "reference"
    if not reads_annotator:
        out.pop("annotator", None)
    if item_filter.status not in ("labeled", "unlabeled"):
        out.pop("label_kind", None)
    if item_filter.error_type is None:
        out.pop("error_source", None)
    return out


def _all_item_ids(store: Store) -> Iterator[int]:
    offset = 0
    while True:
        page = store.item_summaries(offset, _PAGE)
        yield from (s.id for s in page)
        if len(page) < _PAGE:
            return
        offset += _PAGE


def select_items(store: Store, collection: str | None, item_ids: Sequence[int] | None) -> list[int]:
    """Store ids to consider, in store order: the collection's (or every item), limited
    to ``item_ids`` when given."""
    if collection is not None:
        known = store.collections()
        if collection not in known:
            raise ValueError(f"no collection named {collection!r}; collections: {', '.join(sorted(known)) or 'none'}")
        ids = store.collection_item_ids(collection)
        if item_ids is not None:
            wanted = set(item_ids)
            ids = [i for i in ids if i in wanted]
        return ids
    if item_ids is not None:
        return sorted(set(item_ids))
    return list(_all_item_ids(store))


#: What an export does with references a reviewer marked wrong (``None``: exports the dataset's own).
REFERENCE_CORRECTIONS = ("apply", "leave-out")


def reference_reviews_for_export(store: Store, mode: str | None) -> dict[int, ReferenceReview]:
    """Item id → its current review where it says "reference is wrong" (what an export with
    reference corrections ``mode`` applies or leaves out; none when ``mode`` is ``None``)."""
    if mode is None:
        return {}
    if mode not in REFERENCE_CORRECTIONS:
        raise ValueError(
            f"reference_corrections must be one of {', '.join(REFERENCE_CORRECTIONS)} (or None), got {mode!r}"
        )
    return {i: r for i, r in current_reference_reviews(store).items() if r.verdict == "wrong"}


def corrected_item(item: Item, review: ReferenceReview, mode: str) -> tuple[Item | None, dict[str, Any], str]:
    """An item whose reference a reviewer marked wrong, as ``mode`` exports it: ``(the item with
    the corrected reference — the reviewed response first, the others in the dataset's order —,
    or None when it is left out; the provenance record; why it is left out)``."""
    original = item.reference.ranking or ()
    record: dict[str, Any] = {"original_ranking": list(original), "ranking": None}
    record.update(by=review.reviewer, at=review.created_at, why=review.reason, action="left out")
    if mode == "leave-out" or review.corrected is None:
        none = "" if mode == "leave-out" else ", no corrected response named"
        return None, record, f"reference marked wrong by {review.reviewer}{none}"
    ranking = corrected_ranking(original, review.corrected)
    ranks: tuple[int, ...] = ()
    if item.reference.ranks:  # the reviewed response alone on top, the others' ties kept below it
        rest = [[i for i in group if i != review.corrected] for group in groups_from_ranks(item.reference.ranks)]
        ranks = ranks_from_groups([[review.corrected], *rest], len(item.reference.ranks))
        ranking = order_from_ranks(ranks)
        record["original_ranks"] = list(item.reference.ranks)
    record.update(ranking=list(ranking), action="corrected")
    reference = replace(item.reference, ranking=ranking, ranks=ranks)
    return replace(item, reference=reference), record, ""


def corrections_record(mode: str | None, corrections: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The manifest's ``reference_corrections`` (nothing when corrections were not asked for)."""
    if mode is None:
        return {}
    return {"reference_corrections": {"mode": mode, "items": [{"id": i, **r} for i, r in corrections.items()]}}


__all__ = [
    "REFERENCE_CORRECTIONS",
    "corrected_item",
    "corrections_record",
    "describe_table_filter",
    "reference_reviews_for_export",
    "select_items",
]
