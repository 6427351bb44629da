"""Runs made from other runs or from elsewhere: ``reparse`` (the stored raw outputs read by
another parser profile) and ``import_verdicts`` (an API judge's or a reward model's output
file). Both write a new run through the one write path; the source run is never edited.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace
from pathlib import Path

import orjson

from pairscope.models.base import Generation
from pairscope.models.official_rules import step_flags_to_scores, vlrmbench_step_errors
from pairscope.models.parsing import PARSERS, pairwise_parser, rationale

from ..records import Item
from ..store import RunRecord, Store, VerdictRecord
from .confidence import sample_confidence
from .modes import MAX_K, JudgingMode, get_mode, k_problem
from .results import record_verdicts

MAX_PROBLEMS = 20
#: The keys of a step row (one response's step judgements), one of them per row.
STEP_KEYS = ("step_output", "step_errors", "step_scores")
#: The scale of imported ``step_scores``: the bundled step template's 1–5.
STEP_SCALE = 5


class VerdictFileError(ValueError):
    """A verdict file that cannot become a run; ``problems`` are ``file:line: message`` lines."""

    def __init__(self, problems: list[str], total: int):
        self.problems = problems
        more = f"\n… and {total - len(problems)} more" if total > len(problems) else ""
        super().__init__("\n".join(problems) + more)


def reparse(store: Store, run_id: int, parser: str) -> RunRecord:
    """A new run (``derived_from`` = ``run_id``) whose samples are the source run's raw outputs
    read with the ``parser`` profile; failed samples stay failed."""
    if parser not in PARSERS:
        raise ValueError(f"parser must be one of {', '.join(PARSERS)}, got {parser!r}")
    try:
        src = store.run(run_id)
    except KeyError:
        raise ValueError(f"no judge run {run_id} in {store.path} (pairscope info lists its runs)") from None
    mode = get_mode(src.mode)
    with store.transaction():
        new = store.create_run(
            backend=src.backend,
            model_path=src.model_path,
            weights_hash=src.weights_hash,
            template_name=src.template_name,
            template_text=src.template_text,
            template_hash=src.template_hash,
            mode=src.mode,
            k=src.k,
            both_orders=src.both_orders,
            frames=src.frames,
            seed=src.seed,
            generation=src.generation,
            parser=parser,
            derived_from=src.id,
            status="done",
        )
        items: dict[int, Item] = {}
        out = []
        for v in store.verdicts(src.id):
            if v.error is not None:
                out.append(replace(v, run_id=new.id, created_at=None))
                continue
            item = items.get(v.item_id) or items.setdefault(v.item_id, store.get_item(v.item_id))
            text = v.raw_output or ""
            p = mode.parse(text, item, v.order_shown, parser)
            out.append(
                replace(
                    v,
                    run_id=new.id,
                    choice=p.choice,
                    scores=p.scores,
                    parsed=p.parsed,
                    rationale=rationale(text, p.span) if text else None,
                    # the verdict this parser reads may sit on other tokens than the old one
                    confidence=sample_confidence(mode, p, Generation(text, logprobs=v.logprobs), v.order_shown),
                    created_at=None,
                )
            )
        record_verdicts(store, new, out)
    return store.run(new.id)


def import_verdicts(
    store: Store, path: str | Path, name: str, *, k: int | None = None, parser: str = "lenient"
) -> RunRecord:
    """A run from a JSONL file of verdicts made elsewhere (format: docs/JUDGE.md). Every row is
    checked first; any problem raises :class:`VerdictFileError` and nothing is written."""
    if parser not in PARSERS:
        raise ValueError(f"parser must be one of {', '.join(PARSERS)}, got {parser!r}")
    if k is not None and (why := k_problem(k)):
        raise ValueError(f"k {why}")
    path = Path(path)
    data = path.read_bytes()
    problems: list[str] = []
    rows: list[tuple[int, dict]] = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            problems.append(f"{path}:{number}: not valid JSON ({exc})")
            continue
        if not isinstance(row, dict):
            problems.append(f"{path}:{number}: expected a JSON object")
            continue
        rows.append((number, row))
    kinds = {kind for _, row in rows for kind in ("output", "choice", "scores", *STEP_KEYS) if kind in row}
    by_steps = bool(kinds & set(STEP_KEYS))
    if by_steps and kinds - set(STEP_KEYS):
        problems.append(f"{path}: mixes step rows ({', '.join(STEP_KEYS)}) with other rows; one file is one run")
    elif "scores" in kinds and len(kinds) > 1:
        problems.append(f"{path}: mixes 'scores' rows with 'output'/'choice' rows; one file is one run")
    mode = "step" if by_steps else "pointwise" if kinds == {"scores"} else "pairwise"
    items: dict[int, Item] = {}
    read = pairwise_parser(parser)
    verdicts: list[VerdictRecord] = []
    seen: dict[tuple[int, int], int] = {}
    samples: dict[int, int] = {}
    for number, row in rows:
        where = f"{path}:{number}"
        ext = row.get("item")
        item_id = store.item_id(str(ext)) if isinstance(ext, (str, int)) and not isinstance(ext, bool) else None
        if item_id is None:
            problems.append(f"{where}: no item {_show(ext)} in the project")
            continue
        n = store.items_n_responses([item_id])[item_id]
        sample = row.get("sample", 0)
        if not isinstance(sample, int) or isinstance(sample, bool) or not 0 <= sample < MAX_K:
            # the vote table is as wide as the largest sample: one row could take all memory
            problems.append(
                f"{where} [{_show(ext)}]: 'sample' must be a whole number 0–{MAX_K - 1}"
                f" (a run votes at most {MAX_K} samples per item), got {_show(sample)}"
            )
            continue
        if by_steps:
            item = items.get(item_id) or items.setdefault(item_id, store.get_item(item_id))
            step = _step_row(row, item_id, item, sample, get_mode(mode), parser)
            if isinstance(step, str):
                problems.append(f"{where} [{_show(ext)}]: {step}")
                continue
            if (item_id, step.sample_idx) in seen:
                given = seen[item_id, step.sample_idx]
                problems.append(
                    f"{where} [{_show(ext)}]: sample {sample} of this response already given on line {given}"
                )
                continue
            seen[item_id, step.sample_idx] = number
            samples[item_id] = max(samples.get(item_id, 0), sample + 1)
            verdicts.append(step)
            continue
        if (item_id, sample) in seen:
            problems.append(f"{where} [{_show(ext)}]: sample {sample} already given on line {seen[item_id, sample]}")
            continue
        seen[item_id, sample] = number
        samples[item_id] = max(samples.get(item_id, 0), sample + 1)
        order = row.get("order", list(range(n)))
        if not isinstance(order, list) or sorted(order) != list(range(n)) or any(isinstance(i, bool) for i in order):
            problems.append(f"{where} [{_show(ext)}]: 'order' must list the {n} response indices once each")
            continue
        order = tuple(order)
        present = [key for key in ("output", "choice", "scores") if key in row]
        if len(present) != 1:
            problems.append(f"{where} [{_show(ext)}]: give exactly one of 'output', 'choice' or 'scores'")
            continue
        base = VerdictRecord(
            run_id=0,
            item_id=item_id,
            sample_idx=sample,
            order_shown=order,
            raw_output=None,
            choice=None,
            scores=None,
            parsed=False,
            rationale=None,
        )
        if "output" in row:
            text = row["output"]
            if not isinstance(text, str):
                problems.append(f"{where} [{_show(ext)}]: 'output' must be text")
                continue
            v = read(text, len(order))
            choice = order[v.choice] if v.parsed and v.choice is not None else None
            verdicts.append(
                replace(base, raw_output=text, choice=choice, parsed=v.parsed, rationale=rationale(text, v.span))
            )
        elif "choice" in row:
            choice = row["choice"]
            if choice is None:
                verdicts.append(base)
            elif choice == "tie":
                verdicts.append(replace(base, parsed=True))
            elif isinstance(choice, int) and not isinstance(choice, bool) and 0 <= choice < n:
                verdicts.append(replace(base, choice=choice, parsed=True))
            else:
                problems.append(f"{where} [{_show(ext)}]: 'choice' must be a response index 0–{n - 1}, \"tie\" or null")
        else:
            scores = row["scores"]
            if not isinstance(scores, list) or len(scores) != n or not all(_number(s) or s is None for s in scores):
                problems.append(f"{where} [{_show(ext)}]: 'scores' must hold {n} numbers (or null), one per response")
                continue
            for r, s in enumerate(scores):
                verdicts.append(
                    replace(
                        base,
                        sample_idx=sample * n + r,
                        order_shown=(r,),
                        choice=r,
                        scores=(None if s is None else float(s),),
                        parsed=s is not None,
                    )
                )
    if not rows and not problems:
        problems.append(f"{path}: no verdict rows")
    if problems:
        raise VerdictFileError(problems[:MAX_PROBLEMS], len(problems))
    k = k or max(samples.values())
    with store.transaction():
        run = store.create_run(
            backend="import",
            model_path=name,
            weights_hash=None,
            template_name=None,
            template_text="",
            template_hash="sha256:" + hashlib.sha256(data).hexdigest(),
            mode=mode,
            k=k,
            both_orders=False,
            frames=None,
            seed=0,
            generation={"source": str(path)},
            parser=parser,
            status="done",
        )
        record_verdicts(store, run, [replace(v, run_id=run.id) for v in verdicts])
    return store.run(run.id)


def _step_row(row: dict, item_id: int, item: Item, sample: int, mode: JudgingMode, parser: str) -> VerdictRecord | str:
    """One response's step judgements (a sample of a step run), or why the row is not one:
    ``response`` (index, default 0) and exactly one of ``step_output`` (the judge's text, read by
    ``parser``), ``step_errors`` (VLRMBench's indicators, 1 = the step has an error: a list, or
    its answer text read by VLRMBench's rule) or ``step_scores`` (1–5 per step); ``null`` is a
    judged answer with no reading (unparsed)."""
    n = len(item.responses)
    r = row.get("response", 0)
    if not isinstance(r, int) or isinstance(r, bool) or not 0 <= r < n:
        return f"'response' must be a response index 0–{n - 1}, got {_show(r)}"
    if "order" in row:
        return "a step row names its response with 'response', not 'order'"
    present = [key for key in STEP_KEYS if key in row]
    if len(present) != 1:
        return f"give exactly one of {', '.join(repr(k) for k in STEP_KEYS)}"
    n_steps = len(item.responses[r].steps) or 1
    base = VerdictRecord(
        run_id=0,
        item_id=item_id,
        sample_idx=sample * n + r,  # the step mode's plan: sample j of response r
        order_shown=(r,),
        raw_output=None,
        choice=r,
        scores=None,
        parsed=False,
        rationale=None,
    )
    (key,) = present
    value = row[key]
    if value is None:
        return base
    if key == "step_output":
        if not isinstance(value, str):
            return "'step_output' must be text"
        p = mode.parse(value, item, (r,), parser)
        return replace(base, raw_output=value, scores=p.scores, parsed=p.parsed, rationale=rationale(value, p.span))
    if key == "step_errors" and isinstance(value, str):  # VLRMBench's model_answer, read its way
        flags = vlrmbench_step_errors(value, n_steps)
        if flags is None:
            return replace(base, raw_output=value)
        scores = tuple(float(s) for s in step_flags_to_scores(flags, STEP_SCALE))
        return replace(base, raw_output=value, scores=scores, parsed=True)
    if key == "step_errors":
        if (
            not isinstance(value, list)
            or len(value) != n_steps
            or any(v not in (0, 1) or isinstance(v, bool) for v in value)
        ):
            return (
                f"'step_errors' must hold {n_steps} indicators 0 or 1 (1: the step has an error),"
                " VLRMBench's answer text, or null"
            )
        return replace(base, scores=tuple(float(s) for s in step_flags_to_scores(value, STEP_SCALE)), parsed=True)
    if (
        not isinstance(value, list)
        or len(value) != n_steps
        or not all(_number(s) and 1 <= s <= STEP_SCALE for s in value)
    ):
        return f"'step_scores' must hold {n_steps} numbers from 1 to {STEP_SCALE}, one per step, or null"
    return replace(base, scores=tuple(float(s) for s in value), parsed=True)


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"
