"""Labels not yet saved: kept in memory and in a journal beside the project until they land.

A label write can fail for a reason that passes: another process holds the project's write
lock past the busy timeout (an import), the disk is full, an I/O error, a read-only file.
The label — its uuid and creation time already set, so writing it twice is impossible — is
then kept by :class:`PendingLabels`: in memory, and appended (fsynced) to the journal
``<project>.pending.jsonl``. :meth:`PendingLabels.flush` writes the kept labels in order on
the next save, on a retry, and at the next start (:func:`replay_pending`); a label whose uuid
is already stored is skipped, and the journal is removed once every entry has landed.

A label that can never be stored (its item is not in this project: the journal outlived its
project; its time is not an ISO-8601 time, or is in the future — a flipped byte in ``2026``
would make it the current label for ever) is set aside in ``<project>.pending.rejected.jsonl``
and reported, so it neither blocks the labels behind it nor lands on another item; a label
set aside is never current, not even while pending.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import sys
import time
import weakref
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from ..durable import copy_file, fsync_dir, is_disk_full, is_read_only
from ..json_guard import loads_json
from ..records import ErrorTag, Label
from ..store import ReadOnlyError, Store, StoreBusy, StoreConflict, StoreError, StoreIOError
from ..store.busy import waiting_at_most
from ..store.clock import time_problem

try:  # POSIX: appends and tidying by several processes take turns
    import fcntl
except ImportError:  # pragma: no cover - Windows: one process per project is the norm
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

JOURNAL_SUFFIX = ".pending.jsonl"
REJECTED_SUFFIX = ".pending.rejected.jsonl"
#: How long a journal waits for another process's lock on it (the store's busy timeout).
JOURNAL_WAIT_S = 5.0

#: Why a save did not land, as the banner says it.
REASONS = {
    "busy": "the project is busy (another process is writing)",
    "disk_full": "the disk is full",
    "io": "the disk reported an I/O error",
    "read_only": "the project is read-only",
    "error": "the project could not be written",
}


def journal_path(project: str | Path) -> Path:
    """Where the labels of ``project`` that are not yet stored are kept."""
    project = Path(project)
    return project.with_name(project.name + JOURNAL_SUFFIX)


@dataclass(frozen=True)
class SaveFailure:
    """Why a label was not stored: one of :data:`REASONS`, and the error's own words."""

    reason: str
    detail: str

    @property
    def text(self) -> str:
        return REASONS[self.reason]


def save_failure(exc: BaseException) -> SaveFailure | None:
    """The failure ``exc`` stands for when a label write raised it; ``None`` for an error that
    is no failure to write (a bug, or a label the store refuses: re-raise those)."""
    detail = str(exc)
    if isinstance(exc, ReadOnlyError) or is_read_only(exc):
        return SaveFailure("read_only", detail)
    if isinstance(exc, StoreBusy):
        return SaveFailure("busy", detail)
    if is_disk_full(exc):
        return SaveFailure("disk_full", detail)
    if isinstance(exc, (StoreIOError, OSError)):
        return SaveFailure("io", detail)
    if isinstance(exc, StoreConflict):  # a label the project refuses
        return None
    if isinstance(exc, StoreError):  # e.g. a damaged file
        return SaveFailure("error", detail)
    return None


# -- the journal ---------------------------------------------------------------------------


def _to_json(label: Label, ext_id: str | None) -> dict:
    entry = asdict(label)
    entry["ext_id"] = ext_id
    return entry


def _from_json(entry: dict) -> tuple[Label, str | None]:
    label = Label(
        item_id=int(entry["item_id"]),
        annotator=entry["annotator"],
        outcome=entry["outcome"],
        ranking=tuple(entry["ranking"]),
        strength=entry["strength"],
        error_types=tuple(ErrorTag(**e) for e in entry["error_types"]),
        discard_reasons=tuple(entry["discard_reasons"]),
        note=entry["note"],
        display_order=tuple(entry["display_order"]),
        step_marks=tuple((int(p), int(s), bool(c)) for p, s, c in entry["step_marks"]),
        kind=entry["kind"],
        uuid=entry["uuid"],
        created_at=entry["created_at"],
        active_ms=None if entry.get("active_ms") is None else int(entry["active_ms"]),
        ranks=tuple(int(r) for r in entry.get("ranks") or ()),
    )
    if not isinstance(label.uuid, str) or not label.uuid or not label.created_at:
        raise ValueError("a pending label has its uuid and creation time")
    return label, entry.get("ext_id")


