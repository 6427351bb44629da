"""Items, responses, steps, media and the dataset's reference: writing and reading."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Sequence

from ..records import (
    ErrorTag,
    Item,
    ItemSummary,
    MediaRef,
    ProjectInfo,
    Reference,
    Response,
    Step,
)
from .connection import dumps, utc_now


def content_hash(item: Item, extra_json: str | None = None) -> str:
    """A stable hash of everything an item's content is made of (not its store id).

    ``repr`` of plain tuples of str/int/None is deterministic and several times faster
    than JSON; only ``extra`` (a dict whose key order may vary) goes through sorted JSON.
    """
    payload = (
        item.ext_id, item.prompt, item.prompt_raw, item.category, item.subset,
        tuple((r.text, r.model, tuple((s.text, s.correct) for s in r.steps)) for r in item.responses),
        tuple((m.kind, m.ref) for m in item.media),
        item.reference.ranking, item.reference.strength, item.reference.ground_truth,
        tuple((t.kind, t.subkind, t.note, t.raw) for t in item.reference.error_tags),
        extra_json if extra_json is not None else dumps(item.extra),
    )
    return hashlib.sha1(repr(payload).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class AddResult:
    """What :meth:`ItemsMixin.add_items` did, per input item, in input order."""

    added: list[Item]
    unchanged: list[str]
    conflicts: list[str]


_SUMMARY_SQL = (
    "SELECT id, ext_id, category, subset, media_kind, n_responses, substr(prompt, 1, 160), missing_media "
    "FROM items"
)


class ItemsMixin:
    """Item storage. Mixed into :class:`pairscope.app.store.Store`."""

    def add_items(self, items: Sequence[Item], import_id: int | None = None) -> AddResult:
        """Insert items in the caller's transaction (or one of its own).

        An item whose ``ext_id`` exists with identical content is skipped (re-import is
        idempotent); one whose content differs is a conflict and is not written, so labels
        already given to the stored version keep their meaning.
        """
        with self.transaction() as conn:
            existing = dict(conn.execute("SELECT ext_id, content_hash FROM items"))
            added: list[Item] = []
            unchanged: list[str] = []
            conflicts: list[str] = []
            rows = []
            for item in items:
                extra_json = dumps(item.extra) if item.extra else "{}"
                digest = content_hash(item, extra_json)
                stored = existing.get(item.ext_id)
                if stored is not None:
                    (unchanged if stored == digest else conflicts).append(item.ext_id)
                    continue
                existing[item.ext_id] = digest
                rows.append((item, digest, extra_json))
            if not rows:
                return AddResult(added, unchanged, conflicts)
            next_id = (conn.execute("SELECT coalesce(max(id), 0) FROM items").fetchone()[0]) + 1
            item_rows, response_rows, step_rows, media_rows, tag_rows = [], [], [], [], []
            for offset, (item, digest, extra_json) in enumerate(rows):
                item_id = next_id + offset
                ref = item.reference
                ranking = list(ref.ranking) if ref.ranking else None
                item_rows.append((
                    item_id, item.ext_id, item.source_format, item.category, item.subset,
                    item.prompt, item.prompt_raw, item.media_kind, len(item.responses),
                    json.dumps(ranking) if ranking else None, ranking[0] if ranking else None,
                    ref.strength, ref.ground_truth, extra_json, digest, import_id,
                    sum(1 for m in item.media if m.missing),
                ))
                for r in item.responses:
                    response_rows.append((item_id, r.index, r.text, r.model))
                    for s_idx, step in enumerate(r.steps):
                        correct = None if step.correct is None else int(step.correct)
                        step_rows.append((item_id, r.index, s_idx, step.text, correct))
                for m_idx, m in enumerate(item.media):
                    media_rows.append((item_id, m_idx, m.kind, m.ref, m.path, m.problem))
                for t_idx, t in enumerate(ref.error_tags):
                    tag_rows.append((item_id, t_idx, t.kind, t.subkind, t.note, t.raw))
                added.append(_with_id(item, item_id))
            conn.executemany(
                "INSERT INTO items (id, ext_id, source_format, category, subset, prompt, prompt_raw,"
                " media_kind, n_responses, ref_ranking, ref_chosen, ref_strength, ground_truth, extra,"
                " content_hash, import_id, missing_media) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                item_rows,
            )
            conn.executemany("INSERT INTO responses VALUES (?,?,?,?)", response_rows)
            conn.executemany("INSERT INTO steps VALUES (?,?,?,?,?)", step_rows)
            conn.executemany("INSERT INTO media VALUES (?,?,?,?,?,?)", media_rows)
            conn.executemany("INSERT INTO ref_error_tags VALUES (?,?,?,?,?,?)", tag_rows)
            return AddResult(added, unchanged, conflicts)

    def begin_import(self, path: str, fmt: str, sha256: str, options: dict) -> int:
        """Log an import (call inside the import's transaction); returns its id."""
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO imports (path, format, sha256, imported_at, added, unchanged, options)"
                " VALUES (?,?,?,?,0,0,?)",
                (path, fmt, sha256, utc_now(), dumps(options)),
            )
            return cur.lastrowid

    def finish_import(self, import_id: int, added: int, unchanged: int) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE imports SET added = ?, unchanged = ? WHERE id = ?", (added, unchanged, import_id))

    # -- reading ---------------------------------------------------------------------------

    def item_count(self, category: str | None = None) -> int:
        if category is None:
            return self.query("SELECT count(*) FROM items")[0][0]
        return self.query("SELECT count(*) FROM items WHERE category = ?", (category,))[0][0]

    def categories(self) -> dict[str, int]:
        """Item count per category, largest first."""
        rows = self.query("SELECT category, count(*) FROM items GROUP BY category ORDER BY count(*) DESC, category")
        return dict(rows)

    def item_summaries(self, offset: int = 0, limit: int = 500, category: str | None = None) -> list[ItemSummary]:
        """A page of item-table rows in store order."""
        where, params = ("WHERE category = ?", [category]) if category else ("", [])
        rows = self.query(f"{_SUMMARY_SQL} {where} ORDER BY id LIMIT ? OFFSET ?", (*params, limit, offset))
        return [ItemSummary(*row) for row in rows]

    def item_id(self, ext_id: str) -> int | None:
        row = self.query("SELECT id FROM items WHERE ext_id = ?", (ext_id,))
        return row[0][0] if row else None

    def get_item(self, item_id: int) -> Item:
        """Load one whole item; raises ``KeyError`` for an unknown id."""
        with self._lock:
            conn = self.conn
            row = conn.execute(
                "SELECT ext_id, source_format, category, subset, prompt, prompt_raw, ref_ranking,"
                " ref_strength, ground_truth, extra FROM items WHERE id = ?",
                (item_id,),
            ).fetchone()
            if row is None:
                raise KeyError(f"no item with id {item_id}")
            steps: dict[int, list[Step]] = {}
            for r_idx, text, correct in conn.execute(
                "SELECT response_idx, text, ref_correct FROM steps WHERE item_id = ? ORDER BY response_idx, idx",
                (item_id,),
            ):
                steps.setdefault(r_idx, []).append(Step(text, None if correct is None else bool(correct)))
            responses = tuple(
                Response(idx, text, model, tuple(steps.get(idx, ())))
                for idx, text, model in conn.execute(
                    "SELECT idx, text, model FROM responses WHERE item_id = ? ORDER BY idx", (item_id,)
                )
            )
            media = tuple(
                MediaRef(kind, ref, path, problem)
                for kind, ref, path, problem in conn.execute(
                    "SELECT kind, ref, path, problem FROM media WHERE item_id = ? ORDER BY idx", (item_id,)
                )
            )
            tags = tuple(
                ErrorTag(*t)
                for t in conn.execute(
                    "SELECT kind, subkind, note, raw FROM ref_error_tags WHERE item_id = ? ORDER BY idx", (item_id,)
                )
            )
        ext_id, fmt, category, subset, prompt, prompt_raw, ranking, strength, truth, extra = row
        reference = Reference(
            ranking=tuple(json.loads(ranking)) if ranking else None,
            strength=strength,
            error_tags=tags,
            ground_truth=truth,
        )
        return Item(
            ext_id=ext_id, prompt=prompt, responses=responses, media=media, category=category,
            subset=subset, source_format=fmt, prompt_raw=prompt_raw, reference=reference,
            extra=json.loads(extra), id=item_id,
        )

    def missing_media(self) -> list[tuple[str, str, str]]:
        """``(item ext_id, media ref, problem)`` for every media file that could not be used."""
        return self.query(
            "SELECT i.ext_id, m.ref, coalesce(m.problem, 'missing') FROM media m JOIN items i ON i.id = m.item_id"
            " WHERE m.path IS NULL OR m.problem IS NOT NULL ORDER BY i.id, m.idx"
        )

    def info(self) -> ProjectInfo:
        """The counts ``pairscope info`` prints."""
        q = lambda sql: self.query(sql)[0][0]  # noqa: E731
        return ProjectInfo(
            items=q("SELECT count(*) FROM items"),
            categories=self.categories(),
            responses=q("SELECT count(*) FROM responses"),
            labels=q("SELECT count(*) FROM labels"),
            annotators=q("SELECT count(*) FROM annotators"),
            judge_runs=q("SELECT count(*) FROM judge_runs"),
            missing_media=q("SELECT count(*) FROM media WHERE path IS NULL OR problem IS NOT NULL"),
            schema_version=self.schema_version,
        )


def _with_id(item: Item, item_id: int) -> Item:
    return replace(item, id=item_id)
