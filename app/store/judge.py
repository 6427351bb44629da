"""Judge runs and their verdicts."""

from __future__ import annotations

import json
import uuid as uuidlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..records import ITEM_VERDICT_RULE
from .connection import StoreBase, dumps, inserted_id, loads, utc_now


@dataclass(frozen=True)
class RunRecord:
    """A judge run: everything needed to reproduce it."""

    id: int
    uuid: str
    created_at: str
    backend: str
    model_path: str
    weights_hash: str | None
    template_name: str | None
    template_text: str
    template_hash: str
    mode: str
    k: int
    both_orders: bool
    frames: int | None
    seed: int
    generation: dict[str, Any]
    status: str
    parser: str = "lenient"
    derived_from: int | None = None


@dataclass(frozen=True)
class VerdictRecord:
    """One judge sample on one item. ``choice`` is a response index (never a position);
    ``order_shown`` is the response order the judge saw."""

    run_id: int
    item_id: int
    sample_idx: int
    order_shown: tuple[int, ...]
    raw_output: str | None
    choice: int | None
    scores: tuple[float | None, ...] | None
    parsed: bool
    rationale: str | None
    tokens_in: int | None = None
    tokens_out: int | None = None
    latency_s: float | None = None
    error: str | None = None
    media_sent: dict[str, Any] | None = None
    created_at: str | None = None
    #: Per generated token ``{"token", "logprob", "top": [{"token", "logprob"}, ...]}``, where
    #: the backend returned log-probabilities (an OpenAI-compatible server that supports them).
    logprobs: list[dict[str, Any]] | None = None
    #: The probability the judge gave its parsed verdict (None: not available).
    confidence: float | None = None


_RUN_COLUMNS = (
    "id, uuid, created_at, backend, model_path, weights_hash, template_name, template_text, template_hash,"
    " mode, k, both_orders, frames, seed, generation, status, parser, derived_from"
)
_VERDICT_COLUMNS = (
    "run_id, item_id, sample_idx, order_shown, raw_output, choice, scores, parsed, rationale, tokens_in,"
    " tokens_out, latency_s, error, media_sent, created_at, logprobs, confidence"
)


def _run(row: Sequence[Any]) -> RunRecord:
    values = list(row)
    values[11] = bool(values[11])
    values[14] = json.loads(values[14])
    return RunRecord(*values)


def _verdict(row: Sequence[Any]) -> VerdictRecord:
    (run_id, item_id, sample, order, raw, choice, scores, parsed, rationale, t_in, t_out, lat, err, media, at) = row[
        :15
    ]
    logprobs, confidence = (row[15], row[16]) if len(row) > 15 else (None, None)
    return VerdictRecord(
        run_id,
        item_id,
        sample,
        tuple(loads(order)),
        raw,
        choice,
        tuple(loads(scores)) if scores else None,
        bool(parsed),
        rationale,
        t_in,
        t_out,
        lat,
        err,
        loads(media) if media else None,
        at,
        loads(logprobs) if logprobs else None,
        confidence,
    )


