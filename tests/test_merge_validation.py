"""Merge and pack check every row they copy, write media durably and leave nothing behind.

Inputs are real project files made by ``pack_project`` and then damaged with sqlite3
directly: malformed JSON, wrong shapes, rows naming what the file does not hold, NULL ids,
and values the schema's CHECK constraints forbid (written with ``ignore_check_constraints``
or into a table whose constraint was taken out of the schema, as an edited or foreign file
would hold them).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from helpers import fake_run
from pairscope.app import durable
from pairscope.app import project as project_module
from pairscope.app.cli import main as cli
from pairscope.app.curation import teamwork
from pairscope.app.curation.export import export_project
from pairscope.app.curation.teamwork import InvalidRowsError, TeamworkError, merge_projects, pack_project
from pairscope.app.judge.results import record_verdicts
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import Item, LabelDraft, MediaRef, Reference, Response
from pairscope.app.store import Store, VerdictRecord
from pairscope.app.store.merge import ProjectCopier

# -- building and damaging projects ----------------------------------------------------------


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def png(path: Path, colour) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 6), colour).save(path)
    return str(path.resolve())


def pair(ext_id, media=()) -> Item:
    return Item(
        ext_id=ext_id,
        prompt=f"what is in {ext_id}?",
        media=tuple(media),
        responses=(Response(0, f"{ext_id} first"), Response(1, f"{ext_id} second")),
        reference=Reference(ranking=(0, 1)),
    )


def listing(folder: Path) -> list[str]:
    """Every file and folder under ``folder`` (relative), so that leftovers show."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def main(tmp_path) -> Path:
    """A project of 4 items (two images), bob's label and a collection; closed."""
    data = tmp_path / "data"
    red, blue = png(data / "red.png", "red"), png(data / "blue.png", "blue")
    path = tmp_path / "main" / "main.pairscope"
    with Store.create(path) as store:
        store.add_items(
            [
                pair("a0", [MediaRef("image", "red.png", red)]),
                pair("a1", [MediaRef("image", "blue.png", blue)]),
                pair("a2"),
                pair("a3"),
            ]
        )
        store.add_to_collection("batch", [store.item_id("a0"), store.item_id("a2")])
        LabelingSession(store, "bob").save(store.item_id("a1"), LabelDraft(outcome="both_bad"))
    return path


def make_run(store: Store):
    return fake_run(store)


@pytest.fixture
def pack(main, tmp_path) -> Path:
    """alice's pack of ``main`` with three labels of hers, a judge run and two verdicts."""
    out = tmp_path / "alice" / "alice.pairscope"
    with Store.open(main) as store:
        pack_project(store, out, "alice")
    with Store.open(out) as p:
        session = LabelingSession(p, "alice")
        session.save(p.item_id("a0"), LabelDraft(preferred_position=1, strength="clearly"))
        session.save(p.item_id("a1"), LabelDraft(outcome="tie"))
        session.save(p.item_id("a2"), LabelDraft(outcome="discard", discard_reasons=("both_wrong",)))
        run = make_run(p)
        record_verdicts(
            p,
            run,
            [
                VerdictRecord(run.id, p.item_id("a0"), 0, (1, 0), "[[A]]", 1, None, True, "r"),
                VerdictRecord(run.id, p.item_id("a1"), 0, (0, 1), "[[B]]", 1, None, True, "r"),
            ],
        )
    return out


def damage(path: Path, *statements: str, loosen: tuple[str, ...] = ()) -> None:
    """Run ``statements`` on ``path`` with CHECK constraints off; ``loosen`` tables first lose
    their NOT NULL and CHECK constraints from the schema (as a hand-edited file might)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        for table in loosen:
            (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
            conn.execute("PRAGMA writable_schema = ON")
            conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = ?", (_loosened(sql), table))
            conn.execute("PRAGMA writable_schema = RESET")
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def _loosened(sql: str) -> str:
    out, i = "", 0
    while i < len(sql):
        if sql[i:].upper().startswith("CHECK ("):
            depth, i = 0, i + len("CHECK ")
            while True:
                depth += {"(": 1, ")": -1}.get(sql[i], 0)
                i += 1
                if depth == 0:
                    break
            continue
        out += sql[i]
        i += 1
    return re.sub(r"\s+NOT NULL", "", out)


def new_label(path: Path, item: str = "a3") -> str:
    """The uuid of a fresh label of alice's on ``item`` in ``path``."""
    with Store.open(path) as p:
        label = LabelingSession(p, "alice").save(p.item_id(item), LabelDraft(outcome="both_bad"))
        assert label is not None and label.uuid is not None
        return label.uuid


