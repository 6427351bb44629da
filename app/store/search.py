"""Full-text search over prompts and responses (SQLite FTS5) and saved item filters.

The FTS5 table ``item_text`` (schema migration 2) holds one row per item, its rowid the
item id, with two columns: ``prompt`` and ``responses`` (every response text of the item,
joined by newlines in index order). Tokenizer: ``unicode61 remove_diacritics 2`` (case-
and accent-insensitive; letters and digits make tokens, everything else separates them).

User text never reaches FTS5's query syntax: :func:`fts_query` turns it into quoted
strings only, so ``AND``, ``OR``, ``NOT``, ``NEAR``, ``*``, ``^``, ``:``, parentheses and
stray quotes are searched for as ordinary text (and, having no letters or digits, mostly
drop out) instead of raising a syntax error.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..records import ItemFilter
from .errors import StoreError

if TYPE_CHECKING:  # pragma: no cover
    from . import Store

#: At most this many words of a search are used (FTS5's query parser has a depth limit).
MAX_TERMS = 32
#: Words at least this long match as prefixes; shorter ones only as whole words (a one- or
#: two-letter prefix matches most of a project and costs a scan of many index entries).
MIN_PREFIX = 3

_PHRASE_OR_WORD = re.compile(r'"([^"]*)"|(\S+)')
_TOKEN = re.compile(r"[^\W_]+")


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression for what a user typed, or ``None`` when it has no words.

    Every word must occur, in the prompt or a response. A word of :data:`MIN_PREFIX` or
    more characters matches as a prefix (``circ`` finds "circle" and "circles"), a shorter
    one as a whole word. Text in balanced double quotes is a phrase, matched word for word
    and in order (``"two circles"``). A word that the tokenizer splits (``e-mail``,
    ``don't``) is a phrase of its parts, its last part a prefix when long enough. Only
    letters and digits count (as for the tokenizer): ``(``, ``-`` or ``*`` alone add
    nothing. Every term is quoted, so no input can produce an FTS5 syntax error.
    """
    terms = []
    for match in _PHRASE_OR_WORD.finditer(text):
        phrase, word = match.group(1), match.group(2)
        if phrase is not None:
            if _TOKEN.search(phrase):
                terms.append(_quoted(phrase))
        else:
            tokens = _TOKEN.findall(word)
            if tokens:
                prefix = "*" if len(tokens[-1]) >= MIN_PREFIX else ""
                terms.append(_quoted(" ".join(tokens)) + prefix)
        if len(terms) == MAX_TERMS:
            break
    return " ".join(terms) if terms else None


def index_batch(conn: sqlite3.Connection, items: Sequence[tuple], responses: Sequence[tuple]) -> None:
    """Add freshly inserted items to the full-text index (in the caller's transaction).

    ``items`` and ``responses`` are an :class:`~pairscope.app.store.items.ItemBatch`'s rows:
    ``items[k][0]`` is the id and ``items[k][5]`` the prompt; ``responses[k]`` starts with
    ``(item_id, idx, text)``. The text must equal what the view ``item_text_source`` gives
    (responses in index order, newline-joined), so that FTS5 can later remove the row.
    """
    texts: dict[int, list[tuple[int, str]]] = {}
    for row in responses:
        texts.setdefault(row[0], []).append((row[1], row[2]))
    rows = []
    for row in items:
        parts = texts.get(row[0], [])
        parts.sort()
        rows.append((row[0], row[5], "\n".join(text for _, text in parts) if parts else None))
    conn.executemany("INSERT INTO item_text (rowid, prompt, responses) VALUES (?, ?, ?)", rows)


def index_range(conn: sqlite3.Connection, first_id: int, last_id: int) -> None:
    """Add the stored items with ids ``first_id`` … ``last_id`` to the full-text index in one
    statement (an import's items, at the end of its transaction), reading the view the index
    is defined over, so that what is indexed is what FTS5 later removes."""
    conn.execute(
        "INSERT INTO item_text (rowid, prompt, responses)"
        " SELECT id, prompt, responses FROM item_text_source WHERE id BETWEEN ? AND ?",
        (first_id, last_id),
    )


def rebuild_index(store: Store) -> None:
    """Re-read every item into the full-text index (repair; the migration's backfill)."""
    with store.transaction() as conn:
        conn.execute("INSERT INTO item_text (item_text) VALUES ('rebuild')")


def check_index(store: Store) -> bool:
    """Whether the full-text index matches the items exactly."""
    try:
        store.query("INSERT INTO item_text (item_text, rank) VALUES ('integrity-check', 1)")
    except StoreError:  # SQLITE_CORRUPT_VTAB, as the store raises it
        return False
    return True


# -- saved filters ---------------------------------------------------------------------------

SAVED_FILTERS_KEY = "saved_filters"
_FIELDS = {f.name for f in dataclasses.fields(ItemFilter)}


def filter_to_dict(f: ItemFilter) -> dict:
    """The fields that differ from the default ("off") values: what a saved filter holds."""
    default = ItemFilter()
    return {name: value for name, value in dataclasses.asdict(f).items() if value != getattr(default, name)}


def filter_from_dict(data: dict) -> ItemFilter:
    """An :class:`ItemFilter` from :func:`filter_to_dict`'s output; fields this version does
    not know (saved by a newer PairScope) are ignored."""
    fields = {k: v for k, v in data.items() if k in _FIELDS}
    if fields.get("item_ids") is not None:  # JSON keeps the ids as a list
        fields["item_ids"] = tuple(int(i) for i in fields["item_ids"])
    return ItemFilter(**fields)


def _load(store: Store) -> dict[str, dict]:
    raw = store.meta(SAVED_FILTERS_KEY)
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


def saved_filters(store: Store) -> dict[str, ItemFilter]:
    """Every saved filter by name, sorted by name. A filter this version cannot express (a
    value a newer PairScope added) is left out, not an error."""
    out = {}
    for name, data in sorted(_load(store).items()):
        try:
            out[name] = filter_from_dict(data)
        except (TypeError, ValueError):
            continue
    return out


def save_filter(store: Store, name: str, f: ItemFilter) -> None:
    """Save (or replace) a named filter in the project."""
    name = name.strip()
    if not name:
        raise ValueError("a saved filter needs a non-empty name")
    if not isinstance(f, ItemFilter):
        raise TypeError(f"expected an ItemFilter, got {type(f).__name__}")
    with store.transaction():
        data = _load(store)
        data[name] = filter_to_dict(f)
        store.set_meta(SAVED_FILTERS_KEY, json.dumps(data, sort_keys=True))


def delete_filter(store: Store, name: str) -> bool:
    """Remove a saved filter; returns whether it existed."""
    with store.transaction():
        data = _load(store)
        if data.pop(name.strip(), None) is None:
            return False
        store.set_meta(SAVED_FILTERS_KEY, json.dumps(data, sort_keys=True))
        return True


__all__ = [
    "MAX_TERMS",
    "fts_query",
    "index_batch",
    "index_range",
    "rebuild_index",
    "check_index",
    "saved_filters",
    "save_filter",
    "delete_filter",
    "filter_to_dict",
    "filter_from_dict",
]
