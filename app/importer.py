"""Import a dataset file into a project: parse, check, write in one transaction.

The file is streamed: rows are parsed, batched and written a batch at a time, so memory
stays flat on large files. A fatal problem anywhere rolls the whole transaction back:
nothing is written. (Parsing on a worker thread or process while writing was measured
and was no faster on two cores: see docs/PERFORMANCE.md.)
"""

from __future__ import annotations

import gc
import hashlib
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from .formats import FormatError, ImportContext, ParsedRow, detect_format, get_format
from .formats.base import DatasetFormat
from .records import ImportProblem, ImportReport
from .store import AddResult, Store
from .store.items import ItemBatch, ItemBatcher

BATCH_SIZE = 2000


@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector during a bulk import.

    An import allocates millions of small containers that all stay alive; each collection
    pass walks the whole growing heap for nothing (measured: the parse ran 1.7–2.5x slower
    with the collector on). Reference counting still frees everything as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def open_source(
    path: str | Path,
    fmt: str | None = None,
    media_root: str | Path | None = None,
    mapping: dict[str, str] | None = None,
    project_media_dir: Path | None = None,
) -> tuple[DatasetFormat, ImportContext]:
    """Pick the format (given or detected) and set up the parse context."""
    path = Path(path)
    if not path.is_file():
        raise FormatError([ImportProblem(str(path), None, "no such file")])
    dataset_format = get_format(fmt) if fmt else detect_format(path)
    ctx = ImportContext(
        path=path,
        media_root=Path(media_root).expanduser() if media_root else None,
        mapping=dict(mapping or {}),
        project_media_dir=project_media_dir,
    )
    return dataset_format, ctx


def unique_rows(rows: Iterator[ParsedRow], path: Path, lines: dict[str, int | None]) -> Iterator[ParsedRow]:
    """Pass rows through, recording each id's line; duplicate ids inside the file are
    fatal (both lines named), reported with the format's own problems at the end."""
    duplicates: list[ImportProblem] = []
    try:
        for row in rows:
            ext_id = row.item.ext_id
            if ext_id in lines:
                duplicates.append(ImportProblem(
                    str(path), row.line, f"duplicate id {ext_id!r} (first at line {lines[ext_id]})", ext_id
                ))
            else:
                lines[ext_id] = row.line
                if not duplicates:
                    yield row
    except FormatError as exc:
        raise FormatError(sorted(exc.problems + duplicates, key=lambda p: (p.line is None, p.line or 0))) from None
    if duplicates:
        raise FormatError(duplicates)


def batches(rows: Iterator[ParsedRow], batcher: ItemBatcher) -> Iterator[ItemBatch]:
    """Group parsed rows into insert batches of ``BATCH_SIZE`` items."""
    chunk = []
    for row in rows:
        chunk.append(row.item)
        if len(chunk) >= BATCH_SIZE:
            yield batcher.batch(chunk)
            chunk = []
    yield batcher.batch(chunk)


def import_file(
    store: Store,
    path: str | Path,
    fmt: str | None = None,
    media_root: str | Path | None = None,
    mapping: dict[str, str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import one dataset file as a single transaction: all of it, or nothing.

    Missing media and id conflicts with items already in the project are reported in
    the returned :class:`ImportReport`, not fatal. Re-importing a file adds nothing.
    ``progress(rows_done)`` is called after each written batch.
    """
    path = Path(path)
    dataset_format, ctx = open_source(path, fmt, media_root, mapping, store.media_dir)
    options = {"media_root": str(ctx.media_root) if ctx.media_root else None, "mapping": ctx.mapping}
    lines: dict[str, int | None] = {}
    result = AddResult()
    try:
        with gc_paused(), store.transaction():
            import_id = store.begin_import(str(path.resolve()), dataset_format.name, file_sha256(path), options)
            rows = unique_rows(dataset_format.parse(ctx), path, lines)
            for batch in batches(rows, store.item_batcher(import_id)):
                store.write_batch(batch)
                result.extend(batch.result)
                if progress is not None:
                    progress(len(lines))
            store.finish_import(import_id, len(result.added), len(result.unchanged))
    except BaseException:
        _remove_written(ctx)
        raise
    report = ImportReport(source=str(path), format=dataset_format.name, problems=list(ctx.problems))
    for ext_id in result.conflicts:
        report.problems.append(ImportProblem(
            str(path), lines.get(ext_id),
            "an item with this id is already in the project with different content; kept the stored one",
            ext_id, fatal=False,
        ))
    report.added = len(result.added)
    report.unchanged = len(result.unchanged)
    report.conflicts = len(result.conflicts)
    report.per_category = dict(Counter(item.category for item in result.added))
    report.missing_media = sum(1 for item in result.added for m in item.media if m.missing)
    return report


def _remove_written(ctx: ImportContext) -> None:
    """Undo media files this import wrote, so a failed import leaves nothing behind."""
    for written in ctx.written_files:
        try:
            written.unlink()
        except OSError:
            pass