def refused(out: Path, inputs: list[Path]) -> InvalidRowsError:
    before = sha(out) if out.exists() else None
    folder = out.parent
    files = listing(folder) if folder.exists() else None
    with pytest.raises(InvalidRowsError) as info:
        merge_projects(out, inputs)
    assert (sha(out) if out.exists() else None) == before, "the output changed"
    assert (listing(folder) if folder.exists() else None) == files, "files were left behind"
    return info.value


# -- labels ------------------------------------------------------------------------------------

BAD_LABELS = [
    ("ranking", "'[0,'", "ranking"),  # not JSON
    ("ranking", "'{\"a\": 1}'", "ranking"),  # not a list
    ("ranking", "'[0, 7]'", "ranking"),  # no response 7
    ("ranking", "'[\"0\"]'", "ranking"),  # not an index
    ("error_types", "'[1]'", "error_types"),
    ("error_types", "'nope'", "error_types"),
    ("error_types", "'[{\"kind\": 3}]'", "error_types"),
    ("discard_reasons", "'[1, 2]'", "discard_reasons"),
    ("display_order", "'\"01\"'", "display_order"),
    ("display_order", "'[0, 0]'", "display_order"),
    ("step_marks", "'[[0]]'", "step_marks"),
    ("step_marks", "'{}'", "step_marks"),
    ("step_marks", "'[[0, 1, \"yes\"]]'", "step_marks"),
    ("outcome", "'bogus'", "outcome"),  # CHECK
    ("kind", "'other'", "kind"),  # CHECK
    ("preferred", "1", "preferred"),  # a 'both_bad' label prefers nothing
    ("created_at", "42", "created_at"),  # a time is text
    ("note", "NULL", "note"),  # NOT NULL (schema loosened)
    ("active_ms", "-5", "active_ms"),  # CHECK: an active time is >= 0 (migration 9)
    ("active_ms", "'soon'", "active_ms"),  # an active time is a whole number
]


@pytest.mark.parametrize("column, value, named", BAD_LABELS)
def test_a_malformed_label_refuses_the_whole_input(main, pack, column, value, named):
    uuid = new_label(pack)
    damage(pack, f"UPDATE labels SET {column} = {value} WHERE uuid = '{uuid}'", loosen=("labels",))
    error = refused(main, [pack])
    assert len(error.problems) == 1, error.problems
    line = error.problems[0]
    assert re.match(rf"{re.escape(str(pack))}: labels row \d+ \(uuid {uuid}\): ", line), line
    assert named in line
    assert "nothing was merged" in str(error)
    # What the merge refused cannot break the team project's export.
    with Store.open(main, readonly=True) as store:
        assert export_project(store, main.parent / "export", "jsonl").n_items > 0


def test_a_label_that_passed_used_to_break_export(main, pack, tmp_path):
    """The defect as a user saw it: a malformed ranking merged, then ``export`` failed."""
    uuid = new_label(pack, "a0")
    damage(pack, f"UPDATE labels SET kind = 'adjudication', outcome = 'prefer', ranking = '[0,' WHERE uuid = '{uuid}'")
    with pytest.raises(InvalidRowsError, match="ranking"):
        merge_projects(main, [pack])
    with Store.open(main, readonly=True) as store:
        export_project(store, tmp_path / "out", "jsonl")


@pytest.mark.parametrize(
    "statement, problem",
    [
        ("UPDATE labels SET item_id = 999 WHERE uuid = '{uuid}'", "item 999"),
        ("UPDATE labels SET annotator_id = 999 WHERE uuid = '{uuid}'", "annotator 999"),
        ("UPDATE labels SET item_id = NULL WHERE uuid = '{uuid}'", "item_id"),
        ("UPDATE labels SET annotator_id = NULL WHERE uuid = '{uuid}'", "annotator_id"),
        ("UPDATE labels SET uuid = NULL WHERE uuid = '{uuid}'", "uuid"),
    ],
)
def test_a_label_naming_what_the_input_lacks_is_refused(main, pack, statement, problem):
    uuid = new_label(pack)
    damage(pack, statement.format(uuid=uuid), loosen=("labels",))
    error = refused(main, [pack])
    assert len(error.problems) == 1 and "labels row" in error.problems[0] and problem in error.problems[0]


