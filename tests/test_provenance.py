"""Provenance you can trust (issue 31 item 2): an annotator's labels come only from that
annotator's own pack (as the project that packed it recorded it) or by an explicit trust, and
times are validated — a label dated in the future never becomes the current one."""

from __future__ import annotations

import json
import sqlite3
import uuid as uuidlib
from pathlib import Path

import pytest

from pairscope.app.cli import main as cli
from pairscope.app.curation.teamwork import InvalidRowsError, ProvenanceError, merge_projects, pack_project
from pairscope.app.labeling.pending import REJECTED_SUFFIX, Journal, PendingLabels, journal_path, replay_pending
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import Item, Label, LabelDraft, Reference, Response
from pairscope.app.store import Store
from pairscope.app.store.clock import time_problem

FUTURE = "9999-01-01T00:00:00.000000+00:00"
FLIPPED = "20g6-01-01T00:00:00.000000+00:00"  # one flipped byte in 2026
PAST = "2025-06-01T00:00:00.000000+00:00"


def pair(ext_id) -> Item:
    return Item(
        ext_id=ext_id,
        prompt=f"which is right in {ext_id}?",
        responses=(Response(0, f"{ext_id} one"), Response(1, f"{ext_id} two")),
        reference=Reference(ranking=(0, 1)),
    )


@pytest.fixture
def team(tmp_path) -> Path:
    path = tmp_path / "team" / "team.pairscope"
    with Store.create(path) as store:
        store.add_items([pair(f"a{i}") for i in range(4)])
    return path


def pack_for(team: Path, out: Path, annotator: str) -> Path:
    with Store.open(team) as store:
        pack_project(store, out, annotator)
    return out


def label(path: Path, annotator: str, ext_id: str, kind: str = "label", **draft) -> str:
    with Store.open(path) as store:
        saved = LabelingSession(store, annotator, kind=kind).save(store.item_id(ext_id), LabelDraft(**draft))
        assert saved is not None and saved.uuid
        return saved.uuid


def edit(path: Path, *statements: tuple[str, tuple]) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for sql, params in statements:
            conn.execute(sql, params)
    finally:
        conn.close()


def current(path: Path, annotator: str, ext_id: str):
    with Store.open(path, readonly=True) as store:
        return store.current_label(store.item_id(ext_id), annotator)


# -- whose labels ---------------------------------------------------------------------------------


def test_a_pack_gives_only_its_annotators_labels(team, tmp_path):
    """Before: merge took labels under any name from any pack: bob, labeling in alice's pack
    under carol's name, became carol in the team project."""
    pack = pack_for(team, tmp_path / "alice.pairscope", "alice")
    label(pack, "alice", "a0", outcome="tie")
    label(pack, "carol", "a1", outcome="both_bad")  # written in alice's pack under another name
    before = Path(team).read_bytes()
    with pytest.raises(ProvenanceError) as info:
        merge_projects(team, [pack])
    said = str(info.value)
    assert "it is alice's pack, so only alice's labels are taken from it" in said
    assert "1 label by 'carol'" in said and "--trust carol" in said and "Nothing was merged" in said
    assert Path(team).read_bytes() == before
    report = merge_projects(team, [pack], trust=["carol"])  # named explicitly: taken
    assert report.labels_added == 2


def test_adjudications_only_from_the_adjudicators_project(team, tmp_path):
    pack = pack_for(team, tmp_path / "alice.pairscope", "alice")
    label(pack, "lead", "a0", kind="adjudication", outcome="tie")
    with pytest.raises(ProvenanceError, match="1 adjudication by 'lead'"):
        merge_projects(team, [pack])
    lead = pack_for(team, tmp_path / "lead.pairscope", "lead")
    label(lead, "lead", "a0", kind="adjudication", outcome="tie")
    assert merge_projects(team, [lead]).labels_added == 1
    assert current(team, "lead", "a0") is None  # an adjudication is not lead's label ...
    with Store.open(team, readonly=True) as store:
        assert store.current_label(store.item_id("a0"), "lead", kind="adjudication").outcome == "tie"


def test_a_pack_edited_to_claim_another_annotator_is_refused_by_the_project_that_packed_it(team, tmp_path):
    """The pack says whose it is, and so does the project that packed it: bob cannot turn his
    pack into alice's by editing its ``meta``."""
    bob = pack_for(team, tmp_path / "bob.pairscope", "bob")
    label(bob, "alice", "a0", outcome="tie")
    edit(bob, ("UPDATE meta SET value = 'alice' WHERE key = 'pack_annotator'", ()))
    with pytest.raises(ProvenanceError, match="says it is alice's pack, but .* packed it for bob"):
        merge_projects(team, [bob])
    # a fresh pack id the project never issued does not help either
    edit(bob, ("UPDATE meta SET value = ? WHERE key = 'project_id'", (str(uuidlib.uuid4()),)))
    with pytest.raises(ProvenanceError, match="has no record of packing it"):
        merge_projects(team, [bob])


