"""What the command line prints about a project: an import's report, how a project was
opened, and ``pairscope info`` (current labels apart from the label history, judge runs,
missing media)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..project import open_project

if TYPE_CHECKING:
    from ..records import ImportReport
    from ..store import Store


def print_import_report(report: ImportReport, db: Path) -> None:
    """An import's counts on stdout; its warnings and missing media, summarised, on stderr."""
    from ..formats.messages import shown, shown_path, summarise
    from ..importer import describe_missing

    out, err = sys.stdout, sys.stderr
    print(
        f"{shown_path(report.source)} ({report.format}): {report.added} added, {report.unchanged} unchanged,"
        f" {report.conflicts} conflicting",
        file=out,
    )
    for category, count in sorted(report.per_category.items())[:50]:
        print(f"  {shown(category)}: {count}", file=out)
    if len(report.per_category) > 50:
        print(f"  … and {len(report.per_category) - 50:,} more categories", file=out)
    if report.identical_duplicates:
        print(f"  {report.identical_duplicates} identical duplicates skipped", file=out)
    if report.renamed:
        renamed = ", ".join(f"{shown(new)} ({shown(old)})" for new, old in report.renamed[:5])
        more = f" and {len(report.renamed) - 5} more" if len(report.renamed) > 5 else ""
        n = len(report.renamed)
        print(
            f"  {n} item{'s share' if n != 1 else ' shares'} a dataset id with another item, shown as"
            f" id#N: {renamed}{more}",
            file=out,
        )
    if report.missing_media:
        print(f"  missing media: {report.missing_media}", file=out)
    for line in summarise(report.problems):  # "… and 9,997 more like this"
        print(f"warning: {line}", file=err)
    missing = describe_missing(report, db)
    if missing:
        print(f"warning: {missing}", file=err)


def say_notes(store: Store) -> None:
    """Tell a reading command's user how the project was opened (read-only media, a private
    copy …) and about labels kept in its journal that are not stored yet."""
    from ..labeling.pending import unstored_note

    if store.note:
        print(f"note: {store.note}", file=sys.stderr)
    if unsaved := unstored_note(store):
        print(f"warning: {unsaved}", file=sys.stderr)


def run_info(args: Any) -> int:
    """Print the counts: ``labels`` are the current ones (each annotator's newest, not cleared,
    what ``pairscope.open(p).labels()`` returns), ``label history rows`` every row ever given."""
    from ..judge.runs import run_choices

    with open_project(args.db, readonly=True) as store:
        say_notes(store)
        info = store.info()
        current = store.current_label_counts()
        missing = store.missing_media()
        runs = run_choices(store)
    if args.json:
        data = asdict(info)
        data["labels"], data["adjudications"] = current["label"], current["adjudication"]
        data["label_history_rows"] = info.labels
        data["runs"] = [run.as_dict() for run in runs]
        data["missing_media_items"] = [{"item": i, "ref": r, "problem": p} for i, r, p in missing]
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    print(f"project: {args.db}")
    print(
        f"items: {info.items}  responses: {info.responses}  labels: {current['label']}"
        f"  adjudications: {current['adjudication']}  annotators: {info.annotators}  judge runs: {info.judge_runs}"
    )
    print(f"label history rows: {info.labels} (every label ever given, changed and cleared ones included)")
    for category, count in info.categories.items():
        print(f"  {category}: {count}")
    if runs:
        print("judge runs (stats --run N, the window's run picker):")
    for run in runs:
        print(f"  {run.label()}")
    print(f"missing media: {info.missing_media}")
    shown = missing if args.missing else missing[:20]
    for item, ref, problem in shown:
        print(f"  item {item}: {ref}: {problem}")
    if len(missing) > len(shown):
        print(f"  … and {len(missing) - len(shown)} more (pairscope info --db {args.db} --missing lists all)")
    return 0
