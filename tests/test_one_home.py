"""One home each: durable files (app/durable.py), the store's own exceptions (app/store/errors.py),
the outcomes that make a label count (app/records.py) and opening a project (app/project.py).

The first half reads the source of app/ and says where each concept lives; a copy written
anywhere else fails. The second half checks the behaviour of that one home."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import sqlite3
from pathlib import Path

import pytest

from pairscope.app.durable import AtomicWriter, Made, fsync_dir, is_disk_full, is_read_only, store_content
from pairscope.app.labeling.pending import save_failure
from pairscope.app.project import NewProject, open_project
from pairscope.app.records import LABELED_OUTCOMES, STATED_OUTCOMES, Item, Label, Response
from pairscope.app.store import (
    DiskFullError,
    ReadOnlyError,
    Store,
    StoreBusy,
    StoreConflict,
    StoreCorrupt,
    StoreError,
    StoreIOError,
)

APP = Path(__file__).resolve().parents[1] / "app"
# Applied migrations are frozen history: what they state may not follow today's vocabulary.
FROZEN = APP / "store" / "migrations"


def sources() -> dict[str, list[str]]:
    """Every module of app/ (migrations left out), as lines, by path relative to app/."""
    return {
        p.relative_to(APP).as_posix(): p.read_text(encoding="utf-8").splitlines()
        for p in sorted(APP.rglob("*.py"))
        if FROZEN not in p.parents
    }


def where(pattern: str) -> set[str]:
    """The modules of app/ with a line matching ``pattern`` (comments and docstrings count too)."""
    found = re.compile(pattern)
    return {name for name, lines in sources().items() if any(found.search(line) for line in lines)}


def lines_matching(pattern: str) -> set[tuple[str, str]]:
    found = re.compile(pattern)
    return {(name, line.strip()) for name, lines in sources().items() for line in lines if found.search(line)}


# -- where each concept lives ----------------------------------------------------------------------


def test_folders_are_opened_and_files_renamed_into_place_only_in_durable():
    assert where(r"\bos\.open\(") == {"durable.py"}  # a folder is opened only to fsync it
    assert where(r"\bos\.replace\(|\.rename\(") == {"durable.py"}
    assert where(r"def \w*fsync\w*\(") == {"durable.py"}


def test_a_full_disk_is_recognised_only_in_durable_and_sqlite_full_only_at_the_store_edge():
    assert lines_matching(r"errno\.E(NOSPC|DQUOT)\b") == {
        ("durable.py", "FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})"),
        ("store/errors.py", "self.errno = errno.ENOSPC"),  # the store's DiskFullError says it is ENOSPC
    }
    assert where(r"""["']SQLITE_FULL["']""") == {"store/errors.py"}
    assert where(r"""["'][^"']*disk is full[^"']*["']\s+in\b""") == set()  # never by parsing a message


def test_content_addressed_copies_are_named_and_written_in_one_place():
    assert where(r"digest\[:2\]") == {"durable.py"}
    assert where(r"\bshutil\.copyfile\(") <= {"store/connection.py"}  # the read-only private copy, not media


def test_nothing_outside_the_store_imports_sqlite3():
    outside = {name for name in where(r"^\s*(import sqlite3|from sqlite3)") if not name.startswith("store/")}
    assert outside == set()
    assert {name for name in where(r"\bsqlite3\.") if not name.startswith("store/")} == set()


def test_the_outcomes_that_make_a_label_count_are_defined_once():
    listed = r"""["']prefer["'],\s*["']tie["'],\s*["']both_bad["']"""
    assert where(listed) == {"records.py"}  # the Outcome literal and LABELED_OUTCOMES
    assert where(r"^(LABELED_OUTCOMES|STATED_OUTCOMES|DECISIVE|STATED)\s*=") == {"records.py"}
    assert set(STATED_OUTCOMES) == set(LABELED_OUTCOMES) - {"discard"}


def test_a_project_is_opened_only_by_open_project():
    opened = {name for name in where(r"\bStore(\.open|\.create)?\(") if not name.startswith("store/")}
    assert opened == {"project.py"}
    assert where(r"\bensure_item_verdicts\(store\)") == {"project.py", "curation/teamwork.py"}  # after a merge
    assert where(r"\bos\.path\.lexists\(") == {"project.py"}  # "did this call create it?"


# -- durable files ---------------------------------------------------------------------------------


def test_fsync_dir_skips_what_cannot_be_synced_and_raises_what_failed(tmp_path, monkeypatch):
    codes = [errno.EINVAL, errno.EBADF, errno.EIO]  # no folder fsync there (twice), then a failing disk

    def fsync(fd):
        code = codes.pop(0)
        raise OSError(code, os.strerror(code))

    real = os.fsync
    monkeypatch.setattr(os, "fsync", fsync)
    fsync_dir(tmp_path)
    fsync_dir(tmp_path)
    with pytest.raises(OSError) as raised:
        fsync_dir(tmp_path)
    assert raised.value.errno == errno.EIO and codes == []
    monkeypatch.setattr(os, "fsync", real)
    fsync_dir(tmp_path / "no such folder")  # cannot be opened: nothing to sync


def test_an_atomic_write_is_all_there_or_not_there(tmp_path):
    target = tmp_path / "data.jsonl"
    writer = AtomicWriter(target)
    writer.write(b"half")
    assert not target.exists() and [p.name for p in tmp_path.iterdir()] == [writer.tmp.name]
    writer.discard()
    assert list(tmp_path.iterdir()) == []
    made = Made()
    writer = AtomicWriter(target, made)
    writer.write(b"whole\n")
    assert writer.commit() == {"sha256": hashlib.sha256(b"whole\n").hexdigest(), "bytes": 6}
    assert target.read_bytes() == b"whole\n" and [p.name for p in tmp_path.iterdir()] == ["data.jsonl"]
    assert made.made == [("t", writer.tmp), ("f", target)] and made.filled == {tmp_path}


def test_content_is_stored_once_under_its_sha256_and_undo_removes_only_what_was_made(tmp_path):
    media = tmp_path / "media"
    (media / "ke").mkdir(parents=True)
    (media / "ke" / "keep.txt").write_text("the user's")
    source = tmp_path / "a.png"
    source.write_bytes(b"\x89PNG one")
    made = Made()
    path, digest, written = store_content(source, media, ".png", fanout=True, made=made)
    assert written and path == media / digest[:2] / f"{digest}.png" and path.read_bytes() == b"\x89PNG one"
    again = store_content(b"\x89PNG one", media, ".png", fanout=True, made=made)
    assert again == (path, digest, False)
    made.undo()
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "a.png",
        "media",
        "media/ke",
        "media/ke/keep.txt",
    ]