class JudgeMixin(StoreBase):
    """Judge-run storage. Mixed into :class:`pairscope.app.store.Store`."""

    def create_run(
        self,
        *,
        backend: str,
        model_path: str,
        weights_hash: str | None,
        template_name: str | None,
        template_text: str,
        template_hash: str,
        mode: str,
        k: int,
        both_orders: bool,
        frames: int | None,
        seed: int,
        generation: dict[str, Any],
        parser: str = "lenient",
        derived_from: int | None = None,
        status: str = "running",
    ) -> RunRecord:
        """Record a new run (status ``running`` unless told otherwise)."""
        with self.transaction() as conn:
            cur = conn.execute(
                f"INSERT INTO judge_runs ({_RUN_COLUMNS.split(', ', 1)[1]}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    str(uuidlib.uuid4()),
                    utc_now(),
                    backend,
                    model_path,
                    weights_hash,
                    template_name,
                    template_text,
                    template_hash,
                    mode,
                    k,
                    int(both_orders),
                    frames,
                    seed,
                    dumps(generation),
                    status,
                    parser,
                    derived_from,
                ),
            )
            run_id = inserted_id(cur)
        return self.run(run_id)

    def run(self, run_id: int) -> RunRecord:
        rows = self.query(f"SELECT {_RUN_COLUMNS} FROM judge_runs WHERE id = ?", (run_id,))
        if not rows:
            raise KeyError(f"no judge run {run_id}")
        return _run(rows[0])

    def runs(self) -> list[RunRecord]:
        return [_run(r) for r in self.query(f"SELECT {_RUN_COLUMNS} FROM judge_runs ORDER BY id")]

    def set_run_status(self, run_id: int, status: str) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE judge_runs SET status = ? WHERE id = ?", (status, run_id))

    def add_verdicts(self, verdicts: Sequence[VerdictRecord]) -> None:
        """Store a batch of verdicts in one transaction (a sample already stored is kept)."""
        now = utc_now()
        rows = [
            (
                v.run_id,
                v.item_id,
                v.sample_idx,
                json.dumps(list(v.order_shown)),
                v.raw_output,
                v.choice,
                json.dumps(list(v.scores)) if v.scores is not None else None,
                int(v.parsed),
                v.rationale,
                v.tokens_in,
                v.tokens_out,
                v.latency_s,
                v.error,
                dumps(v.media_sent) if v.media_sent else None,
                v.created_at or now,
                dumps(v.logprobs) if v.logprobs else None,
                v.confidence,
            )
            for v in verdicts
        ]
        with self.transaction() as conn:
            conn.executemany(
                f"INSERT OR IGNORE INTO verdicts ({_VERDICT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows
            )

    def done_samples(self, run_id: int) -> set[tuple[int, int]]:
        """``(item_id, sample_idx)`` already judged without error in a run (resume skips them)."""
        return set(self.query("SELECT item_id, sample_idx FROM verdicts WHERE run_id = ? AND error IS NULL", (run_id,)))

    def verdicts(self, run_id: int | None = None, item_id: int | None = None) -> list[VerdictRecord]:
        """Verdicts of a run and/or an item, in run, item and sample order."""
        clauses, params = [], []
        if run_id is not None:
            clauses.append("run_id = ?")
            params.append(run_id)
        if item_id is not None:
            clauses.append("item_id = ?")
            params.append(item_id)
        where = " WHERE " + " AND ".join(clauses) if clauses else ""
        sql = f"SELECT {_VERDICT_COLUMNS} FROM verdicts{where} ORDER BY run_id, item_id, sample_idx"
        rows = self.query(sql, params)
        return [_verdict(r) for r in rows]

    def clear_failed(self, run_id: int) -> list[int]:
        """Drop errored samples of a run so a resume retries them; returns the items touched
        (whose item verdicts the caller refreshes)."""
        with self.transaction() as conn:
            items = [
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT item_id FROM verdicts WHERE run_id = ? AND error IS NOT NULL", (run_id,)
                )
            ]
            conn.execute("DELETE FROM verdicts WHERE run_id = ? AND error IS NOT NULL", (run_id,))
        return items

    # -- item verdicts (decided by app.judge, stored here for the filters) -------------------

    def put_item_verdicts(self, run_id: int, rows: Sequence[tuple]) -> None:
        """Replace the ``judge_items`` rows of these items: ``(item_id, choice, verdict,
        plurality_choice, plurality_verdict, inconsistent, unparsed, failed, confidence)``; an
        item whose row is ``None`` after the item id (no votes) loses its row."""
        with self.transaction() as conn:
            conn.executemany("DELETE FROM judge_items WHERE run_id = ? AND item_id = ?", [(run_id, r[0]) for r in rows])
            conn.executemany(
                "INSERT INTO judge_items (run_id, item_id, choice, verdict, plurality_choice,"
                " plurality_verdict, inconsistent, unparsed, failed, confidence) VALUES (?,?,?,?,?,?,?,?,?,?)",
                [(run_id, *r) for r in rows if r[1:] and r[2] is not None],
            )

    def item_verdict_rows(self, run_id: int) -> dict[int, tuple]:
        """The stored ``judge_items`` rows of a run by item id (see ``put_item_verdicts``)."""
        rows = self.query(
            "SELECT item_id, choice, verdict, plurality_choice, plurality_verdict, inconsistent,"
            " unparsed, failed, confidence FROM judge_items WHERE run_id = ?",
            (run_id,),
        )
        return {r[0]: tuple(r) for r in rows}

    def item_verdicts_stale(self) -> bool:
        """Whether ``judge_items`` needs a rebuild: it predates the judge layer's vote (schema 4,
        or a merge), or its verdicts were decided under an older vote rule than
        :data:`~..records.ITEM_VERDICT_RULE` (``meta.judge_items_rule``)."""
        if self.meta("judge_items_stale") == "1":
            return True
        return self.meta("judge_items_rule") != str(ITEM_VERDICT_RULE) and self.has_verdicts()

    def has_verdicts(self) -> bool:
        """Whether any judge sample is stored."""
        return bool(self.query("SELECT 1 FROM verdicts LIMIT 1"))

    def mark_item_verdicts_fresh(self) -> None:
        """Record that ``judge_items`` was decided under the current vote rule."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM meta WHERE key = 'judge_items_stale'")
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('judge_items_rule', ?)"
                " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(ITEM_VERDICT_RULE),),
            )

    def items_n_responses(self, item_ids: Sequence[int] | None = None) -> dict[int, int]:
        """Responses per item (all items, or these)."""
        if item_ids is None:
            return dict(self.query("SELECT id, n_responses FROM items"))
        ids = list(item_ids)
        out: dict[int, int] = {}
        for start in range(0, len(ids), 900):
            chunk = ids[start : start + 900]
            out.update(
                self.query(f"SELECT id, n_responses FROM items WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            )
        return out

    def ref_chosen(self, item_ids: Sequence[int] | None = None) -> dict[int, int | None]:
        """The dataset's preferred response per item (``None``: no reference)."""
        if item_ids is None:
            return dict(self.query("SELECT id, ref_chosen FROM items"))
        ids = list(item_ids)
        out: dict[int, int | None] = {}
        for start in range(0, len(ids), 900):
            chunk = ids[start : start + 900]
            out.update(
                self.query(f"SELECT id, ref_chosen FROM items WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            )
        return out
