"""Items as insert rows: content and identity hashes, display ids, and the batcher that
turns parsed items into the rows :meth:`~.items.ItemsMixin.write_batch` inserts."""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field, replace

import orjson

from ..records import Item
from .connection import dumps


def content_hash(item: Item, extra_json: str | None = None) -> str:
    """A stable hash of everything an item's content is made of (not its store or display id).
    The reference's ``ranks`` are left out: readers derive them from source fields the item's
    ``extra`` holds, so items hashed before ranks were stored keep their hash."""
    ref = item.reference
    payload = (
        item.dataset_id,
        item.prompt,
        item.prompt_raw,
        item.category,
        item.subset,
        # lists serialise as tuples do (JSON arrays): the same bytes, built without generators
        [(r.text, r.model, [(s.text, s.correct) for s in r.steps] if r.steps else ()) for r in item.responses],
        [(m.kind, m.ref) for m in item.media],
        ref.ranking,
        ref.strength,
        ref.ground_truth,
        [(t.kind, t.subkind, t.note, t.raw) for t in ref.error_tags],
        extra_json if extra_json is not None else dumps(item.extra),
    )
    return hashlib.sha1(orjson.dumps(payload)).hexdigest()


def identity_key(item: Item) -> str:
    """What makes two rows the same item: the dataset's id, the prompt as written and the
    responses as a set. Real releases repeat an id with other responses (VL-RewardBench's
    official scoring keys an item by id + query + sorted responses for that reason)."""
    prompt = item.prompt_raw if item.prompt_raw is not None else item.prompt
    payload = (item.dataset_id, prompt, sorted([r.text for r in item.responses]))
    return hashlib.sha1(orjson.dumps(payload)).hexdigest()


#: Byte by byte: what ``str.split()`` splits ASCII text on becomes a space, anything else ``x``.
_SPACE_OR_X = bytes(32 if chr(b).isspace() else 120 for b in range(256))


def word_count(text: str) -> int:
    """``len(text.split())``, without making a string per word for ASCII text: with every
    whitespace byte a space and every other byte ``x``, each word starts at a ``" x"`` (after
    a space put in front). Non-ASCII text (other Unicode spaces) is counted by ``split``."""
    if not text.isascii():
        return len(text.split())
    return (b" " + text.encode("ascii").translate(_SPACE_OR_X)).count(b" x")


def display_id(dataset_id: str, taken: Container[str]) -> str:
    """The dataset's id, or ``id#2``, ``id#3``… when an item with other content has it."""
    if dataset_id not in taken:
        return dataset_id
    k = 2
    while f"{dataset_id}#{k}" in taken:
        k += 1
    return f"{dataset_id}#{k}"


@dataclass
class AddResult:
    """What adding items did: the items written (``ids[i]`` is the store id of
    ``added[i]``), and the items skipped.

    ``unchanged``/``conflicts`` name items already in the project with the same identity
    (:func:`identity_key`) and the same / other content (``conflict_lines[i]`` is the source
    line of ``conflicts[i]``); ``repeats`` are ``(line, ext_id, first line, identical)`` for
    rows repeating an earlier row of the same import, ``identical`` telling whether the
    content matched too.
    """

    added: list[Item] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    conflict_lines: list[int | None] = field(default_factory=list)
    repeats: list[tuple[int | None, str, int | None, bool]] = field(default_factory=list)

    def extend(self, other: AddResult) -> None:
        self.added += other.added
        self.ids += other.ids
        self.unchanged += other.unchanged
        self.conflicts += other.conflicts
        self.conflict_lines += other.conflict_lines
        self.repeats += other.repeats


@dataclass
class ItemBatch:
    """Rows ready for ``executemany``, built from items without touching SQLite."""

    result: AddResult
    items: list[tuple] = field(default_factory=list)
    responses: list[tuple] = field(default_factory=list)
    steps: list[tuple] = field(default_factory=list)
    media: list[tuple] = field(default_factory=list)
    tags: list[tuple] = field(default_factory=list)