def test_a_full_project_gives_labels_only_for_trusted_names(team, tmp_path, capsys):
    other = tmp_path / "copy.pairscope"
    with Store.create(other) as store:
        store.add_items([pair(f"a{i}") for i in range(4)])
    label(other, "dora", "a2", outcome="tie")
    out = str(tmp_path / "merged.pairscope")
    assert cli.main(["merge", out, str(other)]) == 1
    err = capsys.readouterr().err
    assert "no annotator's pack" in err and "--trust dora" in err and "Traceback" not in err
    assert cli.main(["merge", out, str(other), "--trust", "dora"]) == 0


def test_labels_already_in_the_output_need_no_trust(team, tmp_path):
    pack = pack_for(team, tmp_path / "alice.pairscope", "alice")
    label(pack, "alice", "a0", outcome="tie")
    merge_projects(team, [pack])
    again = tmp_path / "again.pairscope"
    merge_projects(again, [team], trust=["alice"])
    assert merge_projects(again, [team]).labels_added == 0  # nothing new: nothing to trust


# -- times ----------------------------------------------------------------------------------------


def test_a_merged_label_dated_in_the_future_is_refused_by_name(team, tmp_path):
    """Before: ``created_at`` need only parse; a label dated 9999 stayed current for ever and
    the annotator's later saves were stored but never took effect."""
    pack = pack_for(team, tmp_path / "alice.pairscope", "alice")
    uid = label(pack, "alice", "a0", outcome="tie")
    edit(pack, ("UPDATE labels SET created_at = ? WHERE uuid = ?", (FUTURE, uid)))
    with pytest.raises(InvalidRowsError) as info:
        merge_projects(team, [pack])
    said = str(info.value)
    assert f"(uuid {uid}): created_at is in the future" in said and "nothing was merged" in said
    assert current(team, "alice", "a0") is None


def test_a_label_time_in_the_future_is_never_stored(team):
    with Store.open(team) as store:
        with pytest.raises(ValueError, match="in the future"):
            store.add_label(Label(store.item_id("a0"), "alice", "tie", display_order=(0, 1), created_at=FUTURE))
        with pytest.raises(ValueError, match="not an ISO-8601 time"):
            store.add_label(Label(store.item_id("a0"), "alice", "tie", display_order=(0, 1), created_at=FLIPPED))
        assert store.label_uuids() == set()


def test_a_journal_line_with_a_bad_time_is_set_aside_and_reported(team):
    """Before: one flipped byte in a journal line (``20g6-…``) made that label current for ever
    (it sorts after every real time) and then made every merge of the project fail."""
    with Store.open(team) as store:
        item = store.item_id("a0")
    journal = Journal(journal_path(team))
    bad = Label(item, "alice", "tie", display_order=(0, 1), uuid="u-bad", created_at=FLIPPED)
    late = Label(item, "alice", "both_bad", display_order=(0, 1), uuid="u-late", created_at=FUTURE)
    good = Label(item, "alice", "prefer", ranking=(1,), display_order=(0, 1), uuid="u-good", created_at=PAST)
    for entry in (bad, late, good):
        journal.append(entry, "a0")
    pending = PendingLabels(team)
    assert [entry.uuid for entry in pending.labels] == ["u-good"]  # never current, not even pending
    assert {entry.uuid for entry, _why in pending.rejected} == {"u-bad", "u-late"}
    assert "could not be stored" in pending.message()
    with Store.open(team) as store:
        assert replay_pending(store) == 1
        assert store.current_label(item, "alice").uuid == "u-good"
    rejected = team.with_name(team.name + REJECTED_SUFFIX)
    assert {json.loads(line)["uuid"] for line in rejected.read_text().splitlines()} == {"u-bad", "u-late"}
    assert not journal_path(team).exists()
    again = merge_projects(team.with_name("again.pairscope"), [team], trust=["alice"])  # merges fine
    assert again.labels_added == 1


@pytest.mark.parametrize(
    "value, ok",
    [
        ("2026-01-01T00:00:00.000000+00:00", True),
        ("2026-01-01T00:00:00", True),  # no zone: UTC
        ("20g6-01-01T00:00:00+00:00", False),
        ("9999-12-31T23:59:59+00:00", False),
        ("", False),
        (42, False),
    ],
)
def test_which_times_are_accepted(value, ok):
    assert (time_problem(value) is None) == ok
