"""The labeling session: blind order mapping, durable saves, undo/redo, resume, table rows."""

from __future__ import annotations

import pytest

from pairscope.app.labeling.session import LabelingSession, draft_to_label, label_to_draft
from pairscope.app.records import ErrorTag, Item, LabelDraft, Reference, Response, Step


def pair(ext_id, n=2, steps=False):
    responses = tuple(
        Response(i, f"{ext_id} answer {i}", steps=(Step("a"), Step("b")) if steps else ()) for i in range(n)
    )
    return Item(ext_id=ext_id, prompt=f"q {ext_id}", responses=responses, reference=Reference(ranking=tuple(range(n))))


@pytest.fixture
def session(store):
    store.add_items([pair(f"p{i}") for i in range(6)] + [pair("bon", n=4), pair("st", n=1, steps=True)])
    return LabelingSession(store, "alice")


def test_preference_is_stored_by_response_index_with_the_order_shown(session, store):
    item_id = store.item_id("p0")
    order = session.order(item_id)
    label = session.save(item_id, LabelDraft(preferred_position=1, strength="clearly"))
    assert label.ranking[0] == order[0] and label.display_order == order
    stored = store.current_label(item_id, "alice")
    assert stored.outcome == "prefer" and stored.preferred == order[0] and stored.strength == "clearly"
    assert session.draft(item_id) == LabelDraft(outcome="prefer", preferred_position=1, strength="clearly")


def test_round_trip_for_every_order():
    for order in [(0, 1), (1, 0), (2, 0, 3, 1)]:
        for pos in range(1, len(order) + 1):
            draft = LabelDraft(
                outcome="prefer",
                preferred_position=pos,
                strength="much",
                error_types=(ErrorTag("counting"),),
                note="n",
                step_marks=((pos, 0, True), (pos, 1, False)),
            )
            label = draft_to_label(7, "a", order, draft)
            assert label.preferred == order[pos - 1]
            assert label_to_draft(label, order) == draft


def test_undo_redo_write_new_rows_and_restore_state(session, store):
    a, b = store.item_id("p0"), store.item_id("p1")
    session.save(a, LabelDraft(preferred_position=2))
    session.save(a, LabelDraft(outcome="tie"))
    session.save(b, LabelDraft(outcome="both_bad"))
    assert session.undo() == b and session.draft(b) == LabelDraft()
    assert session.undo() == a and session.draft(a).preferred_position == 2
    assert session.redo() == a and session.draft(a).outcome == "tie"
    assert len(store.label_history(a, "alice")) == 4  # append-only: nothing was deleted
    session.save(a, LabelDraft(outcome="discard", discard_reasons=("both_wrong",)))
    assert not session.can_redo  # a new change drops the redo branch


def test_unchanged_save_writes_nothing(session, store):
    a = store.item_id("p0")
    session.save(a, LabelDraft(outcome="tie"))
    assert session.save(a, LabelDraft(outcome="tie")) is None
    assert len(store.label_history(a, "alice")) == 1


def test_resume_and_progress(session, store):
    ids = [store.item_id(f"p{i}") for i in range(3)]
    assert session.first_unlabeled() == ids[0]
    session.save(ids[0], LabelDraft(outcome="tie"))
    session.save(ids[1], LabelDraft(outcome="tie"))
    assert session.first_unlabeled() == ids[2]
    assert session.progress() == (2, 8)
    session.save(ids[0], LabelDraft())  # cleared
    assert session.first_unlabeled() == ids[0] and session.progress() == (1, 8)
    other = LabelingSession(store, "bob")
    assert other.first_unlabeled() == ids[0] and other.progress() == (0, 8)


def test_step_only_label_is_unrated(session, store):
    item_id = store.item_id("st")
    session.save(item_id, LabelDraft(step_marks=((1, 0, True), (1, 1, False))))
    stored = store.current_label(item_id, "alice")
    assert stored.outcome == "unrated" and stored.step_marks == ((0, 0, True), (0, 1, False))
    assert session.draft(item_id).outcome is None


def test_table_rows_show_own_label_blind_and_filter(session, store):
    a = store.item_id("p0")
    session.save(a, LabelDraft(preferred_position=2, strength="slightly"))
    rows = session.table_rows(0, 100)
    assert len(rows) == 8
    assert (rows[0].status, rows[0].own_label) == ("labeled", "R2 slightly")
    assert rows[1].status == "unlabeled"
    labeled = session.table_rows(0, 100, session.table_filter(status="labeled"))
    assert [r.summary.ext_id for r in labeled] == ["p0"]
    assert store.count_items(session.table_filter(status="unlabeled")) == 7
    assert [r.summary.ext_id for r in session.table_rows(0, 10, session.table_filter(text="bon"))] == ["bon"]
    assert store.count_items(session.table_filter(text="100%_")) == 0  # LIKE wildcards are literal
    assert LabelingSession(store, "bob").table_rows(0, 1)[0].status == "unlabeled"
