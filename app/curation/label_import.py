"""``pairscope import-labels``: human labels made elsewhere into the project, whole or not at all.

Every row of the file is read (:mod:`.label_readers`) and checked against the project first —
the item exists (by its id, ``ext_id``), the response index or text is one of its responses,
the strength is one of PairScope's, the time is ISO 8601 and not in the future — and any
problem raises :class:`LabelImportError` naming ``file:line`` (or the task/record) with
nothing written. Then every label is appended in one transaction. A label's uuid is derived
from what it says (annotator, item, outcome, preference, time, and a ranking's ties), so
importing the same file twice adds nothing the second time.

A ranking (Potato's ``rank_order``, :mod:`.label_readers`) becomes a label that ranks the
item's responses, ties kept (``Label.ranks``, by response index; outcome ``prefer``, or ``tie``
when the best is shared: :func:`app.rankings.ranked_fields`).
"""

from __future__ import annotations

import math
import uuid as uuidlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..rankings import RankingError, parse_rank_order, ranked_fields
from ..records import STRENGTHS, Label
from ..store import Store
from ..store.clock import time_problem
from ..taxonomy import parse_error_tags
from .label_readers import (
    FORMATS,
    ForeignLabel,
    rank_names,
    read_argilla,
    read_jsonl,
    read_label_studio,
    read_potato,
    sniff,
)

MAX_PROBLEMS = 20
_NAMESPACE = uuidlib.UUID("5b0c6f2e-8f7d-4c53-9a77-2a4ce1d0a428")


class LabelImportError(ValueError):
    """Rows of the file that cannot be imported; nothing was written. ``problems``: every one."""

    def __init__(self, path: Path, problems: list[str]):
        self.problems = problems
        shown = problems[:MAX_PROBLEMS]
        more = [f"… and {len(problems) - len(shown)} more"] if len(problems) > len(shown) else []
        super().__init__("\n".join([f"nothing imported from {path}: {len(problems)} problems", *shown, *more]))


@dataclass
class ImportLabelsResult:
    """What an import did: labels added, already there (same uuid), skipped rows (cancelled,
    drafts) are not counted; per annotator the labels added."""

    path: Path
    format: str
    added: int = 0
    present: int = 0
    annotators: dict[str, int] = field(default_factory=dict)

    def message(self) -> str:
        who = ", ".join(f"{n} by {a}" for a, n in sorted(self.annotators.items()))
        return f"imported {self.added} labels from {self.path} ({self.format}; {self.present} already there)" + (
            f": {who}" if who else ""
        )


def read_foreign(
    path: Path, fmt: str, *, annotator: str | None = None, question: str | None = None, item_key: str | None = None
) -> Iterable[ForeignLabel | str]:
    """The rows of ``path`` in format ``fmt`` (``auto``: :func:`label_readers.sniff`)."""
    if fmt == "jsonl":
        return read_jsonl(path, annotator)
    if fmt == "label-studio":
        return read_label_studio(path, annotator, item_key or "item")
    if fmt == "argilla":
        return read_argilla(path, annotator, question, item_key or "id")
    if fmt == "potato":
        return read_potato(path, annotator, question)
    raise ValueError(f"--format: choose from auto, {', '.join(FORMATS)}, got {fmt!r}")


