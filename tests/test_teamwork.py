"""Offline team work: pack a project for one annotator, label there, merge back."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from dataclasses import replace

import pytest
from PIL import Image

from helpers import fake_run
from pairscope.app.curation.teamwork import (
    ProjectFileError,
    TeamworkError,
    UnrelatedProjectsError,
    merge_projects,
    pack_project,
    resolve_media_path,
)
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.media import open_image
from pairscope.app.records import Item, LabelDraft, MediaRef, Reference, Response
from pairscope.app.store import LATEST_VERSION, Store, content_hash
from pairscope.app.store.merge import ProjectCopier

TABLES = (
    "items",
    "responses",
    "steps",
    "media",
    "ref_error_tags",
    "annotators",
    "labels",
    "display_orders",
    "judge_runs",
    "verdicts",
    "collections",
    "collection_items",
    "imports",
    "meta",
)


def sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def counts(path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        conn.close()


def pair(ext_id, media=(), prompt=None) -> Item:
    return Item(
        ext_id=ext_id,
        prompt=prompt or f"what is in {ext_id}?",
        media=tuple(media),
        responses=(Response(0, f"{ext_id} first answer"), Response(1, f"{ext_id} second answer")),
        reference=Reference(ranking=(0, 1)),
        extra={"source": "test", "n": 1},
    )


def png(path, colour) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 6), colour).save(path)
    return str(path.resolve())


@pytest.fixture
def main(tmp_path):
    """A project with 6 items (two share an image, one is missing its image), a
    collection, alice's and bob's labels and display orders."""
    data = tmp_path / "data"
    red, blue = png(data / "red.png", "red"), png(data / "blue.png", "blue")
    items = [
        pair("a0", [MediaRef("image", "red.png", red)]),
        pair("a1", [MediaRef("image", "red.png", red)]),
        pair("a2", [MediaRef("image", "blue.png", blue)]),
        pair("a3", [MediaRef("image", "gone.png", None, "image not found")]),
        pair("a4"),
        pair("a5"),
    ]
    store = Store.create(tmp_path / "main" / "main.pairscope")
    store.add_items(items)
    store.add_to_collection("batch1", [store.item_id(e) for e in ("a0", "a2", "a4")])
    alice, bob = LabelingSession(store, "alice"), LabelingSession(store, "bob")
    alice.save(store.item_id("a0"), LabelDraft(preferred_position=1, strength="clearly"))
    alice.save(store.item_id("a0"), LabelDraft(outcome="tie"))
    alice.order(store.item_id("a2"))  # shown, not labeled (writes nothing)
    bob.save(store.item_id("a1"), LabelDraft(outcome="both_bad"))
    yield store
    store.close()


def uuids(path, annotator=None) -> set[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        sql = "SELECT l.uuid FROM labels l JOIN annotators a ON a.id = l.annotator_id"
        rows = conn.execute(sql + " WHERE a.name = ?", (annotator,)) if annotator else conn.execute(sql)
        return {r[0] for r in rows}
    finally:
        conn.close()


def orders_by_ext(store: Store, annotator: str) -> dict[str, tuple[int, ...]]:
    ids = dict(store.query("SELECT id, ext_id FROM items"))
    return {ids[i]: o for i, o in store.display_orders(annotator, list(ids)).items()}


def current_by_ext(store: Store, annotator: str) -> dict[str, tuple]:
    ids = dict(store.query("SELECT id, ext_id FROM items"))
    return {ids[i]: (lab.uuid, lab.outcome, lab.ranking) for i, lab in store.current_labels(annotator).items()}


# -- pack ----------------------------------------------------------------------------------------


def test_pack_is_self_contained(main, tmp_path):
    out = tmp_path / "alice" / "alice.pairscope"
    result = pack_project(main, out, "alice")
    # Display orders are derived from annotator and item (none stored here), the same in the pack.
    assert (result.items, result.labels, result.display_orders) == (6, 2, 0)
    assert result.media_files == 2 and result.missing_media == 1  # red shared by a0 and a1; a3 was missing
    with Store.open(out) as pack:
        for ext_id in ("a0", "a1", "a2", "a3", "a4", "a5"):
            src, dst = main.get_item(main.item_id(ext_id)), pack.get_item(pack.item_id(ext_id))
            assert content_hash(dst) == content_hash(src)
            assert pack.query("SELECT content_hash FROM items WHERE ext_id = ?", (ext_id,)) == main.query(
                "SELECT content_hash FROM items WHERE ext_id = ?", (ext_id,)
            )
            stored = pack.query(
                "SELECT m.path FROM media m JOIN items i ON i.id = m.item_id WHERE i.ext_id = ?", (ext_id,)
            )
            for (path,), m, s in zip(stored, dst.media, src.media):
                if path is not None:  # a name in the pack's own media store: inside the file
                    assert not os.path.isabs(path) and path.startswith("alice_media/")
                    assert path.split("/", 1)[1] in pack.media_blobs()
                    assert os.path.exists(m.path) and sha(m.path) == sha(s.path)  # unpacked when read
        assert not pack.media_dir.exists()  # one file: nothing beside it
        assert uuids(out) == uuids(main.path, "alice")  # bob's labels are not packed
        assert pack.annotators() == ["alice"]
        assert orders_by_ext(pack, "alice") == orders_by_ext(main, "alice")
        assert current_by_ext(pack, "alice") == current_by_ext(main, "alice")
        assert pack.meta("pack_source_project_id") == main.meta("project_id") == result.source_project_id
        assert pack.meta("pack_annotator") == "alice" and pack.meta("project_id") == result.project_id
        assert pack.integrity_check() == "ok" and pack.query("SELECT count(*) FROM judge_runs") == [(0,)]


def test_pack_a_collection_or_given_items(main, tmp_path):
    result = pack_project(main, tmp_path / "c.pairscope", "carol", collection="batch1")
    assert result.items == 3 and result.labels == 0
    with Store.open(tmp_path / "c.pairscope") as pack:
        assert sorted(r[0] for r in pack.query("SELECT ext_id FROM items")) == ["a0", "a2", "a4"]
        assert pack.collections() == {"batch1": 3} and pack.annotators() == ["carol"]
    ids = [main.item_id("a1"), main.item_id("a5")]
    assert pack_project(main, tmp_path / "i.pairscope", "bob", item_ids=ids).labels == 1
    with pytest.raises(TeamworkError, match="no collection"):
        pack_project(main, tmp_path / "x.pairscope", "bob", collection="nope")
    with pytest.raises(TeamworkError, match="no items with ids"):
        pack_project(main, tmp_path / "x.pairscope", "bob", item_ids=[999])
    assert not (tmp_path / "x.pairscope").exists()


def test_pack_refuses_an_existing_file_unless_forced(main, tmp_path):
    out = tmp_path / "p.pairscope"
    out.write_bytes(b"keep me")
    with pytest.raises(TeamworkError, match="already exists"):
        pack_project(main, out, "alice")
    assert out.read_bytes() == b"keep me"
    with pytest.raises(TeamworkError, match="project being packed"):
        pack_project(main, main.path, "alice", force=True)
    assert pack_project(main, out, "alice", force=True).items == 6


def test_moved_pack_still_finds_its_media(main, tmp_path):
    out = tmp_path / "alice" / "alice.pairscope"
    pack_project(main, out, "alice")
    shutil.rmtree(tmp_path / "data")  # the originals are gone: the pack holds copies
    moved = tmp_path / "elsewhere" / "deeper"
    moved.mkdir(parents=True)
    shutil.move(str(out), str(moved / "renamed.pairscope"))  # the one file, under another name
    assert not list((tmp_path / "alice").iterdir())
    with Store.open(moved / "renamed.pairscope") as pack:
        m = pack.get_item(pack.item_id("a2")).media[0]
        path = resolve_media_path(pack, m.path)
        assert path.is_file() and open_image(path).getpixel((0, 0))[:3] == (0, 0, 255)
        assert pack.missing_media() == [("a3", "gone.png", "image not found")]


# -- merge ---------------------------------------------------------------------------------------


def label_some(path, annotator, drafts):
    with Store.open(path) as pack:
        session = LabelingSession(pack, annotator)
        for ext_id, draft in drafts:
            session.save(pack.item_id(ext_id), draft)
        return current_by_ext(pack, annotator), orders_by_ext(pack, annotator)


def test_label_in_pack_then_merge_back(main, tmp_path):
    out = tmp_path / "alice.pairscope"
    pack_project(main, out, "alice")
    before = uuids(main.path)
    pack_uuids_before = uuids(out)
    current, orders = label_some(
        out,
        "alice",
        [
            ("a0", LabelDraft(preferred_position=2)),
            ("a4", LabelDraft(outcome="discard", discard_reasons=("both_wrong",))),
            ("a5", LabelDraft(preferred_position=1, strength="much")),
        ],
    )
    new = uuids(out) - pack_uuids_before
    assert len(new) == 3
    report = merge_projects(main.path, [out])
    assert uuids(main.path) == before | new  # exactly the new labels
    assert report.labels_added == 3 and report.inputs[0].labels_present == 2 and not report.conflicts
    assert report.inputs[0].items_added == 0 and report.inputs[0].display_orders_added == 0  # derived, not stored
    assert current_by_ext(main, "alice") == current
    assert orders_by_ext(main, "alice") == orders
    assert main.integrity_check() == "ok"


def test_two_annotators_merge_into_the_main_project_and_a_fresh_file(main, tmp_path):
    pa, pb = tmp_path / "a.pairscope", tmp_path / "b.pairscope"
    pack_project(main, pa, "alice")
    pack_project(main, pb, "bob")
    cur_a, ord_a = label_some(
        pa, "alice", [("a1", LabelDraft(outcome="tie")), ("a2", LabelDraft(preferred_position=1))]
    )
    cur_b, ord_b = label_some(pb, "bob", [("a1", LabelDraft(preferred_position=2)), ("a3", LabelDraft(outcome="tie"))])
    for target in (main.path, tmp_path / "fresh" / "all.pairscope"):
        report = merge_projects(target, [pa, pb])
        with Store.open(target) as store:
            assert uuids(target, "alice") == uuids(pa) and uuids(target, "bob") == uuids(pb)
            assert current_by_ext(store, "alice") == cur_a and current_by_ext(store, "bob") == cur_b
            assert orders_by_ext(store, "alice") == ord_a and orders_by_ext(store, "bob") == ord_b
            assert store.integrity_check() == "ok" and not report.conflicts
    fresh = tmp_path / "fresh" / "all.pairscope"
    assert report.created and report.inputs[0].items_added == 6 and report.inputs[1].items_added == 0
    with Store.open(fresh) as store:  # the added items' media were copied into the fresh project
        m = store.get_item(store.item_id("a0")).media[0]
        assert m.path == str(store.path.absolute().parent / "all_media" / m.path.split("all_media/")[1])
        assert resolve_media_path(store, m.path).is_file()
        store.conn.execute("INSERT INTO item_text (item_text) VALUES ('integrity-check')")  # FTS index agrees
        assert store.query("SELECT rowid FROM item_text WHERE item_text MATCH 'second'") != []
        imports = store.query("SELECT format, added FROM imports ORDER BY id")
        assert imports == [("pairscope-merge", 6), ("pairscope-merge", 0)]


def test_merging_twice_changes_nothing(main, tmp_path):
    pa = tmp_path / "a.pairscope"
    pack_project(main, pa, "alice")
    label_some(pa, "alice", [("a3", LabelDraft(outcome="both_bad"))])
    fresh = tmp_path / "out.pairscope"
    merge_projects(fresh, [pa, main.path], trust=["bob"])  # main is no pack: bob's labels by trust
    merge_projects(main.path, [pa])
    for target in (main.path, fresh):
        rows, digest = counts(target), sha(target)
        report = merge_projects(target, [pa, main.path] if target == fresh else [pa], trust=["bob"])
        assert not report.changed and report.labels_added == 0
        assert counts(target) == rows and sha(target) == digest
        with Store.open(target) as store:
            assert store.integrity_check() == "ok"


def test_conflicting_item_content_is_reported_and_its_labels_kept(main, tmp_path):
    other = tmp_path / "edited.pairscope"
    with Store.create(other) as store:  # the dataset row of a5 was edited (not its prompt or answers)
        store.add_items([replace(pair("a5"), category="edited")])
        new_uuid = LabelingSession(store, "alice").save(store.item_id("a5"), LabelDraft(outcome="tie")).uuid
    report = merge_projects(main.path, [other], trust=["alice"])
    assert [c.ext_id for c in report.conflicts] == ["a5"] and report.inputs[0].conflicts == 1
    conflict = report.conflicts[0]
    assert conflict.input == str(other) and conflict.output_from == str(main.path) and "a5" in str(conflict)
    assert main.get_item(main.item_id("a5")).category != "edited"  # the output keeps its version
    assert main.current_label(main.item_id("a5"), "alice").uuid == new_uuid  # the label is not lost


def test_judge_runs_are_merged_by_uuid(main, tmp_path):
    from pairscope.app.judge.results import record_verdicts
    from pairscope.app.store import VerdictRecord

    pa = tmp_path / "a.pairscope"
    pack_project(main, pa, "alice")
    with Store.open(pa) as pack:
        run = fake_run(pack)
        record_verdicts(pack, run, [VerdictRecord(run.id, pack.item_id("a0"), 0, (1, 0), "[[A]]", 1, None, True, "r")])
    report = merge_projects(main.path, [pa])
    assert (report.inputs[0].runs_added, report.inputs[0].verdicts_added) == (1, 1)
    merged = main.runs()
    assert [r.uuid for r in merged] == [run.uuid]
    assert [(v.item_id, v.choice) for v in main.verdicts(merged[0].id)] == [(main.item_id("a0"), 1)]
    # the merged run's item verdicts are decided in the output, so its filters work at once
    assert main.item_verdict_rows(merged[0].id)[main.item_id("a0")][1] == 1
    assert not main.item_verdicts_stale()


def _random_bytes(path, real):
    path.write_bytes(os.urandom(8192))


def _truncated(path, real):
    data = real.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _newer_schema(path, real):
    shutil.copyfile(real, path)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    conn.close()


def _not_sqlite(path, real):
    path.write_text('{"id": "a0", "prompt": "not a database"}\n')


def _other_sqlite(path, real):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE items (x)")
    conn.close()


@pytest.mark.parametrize(
    "make, message",
    [
        (_random_bytes, "not an SQLite file"),
        (_truncated, "corrupt"),
        (_newer_schema, f"schema version {LATEST_VERSION + 1}"),
        (_not_sqlite, "not an SQLite file"),
        (_other_sqlite, "not a PairScope project"),
    ],
)
def test_bad_input_is_refused_and_the_output_is_untouched(main, tmp_path, make, message):
    good = tmp_path / "good.pairscope"
    pack_project(main, good, "alice")
    label_some(good, "alice", [("a4", LabelDraft(outcome="tie"))])
    bad = tmp_path / "bad.pairscope"
    make(bad, good)
    main.close()
    before, media_before = sha(main.path), sorted(p.name for p in main.path.parent.rglob("*"))
    with pytest.raises(ProjectFileError, match=message) as info:
        merge_projects(main.path, [good, bad])
    assert str(bad) in str(info.value)
    assert sha(main.path) == before and sorted(p.name for p in main.path.parent.rglob("*")) == media_before
    fresh = tmp_path / "fresh.pairscope"
    with pytest.raises(ProjectFileError):
        merge_projects(fresh, [good, bad])
    assert not fresh.exists()


def test_a_failure_while_writing_leaves_the_output_as_it_was(main, tmp_path, monkeypatch):
    pa = tmp_path / "a.pairscope"
    pack_project(main, pa, "alice")
    label_some(pa, "alice", [("a4", LabelDraft(outcome="tie"))])
    main.close()
    before, files = sha(main.path), sorted(main.path.parent.rglob("*"))

    def boom(self):
        raise RuntimeError("disk full")

    monkeypatch.setattr(ProjectCopier, "judge_runs", boom)
    with pytest.raises(RuntimeError):
        merge_projects(main.path, [pa])
    assert sha(main.path) == before and sorted(main.path.parent.rglob("*")) == files
    fresh = tmp_path / "fresh" / "f.pairscope"
    with pytest.raises(RuntimeError):
        merge_projects(fresh, [pa])
    assert not fresh.exists() and not any((tmp_path / "fresh").rglob("*.png"))


def test_unrelated_projects_are_refused_unless_allowed(main, tmp_path):
    other = tmp_path / "other.pairscope"
    with Store.create(other) as store:
        store.add_items([pair("zz1"), pair("zz2")])
        LabelingSession(store, "zoe").save(store.item_id("zz1"), LabelDraft(outcome="tie"))
    main.close()
    before = sha(main.path)
    with pytest.raises(UnrelatedProjectsError, match="unrelated"):
        merge_projects(main.path, [other])
    assert sha(main.path) == before
    report = merge_projects(main.path, [other], allow_unrelated=True, trust=["zoe"])
    assert report.inputs[0].items_added == 2 and report.labels_added == 1


def test_a_pack_of_other_items_is_related_through_its_source(main, tmp_path):
    """Packs from the same source share a lineage even with no item in common."""
    pa, pb = tmp_path / "a.pairscope", tmp_path / "b.pairscope"
    pack_project(main, pa, "alice", item_ids=[main.item_id("a0")])
    pack_project(main, pb, "bob", item_ids=[main.item_id("a1")])
    report = merge_projects(pa, [pb])
    assert report.inputs[0].items_added == 1


def test_inputs_are_not_modified_and_leave_no_side_files(main, tmp_path):
    pa, pb = tmp_path / "in" / "a.pairscope", tmp_path / "in" / "b.pairscope"
    pack_project(main, pa, "alice")
    pack_project(main, pb, "bob")
    label_some(pb, "bob", [("a2", LabelDraft(outcome="tie"))])
    listing = sorted(p.name for p in (tmp_path / "in").iterdir())
    digests = [sha(pa), sha(pb)]
    merge_projects(tmp_path / "out.pairscope", [pa, pb])
    merge_projects(main.path, [pa, pb])
    assert [sha(pa), sha(pb)] == digests
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == listing


def test_an_input_with_an_older_schema_is_read_through_an_upgraded_copy(main, tmp_path):
    from pairscope.app.store import MIGRATIONS
    from pairscope.app.store.schema import migrate

    old = tmp_path / "old.pairscope"
    conn = sqlite3.connect(old, isolation_level=None)
    migrate(conn, MIGRATIONS[:1])
    a5 = pair("a5")
    conn.execute(
        "INSERT INTO items (id, ext_id, source_format, category, prompt, media_kind, n_responses,"
        " content_hash) VALUES (1, 'a5', 'jsonl', 'general', ?, 'none', 2, ?)",
        (a5.prompt, content_hash(a5)),
    )
    conn.executemany(
        "INSERT INTO responses (item_id, idx, text) VALUES (1, ?, ?)", [(r.index, r.text) for r in a5.responses]
    )
    conn.execute("INSERT INTO annotators VALUES (1, 'olga', '2024-01-01T00:00:00+00:00')")
    conn.execute(
        "INSERT INTO labels (uuid, item_id, annotator_id, created_at, outcome) VALUES"
        " ('old-uuid', 1, 1, '2024-01-01T00:00:00+00:00', 'tie')"
    )
    conn.close()
    digest = sha(old)
    report = merge_projects(main.path, [old], trust=["olga"])
    assert report.labels_added == 1 and not report.conflicts and sha(old) == digest
    assert main.current_label(main.item_id("a5"), "olga").uuid == "old-uuid"


def test_an_input_that_is_the_output_is_skipped(main, tmp_path):
    main.close()
    report = merge_projects(main.path, [main.path])
    assert report.skipped and not report.inputs
    with pytest.raises(TeamworkError, match="nothing to merge"):
        merge_projects(main.path, [])


def add_column(path, table, column):
    conn = sqlite3.connect(path)
    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
    conn.close()


def test_a_column_added_on_both_sides_is_merged(main, tmp_path):
    """Which columns travel is read from the live schema: a column both projects have
    gained (a migration, or by hand) arrives with its values in the rows merge adds."""
    pa = tmp_path / "a.pairscope"
    pack_project(main, pa, "alice")
    with Store.open(pa) as pack:
        pack.add_items([pair("a9")])
        pack.add_to_collection("late", [pack.item_id("a9")])
    label_some(pa, "alice", [("a9", LabelDraft(preferred_position=1)), ("a5", LabelDraft(outcome="tie"))])
    label_some(pa, "zed", [("a9", LabelDraft(outcome="both_bad"))])
    main.close()
    before = uuids(main.path)
    extra = {
        "items": "batch TEXT",
        "responses": "rating REAL",
        "labels": "confidence REAL",
        "annotators": "team TEXT",
        "collections": "colour TEXT",
    }
    for path in (main.path, pa):
        for table, column in extra.items():
            add_column(path, table, column)
        add_column(path, "labels", "checked_by INTEGER REFERENCES annotators(id)")  # ids differ between files
    conn = sqlite3.connect(pa)
    with conn:
        conn.execute("UPDATE items SET batch = 'b-' || ext_id")
        conn.execute("UPDATE responses SET rating = idx + 0.5")
        conn.execute("UPDATE labels SET confidence = 0.75, checked_by = (SELECT id FROM annotators WHERE name = 'zed')")
        conn.execute("UPDATE annotators SET team = 'red'")
        conn.execute("UPDATE collections SET colour = 'green'")
    conn.close()
    report = merge_projects(main.path, [pa], trust=["zed"])  # labels zed gave in alice's pack
    assert report.inputs[0].items_added == 1 and report.labels_added == 3
    assert report.inputs[0].columns_not_copied == []
    with Store.open(main.path) as merged:
        a9 = merged.item_id("a9")
        assert merged.query("SELECT batch FROM items WHERE id = ?", (a9,)) == [("b-a9",)]
        assert merged.query("SELECT batch FROM items WHERE ext_id = 'a0'") == [(None,)]  # matched, not copied
        assert merged.query("SELECT idx, rating FROM responses WHERE item_id = ? ORDER BY idx", (a9,)) == [
            (0, 0.5),
            (1, 1.5),
        ]
        assert dict(merged.query("SELECT uuid, confidence FROM labels")) == {
            **{u: None for u in before},
            **{u: 0.75 for u in uuids(pa) - before},
        }
        zed = merged.query("SELECT id FROM annotators WHERE name = 'zed'")[0][0]
        assert {u: c for u, c in merged.query("SELECT uuid, checked_by FROM labels") if u not in before} == {
            u: zed for u in uuids(pa) - before
        }
        assert dict(merged.query("SELECT name, team FROM annotators")) == {"alice": None, "bob": None, "zed": "red"}
        assert dict(merged.query("SELECT name, colour FROM collections")) == {"batch1": None, "late": "green"}
        assert merged.integrity_check() == "ok"


def test_a_column_only_the_input_has_is_reported(main, tmp_path):
    pa = tmp_path / "a.pairscope"
    pack_project(main, pa, "alice")
    add_column(pa, "labels", "confidence REAL")
    label_some(pa, "alice", [("a4", LabelDraft(outcome="tie"))])
    report = merge_projects(tmp_path / "fresh.pairscope", [pa])
    assert report.inputs[0].columns_not_copied == ["labels.confidence"]
    assert report.inputs[0].labels_added == 3  # the rows themselves are merged
