"""Step-wise (process-reward) rows, ViLBench style: a question, images and a response split
into reasoning steps, each labelled correct or erroneous.

``steps`` is a JSON list of strings, or a string holding a Python-style list
(``"['STEP1: …', 'STEP2: …']"``, read with :func:`ast.literal_eval`, never ``eval``), or plain
text split on ``STEP<n>:`` lines. Labels: ``task_gt``/``step_labels``/``labels`` mark an
erroneous step with 1; ``process_correctness`` marks a correct step with 1, an incorrect one
with -1 and a neutral one with 0. A ``responses`` list of ``{"steps": …, "task_gt": …}``
objects gives Best-of-N candidates.

Published layouts read without ``--map``:
- VLRMBench (``benchmark_data/*.jsonl``): ``id, image`` (list), ``question, step_list,
  reasoning_error, task_gt`` (1 = erroneous step), ``category``. ``task_gt`` marks the
  steps of ``reasoning_error``, the text the official evaluation shows the judge.
- VisualProcessBench (``test.jsonl``, the ViLBench-style PRM rows): ``image`` (list),
  ``question, answer, response: {steps, process_correctness}, policy_model, data_source``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any

from ..records import Item, Reference, Response, Step
from .base import (
    ImportContext,
    JSONProblem,
    ParsedRow,
    RowProblem,
    RowReader,
    expect_str,
    loads_json,
    optional_str,
    parse_rows,
    read_jsonl,
    register,
    type_name,
    value_problem,
)
from .fields import derived_id, ext_id_or, media_refs, require, resolve_media, what
from .messages import shown

ALIASES = {
    "id": ("id", "idx", "uid"),
    "question": ("question", "query", "prompt"),
    "images": ("images", "image", "image_path", "image_paths"),
    "steps": ("steps", "step_list", "response", "process", "solution"),
    "labels": ("task_gt", "step_labels", "labels"),
    "correctness": ("process_correctness",),
    "responses": ("responses",),
    "category": ("category", "subject", "dataset", "source", "data_source"),
    "ground_truth": ("answer", "ground_truth", "gt_answer"),
}

_STEP_RE = re.compile(r"^[ \t]*STEP[ \t]*\d+[ \t]*:", re.IGNORECASE | re.MULTILINE)


def _list_literal(text: str, label: str) -> list | None:
    """Parse a string that looks like a list (``[...]``); ``None`` when it does not look like one."""
    stripped = text.strip()
    if not (stripped.startswith("[") and stripped.endswith("]")):
        return None
    try:
        value = loads_json(stripped)
    except JSONProblem:
        try:
            # literal_eval accepts only literals (strings, numbers, lists…): no names, calls or attributes.
            value = ast.literal_eval(stripped)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
            raise RowProblem(
                f"{label}: looks like a list but is not a plain list literal ({type(exc).__name__}); "
                "only quoted strings and numbers are allowed"
            ) from None
        why = value_problem(value)  # a Python literal can spell a lone surrogate ('\\ud800') or a huge integer
        if why is not None:
            raise RowProblem(f"{label}: {why}") from None
    if not isinstance(value, list):
        raise RowProblem(f"{label}: expected a list, got {type_name(value)}")
    return value


def split_steps(text: str) -> list[str]:
    """Split plain text on ``STEP<n>:`` lines; text before the first marker joins step 1."""
    starts = [m.start() for m in _STEP_RE.finditer(text)]
    if not starts:
        return [text.strip()]
    bounds = starts[1:] + [len(text)]
    steps = [text[a:b].strip() for a, b in zip(starts, bounds)]
    preamble = text[: starts[0]].strip()
    if preamble:
        steps[0] = f"{preamble}\n{steps[0]}"
    return steps


def parse_steps(value: Any, label: str) -> list[str]:
    if isinstance(value, str):
        if not value.strip():
            raise RowProblem(f"{label}: expected steps, got an empty string")
        parsed = _list_literal(value, label)
        if parsed is None:
            return split_steps(value)
        value = parsed
    if not isinstance(value, list):
        raise RowProblem(f"{label}: expected a list of step strings, got {type_name(value)}")
    for i, step in enumerate(value):
        if not isinstance(step, str):
            raise RowProblem(f"{label}[{i}]: expected a step string, got {type_name(step)}")
    if not value:
        raise RowProblem(f"{label}: expected at least one step")
    return value


def parse_labels(value: Any, label: str, *, one_means_correct: bool, n_steps: int) -> list[bool | None]:
    """Per-step correctness from 0/1 labels (1 = erroneous: ``task_gt``), or from
    ``process_correctness`` (1 correct, -1 incorrect, 0 neutral → ``None``, as
    VisualProcessBench defines them)."""
    if isinstance(value, str):
        parsed = _list_literal(value, label)
        if parsed is None:
            raise RowProblem(f"{label}: expected a list of step labels, got a string")
        value = parsed
    if not isinstance(value, list):
        raise RowProblem(f"{label}: expected a list of step labels, got {type_name(value)}")
    allowed = (1, 0, -1) if one_means_correct else (0, 1)
    meaning = "1 = correct, 0 = neutral, -1 = incorrect" if one_means_correct else "1 = erroneous, 0 = correct"
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v not in allowed:
            raise RowProblem(f"{label}: labels must be one of {list(allowed)} ({meaning}), got {shown(v, quote=True)}")
    if len(value) != n_steps:
        raise RowProblem(f"{label}: has {len(value)} labels for {n_steps} steps")
    if one_means_correct:
        return [None if v == 0 else v == 1 for v in value]
    return [v == 0 for v in value]


def _response(
    reader: RowReader, obj: dict, index: int, prefix: str = "", texts: list[str] | None = None, model: str | None = None
) -> tuple[Response, list[str]]:
    """One response from the steps and label fields of ``obj`` (or the given step
    ``texts``); also the keys it used."""
    used = []
    if texts is None:
        try:
            s_key, s_value = require(reader, obj, "steps")
        except RowProblem as exc:
            raise RowProblem(prefix + str(exc)) from None
        texts = parse_steps(s_value, prefix + what("steps", s_key))
        used.append(s_key)
    correct: list[bool | None] = [None] * len(texts)
    l_key, l_value = reader.find(obj, "labels")
    c_key, c_value = reader.find(obj, "correctness")
    if l_key is not None and l_value is not None:
        correct = parse_labels(l_value, prefix + l_key, one_means_correct=False, n_steps=len(texts))
        used.append(l_key)
    elif c_key is not None and c_value is not None:
        correct = parse_labels(c_value, prefix + c_key, one_means_correct=True, n_steps=len(texts))
        used.append(c_key)
    if prefix and model is None:
        model = optional_str(obj.get("model"), prefix + "model")
    steps = tuple(Step(t, c) for t, c in zip(texts, correct))
    return Response(index, "\n".join(texts), model, steps), used


def _responses(reader: RowReader, row: dict, key: str, value: Any) -> tuple[list[Response], list[dict]]:
    if not isinstance(value, list) or not value:
        raise RowProblem(f"{key}: expected a non-empty list of {{'steps': …}} objects, got {type_name(value)}")
    for other in ("steps", "labels", "correctness"):
        found = reader.find(row, other)[0]
        if found is not None:
            raise RowProblem(f"{key} and {found} are both present; put steps and labels inside each response")
    responses, leftovers = [], []
    for i, obj in enumerate(value):
        if not isinstance(obj, dict):
            raise RowProblem(f"{key}[{i}]: expected an object with steps, got {type_name(obj)}")
        response, used = _response(reader, obj, i, prefix=f"{key}[{i}].")
        responses.append(response)
        leftovers.append({k: v for k, v in obj.items() if k not in used and k != "model"})
    return responses, leftovers


def _labelled_text(row: dict) -> list[str] | None:
    """VLRMBench: ``task_gt`` marks the steps of ``reasoning_error`` (the solution its
    official evaluation shows the judge; ``step_list`` is the unperturbed original). Those
    steps, when ``reasoning_error`` splits into one step per ``task_gt`` mark; else ``None``
    (the steps field is read as usual)."""
    text, marks = row.get("reasoning_error"), row.get("task_gt")
    if not isinstance(text, str) or not isinstance(marks, list) or "step_list" not in row:
        return None
    steps = split_steps(text)
    return steps if len(steps) == len(marks) and _STEP_RE.match(text) else None


def build_item(ctx: ImportContext, reader: RowReader, line: int, row: dict) -> Item:
    """Build a step-wise :class:`Item` from one row."""
    q_key, q_value = require(reader, row, "question")
    question = expect_str(q_value, what("question", q_key))
    i_key, i_value = reader.find(row, "images")
    refs = [] if i_key is None else media_refs(i_value, what("images", i_key))
    r_key, r_value = reader.find(row, "responses")
    extra = reader.extra(row)
    if r_key is not None:
        responses, leftovers = _responses(reader, row, r_key, r_value)
        if any(leftovers):
            extra["responses_extra"] = leftovers  # unknown per-response keys, kept for export
    elif isinstance(row.get("response"), dict):  # VisualProcessBench: {"steps", "process_correctness"}
        obj = row["response"]
        model = optional_str(row.get("policy_model"), "policy_model")
        response, used = _response(reader, obj, 0, "response.", model=model)
        responses = [response]
        extra.pop("response", None)
        extra.pop("policy_model", None)
        leftover = {k: v for k, v in obj.items() if k not in used}
        if leftover:
            extra["response_extra"] = leftover
    else:
        response, used = _response(reader, row, 0, texts=_labelled_text(row))
        responses = [response]
        for name in ("labels", "correctness"):  # a label field that was not used stays in extra
            key = reader.find(row, name)[0]
            if key is not None and key not in used and key in row:
                extra[key] = row[key]
    ext_id = ext_id_or(
        reader, row, line, derived_id("steps", question, refs, [[s.text for s in r.steps] for r in responses])
    )
    c_key, c_value = reader.find(row, "category")
    g_key, g_value = reader.find(row, "ground_truth")
    return Item(
        ext_id=ext_id,
        prompt=question,
        responses=tuple(responses),
        media=resolve_media(ctx, line, ext_id, refs, "image"),
        category=(None if c_key is None else optional_str(c_value, what("category", c_key))) or "reasoning",
        source_format="steps",
        reference=Reference(
            ranking=None,
            ground_truth=None if g_key is None else optional_str(g_value, what("ground_truth", g_key)),
        ),
        extra=extra,
    )


def _sniff(row: dict) -> bool:
    if "steps" in row or "process_correctness" in row or "step_labels" in row:
        return True
    if "step_list" in row and "task_gt" in row:  # VLRMBench
        return True
    response = row.get("response")
    if isinstance(response, dict) and "steps" in response:  # VisualProcessBench
        return True
    if "task_gt" in row and any(k in row for k in ("response", "process", "solution")):
        return True
    responses = row.get("responses")
    return (
        isinstance(responses, list) and bool(responses) and isinstance(responses[0], dict) and "steps" in responses[0]
    )


@register("steps", "Step-wise process-reward rows (ViLBench style): question, images, labelled steps", sniff=_sniff)
def parse(ctx: ImportContext) -> Iterator[ParsedRow]:
    reader = RowReader(ctx, ALIASES)
    return parse_rows(ctx, read_jsonl(ctx.path), lambda line, row: build_item(ctx, reader, line, row))