# -- judge runs, verdicts, items and the rest ---------------------------------------------------


@pytest.mark.parametrize(
    "statement, loosen, where, problem",
    [
        ("UPDATE verdicts SET run_id = 99 WHERE sample_idx = 0 AND rowid = 1", (), "verdicts row 1", "judge run 99"),
        ("UPDATE verdicts SET item_id = 999 WHERE rowid = 1", (), "verdicts row 1", "item 999"),
        ("UPDATE verdicts SET item_id = NULL WHERE rowid = 1", ("verdicts",), "verdicts row 1", "item_id"),
        ("UPDATE verdicts SET order_shown = '[1,' WHERE rowid = 2", (), "verdicts row 2", "order_shown"),
        ("UPDATE verdicts SET order_shown = '[5, 0]' WHERE rowid = 2", (), "verdicts row 2", "order_shown"),
        ("UPDATE verdicts SET choice = 4 WHERE rowid = 2", (), "verdicts row 2", "choice"),
        ("UPDATE verdicts SET scores = '{\"a\": 1}' WHERE rowid = 2", (), "verdicts row 2", "scores"),
        ("UPDATE verdicts SET media_sent = '[1' WHERE rowid = 2", (), "verdicts row 2", "media_sent"),
        ("UPDATE judge_runs SET generation = 'x'", (), "judge_runs row 1", "generation"),
        ("UPDATE judge_runs SET mode = 'psychic'", (), "judge_runs row 1", "mode"),
        ("UPDATE judge_runs SET uuid = NULL", ("judge_runs",), "judge_runs row 1", "uuid"),
        ("UPDATE judge_runs SET derived_from = 7", (), "judge_runs row 1", "judge run 7"),
        ("UPDATE items SET media_kind = 'audio' WHERE ext_id = 'a2'", (), "items row 3 (ext_id a2)", "media_kind"),
        ("UPDATE items SET extra = '[1' WHERE ext_id = 'a2'", (), "items row 3 (ext_id a2)", "extra"),
        ("UPDATE items SET ref_ranking = '[0, 9]' WHERE ext_id = 'a2'", (), "items row 3 (ext_id a2)", "ref_ranking"),
        ("UPDATE items SET ref_ranks = '[1, 0]' WHERE ext_id = 'a2'", (), "items row 3 (ext_id a2)", "ref_ranks"),
        ("UPDATE items SET ref_ranks = '[1, 3]' WHERE ext_id = 'a2'", (), "items row 3 (ext_id a2)", "dense"),
        ("UPDATE items SET ref_ranks = '[1, 2, 2]' WHERE ext_id = 'a2'", (), "items row 3 (ext_id a2)", "3 ranks"),
        ("UPDATE items SET ref_ranks = '[2, 1]' WHERE ext_id = 'a2'", (), "items row 3 (ext_id a2)", "order [1, 0]"),
        ("UPDATE items SET n_responses = 3 WHERE ext_id = 'a2'", (), "items row 3 (ext_id a2)", "n_responses"),
        ("UPDATE items SET identity = NULL WHERE ext_id = 'a2'", (), "items row 3 (ext_id a2)", "identity"),
        ("UPDATE media SET kind = 'audio' WHERE idx = 0 AND item_id = 1", (), "media row 1", "kind"),
        ("UPDATE responses SET item_id = 77 WHERE item_id = 4 AND idx = 1", (), "responses row", "item 77"),
        ("UPDATE annotators SET name = ''", (), "annotators row 1", "name"),
        ("UPDATE collection_items SET collection_id = 9", (), "collection_items row 1", "collection 9"),
        (
            "INSERT INTO display_orders VALUES (1, 1, '[0, 1, 2]')",
            (),
            "display_orders row 1",
            "display_order",
        ),
    ],
)
def test_any_bad_row_refuses_the_merge_into_a_fresh_project(main, pack, tmp_path, statement, loosen, where, problem):
    damage(pack, statement, loosen=loosen)
    error = refused(tmp_path / "fresh" / "team.pairscope", [pack])
    assert not (tmp_path / "fresh").exists()
    assert any(where in line and problem in line for line in error.problems), error.problems
    assert all(line.startswith(f"{pack}: ") for line in error.problems)


