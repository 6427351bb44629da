"""A project as pandas tables, for notebooks: ``pairscope.open(path)`` (docs/RESEARCH_API.md).

Read-only: the project is opened with ``open_project(readonly=True)``, so a notebook beside a
running annotation window never writes, locks or upgrades the file. Every query goes through
the store's methods (all SQL lives in ``app/store``); pandas is imported here, never by the
window, the labeling or the other commands.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from .labeling.pending import unstored_note
from .project import open_project
from .records import CONVENTIONS, Label
from .store import Store

#: The tables ``pairscope stats --csv DIR`` writes (DIR/<name>.csv).
CSV_TABLES = (
    "items",
    "labels",
    "label_history",
    "runs",
    "verdicts",
    "item_verdicts",
    "judges",
    "judge_categories",
    "annotator_accuracy",
    "agreement",
)

_ITEM_VERDICT_COLUMNS = (
    "choice",
    "verdict",
    "plurality_choice",
    "plurality_verdict",
    "inconsistent",
    "unparsed",
    "failed",
    "confidence",
)


class Project:
    """One ``.pairscope`` file, read-only. Use as a context manager or call :meth:`close`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"no project file {self.path}")
        self.store = open_project(self.path, readonly=True)
        #: Why the project opened the way it did (a private copy of a project with changes
        #: in its -wal, read-only media ...); empty when there is nothing to say.
        self.note = self.store.note or ""
        #: Labels a failed save left in the project's journal, which these tables leave out
        #: (empty when there are none); also issued as a warning.
        self.unsaved = unstored_note(self.store) or ""
        if self.unsaved:
            warnings.warn(self.unsaved, stacklevel=2)

    @classmethod
    def of_store(cls, store: Store) -> Project:
        """A view of a store that is already open (the caller closes it)."""
        project = cls.__new__(cls)
        project.path, project.store, project.note = Path(store.path), store, store.note or ""
        project.unsaved = unstored_note(store) or ""
        return project

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        info, labels = self.store.info(), self.store.current_label_counts()["label"]  # current, as `info`
        return f"<pairscope.Project {self.path.name}: {info.items} items, {labels} labels, {info.judge_runs} runs>"

    # -- tables ----------------------------------------------------------------------------

    def items(self, full: bool = False) -> pd.DataFrame:
        """One row per item, indexed by ``item_id``: dataset id, category, subset, media kind,
        number of responses, the reference's preferred response (``ref_chosen``; <NA> where
        the dataset has none) and missing media. ``full=True`` adds the whole prompt and one
        ``response_<i>`` column per response (loads every item: slower on large projects)."""
        store = self.store
        summaries = store.item_summaries(0, max(store.item_count(), 1))
        chosen = store.ref_chosen()
        rows = []
        for s in summaries:
            row: dict[str, Any] = {
                "item_id": s.id,
                "ext_id": s.ext_id,
                "category": s.category,
                "subset": s.subset,
                "media_kind": s.media_kind,
                "n_responses": s.n_responses,
                "ref_chosen": chosen.get(s.id),
                "missing_media": s.missing_media,
                "prompt_preview": s.prompt_preview,
            }
            if full:
                item = store.get_item(s.id)
                row["prompt"] = item.prompt
                for response in item.responses:
                    row[f"response_{response.index}"] = response.text
            rows.append(row)
        frame = _frame(rows, ["item_id", "ext_id", "category", "subset", "media_kind", "n_responses", "ref_chosen"])
        frame["ref_chosen"] = frame["ref_chosen"].astype("Int64")
        return frame.set_index("item_id")

    def labels(self, current: bool = True, kind: str | None = "label") -> pd.DataFrame:
        """Annotators' labels, one row each. ``current=True``: each annotator's current label
        per item (cleared ones left out); ``current=False``: every label row ever given, oldest
        first, cleared ones included (the undo history). ``kind``: ``"label"``,
        ``"adjudication"`` or ``None`` for both. ``preferred`` is the chosen response's index
        (a response index, never a screen position), <NA> for a tie, both bad or discard.
        ``error_notes`` is aligned with ``error_types``: each type's note (an "other" error
        type's text), ``None`` where it has none (``explode(["error_types", "error_notes"])``)."""
        kinds = ("label", "adjudication") if kind is None else (kind,)
        labels: list[Label] = []
        if current:
            for annotator in self.store.annotators():
                for k in kinds:
                    labels.extend(self.store.current_labels(annotator, kind=k).values())
            labels.sort(key=lambda label: (label.item_id, label.annotator, label.kind))
        else:
            for item_id in self.store.items_n_responses():
                labels.extend(label for label in self.store.label_history(item_id) if label.kind in kinds)
        ext = self._ext_ids()
        frame = _frame([_label_row(label, ext) for label in labels], list(_label_row(None, ext)))
        frame["preferred"] = frame["preferred"].astype("Int64")
        return frame

    def runs(self) -> pd.DataFrame:
        """One row per judge run, indexed by ``run``: backend, model, template, mode, K, both
        orders, seed, generation settings, status, and how many items it has verdicts on."""
        counts = self.store.run_item_counts()
        rows = []
        for run in self.store.runs():
            row = asdict(run)
            row["run"] = row.pop("id")
            row["n_items"] = counts.get(run.id, 0)
            rows.append(row)
        return _frame(
            rows, ["run", "backend", "model_path", "mode", "k", "both_orders", "status", "n_items"]
        ).set_index("run")

    def verdicts(self, run: int | None = None, per_item: bool = False, raw: bool = False) -> pd.DataFrame:
        """Judge verdicts. Per sample (default): one row per (run, item, sample) with the
        order shown, the parsed choice (a response index), scores, parsed/unparsed, rationale,
        tokens, latency and confidence; ``raw=True`` adds the raw output, logprobs and what media
        were sent. ``per_item=True``: the run's vote per item (``run`` required) — the chosen
        response, ``verdict`` against the reference, the plurality vote, inconsistent across
        orders, unparsed and failed samples."""
        ext = self._ext_ids()
        if per_item:
            if run is None:
                raise ValueError("per_item=True needs a run (Project.runs() lists them)")
            vote_rows = [
                {
                    "run": run,
                    "item_id": item_id,
                    "ext_id": ext.get(item_id),
                    **dict(zip(_ITEM_VERDICT_COLUMNS, row[1:])),
                }
                for item_id, row in sorted(self.store.item_verdict_rows(run).items())
            ]
            return _frame(vote_rows, ["run", "item_id", "ext_id", *_ITEM_VERDICT_COLUMNS])
        rows = []
        for verdict in self.store.verdicts(run_id=run):
            row = asdict(verdict)
            row["run"] = row.pop("run_id")
            row["ext_id"] = ext.get(verdict.item_id)
            if not raw:
                for key in ("raw_output", "logprobs", "media_sent"):
                    row.pop(key)
            rows.append(row)
        frame = _frame(rows, ["run", "item_id", "ext_id", "sample_idx", "order_shown", "choice", "parsed"])
        frame["choice"] = frame["choice"].astype("Int64")
        return frame

    def stats(self, run: int | None = None, bootstrap: int = 200) -> dict[str, Any]:
        """Every statistic ``pairscope stats --json`` prints (docs/STATISTICS.md), as a JSON-ready
        dict; :meth:`scores` gives the same judge figures typed."""
        from .stats.report import compute_stats, report_json

        return report_json(compute_stats(self.store, run, bootstrap=bootstrap))

    def report(self, run: int | None = None, bootstrap: int = 200) -> dict[str, Any]:
        """The computed report (``judges`` typed :class:`~pairscope.app.stats.scores.RunScores`):
        what :meth:`tables` and :func:`stat_tables` read."""
        from .stats.report import compute_stats

        return compute_stats(self.store, run, bootstrap=bootstrap)

    def team_report(self) -> pd.DataFrame:
        """The lead's report (``pairscope team-report``, docs/TEAMWORK.md): one row per annotator,
        done of assigned, gold accuracy with its Wilson CI, mean Cohen's kappa, position bias, active
        seconds per item (``seconds_median``, quartiles, ``seconds_n`` timed labels), flags."""
        from .stats.team_report import team_report

        rows = [asdict(r) for r in team_report(self.store)]
        for row in rows:
            ci = row.pop("gold_ci") or [None, None]
            row["gold_ci_low"], row["gold_ci_high"] = ci
        return pd.DataFrame(rows).set_index("annotator") if rows else pd.DataFrame()

    def compare(self, a: int, b: int, convention: str = CONVENTIONS[0], **options: Any) -> dict[str, pd.DataFrame]:
        """Run ``b`` against run ``a`` (``pairscope compare``, docs/STATISTICS.md) as DataFrames:
        ``summary`` (one row: the 2×2 counts, both accuracies, B − A, its paired bootstrap CI,
        McNemar's exact p), ``table`` (the 2×2: rows A right/wrong, columns B right/wrong),
        ``slices`` (per category, source, error type, dataset, with Holm and Šidák p), ``items``
        (every item both runs judged, flips first: each verdict, outcome and ``kind``) and
        ``only`` (items one run judged). ``options``: ``undecided_wrong``, ``resamples``,
        ``seed``, ``level``."""
        from .stats.compare import compare_runs

        c = compare_runs(self.store, int(a), int(b), convention, **options)
        o = c.overall

        def row(q: Any) -> dict[str, Any]:
            low, high = q.ci if q.ci is not None else (None, None)
            return {
                "n": q.n, "both_right": q.both_right, "a_only": q.a_only, "b_only": q.b_only,
                "both_wrong": q.both_wrong, "accuracy_a": q.accuracy_a, "accuracy_b": q.accuracy_b,
                "difference": q.difference, "ci_low": low, "ci_high": high, "mcnemar_p": q.p,
            }  # fmt: skip

        summary = pd.DataFrame([{"run_a": c.a.id, "run_b": c.b.id, "convention": c.convention, **row(o)}])
        table = pd.DataFrame(
            [[o.both_right, o.a_only], [o.b_only, o.both_wrong]],
            index=["A right", "A wrong"],
            columns=["B right", "B wrong"],
        )
        slices = _frame(
            [
                {"kind": s.kind, "value": s.value, **row(s.paired), "p_holm": s.p_holm, "p_sidak": s.p_sidak}
                for s in c.slices
            ],
            ["kind", "value", "n", "difference", "ci_low", "ci_high", "mcnemar_p", "p_holm", "p_sidak"],
        )
        items = _frame(
            [asdict(i) for i in c.items], ["item_id", "ext_id", "reference", "a", "b", "outcome_a", "outcome_b", "kind"]
        )
        for column in ("reference", "a", "b"):
            items[column] = items[column].astype("Int64")
        only = _frame(
            [{"ext_id": e, "judged_by": "a"} for e in c.only_a] + [{"ext_id": e, "judged_by": "b"} for e in c.only_b],
            ["ext_id", "judged_by"],
        )
        return {"summary": summary, "table": table, "slices": slices, "items": items, "only": only}

    def tables(self, report: dict[str, Any] | None = None) -> dict[str, pd.DataFrame]:
        """Every table ``pairscope stats --csv`` writes, by name (see ``CSV_TABLES``)."""
        runs = self.runs()
        per_item = [self.verdicts(int(run), per_item=True) for run in runs.index]
        out = {
            "items": self.items().reset_index(),
            "labels": self.labels(current=True, kind=None),
            "label_history": self.labels(current=False, kind=None),
            "runs": runs.reset_index(),
            "verdicts": self.verdicts(),
            "item_verdicts": pd.concat(per_item, ignore_index=True) if per_item else _frame([], ["run", "item_id"]),
        }
        out.update(stat_tables(self.report() if report is None else report))
        return out

    def write_csv(self, folder: str | os.PathLike[str], report: dict[str, Any] | None = None) -> list[Path]:
        """Write :meth:`tables` as ``folder/<name>.csv`` (lists as JSON text); the paths written."""
        return write_tables(self.tables(report), Path(folder))

    def _ext_ids(self) -> dict[int, str]:
        return {s.id: s.ext_id for s in self.store.item_summaries(0, max(self.store.item_count(), 1))}


