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
from ..records import MediaRef
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


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    return suffix if _SUFFIX_RE.fullmatch(suffix) else ""


class MediaCopier:
    """Copies media into ``out_dir/media/<sha256><suffix>``, each distinct file once; with
    ``keep_paths``, under the dataset's own relative path when it stays inside ``out_dir``
    (VL-RewardBench's scripts read the subset from ``images/<subset>/…``). Only files whose
    header says they are an image or a video of their kind are copied."""

    def __init__(self, out_dir: Path, project_dir: Path, keep_paths: bool = False, output: Output | None = None):
        self.out_dir = out_dir
        self.dir = out_dir / MEDIA_DIR
        self.project_dir = project_dir
        self.keep_paths = keep_paths
        self.output = output
        self.files: dict[str, dict[str, Any]] = {}
        self._by_source: dict[str, tuple[str, str]] = {}

    def copy(self, ref: MediaRef) -> ExportedMedia:
        if ref.path is None:
            return ExportedMedia(ref.kind, ref.ref, None, None, ref.problem or f"{ref.kind} missing")
        source = Path(ref.path)
        if not source.is_absolute():  # stored relative to the project's folder
            source = self.project_dir / source
        key = os.path.abspath(source)
        if key not in self._by_source:
            why = check_file(source, ref.kind)
            if why == "not found":
                return ExportedMedia(ref.kind, ref.ref, None, None, f"{ref.kind} no longer at {source}")
            if why is not None:
                return ExportedMedia(ref.kind, ref.ref, None, None, f"{ref.kind} {source} {why}; not exported")
            try:
                self._by_source[key] = self._copy(source, self._kept(ref.ref))
            except OSError as exc:  # reading the source; writing the export raises WriteFailed
                return ExportedMedia(ref.kind, ref.ref, None, None, f"could not copy {source}: {exc}")
        rel, digest = self._by_source[key]
        return ExportedMedia(ref.kind, ref.ref, rel, digest, None)

    def _kept(self, ref: str) -> str | None:
        """The dataset's relative path to write a file under, or ``None`` (content-addressed)."""
        if not self.keep_paths:
            return None
        target = inside(self.out_dir, ref)
        if target is None or target.parent == self.out_dir:
            return None  # outside, or beside the JSONL and the manifest
        rel = target.relative_to(self.out_dir).as_posix()
        return None if rel in self.files or rel.split("/")[0] == MEDIA_DIR else rel

    def _copy(self, source: Path, kept: str | None = None) -> tuple[str, str]:
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
    "MEDIA_DIR",
    "AtomicWriter",
    "ExportError",
    "MediaCopier",
    "Output",
    "WriteFailed",
    "dump_row",
    "export_error",
    "prepare_folder",
    "sweep",
    "writing",
]