def test_a_reference_ranking_with_ties_is_merged(main, pack, tmp_path):
    damage(pack, "UPDATE items SET ref_ranks = '[1, 1]', ref_ranking = NULL, ref_chosen = NULL WHERE ext_id = 'a2'")
    damage(pack, "UPDATE items SET ref_ranks = '[1, 2]' WHERE ext_id = 'a3'")
    out = tmp_path / "fresh" / "team.pairscope"
    merge_projects(out, [pack])
    with Store.open(out, readonly=True) as store:
        tied = store.get_item(store.item_id("a2")).reference
        assert (tied.ranks, tied.ranking) == ((1, 1), None)
        assert store.get_item(store.item_id("a3")).reference.ranks == (1, 2)


def test_the_problem_list_is_bounded(main, pack):
    damage(
        pack,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 25)"
        " INSERT INTO labels (uuid, item_id, annotator_id, created_at, outcome, ranking)"
        " SELECT 'bad-' || i, 1, 1, '2024-01-01T00:00:00+00:00', 'tie', 'oops' FROM n",
    )
    error = refused(main, [pack])
    assert len(error.problems) == 25 and error.refused == {str(pack): 25}
    lines = str(error).splitlines()
    assert sum(1 for line in lines if line.startswith(f"{pack}: labels row")) == 20
    assert lines[-1] == "… and 5 more"


def test_every_input_is_checked_before_anything_is_written(main, pack, tmp_path):
    good = tmp_path / "bob.pairscope"
    with Store.open(main) as store:
        pack_project(store, good, "bob")
    new_label(good)
    damage(pack, "UPDATE labels SET ranking = 'x' WHERE rowid = 1")
    error = refused(main, [good, pack])
    assert [line.split(":")[0] for line in error.problems] == [str(pack)]


def test_pack_checks_the_rows_it_copies(main, tmp_path):
    damage(
        main, "UPDATE labels SET ranking = '[0,' WHERE annotator_id = (SELECT id FROM annotators WHERE name = 'bob')"
    )
    folder = tmp_path / "packs"
    with Store.open(main) as store:
        with pytest.raises(InvalidRowsError, match=r"labels row 1 \(uuid .*\): .*ranking") as info:
            pack_project(store, folder / "bob.pairscope", "bob")
        assert "nothing was packed" in str(info.value)
        assert not folder.exists()
        # alice's pack copies none of bob's rows: nothing of it is wrong
        assert pack_project(store, folder / "alice.pairscope", "alice").items == 4


# -- counts -------------------------------------------------------------------------------------


def test_counts_tell_merged_from_already_there(main, pack, tmp_path):
    fresh = tmp_path / "team.pairscope"
    first = merge_projects(fresh, [pack]).inputs[0]
    assert (first.labels_added, first.labels_present) == (3, 0)
    assert (first.verdicts_added, first.verdicts_present) == (2, 0)
    assert (first.collection_items_added, first.collection_items_present) == (2, 0)
    again = merge_projects(fresh, [pack]).inputs[0]
    assert (again.labels_added, again.labels_present) == (0, 3)
    assert (again.verdicts_added, again.verdicts_present) == (0, 2)
    assert (again.collection_items_added, again.collection_items_present) == (0, 2)
    assert not again.changed


# -- durability ------------------------------------------------------------------------------------