def test_a_source_that_changes_while_it_is_copied_leaves_nothing(tmp_path):
    source = tmp_path / "a.png"
    source.write_bytes(b"\x89PNG now")
    made = Made()
    with pytest.raises(OSError, match="changed while it was copied"):
        store_content(source, tmp_path / "media", ".png", made=made, digest="0" * 64)
    made.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["a.png"]


@pytest.mark.parametrize(
    ("error", "full", "read_only"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), True, False),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), True, False),
        (DiskFullError("the disk is full"), True, False),
        (OSError(errno.EROFS, "Read-only file system"), False, True),
        (OSError(errno.EIO, "Input/output error"), False, False),
        (ValueError("no space left on device"), False, False),  # words are not an errno
    ],
)
def test_what_a_failure_to_write_means(error, full, read_only):
    assert (is_disk_full(error), is_read_only(error)) == (full, read_only)


# -- the store's exceptions ------------------------------------------------------------------------


def pair(ext_id: str) -> Item:
    return Item(ext_id=ext_id, prompt="p", responses=(Response(0, "a"), Response(1, "b")))


@pytest.fixture
def store(tmp_path):
    with Store.create(tmp_path / "p.pairscope") as s:
        s.add_items([pair("a"), pair("b")])
        yield s


class Failing:
    """The store's connection, except that every statement raises ``error``."""

    def __init__(self, conn: sqlite3.Connection, error: sqlite3.Error):
        self._conn, self._error = conn, error

    def execute(self, *args, **kwargs):
        raise self._error

    def __getattr__(self, name):
        return getattr(self._conn, name)


def sqlite_error(kind: type[sqlite3.Error], name: str, message: str) -> sqlite3.Error:
    """An error as SQLite raises it: with its code and its name."""
    error = kind(message)
    error.sqlite_errorcode, error.sqlite_errorname = getattr(sqlite3, name), name
    return error


