"""One definition of "annotator A's current label (or adjudication) on item I".

Every reader — the store's lookups, the resume point, the progress count, the item table's
status and filters, the export and the review panel — must agree with the rule written out
here independently: the newest row by (created_at, insertion order) per (kind, item,
annotator); a ``cleared`` row means none. An item is *labeled* when its current label states a
preference, tie, both bad or discard, or marks steps (``Label.is_labeled``); the store's
trigger-kept ``label_current.labeled`` must agree with it.
"""

from __future__ import annotations

import random

import pytest

from pairscope.app.curation.export import current_labels
from pairscope.app.judge.review import review_data
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import LABELED_OUTCOMES, Item, ItemFilter, Label, Reference, Response

NAMES = ("ann", "bob", "cy")
KINDS = ("label", "adjudication")
OUTCOMES = ("prefer", "prefer", "tie", "both_bad", "discard", "unrated", "cleared", "cleared")
# Few distinct times, drawn in random order: many ties, and older rows inserted after newer ones
# (as a merge of another annotator's project does).
TIMES = tuple(f"2025-03-0{d}T10:00:00.000000+00:00" for d in range(1, 5))


def make_items(store, n=12):
    store.add_items(
        [
            Item(
                ext_id=f"i{k}",
                prompt=f"q{k}",
                responses=(Response(0, f"a{k}"), Response(1, f"b{k}")),
                reference=Reference(ranking=(0, 1)),
            )
            for k in range(n)
        ]
    )
    return [s.id for s in store.item_summaries(0, 100)]


def random_history(store, ids, seed, n_labels=250) -> list[Label]:
    """Write ``n_labels`` random labels; returns them in insertion order."""
    rng = random.Random(seed)
    written = []
    for _ in range(n_labels):
        outcome = rng.choice(OUTCOMES)
        written.append(
            store.add_label(
                Label(
                    rng.choice(ids),
                    rng.choice(NAMES[:2]) if rng.random() < 0.8 else NAMES[2],
                    outcome,
                    ranking=(rng.randint(0, 1),) if outcome == "prefer" else (),
                    discard_reasons=("bad_media",) if outcome == "discard" else (),
                    # An unrated label makes its item labeled only when it marks steps.
                    step_marks=((0, 0, True),) if outcome == "unrated" and rng.random() < 0.5 else (),
                    kind=rng.choice(("label", "label", "adjudication")),
                    created_at=rng.choice(TIMES),
                )
            )
        )
    return written


def reference_current(written: list[Label]) -> dict[tuple[str, int, str], Label]:
    """(kind, item, annotator) → current label, written independently of the store."""
    newest: dict[tuple[str, int, str], tuple[tuple[str, int], Label]] = {}
    for seq, label in enumerate(written):
        key = (label.kind, label.item_id, label.annotator)
        rank = (label.created_at, seq)
        if key not in newest or rank > newest[key][0]:
            newest[key] = (rank, label)
    return {key: label for key, (_, label) in newest.items() if label.outcome != "cleared"}


def filtered(store, **fields) -> set[int]:
    return {s.id for s in store.item_summaries(0, 1000, filter=ItemFilter(**fields))}


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_every_reader_agrees_with_the_rule(store, seed):
    ids = make_items(store)
    written = random_history(store, ids, seed)
    ref = reference_current(written)
    order = {label.uuid: seq for seq, label in enumerate(written)}

    for name in (*NAMES, "nobody"):
        for kind in KINDS:
            mine = {item: label for (k, item, who), label in ref.items() if k == kind and who == name}
            for item_id in ids:
                got = store.current_label(item_id, name, kind)
                assert (got and got.uuid) == (mine[item_id].uuid if item_id in mine else None), (name, kind, item_id)
            assert {i: lab.uuid for i, lab in store.current_labels(name, kind=kind).items()} == {
                i: lab.uuid for i, lab in mine.items()
            }
            some = ids[::3]
            assert {i: lab.uuid for i, lab in store.current_labels(name, some, kind=kind).items()} == {
                i: lab.uuid for i, lab in mine.items() if i in some
            }
            labeled = {i for i, label in mine.items() if label.is_labeled}
            assert store.labeled_count(name, kind) == len(labeled)
            for after in (0, *ids):
                expected = next((i for i in ids if i > after and i not in labeled), None)
                assert store.first_unlabeled(name, after, kind) == expected, (name, kind, after)
            assert filtered(store, status="labeled", annotator=name, label_kind=kind) == labeled
            assert filtered(store, status="unlabeled", annotator=name, label_kind=kind) == set(ids) - labeled

            session = LabelingSession(store, name, kind)
            assert session.progress() == (len(labeled), len(ids))
            assert session.first_unlabeled() == next((i for i in ids if i not in labeled), None)
            statuses = {row.summary.id: row.status for row in session.table_rows(0, 100)}
            assert statuses == {
                i: ("unlabeled" if i not in labeled else "discarded" if mine[i].outcome == "discard" else "labeled")
                for i in ids
            }

    for kind, status in (("label", "labeled"), ("adjudication", "adjudicated")):
        assert filtered(store, status=status) == {i for (k, i, _), lab in ref.items() if k == kind and lab.is_labeled}

    for item_id in ids:
        labels, adjudication = current_labels(store, item_id)
        assert {n: lab.uuid for n, lab in labels.items()} == {
            who: lab.uuid for (k, i, who), lab in ref.items() if k == "label" and i == item_id
        }
        adjudications = [lab for (k, i, _), lab in ref.items() if k == "adjudication" and i == item_id]
        newest = max(adjudications, key=lambda lab: (lab.created_at, order[lab.uuid]), default=None)
        expected = newest.uuid if newest is not None and newest.outcome in LABELED_OUTCOMES else None
        assert (adjudication and adjudication.uuid) == expected, item_id

        lines = review_data(store, store.get_item(item_id), (0, 1)).labels
        assert {(line.annotator, line.kind, line.created_at) for line in lines} == {
            (who, k, lab.created_at) for (k, i, who), lab in ref.items() if i == item_id
        }