class ItemBatcher:
    """Turns items into insert rows: hashes, matches identities already stored, gives
    display ids, assigns store ids. Batches must be written (:meth:`ItemsMixin.write_batch`)
    in the order they were made, each before the next is made, all inside one transaction:
    what earlier batches added is looked up in the project, not kept here, so memory does not
    grow with the rows (4 bytes per item: the source line of each item seen).

    ``lookup(identities, ext_ids)`` returns, for one batch, ``{identity: (item id, content
    hash, display id)}`` of the stored items among ``identities`` and the set of ``ext_ids``
    already taken; ``taken(ext_id)`` says whether one display id is (``id#2`` probing).
    """

    def __init__(
        self,
        lookup: Callable[[list[str], list[str]], tuple[dict[str, tuple[int, str, str]], set[str]]],
        taken: Callable[[str], bool],
        next_id: int,
        import_id: int | None,
    ):
        self.lookup = lookup
        self.is_taken = taken
        self.next_id = next_id
        self.import_id = import_id
        #: Per item id: 0 = not seen by this batcher, 1 = seen (no line), line + 2 otherwise.
        self.lines = array("i", bytes(4 * next_id))
        #: Identities stored with other content that this batcher met: (line, ext_id, incoming hash).
        self.conflicted: dict[str, tuple[int | None, str, str]] = {}

    def _seen(self, item_id: int) -> tuple[bool, int | None]:
        mark = self.lines[item_id] if item_id < len(self.lines) else 0
        return mark != 0, (mark - 2 if mark >= 2 else None)

    def _mark(self, item_id: int, line: int | None) -> None:
        lines, mark = self.lines, 1 if line is None else line + 2
        if item_id == len(lines):  # a new item, the usual case
            lines.append(mark)
            return
        while len(lines) <= item_id:
            lines.append(0)
        lines[item_id] = mark

    def batch(self, items: Sequence[Item], lines: Sequence[int | None] | None = None) -> ItemBatch:
        out = ItemBatch(AddResult())
        result = out.result
        keyed = []
        for n, item in enumerate(items):
            extra_json = dumps(item.extra) if item.extra else "{}"
            keyed.append((item, lines[n] if lines is not None else None, identity_key(item), extra_json))
        stored, taken_here = self.lookup([k[2] for k in keyed], [k[0].dataset_id for k in keyed])
        local: dict[str, tuple[int | None, str, str]] = {}  # identity -> (line, ext_id, hash) added in this batch
        # the batch's dataset ids the lookup did not find are free in the project: no query each
        taken = _Taken(taken_here, self.is_taken, {k[0].dataset_id for k in keyed} - taken_here)
        for item, line, key, extra_json in keyed:
            digest = content_hash(item, extra_json)
            first = local.get(key) or self.conflicted.get(key)
            if first is None and key in stored:
                item_id, stored_hash, stored_ext = stored[key]
                seen, first_line = self._seen(item_id)
                if seen:
                    first = (first_line, stored_ext, stored_hash)
                else:
                    self._mark(item_id, line)
                    if stored_hash == digest:
                        result.unchanged.append(item.ext_id)
                    else:
                        self.conflicted[key] = (line, item.ext_id, digest)
                        result.conflicts.append(item.ext_id)
                        result.conflict_lines.append(line)
                    continue
            if first is not None:
                result.repeats.append((line, first[1], first[0], first[2] == digest))
                continue
            shown = display_id(item.dataset_id, taken)
            if shown != item.ext_id or item.source_id is not None:
                item = replace(item, ext_id=shown, source_id=None if shown == item.dataset_id else item.dataset_id)
            taken.add(shown)
            local[key] = (line, shown, digest)
            item_id = self.next_id
            self.next_id += 1
            self._mark(item_id, line)
            ref = item.reference
            ranking = ref.ranking
            media = item.media
            out.items.append(
                (
                    item_id,
                    item.ext_id,
                    item.source_format,
                    item.category,
                    item.subset,
                    item.prompt,
                    word_count(item.prompt),
                    item.prompt_raw,
                    item.media_kind,
                    len(item.responses),
                    orjson.dumps(ranking).decode() if ranking else None,
                    ranking[0] if ranking else None,
                    ref.strength,
                    ref.ground_truth,
                    extra_json,
                    digest,
                    self.import_id,
                    sum(1 for m in media if m.path is None) if media else 0,
                    item.source_id,
                    key,
                    orjson.dumps(ref.ranks).decode() if ref.ranks else None,  # items.ref_ranks
                )
            )
            for r in item.responses:
                out.responses.append((item_id, r.index, r.text, word_count(r.text), r.model))
                if r.steps:
                    for s_idx, step in enumerate(r.steps):
                        correct = None if step.correct is None else int(step.correct)
                        out.steps.append((item_id, r.index, s_idx, step.text, correct))
            for m_idx, m in enumerate(media):
                out.media.append((item_id, m_idx, m.kind, m.ref, m.path, m.problem))
            for t_idx, t in enumerate(ref.error_tags):
                out.tags.append((item_id, t_idx, t.kind, t.subkind, t.note, t.raw))
            result.added.append(item)
            result.ids.append(item_id)
        return out


class _Taken:
    """The display ids taken, for one batch: those the batch's lookup found and added, and,
    for any other (``id#2``, ``id#3``… probing), the project."""

    def __init__(self, known: set[str], is_taken: Callable[[str], bool], free: set[str] | None = None):
        self.known = known
        self.is_taken = is_taken
        self.checked: set[str] = free if free is not None else set()  # known not to be in the project

    def __contains__(self, ext_id: object) -> bool:
        if ext_id in self.known:
            return True
        if ext_id in self.checked or not isinstance(ext_id, str):
            return False
        if self.is_taken(ext_id):
            self.known.add(ext_id)
            return True
        self.checked.add(ext_id)
        return False

    def add(self, ext_id: str) -> None:
        self.known.add(ext_id)
