"""Readers of human labels made elsewhere, one per format, each yielding :class:`ForeignLabel`
rows (or a problem string naming ``file:line`` / the task) for :mod:`.label_import`.

Where each format was read (its published description):

* ``jsonl`` — PairScope's own: the keys ``pairscope import-verdicts`` uses (``item`` = the
  item's id), plus ``annotator``, ``preference`` (a response index) or ``preferred_text`` (a
  response's exact text) or ``outcome`` (``tie``, ``both_bad``, ``discard``); optional
  ``strength``, ``error_types``, ``time``: when the label was made (ISO 8601 text), or, as a
  number, the seconds spent on the item (stored as its active time, ``labels.active_ms``);
  ``seconds`` states the latter beside an ISO ``time``.
* ``label-studio`` — Label Studio's JSON export of annotated tasks, as "Label Studio Task
  Format" (https://labelstud.io/guide/task_format) describes it: a list of tasks with ``data``
  and ``annotations``, each annotation with ``result``, ``completed_by``, ``created_at``,
  ``was_cancelled``, ``lead_time`` (seconds spent on the task, e.g. ``4.288``: stored as the
  label's active time, though Label Studio counts idle time too); the result of a ``<Pairwise>`` control
  (https://labelstud.io/tags/pairwise.html) is ``{"type": "pairwise", "value": {"selected":
  "left" | "right"}}`` — left is the first object of ``toName`` (response 0), right the second.
* ``argilla`` — Argilla 2.x records as ``dataset.records.to_json()`` / ``to_list()`` write them
  (https://docs.argilla.io/latest/reference/argilla/records/records and
  .../records/responses): ``id``, ``fields``, ``metadata`` and ``responses`` = question name ->
  list of ``{"value", "user_id", "status"}``; a ranking question's value is a list of
  ``{"value": option, "rank": n}``, a label question's an option name.
* ``potato`` — Potato's ``annotation_output/.../annotated_instances.jsonl`` lines
  (https://potato-annotation-tutorial.readthedocs.io/en/latest/data_format.html, and the
  ``/get_annotations`` response in Potato's API reference): ``user_id``, ``instance_id`` (or
  ``id``), ``label_annotations`` = scheme -> {label: value}, ``behavioral_data``. A ``ranking``
  scheme (Potato's documentation of the ranking annotation type and its ranking schema
  module, https://github.com/davidjurgens/potato) stores
  ``{"rank_order": "B,D,A,C"}``: the scheme's label names joined by ``,`` from rank 1 (best)
  to the last; with ``allow_ties`` tied labels are joined by ``=`` (``"B,D=A,C"``: B first, D
  and A tied second, C last). It is read as a ranking label (:func:`rank_names`).

An option or label names a response by a trailing number (``response-1``, ``text2``:
1-based), a letter (``A``/``B``), ``left``/``right``, or is ``tie`` / ``both_bad``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..json_guard import loads_json
from ..rankings import RankingError

FORMATS = ("jsonl", "label-studio", "argilla", "potato")


@dataclass(frozen=True)
class ForeignLabel:
    """One label as a foreign file states it, before it is checked against the project.
    ``preference``: a response index; ``preferred_text``: a response's text."""

    where: str
    item: str
    annotator: str
    outcome: str
    preference: int | None = None
    preferred_text: str | None = None
    strength: Any = None
    error_types: Any = None
    time: Any = None
    seconds: Any = None  # time spent on the item, in seconds (stored as the active time)
    #: a ranking written as Potato's ``rank_order`` (``"B,D=A,C"``); ``outcome`` is then "rank"
    rank_order: str | None = None


Read = Iterator[ForeignLabel | str]
_TIE = {"tie", "equal", "same", "both_good", "both good"}
_BOTH_BAD = {"both_bad", "both bad", "neither"}