def test_a_clear_at_the_same_time_as_the_label_leaves_the_item_unlabeled(store):
    """Equal timestamps: the later insert is current, for the resume point as for the filter."""
    ids = make_items(store, 3)
    when = "2025-03-01T10:00:00.000000+00:00"
    for item_id in ids[:2]:
        store.add_label(Label(item_id, "ann", "tie", created_at=when))
    store.add_label(Label(ids[0], "ann", "cleared", created_at=when))
    assert store.current_label(ids[0], "ann") is None
    assert filtered(store, status="unlabeled", annotator="ann") == {ids[0], ids[2]}
    assert store.first_unlabeled("ann") == ids[0]
    assert store.labeled_count("ann") == 1


def test_an_older_label_merged_in_later_does_not_come_back(store):
    ids = make_items(store, 1)
    store.add_label(Label(ids[0], "ann", "cleared", created_at=TIMES[2]))
    store.add_label(Label(ids[0], "ann", "tie", created_at=TIMES[1]))  # older, arrives later
    assert store.current_label(ids[0], "ann") is None
    assert store.labeled_count("ann") == 0 and store.first_unlabeled("ann") == ids[0]
    assert current_labels(store, ids[0]) == ({}, None)


# -- adjudication mode reads adjudications (the window) -----------------------------------------


def test_adjudication_mode_table_progress_and_next_unlabeled_read_adjudications(qtbot, tmp_path):
    from PySide6.QtCore import Qt

    from helpers import show_active
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow
    from pairscope.app.store import Store

    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        make_items(store, 4)
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "carol")))

    def statuses():
        model = window.table.model()  # a new model when the table reloads
        return [model.index(r, 3).data() for r in range(model.rowCount())]

    qtbot.keyClick(window, Qt.Key_T)  # carol's own labels on the first two items
    qtbot.keyClick(window, Qt.Key_J)
    qtbot.keyClick(window, Qt.Key_T)
    assert statuses() == ["labeled", "labeled", "unlabeled", "unlabeled"]

    qtbot.keyClick(window, Qt.Key_D, Qt.ControlModifier)  # adjudicate
    assert statuses() == ["unlabeled"] * 4
    assert window.progress.format() == "0 / 4 adjudicated"
    window.table.select_row(0)
    qtbot.keyClick(window, Qt.Key_U)  # next item without an adjudication, labels or not
    assert window.table.current_row() == 1
    qtbot.keyClick(window, Qt.Key_B)
    assert statuses() == ["unlabeled", "labeled", "unlabeled", "unlabeled"]
    assert window.progress.format() == "1 / 4 adjudicated"
    window.status.setCurrentIndex(window.status.findData("unlabeled"))
    assert window.table.model().rowCount() == 3

    window.status.setCurrentIndex(0)
    qtbot.keyClick(window, Qt.Key_D, Qt.ControlModifier)  # back to labeling
    assert statuses() == ["labeled", "labeled", "unlabeled", "unlabeled"]
    assert window.progress.format() == "2 / 4 labeled"
