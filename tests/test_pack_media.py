"""A pack is one file (issue 22 item 5) and its media paths are confined like a dataset's
(issue 31 item 1): every stored media path is followed by one rule (``app.media.follow_stored``),
inside the project's own media store, for merge, pack, export and the window alike."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from PIL import Image

from pairscope.app.cli import main as cli
from pairscope.app.curation.teamwork import merge_projects, pack_project
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.media import follow_stored
from pairscope.app.records import Item, LabelDraft, MediaRef, Reference, Response
from pairscope.app.store import Store


def png(path: Path, colour) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 6), colour).save(path)
    return str(path.resolve())


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pair(ext_id, media=()) -> Item:
    return Item(
        ext_id=ext_id,
        prompt=f"what is in {ext_id}?",
        media=tuple(media),
        responses=(Response(0, f"{ext_id} one"), Response(1, f"{ext_id} two")),
        reference=Reference(ranking=(0, 1)),
    )


@pytest.fixture
def team(tmp_path) -> Path:
    """A team project of 3 items, two with images from the dataset's folder; closed."""
    data = tmp_path / "data"
    red, blue = png(data / "red.png", "red"), png(data / "blue.png", "blue")
    path = tmp_path / "team" / "team.pairscope"
    with Store.create(path) as store:
        store.add_items(
            [
                pair("a0", [MediaRef("image", "red.png", red)]),
                pair("a1", [MediaRef("image", "blue.png", blue)]),
                pair("a2"),
            ]
        )
        LabelingSession(store, "bob").save(store.item_id("a2"), LabelDraft(outcome="tie"))
    return path


def make_pack(team: Path, out: Path, annotator: str = "alice") -> Path:
    with Store.open(team) as store:
        pack_project(store, out, annotator)
    return out


def every_file_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def holds_bytes(project: Path, data: bytes) -> bool:
    """Whether the project's file or anything in its folder holds ``data``'s content."""
    digest = sha(data)
    if any(sha(p.read_bytes()) == digest for p in every_file_under(project.parent) if p.suffix != ".pairscope"):
        return True
    conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "pack_media" not in tables:
            return False
        return any(sha(d) == digest for (d,) in conn.execute("SELECT data FROM pack_media"))
    finally:
        conn.close()


# -- 22.5: one file --------------------------------------------------------------------------------


def test_a_pack_is_one_file_that_shows_its_media_when_copied_alone(team, tmp_path):
    """Before: the pack was X.pairscope plus X_media/; copied alone, every image was missing."""
    pack = make_pack(team, tmp_path / "out" / "alice.pairscope")
    assert sorted(p.name for p in pack.parent.iterdir()) == ["alice.pairscope"]
    shutil.rmtree(tmp_path / "data")  # the dataset's images are gone: the pack holds its own
    alone = tmp_path / "mail" / "renamed.pairscope"
    alone.parent.mkdir()
    shutil.copyfile(pack, alone)  # the one file, as a mail attachment would carry it
    with Store.open(alone, readonly=True) as store:
        media = store.get_item(store.item_id("a0")).media[0]
        assert media.path is not None and Image.open(media.path).getpixel((0, 0))[:3] == (255, 0, 0)
        assert store.missing_media() == [] and store.info().missing_media == 0
    assert sorted(p.name for p in alone.parent.iterdir()) == ["renamed.pairscope"]  # read in place


def test_info_missing_checks_the_disk(team, tmp_path, capsys):
    """Before: ``info`` said ``missing media: 0`` for a file whose images were gone (a status
    stored at import), while the window showed "file not found" on every image."""
    shutil.rmtree(tmp_path / "data")
    assert cli.main(["info", "--db", str(team), "--missing"]) == 0
    out = capsys.readouterr().out
    assert "missing media: 2" in out and "red.png: file not found" in out, out