class JournalLocked(OSError):
    """Another process held the journal's lock past :data:`JOURNAL_WAIT_S`."""


class UnsavedLabels(Exception):
    """Closing while labels are only in memory (the project and its journal could not be
    written): ``labels`` are lost when the process ends unless stored or saved elsewhere."""

    def __init__(self, pending: PendingLabels):
        self.labels = pending.memory_only()
        self.pending = pending
        super().__init__(
            f"{pending.unsaved_text()} Save them with session.pending.save_to(PATH) (a journal file: put beside"
            f" the project as {pending.journal.path.name}, they are stored at its next start), or retry with"
            " session.close() once the project can be written."
        )


class Journal:
    """An append-only JSONL file of labels, each line written and fsynced before it counts.

    A line cut short by a crash was never acknowledged: reading skips it, and the next entry
    starts on a line of its own.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def exists(self) -> bool:
        return self.path.exists()

    def append(self, label: Label, ext_id: str | None = None) -> None:
        """Add ``label`` durably (``OSError`` when the file cannot be written)."""
        line = json.dumps(_to_json(label, ext_id), ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n"
        created = not self.path.exists()
        with self._locked() as fh:
            size = fh.seek(0, os.SEEK_END)
            if size:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    line = b"\n" + line  # after a torn line
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        if created:
            fsync_dir(self.path.parent)

    def entries(self) -> list[tuple[Label, str | None]]:
        """Every whole entry, oldest first, with the item's dataset id when known."""
        if not self.path.exists():
            return []
        try:
            with self._locked() as fh:
                fh.seek(0)
                data = fh.read()
        except FileNotFoundError:
            return []
        except PermissionError:  # a journal that cannot be written can still be read
            data = self.path.read_bytes()
        out = []
        for number, raw in enumerate(data.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                out.append(_from_json(loads_json(raw)))  # bounded: deep JSON is one unreadable line
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("%s:%d: skipped an unreadable entry (%s)", self.path, number, exc)
        return out

    def read(self) -> list[Label]:
        """Every whole label, oldest first."""
        return [label for label, _ext_id in self.entries()]

    def discard(self, uuids: set[str]) -> None:
        """Drop the entries with these uuids (and unreadable ones); remove the file when empty."""
        if not self.path.exists():
            return
        with self._locked() as fh:
            fh.seek(0)
            keep = []
            for raw in fh.read().splitlines():
                try:
                    uid = loads_json(raw)["uuid"]
                except (ValueError, KeyError, TypeError):
                    continue
                if isinstance(uid, str) and uid not in uuids:
                    keep.append(raw)
            if not keep:
                self.path.unlink()
            else:
                copy_file(b"\n".join(keep) + b"\n", self.path)  # a temporary file, fsynced, renamed
        fsync_dir(self.path.parent)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[IO[bytes]]:
        """The journal opened for appending and reading, held against other processes.

        A file tidied away (replaced or removed) while this one waited is opened afresh. A lock
        held past :data:`JOURNAL_WAIT_S` raises :class:`JournalLocked` (an ``OSError``).
        """
        deadline = time.monotonic() + JOURNAL_WAIT_S
        while True:
            fh = open(self.path, "a+b")  # noqa: SIM115 (closed below, after the lock is used)
            try:
                if fcntl is not None:
                    self._lock(fh, deadline)
                try:
                    same = os.fstat(fh.fileno()).st_ino == os.stat(self.path).st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    yield fh
                    return
            finally:
                fh.close()

    def _lock(self, fh: IO[bytes], deadline: float) -> None:
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise JournalLocked(
                        f"{self.path} is locked by another process (waited {JOURNAL_WAIT_S:g} s): a PairScope"
                        " window or command saving labels there, or a process stuck holding it"
                    ) from None
                time.sleep(0.02)


# -- labels waiting to be stored -----------------------------------------------------------

#: Every PendingLabels alive, for what the process says at exit about labels only in memory.
_LIVE: weakref.WeakSet[PendingLabels] = weakref.WeakSet()


@atexit.register
def _say_what_is_lost() -> None:
    for pending in list(_LIVE):
        if lost := pending.memory_only():
            those = (
                "1 label was never stored and is"
                if len(lost) == 1
                else f"{len(lost):,} labels were never stored and are"
            )
            print(
                f"pairscope: {those} lost: {pending.unsaved_text()}",
                file=sys.stderr,
            )


def _stored(store: Store, label: Label) -> bool:
    return any(row.uuid == label.uuid for row in store.label_history(label.item_id, label.annotator))


class PendingLabels:
    """The labels of one project that are not stored yet, oldest first (memory and journal).

    Shared by every labeling session of a window, so that switching to adjudication keeps
    them. Not thread-safe; use from one thread.
    """

    def __init__(self, project: str | Path):
        project = Path(project)
        self.journal = Journal(journal_path(project))
        self.rejected_journal = Journal(project.with_name(project.name + REJECTED_SUFFIX))
        try:
            entries = self.journal.entries()
        except OSError as exc:
            log.error("could not read %s: %s", self.journal.path, exc)
            entries = []
        self._ext_ids: dict[str, str | None] = {label.uuid or "": ext for label, ext in entries}
        self.labels: list[Label] = []
        untimely: list[tuple[Label, str]] = []
        for label, _ext in entries:
            why = time_problem(label.created_at)
            if why is None:
                self.labels.append(label)
            else:
                untimely.append((label, f"its time {str(label.created_at)[:40]!r} {why}"))
        #: Why the newest attempt failed (``None`` before any failure).
        self.failure: SaveFailure | None = None
        #: Why the journal could not be written: the labels are then only in memory.
        self.journal_error: str | None = None
        self._memory_only: set[str] = set()  # uuids of pending labels the journal could not take
        _LIVE.add(self)
        #: Labels that can never be stored here, with why (set aside in the rejected journal).
        self.rejected: list[tuple[Label, str]] = []
        for label, why in untimely:
            self._reject(label, why)
        if untimely:
            with contextlib.suppress(OSError):
                self.journal.discard({label.uuid for label, _why in untimely if label.uuid})
        if not entries and self.journal.exists():
            with contextlib.suppress(OSError):
                self.journal.discard(set())  # only torn or unreadable lines: nothing to keep

    def __len__(self) -> int:
        return len(self.labels)

    def keep(self, label: Label, failure: SaveFailure | None = None, ext_id: str | None = None) -> None:
        """Keep ``label`` (uuid and creation time set) behind the others, in memory and in
        the journal; ``failure`` is why it was not stored (``None``: queued behind others)."""
        if not label.uuid or not label.created_at:
            raise ValueError("a pending label needs its uuid and creation time")
        self.labels.append(label)
        self._ext_ids[label.uuid] = ext_id
        if failure is not None:
            self.failure = failure
        try:
            self.journal.append(label, ext_id)
        except OSError as exc:
            self.journal_error = str(exc)
            self._memory_only.add(label.uuid)
            log.error("label %s kept in memory only: %s: %s", label.uuid, self.journal.path, exc)

    def memory_only(self) -> list[Label]:
        """The pending labels the journal could not take: lost when this process ends unless
        stored, or saved with :meth:`save_to`."""
        return [label for label in self.labels if label.uuid in self._memory_only]

    def save_to(self, path: str | Path) -> int:
        """Write every pending label to a journal file at ``path`` (durably, replacing it);
        put beside the project as ``<project>.pending.jsonl``, its labels are stored at the
        next start. Returns how many were written."""
        lines = [
            json.dumps(_to_json(label, self._ext_ids.get(label.uuid or "")), ensure_ascii=False, sort_keys=True)
            for label in self.labels
        ]
        copy_file("".join(line + "\n" for line in lines).encode("utf-8"), Path(path))
        self._memory_only.clear()  # they are on disk now, where the user chose
        return len(lines)

    def forget_memory_only(self) -> None:
        """The user chose to lose the labels only in memory: nothing more is said about them."""
        self._memory_only.clear()

    def unsaved_text(self) -> str:
        """What closing says about the labels only in memory; ``""`` when there are none."""
        n = len(self.memory_only())
        if not n:
            return ""
        why = self.failure.text if self.failure is not None else "the project could not be written"
        those = "1 label is" if n == 1 else f"{n:,} labels are"
        return (
            f"{those} only in memory: {why}, and the journal {self.journal.path} could not be written either"
            f" ({self.journal_error})."
        )

    def latest(self, item_id: int, annotator: str, kind: str) -> Label | None:
        """The newest pending label of the item by ``annotator`` (``cleared`` included)."""
        for label in reversed(self.labels):
            if label.item_id == item_id and label.annotator == annotator and label.kind == kind:
                return label
        return None

    def by_item(self, annotator: str, kind: str) -> dict[int, Label]:
        """The newest pending label per item by ``annotator``."""
        return {label.item_id: label for label in self.labels if label.annotator == annotator and label.kind == kind}

    def flush(self, store: Store, wait_ms: int | None = None) -> list[Label]:
        """Store the pending labels in order, each one once; stop at the first that fails
        (it stays, and :attr:`failure` says why). ``wait_ms`` bounds each wait for another
        process's write lock. Returns the labels that are stored now."""
        if not self.labels:
            return []
        landed: list[Label] = []
        waiting = waiting_at_most(store, wait_ms) if wait_ms is not None else contextlib.nullcontext()
        with waiting:
            for label in list(self.labels):
                try:
                    problem = self._misplaced(store, label)
                    if problem is None:
                        if not _stored(store, label):
                            store.add_label(label)
                        landed.append(label)
                    else:
                        self._reject(label, problem)
                except (ValueError, KeyError) as exc:  # a label this project refuses
                    self._reject(label, str(exc))
                except Exception as exc:
                    if isinstance(exc, StoreConflict) and _stored(store, label):
                        landed.append(label)  # another process replayed it just now
                        continue
                    failure = save_failure(exc)
                    if failure is None:
                        raise
                    self.failure = failure
                    break
        done = {label.uuid for label in landed}
        done |= {label.uuid for label, _why in self.rejected}
        self.labels = [label for label in self.labels if label.uuid not in done]
        self._memory_only &= {label.uuid for label in self.labels if label.uuid}
        if not self.labels:
            self.failure = self.journal_error = None
        try:
            self.journal.discard({u for u in done if u})
        except OSError as exc:  # the entries left are stored: a later replay skips them
            log.warning("could not tidy %s: %s", self.journal.path, exc)
        return landed

    def _misplaced(self, store: Store, label: Label) -> str | None:
        """Why the label does not belong to this project's item, or ``None``."""
        ext_id = self._ext_ids.get(label.uuid or "")
        if ext_id is not None and store.item_id(ext_id) != label.item_id:
            return f"item {ext_id} (id {label.item_id}) is not in this project"
        return None

    def _reject(self, label: Label, why: str) -> None:
        log.error("label %s set aside in %s: %s", label.uuid, self.rejected_journal.path, why)
        self.rejected.append((label, why))
        with contextlib.suppress(OSError):
            self.rejected_journal.append(label, self._ext_ids.get(label.uuid or ""))

    def message(self) -> str:
        """What the window's banner says; ``""`` when there is nothing to say."""
        parts = []
        if self.labels:
            n = len(self.labels)
            why = self.failure.text if self.failure is not None else "kept from an earlier session"
            text = f"{n} label{'s' if n != 1 else ''} not yet saved — {why}; retrying…"
            if self.journal_error:
                text += f" They are only in memory (the journal could not be written: {self.journal_error})."
            parts.append(text)
        if self.rejected:
            n = len(self.rejected)
            parts.append(
                f"{n} earlier label{'s' if n != 1 else ''} could not be stored ({self.rejected[-1][1]}); "
                f"set aside in {self.rejected_journal.path.name}."
            )
        return "  ".join(parts)


def replay_pending(store: Store, wait_ms: int | None = None) -> int:
    """Store what the project's journal holds (a start after a crash); returns how many
    labels were written now (those already stored are skipped)."""
    pending = PendingLabels(store.path)
    if not len(pending):
        return 0
    before = {label.uuid for label in pending.labels if _stored(store, label)}
    return len([label for label in pending.flush(store, wait_ms) if label.uuid not in before])


def unstored_note(store: Store) -> str | None:
    """What a command that reads ``store`` says when the project's journal holds labels not
    stored yet (what it reads leaves them out); ``None`` when there are none. Writes nothing."""
    path = journal_path(store.path)
    if not path.exists():
        return None
    try:
        n = sum(1 for label, _ext in Journal(path).entries() if not _stored(store, label))
    except OSError as exc:
        return f"{path} could not be read ({exc}); labels kept there are left out"
    if not n:
        return None
    those = "1 label is" if n == 1 else f"{n} labels are"
    return (
        f"{those} not saved in the project yet (kept in {path}) and left out here; opening the project"
        " in PairScope, or pairscope pack, saves them"
    )


__all__ = [
    "JOURNAL_SUFFIX",
    "JOURNAL_WAIT_S",
    "REASONS",
    "Journal",
    "JournalLocked",
    "PendingLabels",
    "SaveFailure",
    "UnsavedLabels",
    "journal_path",
    "replay_pending",
    "save_failure",
    "unstored_note",
]
