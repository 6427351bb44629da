"""Import a dataset file into a project: parse, check, write in one transaction."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

from .formats import FormatError, ImportContext, ParsedRow, detect_format, get_format
from .records import ImportProblem, ImportReport
from .store import Store


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def parse_file(
    path: str | Path,
    fmt: str | None = None,
    media_root: str | Path | None = None,
    mapping: dict[str, str] | None = None,
    project_media_dir: Path | None = None,
) -> tuple[str, list[ParsedRow], ImportContext]:
    """Parse a file without touching any project; raises :class:`FormatError`.

    Duplicate ids inside the file are fatal (both lines are named).
    """
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
    try:
        rows = dataset_format.parse(ctx)
    except BaseException:
        _remove_written(ctx)
        raise
    first_seen: dict[str, int | None] = {}
    duplicates = []
    for row in rows:
        ext_id = row.item.ext_id
        if ext_id in first_seen:
            duplicates.append(ImportProblem(
                str(path), row.line, f"duplicate id {ext_id!r} (first at line {first_seen[ext_id]})", ext_id
            ))
        else:
            first_seen[ext_id] = row.line
    if duplicates:
        _remove_written(ctx)
        raise FormatError(duplicates)
    return dataset_format.name, rows, ctx


def import_file(
    store: Store,
    path: str | Path,
    fmt: str | None = None,
    media_root: str | Path | None = None,
    mapping: dict[str, str] | None = None,
) -> ImportReport:
    """Import one dataset file as a single transaction: all of it, or nothing.

    Missing media and id conflicts with items already in the project are reported in
    the returned :class:`ImportReport`, not fatal. Re-importing a file adds nothing.
    """
    path = Path(path)
    name, rows, ctx = parse_file(path, fmt, media_root, mapping, store.media_dir)
    report = ImportReport(source=str(path), format=name, problems=list(ctx.problems))
    options = {"media_root": str(ctx.media_root) if ctx.media_root else None, "mapping": ctx.mapping}
    try:
        with store.transaction():
            import_id = store.begin_import(str(path.resolve()), name, file_sha256(path), options)
            result = store.add_items([r.item for r in rows], import_id)
            store.finish_import(import_id, len(result.added), len(result.unchanged))
    except BaseException:
        _remove_written(ctx)
        raise
    lines = {r.item.ext_id: r.line for r in rows}
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