def inode(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


@pytest.fixture
def trace(monkeypatch):
    """Records ``("fsync", (device, inode))`` for every os.fsync and ``("COMMIT", db)`` for
    every commit of a project teamwork opens."""
    events: list[tuple[str, object]] = []
    real_fsync = os.fsync

    def fsync(fd):
        events.append(("fsync", inode(os.fstat(fd))))
        real_fsync(fd)

    class Traced(Store):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            name = str(self.path.resolve())
            self.conn.set_trace_callback(
                lambda sql: events.append(("COMMIT", name)) if sql.strip().upper() == "COMMIT" else None
            )

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(project_module, "Store", Traced)  # the one opening function's
    return events


def assert_synced_before_commit(events, project: Path) -> None:
    media_dir = project.with_name(project.stem + "_media")
    files = [p for p in media_dir.rglob("*") if p.is_file()]
    assert len(files) == 2
    commit = max(i for i, e in enumerate(events) if e == ("COMMIT", str(project.resolve())))
    synced = {path for kind, path in events[:commit] if kind == "fsync"}
    for f in files:
        assert inode(f.stat()) in synced, f"{f} not fsynced before the commit"
        assert inode(f.parent.stat()) in synced, f"{f.parent} not fsynced before the commit"
    assert inode(media_dir.stat()) in synced and inode(project.parent.stat()) in synced


def test_merged_media_are_fsynced_before_the_commit(main, pack, tmp_path, trace):
    out = tmp_path / "team" / "team.pairscope"
    merge_projects(out, [pack])
    assert_synced_before_commit(trace, out)


def test_packed_media_are_inside_the_pack_and_committed_with_it(main, tmp_path, trace):
    out = tmp_path / "p" / "carol.pairscope"
    with Store.open(main) as store:
        pack_project(store, out, "carol")
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]  # no media folder: one file
    with Store.open(out) as pack:
        assert len(pack.media_blobs()) == 2  # in the pack's one transaction, fsynced by its commit


def disk_full(monkeypatch, after: int = 0) -> None:
    """A media copy writes part of the file, then finds the disk full (after ``after`` copies)."""
    real, copies = durable.AtomicWriter.write, []

    def write(self, data):
        if self.tmp not in copies:
            copies.append(self.tmp)
        if len(copies) <= after:
            return real(self, data)
        real(self, data[: len(data) // 2])
        self.fh.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.tmp))

    monkeypatch.setattr(durable.AtomicWriter, "write", write)


@pytest.mark.parametrize("after", [0, 1])
def test_a_full_disk_during_a_merge_into_a_new_project_leaves_nothing_behind(main, pack, tmp_path, monkeypatch, after):
    before = listing(tmp_path)
    disk_full(monkeypatch, after)
    with pytest.raises(TeamworkError, match="disk is full") as info:
        merge_projects(tmp_path / "team" / "deep" / "team.pairscope", [pack])
    assert "nothing was written" in str(info.value)
    assert listing(tmp_path) == before  # no .tmp, no media, no project, no empty folders


def test_a_full_disk_during_a_merge_into_the_main_project_leaves_it_as_it_was(main, pack, tmp_path, monkeypatch):
    green = Path(png(tmp_path / "g" / "green.png", "green")).read_bytes()
    with Store.open(pack) as p:  # an item main lacks, its image inside the pack: the merge copies it
        with p.transaction():
            name, _ = p.add_media_blob(green, ".png")
        p.add_items([pair("a9", [MediaRef("image", "green.png", f"alice_media/{name}")])])
    before, digest = listing(tmp_path), sha(main)
    disk_full(monkeypatch)
    with pytest.raises(TeamworkError, match="disk is full"):
        merge_projects(main, [pack])
    assert sha(main) == digest and listing(tmp_path) == before


def test_a_full_disk_during_pack_leaves_nothing_behind(main, tmp_path, monkeypatch):
    before = listing(tmp_path)
    real = teamwork.PackBlobs.__init__

    def small_disk(self, pack):  # the pack's file may not grow once its media start: SQLITE_FULL
        real(self, pack)
        pages = pack.conn.execute("PRAGMA page_count").fetchone()[0]
        # Not "pages + 2": how many more pages the rest of a pack needs changes with the store
        # (this pack's now fits in exactly 2), and a limit the pack fits in tests nothing.
        pack.conn.execute(f"PRAGMA max_page_count = {pages}")

    monkeypatch.setattr(teamwork.PackBlobs, "__init__", small_disk)
    with Store.open(main) as store, pytest.raises(TeamworkError, match="disk is full") as info:
        pack_project(store, tmp_path / "packs" / "alice.pairscope", "alice")
    assert "nothing was written" in str(info.value)
    assert listing(tmp_path) == before