def stat_tables(report: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """The judge and agreement parts of a stats report as flat tables: ``judges`` (one row per
    run and vote rule), ``judge_categories`` (per run, vote rule and category),
    ``annotator_accuracy`` (per annotator, with and without ties) and ``agreement`` (one row
    per statistic, with its bootstrap CI)."""
    from .stats.scores_json import judges_of

    judges, categories = [], []
    for run, judge in judges_of(report).items():
        for name, part in judge.conventions.items():
            vote = "official" if name == "vlrewardbench" else name  # the stored name of the official vote
            o = part.overall
            low, high = _ci(o.ci)
            judges.append(
                {
                    "run": int(run),
                    "vote": vote,
                    "decided": o.decided,
                    "correct": o.correct,
                    "unparsed": o.undecided,
                    "overall": o.accuracy,
                    "macro": part.macro,
                    "overall_ci_low": low,
                    "overall_ci_high": high,
                    "overall_unparsed_wrong": o.accuracy_all,
                    "headline": part.headline,
                    "headline_rule": part.headline_rule,
                    "failed_items": judge.failed_items,
                    "position_consistency": judge.position_consistency,
                    "first_position_preference": judge.first_position_preference,
                }
            )
            for category, cell in part.per_category.items():
                low, high = _ci(cell.ci)
                categories.append(
                    {
                        "run": int(run),
                        "vote": vote,
                        "category": category,
                        "n": cell.scored,
                        "accuracy": cell.accuracy,
                        "ci_low": low,
                        "ci_high": high,
                        "unparsed": cell.undecided,
                    }
                )
    annotators = []
    for name, variants in (report.get("annotator_accuracy") or {}).items():
        for variant, cell in variants.items():
            low, high = _ci(cell.get("ci"))
            annotators.append(
                {
                    "annotator": name,
                    "ties": variant,
                    "n": cell.get("n"),
                    "accuracy": cell.get("accuracy"),
                    "ci_low": low,
                    "ci_high": high,
                }
            )
    agreement = report.get("agreement") or {}
    ci = agreement.get("ci") or {}
    rows = []
    for name in ("percent", "cohen_mean", "fleiss", "krippendorff_alpha"):
        low, high = _ci(ci.get(name))
        rows.append({"statistic": name, "pair": "", "value": agreement.get(name), "ci_low": low, "ci_high": high})
    for pair, value in (agreement.get("cohen_pairs") or {}).items():
        low, high = _ci((ci.get("cohen_pairs") or {}).get(pair))
        rows.append({"statistic": "cohen", "pair": pair, "value": value, "ci_low": low, "ci_high": high})
    return {
        "judges": _frame(judges, ["run", "vote", "decided", "correct", "overall", "overall_ci_low", "overall_ci_high"]),
        "judge_categories": _frame(categories, ["run", "vote", "category", "n", "accuracy", "ci_low", "ci_high"]),
        "annotator_accuracy": _frame(annotators, ["annotator", "ties", "n", "accuracy", "ci_low", "ci_high"]),
        "agreement": _frame(rows, ["statistic", "pair", "value", "ci_low", "ci_high"]),
    }


def write_tables(tables: dict[str, pd.DataFrame], folder: Path) -> list[Path]:
    """Each table as ``folder/<name>.csv``; list and dict cells are written as JSON text."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in tables.items():
        out = frame.copy()
        for column in out.columns:
            if out[column].map(lambda v: isinstance(v, list | tuple | dict)).any():
                out[column] = out[column].map(
                    lambda v: json.dumps(v, ensure_ascii=False) if isinstance(v, list | tuple | dict) else v
                )
        path = folder / f"{name}.csv"
        out.to_csv(path, index=False)
        written.append(path)
    return written


def write_stats_csv(store: Store, report: dict[str, Any], folder: Path) -> list[Path]:
    """``pairscope stats --csv DIR``: the tables of an open (read-only) store and its report."""
    return Project.of_store(store).write_csv(folder, report)


def _label_row(label: Label | None, ext: dict[int, str]) -> dict[str, Any]:
    if label is None:  # the column names, for an empty table
        return dict.fromkeys(
            (
                "item_id",
                "ext_id",
                "annotator",
                "kind",
                "outcome",
                "preferred",
                "ranking",
                "ranks",
                "strength",
                "error_types",
                "error_notes",
                "discard_reasons",
                "note",
                "display_order",
                "step_marks",
                "created_at",
                "uuid",
            )
        )
    return {
        "item_id": label.item_id,
        "ext_id": ext.get(label.item_id),
        "annotator": label.annotator,
        "kind": label.kind,
        "outcome": label.outcome,
        "preferred": label.ranking[0] if label.outcome == "prefer" and label.ranking else None,
        "ranking": list(label.ranking),
        "ranks": list(label.ranks),  # one rank per response index, 1 = best, ties shared; [] = none
        "strength": label.strength,
        "error_types": [tag.kind if not tag.subkind else f"{tag.kind}/{tag.subkind}" for tag in label.error_types],
        "error_notes": [tag.note for tag in label.error_types],  # aligned with error_types ("other"'s text)
        "discard_reasons": list(label.discard_reasons),
        "note": label.note,
        "display_order": list(label.display_order),
        "step_marks": [list(mark) for mark in label.step_marks],
        "created_at": label.created_at,
        "uuid": label.uuid,
    }


def _frame(rows: Iterable[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    """A DataFrame of ``rows``, the named ``columns`` first; with no rows, still those columns."""
    rows = list(rows)
    if not rows:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(rows)
    return frame[[c for c in columns if c in frame] + [c for c in frame if c not in columns]]


def _ci(value: Any) -> tuple[float | None, float | None]:
    if isinstance(value, list | tuple) and len(value) == 2:
        return value[0], value[1]
    return None, None