def test_merge_takes_a_packs_media_from_inside_it(team, tmp_path):
    pack = make_pack(team, tmp_path / "alice.pairscope")
    red = (tmp_path / "data" / "red.png").read_bytes()
    shutil.rmtree(tmp_path / "data")
    fresh = tmp_path / "fresh" / "all.pairscope"
    report = merge_projects(fresh, [pack])
    assert report.inputs[0].items_added == 3 and report.inputs[0].media_files == 2
    assert report.inputs[0].media_refused == []
    with Store.open(fresh) as store:
        path = store.get_item(store.item_id("a0")).media[0].path
        assert path is not None and Path(path).read_bytes() == red
        assert Path(path).is_relative_to(store.media_dir.absolute())


def test_the_pack_command_names_the_one_file_to_send(team, tmp_path, capsys):
    out = tmp_path / "packs" / "carol.pairscope"
    assert cli.main(["pack", "--db", str(team), "--out", str(out), "--annotator", "carol"]) == 0
    said = capsys.readouterr().out
    assert f"send {out} (one file: its media are inside it)" in said and "2 media files" in said


# -- 31.1: a pack's paths stay inside its own media store ----------------------------------------


@pytest.fixture
def secret(tmp_path) -> Path:
    """A private photo beside the pack's folder (what a crafted pack tries to bring in)."""
    return Path(png(tmp_path / "private" / "secret.png", (1, 2, 3)))


def drop_inside(conn: sqlite3.Connection, ext_id: str) -> str:
    """The stored path of ``ext_id``'s image; the copy inside the pack (if any) removed."""
    sql = "SELECT path FROM media WHERE item_id = (SELECT id FROM items WHERE ext_id = ?)"
    (stored,) = conn.execute(sql, (ext_id,)).fetchone()
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'pack_media'").fetchone():
        conn.execute("DELETE FROM pack_media WHERE name = ?", (stored.split("/", 1)[1],))
    return stored


def craft(pack: Path, ext_id: str, path: str) -> None:
    """Point the pack's media row of ``ext_id`` at ``path`` (its own copy dropped)."""
    conn = sqlite3.connect(pack, isolation_level=None)
    try:
        drop_inside(conn, ext_id)
        sql = "UPDATE media SET path = ? WHERE item_id = (SELECT id FROM items WHERE ext_id = ?)"
        conn.execute(sql, (path, ext_id))
    finally:
        conn.close()


def crafted_symlink(pack: Path, secret: Path) -> None:
    """A file of the pack's media folder that is a link to the secret (its own copy dropped)."""
    conn = sqlite3.connect(pack, isolation_level=None)
    try:
        stored = drop_inside(conn, "a0")
    finally:
        conn.close()
    link = pack.parent / stored
    link.parent.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    os.symlink(secret, link)