def test_a_full_sqlite_disk_is_a_clear_error_too(main, pack, tmp_path, monkeypatch):
    def full(self, annotator=None):
        error = sqlite3.OperationalError("database or disk is full")
        error.sqlite_errorcode, error.sqlite_errorname = sqlite3.SQLITE_FULL, "SQLITE_FULL"  # as SQLite raises it
        raise error

    monkeypatch.setattr(ProjectCopier, "labels", full)
    before = listing(tmp_path)
    with pytest.raises(TeamworkError, match="disk is full"):
        merge_projects(tmp_path / "t" / "team.pairscope", [pack])
    assert listing(tmp_path) == before


def test_the_cli_reports_a_full_disk_without_a_traceback(main, pack, tmp_path, monkeypatch, capsys):
    disk_full(monkeypatch)
    assert cli.main(["merge", str(tmp_path / "t" / "team.pairscope"), str(pack)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "disk is full" in err and "Traceback" not in err
    assert not (tmp_path / "t").exists()


# -- a killed merge or pack -------------------------------------------------------------------

# Copies the first media file, then dies by SIGKILL half-way through the second (a pack: as it
# puts the second one inside the pack file).
KILLED = r"""
import os, signal, sys
from pairscope.app import durable
from pairscope.app.curation.teamwork import merge_projects, pack_project
from pairscope.app.store import Store

real_blob, blobs = Store.add_media_blob, []
def dying_blob(self, data, suffix):
    blobs.append(suffix)
    if len(blobs) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return real_blob(self, data, suffix)
Store.add_media_blob = dying_blob

real, copies = durable.AtomicWriter.write, []
def dying(self, data):
    if self.tmp not in copies:
        copies.append(self.tmp)
    if len(copies) == 2:
        real(self, data[: len(data) // 2])
        self.fh.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    return real(self, data)
durable.AtomicWriter.write = dying
if sys.argv[1] == "merge":
    merge_projects(sys.argv[2], [sys.argv[3]])
else:
    with Store.open(sys.argv[3]) as store:
        pack_project(store, sys.argv[2], "alice")
"""


def killed(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-c", KILLED, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def media_files(project: Path) -> list[Path]:
    media = project.with_name(project.stem + "_media")
    return sorted(p for p in media.rglob("*") if p.is_file()) if media.exists() else []


def test_a_killed_merge_is_swept_by_the_next_merge(main, pack, tmp_path):
    out = tmp_path / "team" / "team.pairscope"
    killed("merge", str(out), str(pack))
    left = media_files(out)
    assert any(durable.TMP_NAME.fullmatch(p.name) for p in left) and any(p.suffix == ".png" for p in left)
    # a pack of the items without media: nothing of the killed run is referenced afterwards
    small = tmp_path / "small.pairscope"
    with Store.open(main) as store:
        pack_project(store, small, "carol", item_ids=[store.item_id("a2"), store.item_id("a3")])
    report = merge_projects(out, [small])
    assert report.inputs[0].items_added == 2 and report.leftovers_removed == len(left)
    assert media_files(out) == []
    assert not list(out.parent.glob(".*journal*"))
    # and the full merge afterwards holds exactly the media its items name
    merge_projects(out, [pack])
    with Store.open(out) as store:
        named = {str(teamwork.resolve_media_path(store, p)) for (p,) in store.query("SELECT path FROM media")}
    assert {str(p.absolute()) for p in media_files(out)} == named and len(named) == 2


def test_a_killed_pack_leaves_no_media_and_is_replaced_by_the_next_pack(main, tmp_path):
    out = tmp_path / "packs" / "alice.pairscope"
    killed("pack", str(out), str(main))
    assert media_files(out) == []  # its media were going into the file, in its one transaction
    with Store.open(out) as half:  # what the killed pack wrote was never committed
        assert half.item_count() == 0 and half.media_blobs() == {}
    with Store.open(main) as store:
        result = pack_project(store, out, "alice", item_ids=[store.item_id("a1")], force=True)
    assert result.items == 1 and result.media_files == 1
    assert media_files(out) == [] and not out.with_name(out.stem + "_media").exists()
    assert not list(out.parent.glob(".*journal*"))