@pytest.mark.parametrize(
    ("kind", "name", "expected", "reason"),
    [
        (sqlite3.OperationalError, "SQLITE_BUSY", StoreBusy, "busy"),
        (sqlite3.OperationalError, "SQLITE_LOCKED", StoreBusy, "busy"),
        (sqlite3.OperationalError, "SQLITE_FULL", DiskFullError, "disk_full"),
        (sqlite3.OperationalError, "SQLITE_READONLY", ReadOnlyError, "read_only"),
        (sqlite3.OperationalError, "SQLITE_IOERR_WRITE", StoreIOError, "io"),
        (sqlite3.DatabaseError, "SQLITE_CORRUPT", StoreCorrupt, "error"),
        (sqlite3.IntegrityError, "SQLITE_CONSTRAINT_UNIQUE", StoreConflict, None),
        (sqlite3.OperationalError, "SQLITE_ERROR", StoreError, "error"),
    ],
)
def test_sqlite_errors_leave_the_store_as_its_own_and_say_why_a_save_failed(store, kind, name, expected, reason):
    error = sqlite_error(kind, name, "what SQLite said")
    store.conn = Failing(store.conn, error)
    with pytest.raises(expected) as read:  # a read, outside any transaction
        store.item_count()
    with pytest.raises(expected) as written:  # a write, through transaction()
        store.set_meta("k", "v")
    for raised in (read.value, written.value):
        assert type(raised) is expected and raised.__cause__ is error and str(store.path) in str(raised)
        assert isinstance(raised, StoreError) and not isinstance(raised, sqlite3.Error)
        failure = save_failure(raised)
        assert (failure.reason if failure else None) == reason


def test_a_misuse_of_sqlite3_is_a_bug_and_stays_one(store):
    store.conn = Failing(store.conn, sqlite3.ProgrammingError("Incorrect number of bindings supplied"))
    with pytest.raises(sqlite3.ProgrammingError):
        store.item_count()


def test_a_label_stored_twice_is_a_conflict_the_store_names(store):
    label = Label(store.item_id("a"), "ann", "tie", uuid="u-1", created_at="2025-01-01T00:00:00.000000+00:00")
    store.add_label(label)
    with pytest.raises(StoreConflict, match="refused the change"):
        store.add_label(label)
    assert len(store.label_history(label.item_id, "ann")) == 1


def test_another_process_holding_the_lock_is_store_busy(store, tmp_path):
    from pairscope.app.records import ItemFilter
    from pairscope.app.store.busy import waiting_at_most
    from pairscope.app.store.search import save_filter

    other = sqlite3.connect(store.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with waiting_at_most(store, 0), pytest.raises(StoreBusy, match="busy"):
            store.set_meta("k", "v")  # a method of the store
        with waiting_at_most(store, 0), pytest.raises(StoreBusy, match="busy"):
            save_filter(store, "mine", ItemFilter())  # a function of the store's on its transaction()
    finally:
        other.execute("ROLLBACK")
        other.close()
    store.set_meta("k", "v")
    assert store.meta("k") == "v"


# -- opening, and a first write that failed --------------------------------------------------------


def test_opening_decides_stale_item_verdicts_again_unless_read_only(tmp_path):
    path = tmp_path / "p.pairscope"
    with Store.create(path) as s:
        s.set_meta("judge_items_stale", "1")  # as migration 4 leaves a project with verdicts
    with open_project(path, readonly=True) as s:
        assert s.item_verdicts_stale()  # reading never writes
    with open_project(path) as s:
        assert not s.item_verdicts_stale()


def listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_a_new_project_whose_first_write_fails_leaves_nothing_behind(tmp_path):
    path = tmp_path / "new.pairscope"
    with pytest.raises(RuntimeError), NewProject(path), open_project(path, create=True) as store:
        store.add_items([pair("a")])
        store.media_dir.mkdir()
        (store.media_dir / "x.png").write_bytes(b"\x89PNG")
        raise RuntimeError("the dataset's last row is bad")
    assert listing(tmp_path) == []


def test_an_existing_project_is_never_removed_and_replace_removes_it_first(tmp_path):
    path = tmp_path / "old.pairscope"
    with Store.create(path) as s:
        s.add_items([pair("a")])
    before = listing(tmp_path)
    with pytest.raises(RuntimeError), NewProject(path), open_project(path) as store:
        store.add_items([pair("b")])
        raise RuntimeError("later")
    assert listing(tmp_path) == before
    with open_project(path) as s:
        assert s.item_count() == 2
    replaced = NewProject(path, media=False, replace=True)
    assert replaced.new and not path.exists()


def test_the_vote_conventions_are_listed_once_and_the_mode_names_agree():
    """The conventions' names live in ``records.CONVENTIONS`` (the bottom layer: the CLI, the
    statistics and the window read them there); the judging modes the app registers are the
    modes the prompt templates know."""
    from pairscope.app.judge.modes import MODES
    from pairscope.app.judge.votes import CONVENTIONS as VOTE_CONVENTIONS
    from pairscope.app.records import CONVENTIONS
    from pairscope.models.prompts import MODES as TEMPLATE_MODES

    assert where(r"""\(\s*["']official["'],\s*["']plurality["']\s*\)""") == {"records.py"}
    assert VOTE_CONVENTIONS is CONVENTIONS
    assert tuple(MODES) == TEMPLATE_MODES
