"""Writing an export folder safely: temporary names, fsync, a journal of what was made.

Every file is written to a temporary name (``.pairscope-tmp-<hex>``), fsynced and renamed
into place (:mod:`pairscope.app.durable`); the folders it lands in are fsynced before the
manifest is written. Each folder, temporary file and new file is noted in
``.pairscope-export-journal`` before it is made, so
a failed export removes exactly what it made (:meth:`Output.undo`) and the next export into
the folder sweeps what a killed one left (:func:`sweep`). Failures to write become one
:class:`ExportError` with a clear message (a full disk, a read-only folder).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..durable import (
    TMP_NAME,
    AtomicWriter,
    Made,
    copy_file,
    file_sha256,
    fsync_dir,
    is_disk_full,
    is_read_only,
    remove_made,
    store_content,
)
from ..formats.media_refs import check_file, inside
from ..records import Item, MediaRef
from .export_formats import ExportedMedia

MANIFEST = "manifest.json"
MEDIA_DIR = "media"
JOURNAL = ".pairscope-export-journal"
_SUFFIX_RE = re.compile(r"\.[a-z0-9]{1,8}")


class ExportError(OSError):
    """The export could not be written (a full disk, a read-only folder ...); what it had
    written was removed. ``errno`` is the cause's; the cause is ``__cause__``."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.errno = code


class WriteFailed(Exception):
    """An ``OSError`` while writing into the export folder (not while reading a source file,
    which only costs that file). Deliberately not an ``OSError``."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


@contextmanager
def writing() -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise WriteFailed(exc) from exc


def export_error(exc: OSError, out_dir: Path) -> ExportError:
    """One clear message for a failure to write the export."""
    why = exc.strerror or str(exc)
    if is_disk_full(exc):
        message = (
            f"the disk is full ({why}): the export to {out_dir} stopped and what it had written was"
            " removed; free some space and export again"
        )
    elif is_read_only(exc):
        folder = out_dir if out_dir.exists() else next((p for p in out_dir.parents if p.exists()), out_dir)
        message = f"cannot write the export to {out_dir}: the folder {folder} is read-only or not writable ({why})"
    else:
        message = f"could not write the export to {out_dir} ({exc}); what it had written was removed"
    return ExportError(message, exc.errno)


class Output(Made):
    """What this export creates in ``out_dir``: each folder, temporary file and new file is
    noted in the journal before it is made, so a failure removes exactly that (:meth:`undo`)
    and the next export sweeps what a killed one left (:func:`sweep`)."""

    def __init__(self, out_dir: Path, created_root: bool) -> None:
        super().__init__()
        self.out_dir = out_dir
        self.created_root = created_root
        self._journal = open(out_dir / JOURNAL, "a", encoding="utf-8")  # noqa: SIM115 (closed by finish/undo)
        self.note("d", out_dir)

    def note(self, kind: str, path: Path) -> None:
        super().note(kind, path)
        self._journal.write(json.dumps([kind, path.relative_to(self.out_dir).as_posix()]) + "\n")
        self._journal.flush()  # survives the process being killed (not a power cut: nothing to sweep then)

    def sync(self) -> None:
        """fsync every folder files were renamed into, then the export folder itself."""
        super().sync()
        fsync_dir(self.out_dir)

    def finish(self) -> None:
        """The manifest is in place: the journal goes (a crash before this is harmless, see sweep)."""
        self._journal.close()
        (self.out_dir / JOURNAL).unlink(missing_ok=True)
        fsync_dir(self.out_dir)

    def undo(self) -> None:
        """Remove everything this export made, newest first; never raises."""
        with contextlib.suppress(OSError):
            self._journal.close()
        remove_made(self.made)
        with contextlib.suppress(OSError):
            (self.out_dir / JOURNAL).unlink(missing_ok=True)
        if self.created_root:
            with contextlib.suppress(OSError):
                self.out_dir.rmdir()  # only when empty: nothing of the user's is ever removed


def sweep(out_dir: Path) -> None:
    """Remove what a killed export left in ``out_dir`` (named in its journal), and the
    temporary files of an interrupted export of an earlier version."""
    journal = out_dir / JOURNAL
    if journal.is_file():
        if not (out_dir / MANIFEST).exists():  # a manifest: that export finished, its files stay
            made = []
            for line in journal.read_text("utf-8", errors="replace").splitlines():
                try:
                    kind, rel = json.loads(line)
                except (ValueError, TypeError):
                    continue  # a line cut short by the kill
                target = inside(out_dir, rel) if isinstance(rel, str) and rel != "." else None
                if kind in ("d", "t", "f") and target is not None and target != out_dir:
                    made.append((kind, target))
            remove_made(made)
        journal.unlink()
    for folder in (out_dir, out_dir / MEDIA_DIR):
        if folder.is_dir():
            for leftover in folder.iterdir():
                if TMP_NAME.fullmatch(leftover.name) and leftover.is_file():
                    leftover.unlink()


def prepare_folder(out_dir: Path, force: bool) -> Output:
    """Check (and create) the output folder; return the record of what this export makes.

    What a killed export left there is swept first (:func:`sweep`). With ``force`` a
    non-empty folder is written into: same-named files are replaced and a previous manifest
    is removed first (the folder must not look like a finished export while this one runs).
    Nothing else is deleted: media there may be a project's own files.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise FileExistsError(f"export target {out_dir} exists and is not a folder")
    try:
        if out_dir.is_dir():
            sweep(out_dir)
    except OSError as exc:
        raise export_error(exc, out_dir) from exc
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:
        raise FileExistsError(
            f"export folder {out_dir} is not empty; choose a new or empty folder, "
            "or write into it anyway (pairscope export --force)"
        )
    created = not out_dir.exists()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        if not os.access(out_dir, os.W_OK):
            raise PermissionError(errno.EACCES, "the folder cannot be written", str(out_dir))
        (out_dir / MANIFEST).unlink(missing_ok=True)
        return Output(out_dir, created)
    except OSError as exc:
        if created:
            with contextlib.suppress(OSError):
                out_dir.rmdir()
        raise export_error(exc, out_dir) from exc