def option_index(value: Any) -> tuple[str, int | None] | None:
    """``(outcome, response index)`` an option or label names; ``None``: it names none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return ("prefer", value) if value >= 0 else None
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    if text in _TIE:
        return ("tie", None)
    if text in _BOTH_BAD:
        return ("both_bad", None)
    if text in ("left", "a"):
        return ("prefer", 0)
    if text in ("right", "b"):
        return ("prefer", 1)
    match = re.search(r"(\d+)$", text)
    if match and int(match.group(1)) >= 1:
        return ("prefer", int(match.group(1)) - 1)
    return None


def _ranked_index(name: str) -> int | None:
    """The response index a ranked label names: as :func:`option_index` does, or by a last
    letter (``C``, ``Response C``, ``response_c``: A = response 0)."""
    named = option_index(name)
    if named is not None:
        return named[1] if named[0] == "prefer" else None
    match = re.search(r"(?:^|[\s_-])([a-z])$", name.strip().lower())
    return ord(match.group(1)) - ord("a") if match else None


def rank_names(text: str, n: int) -> list[str]:
    """The names of an item's ``n`` responses, by index, as a written ranking (Potato's
    ``rank_order``) spells them: what :func:`app.rankings.parse_rank_order` reads it with.
    ``RankingError`` for a name that names no response, or a response the item lacks."""
    names = [f"\x00{i}" for i in range(n)]  # a response the text does not name: matched by nothing
    for name in re.split(r"[,>=]", text):
        name = name.strip()
        if not name:
            continue
        index = _ranked_index(name)
        if index is None:
            raise RankingError(f"{name!r} names no response (A, B, …, or response-1, response-2, …)")
        if index >= n:
            raise RankingError(f"{name!r} names response {index + 1}; the item has {n}")
        if not names[index].startswith("\x00") and names[index] != name:
            raise RankingError(f"{names[index]!r} and {name!r} both name response {index + 1}")
        names[index] = name
    return names


def _lines(path: Path) -> Iterator[tuple[int, Any] | str]:
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, loads_json(line)
        except ValueError as exc:
            yield f"{path}:{number}: not valid JSON ({exc})"


def read_jsonl(path: Path, annotator: str | None = None) -> Read:
    """PairScope's simple JSONL (see the module)."""
    for entry in _lines(path):
        if isinstance(entry, str):
            yield entry
            continue
        number, row = entry
        where = f"{path}:{number}"
        if not isinstance(row, dict):
            yield f"{where}: expected a JSON object"
            continue
        name = annotator or row.get("annotator")
        if not isinstance(name, str) or not name.strip():
            yield f"{where}: no 'annotator' (a name)"
            continue
        item = row.get("item")
        if not isinstance(item, (str, int)) or isinstance(item, bool):
            yield f"{where}: no 'item' (the item's id)"
            continue
        extra = {k: row.get(k) for k in ("strength", "error_types", "time", "seconds")}
        if "preference" in row:
            pref = row["preference"]
            if not isinstance(pref, int) or isinstance(pref, bool) or pref < 0:
                yield f"{where}: 'preference' must be a response index (0, 1, …), got {pref!r}"
                continue
            yield ForeignLabel(where, str(item), name, "prefer", preference=pref, **extra)
        elif "preferred_text" in row:
            if not isinstance(row["preferred_text"], str):
                yield f"{where}: 'preferred_text' must be a response's text"
                continue
            yield ForeignLabel(where, str(item), name, "prefer", preferred_text=row["preferred_text"], **extra)
        elif row.get("outcome") in ("tie", "both_bad", "discard"):
            yield ForeignLabel(where, str(item), name, row["outcome"], **extra)
        else:
            yield f"{where}: needs 'preference', 'preferred_text' or 'outcome' (tie, both_bad, discard)"


def _json_document(path: Path) -> Any:
    try:
        return loads_json(path.read_bytes())
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc


def read_label_studio(path: Path, annotator: str | None = None, item_key: str = "item") -> Read:
    """A Label Studio JSON export of a pairwise project (see the module)."""
    tasks = _json_document(path)
    if not isinstance(tasks, list):
        yield f"{path}: a Label Studio export is a JSON list of tasks"
        return
    for n, task in enumerate(tasks, start=1):
        where = f"{path}: task {n}"
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            yield f"{where}: a task needs 'data'"
            continue
        where += f" (id {task.get('id')})"
        item = task["data"].get(item_key)
        if not isinstance(item, (str, int)) or isinstance(item, bool):
            yield f"{where}: data has no {item_key!r} (the PairScope item id; --item-key names another key)"
            continue
        for a, ann in enumerate(task.get("annotations") or [], start=1):
            here = f"{where} annotation {a}"
            if not isinstance(ann, dict):
                yield f"{here}: not an object"
                continue
            if ann.get("was_cancelled"):
                continue  # skipped by the annotator: no label
            who = ann.get("completed_by")
            if isinstance(who, dict):
                who = who.get("email") or who.get("id")
            name = annotator or (f"label-studio-{who}" if isinstance(who, int) else who)
            if not isinstance(name, str) or not name:
                yield f"{here}: no 'completed_by'"
                continue
            # A <Pairwise> result is the one whose value holds "selected" (its type is Label
            # Studio's tag name, not a judging mode; tests/test_mode_names.py).
            picks = [
                r
                for r in ann.get("result") or []
                if isinstance(r, dict) and isinstance(r.get("value"), dict) and "selected" in r["value"]
            ]
            if len(picks) != 1:
                yield f"{here}: expected one pairwise result, found {len(picks)}"
                continue
            selected = (picks[0].get("value") or {}).get("selected")
            if selected not in ("left", "right"):
                yield f"{here}: pairwise 'selected' must be 'left' or 'right', got {selected!r}"
                continue
            yield ForeignLabel(
                here,
                str(item),
                name,
                "prefer",
                preference=0 if selected == "left" else 1,
                time=ann.get("created_at"),
                seconds=ann.get("lead_time"),
            )