def _label(store: Store, row: ForeignLabel, item_id: int, texts: list[str]) -> Label | str:
    ranking: tuple[int, ...] = ()
    ranks: tuple[int, ...] = ()
    outcome = row.outcome
    if row.rank_order is not None:  # a ranking with ties: outcome, ranking and ranks from it
        try:
            outcome, ranking, ranks = ranked_fields(
                parse_rank_order(row.rank_order, rank_names(row.rank_order, len(texts)))
            )
        except RankingError as exc:
            return f"{row.where}: rank_order {row.rank_order[:80]!r} of item {row.item!r}: {exc}"
    elif row.outcome == "prefer":
        if row.preferred_text is not None:
            matches = [i for i, t in enumerate(texts) if t == row.preferred_text]
            if len(matches) != 1:
                found = "matches no response" if not matches else f"matches responses {matches}"
                return f"{row.where}: 'preferred_text' {found} of item {row.item!r}"
            ranking = (matches[0],)
        elif row.preference is None or not 0 <= row.preference < len(texts):
            return f"{row.where}: item {row.item!r} has no response {row.preference} (it has {len(texts)})"
        else:
            ranking = (row.preference,)
    if row.strength is not None and row.strength not in STRENGTHS:
        return f"{row.where}: 'strength' is one of {', '.join(STRENGTHS)}, got {row.strength!r}"
    if row.strength is not None and outcome != "prefer":
        return f"{row.where}: only a preference has a strength"
    created = None
    seconds = row.seconds
    if _is_number(row.time):
        if seconds is not None:
            return f"{row.where}: both 'time' ({row.time!r}) and 'seconds' state the time spent on the item"
        seconds = row.time
    elif row.time is not None:
        if not isinstance(row.time, str):
            return (
                f"{row.where}: 'time' is when the label was made (ISO 8601 text) or the seconds spent on"
                f" the item (a number), got {row.time!r}"
            )
        if (why := time_problem(row.time)) is not None:
            return f"{row.where}: the time {row.time[:40]!r} {why}"
        created = row.time
    active_ms = None
    if seconds is not None:
        if not _is_number(seconds) or not math.isfinite(seconds) or seconds < 0:
            return f"{row.where}: the time spent on the item must be a number of seconds >= 0, got {seconds!r}"
        active_ms = round(seconds * 1000)
    name = row.annotator.strip()
    key = f"{name}\x1f{row.item}\x1f{outcome}\x1f{ranking}\x1f{created}\x1f{row.strength}"
    if ranks:  # a ranking's ties are part of what it says (a label without ranks keeps its uuid)
        key += f"\x1f{ranks}"
    return Label(
        item_id=item_id,
        annotator=name,
        outcome=outcome,  # type: ignore[arg-type]
        ranking=ranking,
        ranks=ranks,
        strength=row.strength,
        error_types=parse_error_tags(row.error_types),
        uuid=str(uuidlib.uuid5(_NAMESPACE, key)),
        created_at=created,
        active_ms=active_ms,
    )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def import_labels(
    store: Store,
    path: str | Path,
    fmt: str = "auto",
    *,
    annotator: str | None = None,
    question: str | None = None,
    item_key: str | None = None,
) -> ImportLabelsResult:
    """Check every row of ``path``, then append them all in one transaction (see the module)."""
    path = Path(path)
    if fmt == "auto":
        fmt = sniff(path)
    problems: list[str] = []
    labels: list[Label] = []
    items: dict[str, tuple[int, list[str]] | None] = {}
    try:
        rows = list(read_foreign(path, fmt, annotator=annotator, question=question, item_key=item_key))
    except ValueError as exc:
        raise LabelImportError(path, [str(exc)]) from exc
    for row in rows:
        if isinstance(row, str):
            problems.append(row)
            continue
        if row.item not in items:
            item_id = store.item_id(row.item)
            items[row.item] = (
                None if item_id is None else (item_id, [r.text for r in store.get_item(item_id).responses])
            )
        found = items[row.item]
        if found is None:
            problems.append(f"{row.where}: no item {row.item!r} in {store.path}")
            continue
        made = _label(store, row, *found)
        if isinstance(made, str):
            problems.append(made)
        else:
            labels.append(made)
    if problems:
        raise LabelImportError(path, problems)
    if not labels:
        raise LabelImportError(path, [f"{path}: no labels in it"])
    known = store.label_uuids()
    result = ImportLabelsResult(path, fmt)
    with store.transaction():
        for label in labels:
            if label.uuid in known:
                result.present += 1
                continue
            store.add_label(label)
            known.add(label.uuid or "")
            result.added += 1
            result.annotators[label.annotator] = result.annotators.get(label.annotator, 0) + 1
    return result


__all__ = ["FORMATS", "ImportLabelsResult", "LabelImportError", "import_labels", "read_foreign"]