def dump_row(row: dict[str, Any]) -> bytes:
    """One JSONL line (UTF-8; a lone surrogate is escaped rather than written as invalid UTF-8)."""
    try:
        return (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(row) + "\n").encode("ascii")


class JsonlRows:
    """A format's rows as one JSONL file (``out_dir/name``), written atomically
    (:class:`~pairscope.app.curation.export_formats.RowSink`)."""

    def __init__(self, out_dir: Path, name: str, made: Made) -> None:
        self.name = name
        self.writer = AtomicWriter(out_dir / name, made)

    def write(self, row: dict[str, Any]) -> None:
        self.writer.write(dump_row(row))

    def commit(self) -> dict[str, dict[str, Any]]:
        return {self.name: self.writer.commit()}

    def discard(self) -> None:
        self.writer.discard()

    def finish(self, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {}


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    return suffix if _SUFFIX_RE.fullmatch(suffix) else ""


MEDIA_CHOICES = ("copy", "reference")
_MAX_EXAMPLES = 20


def _import_reason(problem: str | None) -> str:
    """Why the import found no usable file, in words without machine paths."""
    text = problem or ""
    if "leaves the media root" in text:
        return "outside the media root (refused when imported)"
    if not text or "not found" in text:
        return "not found when imported"
    return "refused when imported (not a usable file)"


class MediaCopier:
    """Names each media file of the exported rows and, with ``mode="copy"``, copies it into
    ``out_dir/media/<sha256><suffix>`` (each distinct file once); with ``keep_paths``, under
    the dataset's own relative path when it stays inside ``out_dir`` (VL-RewardBench's
    scripts read the subset from ``images/<subset>/…``). ``mode="reference"`` copies nothing:
    rows name the dataset's references. A missing file keeps its reference in the row and is
    counted (:meth:`record`), never warned per item. Only files whose header says they are an
    image or a video of their kind are used."""

    def __init__(
        self,
        out_dir: Path,
        project_dir: Path,
        keep_paths: bool = False,
        output: Output | None = None,
        mode: str = "copy",
    ):
        self.out_dir = Path(os.path.abspath(out_dir))  # a relative --out works like an absolute one
        self.dir = self.out_dir / MEDIA_DIR
        self.project_dir = project_dir
        self.keep_paths = keep_paths
        self.output = output
        self.mode = mode
        self.files: dict[str, dict[str, Any]] = {}
        self._by_source: dict[str, tuple[str, str | None]] = {}
        self._reserved: set[str] = set()  # dataset paths of missing files: a copy never takes them
        self.missing = 0
        self.items_missing = 0
        self.missing_by_reason: Counter[str] = Counter()
        self.missing_examples: list[dict[str, str]] = []

    def item_media(self, item: Item) -> tuple[ExportedMedia, ...]:
        """The item's media as its row names them; missing ones are counted with the item."""
        media = tuple(self.copy(m) for m in item.media)
        gone = [m for m in media if m.source is None]
        self.items_missing += bool(gone)
        for m in gone:
            self.missing += 1
            self.missing_by_reason[m.problem or "missing"] += 1
            if len(self.missing_examples) < _MAX_EXAMPLES:
                self.missing_examples.append({"id": item.ext_id, "ref": m.ref, "reason": m.problem or "missing"})
        return media

    def copy(self, ref: MediaRef) -> ExportedMedia:
        if ref.path is None:
            return self._missing(ref, _import_reason(ref.problem))
        source = Path(ref.path)
        if not source.is_absolute():  # stored relative to the project's folder
            source = self.project_dir / source
        key = os.path.abspath(source)
        if key not in self._by_source:
            why = check_file(source, ref.kind)
            if why is not None:
                return self._missing(ref, "no longer on disk" if why == "not found" else why)
            if self.mode == "reference":
                self._by_source[key] = ("", None)
            else:
                try:
                    self._by_source[key] = self._copy(source, self._kept(ref.ref))
                except OSError as exc:  # reading the source; writing the export raises WriteFailed
                    return self._missing(ref, f"could not be read ({exc.strerror or type(exc).__name__})")
        rel, digest = self._by_source[key]
        return ExportedMedia(ref.kind, ref.ref, rel or ref.ref, digest, None, key)

    def _missing(self, ref: MediaRef, why: str) -> ExportedMedia:
        """A file the export does not have: the row keeps the dataset's reference."""
        kept = self._kept(ref.ref) if self.mode == "copy" else None
        if kept is not None:
            self._reserved.add(kept)
        return ExportedMedia(ref.kind, ref.ref, ref.ref, None, f"{ref.kind} {why}")

    def record(self) -> dict[str, Any]:
        """The manifest's ``media``: the choice, how rows name files, the copies, the missing."""
        paths = (
            "relative to the export folder (VL-RewardBench: images_dir is the export folder);"
            " a missing file keeps the dataset's own path"
            if self.mode == "copy"
            else "the dataset's own paths, as imported: relative to the folder its media were under"
            " (VL-RewardBench: images_dir); no file was copied"
        )
        missing = {
            "files": self.missing,
            "items": self.items_missing,
            "by_reason": dict(self.missing_by_reason.most_common()),
            "examples": self.missing_examples,
        }
        return {"mode": self.mode, "paths": paths, "copied_files": len(self.files), "missing": missing}

    def summary(self) -> str:
        """One line for the CLI and the dialog: the choice, the copies, the missing (counted once)."""
        if self.mode == "copy":
            n = len(self.files)
            text = f"media: copied {n:,} file{'s' if n != 1 else ''} into the export folder (--media copy)"
        else:
            text = "media: not copied (--media reference): rows name the dataset's own paths"
        if self.missing:
            reasons = ", ".join(f"{why}: {n:,}" for why, n in self.missing_by_reason.most_common(3))
            text += (
                f"; {self.missing:,} media files missing on {self.items_missing:,} items ({reasons});"
                " their rows keep the dataset's paths (manifest.json lists examples)"
            )
        return text

    def _kept(self, ref: str) -> str | None:
        """The dataset's relative path to write a file under, or ``None`` (content-addressed)."""
        if not self.keep_paths:
            return None
        target = inside(self.out_dir, ref)
        if target is None or target.parent == self.out_dir:
            return None  # outside, or beside the JSONL and the manifest
        rel = target.relative_to(self.out_dir).as_posix()
        taken = rel in self.files or rel in self._reserved
        return None if taken or rel.split("/")[0] == MEDIA_DIR else rel

    def _copy(self, source: Path, kept: str | None = None) -> tuple[str, str | None]:
        digest = file_sha256(source)  # a source that cannot be read costs that file only
        with writing():
            if kept is not None:
                target = self.out_dir / kept
                copy_file(source, target, self.output, expect=digest)
            else:  # the same bytes under another source path (or there already): one file
                target, _, _ = store_content(source, self.dir, _suffix(source), made=self.output, digest=digest)
            rel = target.relative_to(self.out_dir).as_posix()
            if rel not in self.files:
                self.files[rel] = {"sha256": digest, "bytes": target.stat().st_size}
        return rel, digest


__all__ = [
    "JOURNAL",
    "MANIFEST",
    "MEDIA_CHOICES",
    "MEDIA_DIR",
    "AtomicWriter",
    "ExportError",
    "JsonlRows",
    "MediaCopier",
    "Output",
    "WriteFailed",
    "dump_row",
    "export_error",
    "prepare_folder",
    "sweep",
    "writing",
]