VARIANTS = {
    "absolute": lambda pack, secret: craft(pack, "a0", str(secret)),
    "climbing": lambda pack, secret: craft(pack, "a0", os.path.relpath(secret, pack.parent)),
    "media folder then up": lambda pack, secret: craft(
        pack, "a0", f"{pack.stem}_media/../" + os.path.relpath(secret, pack.parent)
    ),
    "symlink in the media folder": crafted_symlink,
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_crafted_pack_cannot_bring_in_a_private_image(team, tmp_path, secret, variant):
    """Before: merge resolved the path as given and copied the private photo into the team
    project (4 of 4 variants); the next export and every later pack shipped it."""
    pack = make_pack(team, tmp_path / "packs" / "alice.pairscope")
    VARIANTS[variant](pack, secret)
    fresh = tmp_path / "fresh" / "all.pairscope"
    report = merge_projects(fresh, [pack])
    assert not holds_bytes(fresh, secret.read_bytes()), "the private image was copied"
    part = report.inputs[0]
    assert part.items_added == 3 and len(part.media_refused) == 1 and "not copied" in part.media_refused[0]
    with Store.open(fresh) as store:
        media = store.get_item(store.item_id("a0")).media[0]
        assert media.path is None and media.ref == "red.png" and "not copied" in (media.problem or "")


def test_merge_reports_what_it_did_not_copy(team, tmp_path, secret, capsys):
    pack = make_pack(team, tmp_path / "packs" / "alice.pairscope")
    craft(pack, "a0", str(secret))
    assert cli.main(["merge", str(tmp_path / "fresh.pairscope"), str(pack)]) == 0
    err = capsys.readouterr().err
    assert "is an absolute path, outside the project's own media store" in err and "not copied" in err


@pytest.mark.parametrize("variant", ["climbing", "media folder then up", "symlink in the media folder"])
def test_the_same_rule_holds_in_the_window_export_and_pack(team, tmp_path, secret, variant):
    """A project's own relative paths are followed inside its media folder only, wherever they
    are read (``get_item``: the window, export, the research API; and a pack made of it)."""
    project = make_pack(team, tmp_path / "proj" / "p.pairscope")  # relative paths, as merges write
    VARIANTS[variant](project, secret)
    with Store.open(project) as store:
        media = store.get_item(store.item_id("a0")).media[0]
        assert media.path is None and "media store" in (media.problem or "")
        again = tmp_path / "again" / "q.pairscope"
        result = pack_project(store, again, "alice")
    assert not holds_bytes(again, secret.read_bytes()) and result.missing_media == 1


def test_absolute_paths_of_an_inputs_import_are_copied_only_when_asked(tmp_path):
    """A full project's imported files (absolute paths) are not its media store: merge keeps the
    reference without the file unless --allow-outside-media."""
    red = png(tmp_path / "data" / "red.png", "red")
    source = tmp_path / "src" / "full.pairscope"
    with Store.create(source) as store:
        store.add_items([pair("a0", [MediaRef("image", "red.png", red)])])
    refused = merge_projects(tmp_path / "one.pairscope", [source]).inputs[0]
    assert refused.media_files == 0 and "--allow-outside-media" in refused.media_refused[0]
    taken = merge_projects(tmp_path / "two.pairscope", [source], allow_outside_media=True).inputs[0]
    assert taken.media_files == 1 and taken.media_refused == []


@pytest.mark.parametrize(
    "stored, name",
    [
        ("p_media/ab/x.png", "ab/x.png"),
        ("other_media/ab/x.png", "ab/x.png"),  # a renamed project: its own store, whatever its name
        ("../x.png", None),
        ("p_media/../x.png", None),
        ("p_media/./x.png", None),
        ("p_media//x.png", None),
        ("x.png", None),
        ("p_media\\..\\x.png", None),
    ],
)
def test_the_one_rule_on_relative_paths(tmp_path, stored, name):
    found = follow_stored(tmp_path / "p_media", stored)
    assert found.name == name
    assert (found.problem is None) == (name is not None)


def test_the_one_rule_on_absolute_paths(tmp_path):
    assert follow_stored(tmp_path / "p_media", "/data/x.png").file == Path("/data/x.png")
    assert "absolute path" in (follow_stored(tmp_path / "p_media", "/data/x.png", outside=False).problem or "")


def test_a_project_renamed_with_or_without_its_media_folder_still_finds_its_media(tmp_path):
    image = tmp_path / "p_media" / "ab" / "ab12.png"
    png(image, "red")
    with Store.create(tmp_path / "p.pairscope") as store:
        store.add_items([pair("a0", [MediaRef("image", "x.png", "p_media/ab/ab12.png")])])
    (tmp_path / "p.pairscope").rename(tmp_path / "q.pairscope")  # the file alone
    with Store.open(tmp_path / "q.pairscope") as store:
        assert store.get_item(store.item_id("a0")).media[0].path == str(image)
    (tmp_path / "p_media").rename(tmp_path / "q_media")  # and then its folder too
    with Store.open(tmp_path / "q.pairscope") as store:
        assert store.get_item(store.item_id("a0")).media[0].path == str(tmp_path / "q_media" / "ab" / "ab12.png")
        assert store.missing_media() == []
