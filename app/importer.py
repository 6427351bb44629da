"""Import a dataset file into a project: parse, check, write in one transaction.

The file is streamed: rows are parsed, batched and written a batch at a time, and the report
keeps counts and the first examples, not the items, so memory stays flat on large files
(bench/import_bench.py). The full-text index is filled once, at the end of the transaction.
A fatal problem anywhere rolls the whole transaction back: nothing is written. (Parsing on a
worker thread or process while writing was measured and was no faster on two cores: see docs/PERFORMANCE.md.)
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

from .durable import file_sha256
from .formats import FormatError, ImportContext, ParsedRow, dataset_files, detect_format, get_format
from .formats.base import DatasetFormat
from .formats.messages import problem, shown, shown_path
from .gc_pause import gc_paused
from .records import ImportProblem, ImportReport
from .store import AddResult, Store
from .store.items import ItemBatch, ItemBatcher

BATCH_SIZE = 2000


def source_sha256(path: Path) -> str:
    """A file's sha256; for a folder of shards, the sha256 of its files' names and hashes."""
    if not path.is_dir():
        return file_sha256(path)
    digest = hashlib.sha256()
    for shard in dataset_files(path):
        digest.update(f"{shard.relative_to(path).as_posix()}\0{file_sha256(shard)}\n".encode())
    return digest.hexdigest()


def open_source(
    path: str | Path,
    fmt: str | None = None,
    media_root: str | Path | None = None,
    mapping: dict[str, str] | None = None,
    project_media_dir: Path | None = None,
    allow_outside_media: bool = False,
) -> tuple[DatasetFormat, ImportContext]:
    """Pick the format (given or detected) and set up the parse context."""
    path = Path(path)
    if path.is_dir():
        if not dataset_files(path):
            raise FormatError([problem(path, None, "a folder without Parquet files (data/*.parquet)")])
    elif not path.is_file():
        raise FormatError([problem(path, None, "no such file")])
    dataset_format = get_format(fmt) if fmt else detect_format(path)
    ctx = ImportContext(
        path=path,
        media_root=Path(media_root).expanduser() if media_root else None,
        mapping=dict(mapping or {}),
        project_media_dir=project_media_dir,
        allow_outside_media=allow_outside_media,
    )
    return dataset_format, ctx


def batches(rows: Iterator[ParsedRow], batcher: ItemBatcher) -> Iterator[ItemBatch]:
    """Group parsed rows into insert batches of ``BATCH_SIZE`` items."""
    chunk: list[ParsedRow] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= BATCH_SIZE:
            yield batcher.batch([r.item for r in chunk], [r.line for r in chunk])
            chunk = []
    yield batcher.batch([r.item for r in chunk], [r.line for r in chunk])


def repeat_problems(path: Path, repeats) -> tuple[int, list[ImportProblem]]:
    """Rows that repeat an earlier row's identity: byte-identical ones are counted (imported
    once); one with the same id, prompt and responses but other content is fatal."""
    identical, problems = 0, []
    for line, ext_id, first_line, same in repeats:
        if same:
            identical += 1
        else:
            problems.append(
                problem(
                    path,
                    line,
                    f"repeats line {first_line}'s id, prompt and responses with other content"
                    " (reference, media or fields differ); which one is right?",
                    ext_id,
                )
            )
    return identical, problems


def import_file(
    store: Store,
    path: str | Path,
    fmt: str | None = None,
    media_root: str | Path | None = None,
    mapping: dict[str, str] | None = None,
    progress: Callable[[int], None] | None = None,
    allow_outside_media: bool = False,
) -> ImportReport:
    """Import one dataset file as a single transaction: all of it, or nothing.

    Missing media and conflicts with items already in the project are reported in the
    returned :class:`ImportReport`, not fatal. An id the file repeats with another prompt
    or other responses is a distinct item (display id ``id#2``); a row repeating an earlier
    one byte for byte is imported once. Re-importing a file adds nothing. ``path`` may be a
    folder of Parquet shards.
    ``progress(rows_done)`` is called after each written batch.
    """
    path = Path(path)
    dataset_format, ctx = open_source(path, fmt, media_root, mapping, store.media_dir, allow_outside_media)
    options = {
        "media_root": str(ctx.media_root) if ctx.media_root else None,
        "mapping": ctx.mapping,
        "allow_outside_media": allow_outside_media,
    }
    tally = _Tally(path)
    try:
        with gc_paused(), store.transaction():
            import_id = store.begin_import(str(path.resolve()), dataset_format.name, source_sha256(path), options)
            batcher = store.item_batcher(import_id)
            first_id = batcher.next_id
            for batch in batches(dataset_format.parse(ctx), batcher):
                store.write_batch(batch, index=False)  # indexed all at once below
                tally.add(batch.result)
                if progress is not None:
                    progress(tally.done)
            if tally.fatal:
                raise FormatError(tally.fatal)
            if batcher.next_id > first_id:
                store.index_items(first_id, batcher.next_id - 1)
            store.finish_import(import_id, tally.report.added, tally.report.unchanged)
    except BaseException:
        _remove_written(ctx)
        raise
    report = tally.report
    report.source, report.format = str(path), dataset_format.name
    report.problems = list(ctx.problems) + tally.conflict_problems
    report.per_category = dict(tally.per_category)
    report.missing_prefix = common_folder(tally.missing_refs)
    return report


class _Tally:
    """What an import's report says, added up batch by batch: counts, the first examples and
    the problems, never the items themselves (memory stays flat in the rows)."""

    def __init__(self, path: Path):
        self.path = path
        self.report = ImportReport(source=str(path), format="")
        self.per_category: Counter[str] = Counter()
        self.fatal: list[ImportProblem] = []
        self.conflict_problems: list[ImportProblem] = []
        self.missing_refs: list[str] = []
        self.done = 0

    def add(self, result: AddResult) -> None:
        report = self.report
        report.added += len(result.added)
        report.unchanged += len(result.unchanged)
        report.conflicts += len(result.conflicts)
        self.done += len(result.added) + len(result.unchanged) + len(result.conflicts)
        identical, fatal = repeat_problems(self.path, result.repeats)
        report.identical_duplicates += identical
        self.fatal += fatal
        for ext_id, line in zip(result.conflicts, result.conflict_lines):
            self.conflict_problems.append(
                problem(
                    self.path,
                    line,
                    "this item (same id, prompt and responses) is already in the project with other content"
                    " (reference, media or fields); kept the stored one",
                    ext_id,
                    fatal=False,
                )
            )
        report.renamed += [(item.ext_id, item.source_id) for item in result.added if item.source_id is not None]
        self.per_category.update(item.category for item in result.added)
        _summarise_missing(report, result.added, self.missing_refs)


def _summarise_missing(report: ImportReport, added, refs: list[str]) -> None:
    """Count the items added without a usable media file, keep the first few as examples and
    (in ``refs``, up to 10,000) the references, for the folder every missing one starts with
    (a ``--media-root`` hint)."""
    for item in added:
        if not item.media:
            continue
        missing = [m for m in item.media if m.missing]
        if not missing:
            continue
        report.items_missing_media += 1
        report.missing_media += len(missing)
        if len(report.missing_examples) < 5:
            report.missing_examples.append((item.ext_id, missing[0].ref))
        if len(refs) < 10_000:
            refs += [m.ref for m in missing]


def common_folder(refs: list[str]) -> str | None:
    """The leading folder that every relative reference shares (``images/``), if any."""
    parts = [PurePosixPath(r.replace("\\", "/")).parts[:-1] for r in refs if r and not os.path.isabs(r)]
    if not parts or len(parts) != len(refs):
        return None
    prefix = []
    for column in zip(*parts):
        if len(set(column)) != 1 or column[0] in ("..", "."):
            break
        prefix.append(column[0])
    return "/".join(prefix) + "/" if prefix else None


def describe_missing(report: ImportReport, db: str | Path) -> str | None:
    """One paragraph about the items without media (``None`` when every item has its media)."""
    if not report.items_missing_media:
        return None
    total = report.added
    examples = "; ".join(f"{shown(item)}: {shown_path(ref)}" for item, ref in report.missing_examples)
    text = (
        f"{report.items_missing_media:,} of {total:,} items added have no media file; first "
        f"{len(report.missing_examples)}: {examples}.\n"
        f"  `pairscope info --db {shown_path(db)} --missing` lists them all."
    )
    if report.missing_prefix:
        prefix = shown(report.missing_prefix, keep_end=True)
        text += (
            f"\n  Every missing path starts with '{prefix}': if those files are elsewhere,"
            f" import again with --media-root FOLDER (the folder that holds {prefix})."
        )
    return text


def _remove_written(ctx: ImportContext) -> None:
    """Undo media files this import wrote, so a failed import leaves nothing behind."""
    for written in ctx.written_files:
        try:
            written.unlink()
        except OSError:
            pass