def read_argilla(path: Path, annotator: str | None = None, question: str | None = None, item_key: str = "id") -> Read:
    """Argilla records as ``records.to_json()`` writes them (see the module)."""
    records = _json_document(path)
    if not isinstance(records, list):
        yield f"{path}: an Argilla export is a JSON list of records"
        return
    for n, record in enumerate(records, start=1):
        where = f"{path}: record {n}"
        if not isinstance(record, dict):
            yield f"{where}: not an object"
            continue
        item = record.get(item_key, (record.get("metadata") or {}).get(item_key))
        where += f" (id {record.get('id')})"
        if not isinstance(item, (str, int)) or isinstance(item, bool):
            yield f"{where}: no {item_key!r} (the PairScope item id; --item-key names another key)"
            continue
        responses = record.get("responses") or {}
        if not isinstance(responses, dict):
            yield f"{where}: 'responses' must map question names to responses"
            continue
        names = [question] if question else sorted(responses)
        if question is None and len(names) > 1:
            yield f"{where}: responses to several questions ({', '.join(names)}); name one with --question"
            continue
        for q in names:
            for r, resp in enumerate(responses.get(q) or [], start=1):
                here = f"{where} {q} response {r}"
                if not isinstance(resp, dict):
                    yield f"{here}: not an object"
                    continue
                status = resp.get("status", "submitted")
                if status == "draft":
                    continue
                name = annotator or resp.get("user_id")
                if not isinstance(name, str) or not name:
                    yield f"{here}: no 'user_id'"
                    continue
                if status == "discarded":
                    yield ForeignLabel(here, str(item), name, "discard")
                    continue
                value = resp.get("value")
                if isinstance(value, list):  # a ranking question: the option ranked 1 is preferred
                    ranked = [v for v in value if isinstance(v, dict) and v.get("rank") is not None]
                    tops = [v for v in ranked if v.get("rank") == min(x["rank"] for x in ranked)] if ranked else []
                    if len(tops) != 1:
                        outcome: tuple[str, int | None] | None = ("tie", None) if len(tops) > 1 else None
                    else:
                        outcome = option_index(tops[0].get("value"))
                else:
                    outcome = option_index(value)
                if outcome is None:
                    yield f"{here}: {value!r} names no response (response-1, response-2, …, tie, both_bad)"
                    continue
                yield ForeignLabel(here, str(item), name, outcome[0], preference=outcome[1])


def read_potato(path: Path, annotator: str | None = None, question: str | None = None) -> Read:
    """Potato's ``annotated_instances.jsonl`` of a pairwise or ranking scheme (see the module)."""
    for entry in _lines(path):
        if isinstance(entry, str):
            yield entry
            continue
        number, row = entry
        where = f"{path}:{number}"
        if not isinstance(row, dict):
            yield f"{where}: expected a JSON object"
            continue
        item = row.get("instance_id", row.get("id"))
        name = annotator or row.get("user_id")
        if not isinstance(item, (str, int)) or isinstance(item, bool):
            yield f"{where}: no 'instance_id'"
            continue
        if not isinstance(name, str) or not name:
            yield f"{where}: no 'user_id'"
            continue
        schemes = row.get("label_annotations") or {}
        if not isinstance(schemes, dict) or not schemes:
            yield f"{where}: no 'label_annotations'"
            continue
        keys = [question] if question else sorted(schemes)
        if len(keys) > 1:
            yield f"{where}: several schemes ({', '.join(keys)}); name one with --question"
            continue
        labels = schemes.get(keys[0])
        if not isinstance(labels, dict):
            yield f"{where}: scheme {keys[0]!r} has no labels"
            continue
        behaviour = row.get("behavioral_data")
        behaviour = behaviour if isinstance(behaviour, dict) else {}
        if "rank_order" in labels:  # a ranking scheme (see the module)
            order = labels["rank_order"]
            if not isinstance(order, str) or not order.strip():
                yield f"{where}: scheme {keys[0]!r}: rank_order must be the ranked labels as text, got {order!r}"
                continue
            yield ForeignLabel(where, str(item), name, "rank", time=behaviour.get("timestamp"), rank_order=order)
            continue
        chosen = [k for k, v in labels.items() if v not in (False, None, "", "false", "0", 0)]
        if len(chosen) == 1 and chosen[0] in ("selection", "choice", "value"):
            chosen = [labels[chosen[0]]]
        outcome = option_index(chosen[0]) if len(chosen) == 1 else None
        if outcome is None:
            yield f"{where}: scheme {keys[0]!r} chose {chosen!r}; expected one of A, B, tie (or response-N)"
            continue
        yield ForeignLabel(where, str(item), name, outcome[0], preference=outcome[1], time=behaviour.get("timestamp"))


def sniff(path: Path) -> str:
    """The format of a file by its content: a JSON list of tasks (``data``), of records
    (``responses``), or lines with ``label_annotations`` / ``item``."""
    head = path.read_bytes()[:4096].lstrip()
    if head.startswith(b"["):
        return "label-studio" if b'"data"' in head and b'"annotations"' in head else "argilla"
    return "potato" if b'"label_annotations"' in head else "jsonl"


__all__ = [
    "FORMATS",
    "ForeignLabel",
    "option_index",
    "rank_names",
    "read_argilla",
    "read_jsonl",
    "read_label_studio",
    "read_potato",
    "sniff",
]
