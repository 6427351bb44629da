"""An executor's answers back into the run they were exported from (``batch_requests``).

Output lines are the OpenAI Batch API's (``vllm run-batch`` writes the same):
``{"custom_id", "response": {"status_code", "body"}, "error"}``, joined on ``custom_id`` with
the export's ``manifest.json``. Each answer becomes the samples it stands for exactly as a live
run stores them — the session's own :meth:`~.session.JudgeSession.verdict` parses it (order
shown, seed, raw text, log-probabilities → confidence) — through the one write path,
:func:`~.results.record_verdicts`; a failed request (an ``error``, a status other than 200,
an answer of the wrong shape) is stored as that sample's error, as a live run stores it.

Importing again is idempotent: a sample already stored without error is kept; one stored
as an error is replaced by an answer. A request answered twice (two output files that
overlap) is taken once, an answer before an error. Requests of the export that no file
answers are named as missing (the run stays ``partial``; import the rest later). A line that
cannot be read (not JSON, no ``custom_id``, an id this export never wrote) stops the import
before anything is stored, naming ``file:line``; a last line cut off mid-way (a download that
stopped) is reported and its request counted missing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairscope.models.base import Generation
from pairscope.models.http_bounds import Malformed, Redactor, short
from pairscope.models.openai_answer import Answer, ServerError, error_message

from ..json_guard import JSONProblem, loads_json
from ..records import Item
from ..store import RunRecord, Store, VerdictRecord
from .batch_requests import FORMAT, MANIFEST, BatchPlanner
from .results import clear_failed, record_verdicts
from .session import JudgeConfig, JudgeSession, WorkUnit

MAX_PROBLEMS = 20
CHUNK = 500


class BatchResultsError(Exception):
    """Nothing was imported; the message names every line (``file:line``) or setting at fault."""


@dataclass
class BatchImport:
    """What an import stored: ``samples`` new samples (``failed`` of them errors) from
    ``answered`` requests; ``kept``: samples the run already held; ``duplicates``: lines of a
    request already answered; ``missing``: requests no file answered; ``cut``: lines cut off."""

    run: RunRecord
    answered: int = 0
    samples: int = 0
    failed: int = 0
    kept: int = 0
    duplicates: int = 0
    missing: list[str] = field(default_factory=list)
    cut: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """What the command line says, one line each."""
        out = [
            f"run {self.run.id}: {self.answered} answered requests, {self.samples} samples stored"
            f" ({self.failed} failed), {self.kept} already stored and kept"
            + (f", {self.duplicates} duplicate lines ignored" if self.duplicates else "")
        ]
        out += [f"cut off: {where} (an incomplete last line, skipped)" for where in self.cut]
        if self.missing:
            shown = ", ".join(self.missing[:10]) + (", …" if len(self.missing) > 10 else "")
            out.append(
                f"missing: {len(self.missing)} requests have no answer yet ({shown});"
                " import their output when it comes (importing again keeps what is stored)"
            )
        return out


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of an export folder; :class:`BatchResultsError` when absent or not one."""
    path = Path(directory) / MANIFEST
    try:
        data = loads_json(path.read_bytes())
    except FileNotFoundError:
        raise BatchResultsError(f"{path}: not found (--requests names the folder `--export-requests` wrote)") from None
    except (OSError, JSONProblem) as exc:
        raise BatchResultsError(f"{path}: cannot be read: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BatchResultsError(f"{path}: not a PairScope request manifest (format {FORMAT})")
    requests = data.get("requests")
    for n, entry in enumerate(requests if isinstance(requests, list) else [None]):
        if not _well_formed(entry):
            raise BatchResultsError(f"{path}: request {n + 1} is not as --export-requests wrote it (edited?)")
    return data


def _well_formed(entry: Any) -> bool:
    """A manifest's request: custom_id, item, samples and order as the exporter writes them."""

    def ints(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)

    return (
        isinstance(entry, dict)
        and isinstance(entry.get("custom_id"), str)
        and isinstance(entry.get("item"), int)
        and ints(entry.get("samples"))
        and bool(entry["samples"])
        and ints(entry.get("order"))
        and isinstance(entry.get("media_sent", {}), dict)
    )


def _answer(line: dict[str, Any]) -> Generation:
    """One output line as a generation (text, tokens, log-probabilities, or the error)."""
    error, response = line.get("error"), line.get("response")
    if error:
        if isinstance(error, dict):
            code, message = error.get("code"), error.get("message")
            return Generation("", error=f"batch: {short(code, 80) + ': ' if code else ''}{short(message)}")
        return Generation("", error=f"batch: {short(error)}")
    if not isinstance(response, dict):
        return Generation("", error="batch: the line holds no response")
    status, body = response.get("status_code"), response.get("body")
    if status != 200:
        text = json.dumps(body) if not isinstance(body, str) else body
        return Generation("", error=f"HTTP {status}: {error_message(text.encode(), Redactor(()))}")
    answer = Answer(Redactor(()))
    try:
        answer.completion(body)
        text, tokens_in, tokens_out, logprobs, served = answer.result()
    except (Malformed, ServerError) as exc:
        return Generation("", error=str(exc))
    sent: dict[str, Any] = {"served_by": served} if served else {}
    return Generation(text, tokens_in, tokens_out, media_sent=sent, logprobs=logprobs or None)


def _read_outputs(
    outputs: Sequence[Path], requests: dict[str, dict[str, Any]], report: BatchImport
) -> dict[str, dict[str, Any]]:
    """The answer line of each request answered (an answer before an error), or
    :class:`BatchResultsError` listing every line that cannot be read."""
    chosen: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for path in outputs:
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise BatchResultsError(f"{path}: cannot be read: {exc}") from None
        lines = raw.split(b"\n")
        for number, text in enumerate(lines, 1):
            if not text.strip():
                continue
            where = f"{path}:{number}"
            try:
                line = loads_json(text)
            except JSONProblem as exc:
                if number == len(lines):  # the last line, without its newline: cut off
                    report.cut.append(where)
                else:
                    problems.append(f"{where}: not JSON ({exc})")
                continue
            cid = line.get("custom_id") if isinstance(line, dict) else None
            if not isinstance(line, dict):
                problems.append(f"{where}: not a JSON object")
            elif not isinstance(cid, str):
                problems.append(f"{where}: no custom_id")
            elif cid not in requests:
                problems.append(
                    f"{where}: custom_id {short(cid, 80)} is no request of this export (another --requests?)"
                )
            elif not isinstance(line.get("response"), dict | None) or not isinstance(
                line.get("error"), dict | str | None
            ):
                problems.append(f"{where}: `response` must be an object and `error` an object or null")
            elif cid in chosen:
                report.duplicates += 1
                if chosen[cid].get("_failed") and not _failed(line):
                    chosen[cid] = {**line, "_failed": False}
            else:
                chosen[cid] = {**line, "_failed": _failed(line)}
    if problems:
        more = f"\n… and {len(problems) - MAX_PROBLEMS} more" if len(problems) > MAX_PROBLEMS else ""
        raise BatchResultsError("\n".join(problems[:MAX_PROBLEMS]) + more)
    return chosen


def _failed(line: dict[str, Any]) -> bool:
    response = line.get("response")
    return bool(line.get("error")) or not isinstance(response, dict) or response.get("status_code") != 200


def _session(store: Store, run: RunRecord, manifest: dict[str, Any]) -> JudgeSession:
    """A session on the exported run (no backend: the answers are in)."""
    info = manifest["run"]
    config = JudgeConfig(
        mode=run.mode,
        k=run.k,
        both_orders=run.both_orders,
        frames=run.frames or 8,
        seed=run.seed,
        max_new_tokens=int(info.get("max_new_tokens", run.generation.get("max_new_tokens", 512))),
        temperature=float(info.get("temperature", run.generation.get("temperature", 0.0))),
        parser=run.parser,
    )
    session = JudgeSession(store, BatchPlanner(run.model_path or "batch"), config)
    session.run = run
    return session


def import_batch_results(store: Store, outputs: Sequence[Path], directory: Path) -> BatchImport:
    """Store the answers in ``outputs`` (Batch output JSONL files) to the requests exported
    into ``directory``, in the run they were exported from (see the module doc)."""
    manifest = read_manifest(directory)
    info = manifest.get("run")
    if not isinstance(info, dict):
        raise BatchResultsError(f"{Path(directory) / MANIFEST}: no run recorded")
    try:
        run = store.run(int(info["id"]))
    except (KeyError, TypeError, ValueError):
        raise BatchResultsError(f"run {info.get('id')} of these requests is not in this project") from None
    if run.uuid != info.get("uuid") or run.template_hash != info.get("template_hash"):
        raise BatchResultsError(
            f"run {run.id} of this project is not the run these requests were exported from (another project?)"
        )
    requests = {r["custom_id"]: r for r in manifest["requests"]}
    report = BatchImport(run)
    chosen = _read_outputs(outputs, requests, report)
    session = _session(store, run, manifest)
    stored = store.verdicts(run.id)
    done = {(v.item_id, v.sample_idx) for v in stored if v.error is None}
    items: dict[int, Item] = {}
    verdicts: list[VerdictRecord] = []
    problems: list[str] = []
    for cid, line in chosen.items():
        entry = requests[cid]
        item_id = int(entry["item"])
        if item_id not in items:
            try:
                items[item_id] = store.get_item(item_id)
            except KeyError:
                problems.append(f"{cid}: item {entry.get('ext_id')} is no longer in this project")
                continue
        item = items[item_id]
        order = tuple(entry["order"])
        plan = dict(session.mode.plan(item.ext_id, len(item.responses), run.k, run.both_orders, run.seed))
        if item.ext_id != entry.get("ext_id") or any(plan.get(s) != order for s in entry["samples"]):
            problems.append(f"{cid}: item {entry.get('ext_id')} changed since the export (its plan differs)")
            continue
        gen = _answer(line)
        media = {**entry.get("media_sent", {}), **gen.media_sent}
        seed = entry.get("seed") if session.config.temperature > 0 else None
        gen = Generation(
            gen.text,
            gen.tokens_in,
            gen.tokens_out,
            error=gen.error,
            media_sent=media,
            seed=seed,
            logprobs=gen.logprobs,
        )
        report.answered += 1
        for sample in entry["samples"]:
            if (item_id, sample) in done:
                report.kept += 1
                continue
            verdicts.append(session.verdict(WorkUnit(item, sample, order), gen, None))
    if problems:
        raise BatchResultsError("\n".join(problems[:MAX_PROBLEMS]))
    new = {(v.item_id, v.sample_idx) for v in verdicts}
    replaced = [v for v in stored if v.error is not None and (v.item_id, v.sample_idx) in new]
    if replaced:  # errors an answer now replaces; the other stored errors are stored again as they were
        others = [v for v in stored if v.error is not None and (v.item_id, v.sample_idx) not in new]
        clear_failed(store, run)
        verdicts += others
    for start in range(0, len(verdicts), CHUNK):
        record_verdicts(store, run, verdicts[start : start + CHUNK])
    report.samples = len(new)
    report.failed = sum(1 for v in verdicts if v.error is not None and (v.item_id, v.sample_idx) in new)
    stored_now = store.done_samples(run.id)
    report.missing = [
        cid
        for cid, entry in requests.items()
        if cid not in chosen and not all((int(entry["item"]), s) in stored_now for s in entry["samples"])
    ]
    store.set_run_status(run.id, "partial" if report.missing else "done")
    report.run = store.run(run.id)
    return report


__all__ = ["BatchImport", "BatchResultsError", "import_batch_results", "read_manifest"]
