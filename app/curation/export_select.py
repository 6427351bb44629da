"""Which items an export considers: a collection's, the table's selection, or every item;
and the parts of a table filter that select something (recorded in the manifest)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import fields
from typing import Any

from ..records import ItemFilter
from ..store import Store

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


__all__ = ["describe_table_filter", "select_items"]
