"""Active time per label (issue 28, build 3): counted only with the item on screen, the window
focused and the annotator active; stored with the label (schema 9), kept by the pending
journal, carried by packs and merges. A simulated clock, never a sleep."""

from __future__ import annotations

import pytest

from pairscope.app.curation.teamwork import merge_projects, pack_project
from pairscope.app.labeling.active_time import IDLE_S, ActiveTime
from pairscope.app.labeling.pending import PendingLabels
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import Item, Label, LabelDraft, Reference, Response
from pairscope.app.store import Store


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def pair(ext_id: str) -> Item:
    return Item(
        ext_id=ext_id,
        prompt=f"q {ext_id}",
        responses=(Response(0, f"{ext_id} a"), Response(1, f"{ext_id} b")),
        reference=Reference(ranking=(0, 1)),
    )


@pytest.fixture
def clock():
    return Clock()


def test_time_counts_only_while_focused_and_on_the_item(clock):
    active = ActiveTime(clock)
    active.show(1)
    clock.advance(5)
    active.input()
    clock.advance(3)
    active.focus(False)  # another window: the count stops
    clock.advance(500)
    active.input()  # input elsewhere is not seen, and would not count
    active.focus(True)
    clock.advance(2)
    assert active.active_ms(1) == 10_000
    active.show(2)  # the next item: its own count
    clock.advance(4)
    assert active.active_ms(1) == 10_000 and active.active_ms(2) == 4_000
    active.show(1)  # back again: the time adds up
    clock.advance(1)
    assert active.active_ms(1) == 11_000


def test_an_idle_gap_counts_only_up_to_the_threshold(clock):
    active = ActiveTime(clock, idle_s=60)
    active.show(7)
    clock.advance(40)  # reading without touching anything: counts
    active.input()
    clock.advance(3600)  # away for an hour
    assert active.seconds(7) == pytest.approx(40 + 60)
    active.input()  # back: counting resumes from now
    clock.advance(5)
    assert active.seconds(7) == pytest.approx(105)
    assert IDLE_S == 60


def test_no_item_no_time(clock):
    active = ActiveTime(clock)
    clock.advance(30)
    active.input()
    active.show(None)
    clock.advance(30)
    assert active.active_ms(1) == 0
    with pytest.raises(ValueError, match="idle threshold"):
        ActiveTime(clock, idle_s=0)


def test_the_session_stores_it_with_the_label_and_undo_does_not_invent_one(store):
    store.add_items([pair("p0"), pair("p1")])
    session = LabelingSession(store, "alice")
    a = store.item_id("p0")
    session.save(a, LabelDraft(outcome="tie"), active_ms=12_345)
    assert store.current_label(a, "alice").active_ms == 12_345
    session.save(a, LabelDraft(outcome="both_bad"))  # the research API measures nothing
    assert store.current_label(a, "alice").active_ms is None
    session.undo()
    assert [label.active_ms for label in store.label_history(a, "alice")] == [12_345, None, None]


@pytest.mark.parametrize("bad", [-1, 1.5, "10", True])
def test_a_bad_active_time_is_refused_and_nothing_is_written(store, bad):
    store.add_items([pair("p0")])
    item_id = store.item_id("p0")
    with pytest.raises(ValueError, match="active time"):
        store.add_label(Label(item_id, "alice", "tie", active_ms=bad))
    assert store.label_history(item_id) == []


def test_the_pending_journal_keeps_it(tmp_path):
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items([pair("p0")])
        item_id = store.item_id("p0")
    label = Label(item_id, "alice", "tie", uuid="u-1", created_at="2024-01-01T00:00:00+00:00", active_ms=4_200)
    PendingLabels(path).keep(label)
    again = PendingLabels(path)  # a new run reads the journal
    assert [kept.active_ms for kept in again.labels] == [4_200]
    with Store.open(path) as store:
        again.flush(store)
        assert store.current_label(item_id, "alice").active_ms == 4_200


def test_packs_and_merges_carry_it(tmp_path):
    main = tmp_path / "main" / "main.pairscope"
    with Store.create(main) as store:
        store.add_items([pair("p0"), pair("p1")])
    pack = tmp_path / "alice" / "alice.pairscope"
    with Store.open(main) as store:
        pack_project(store, pack, "alice")
    with Store.open(pack) as p:
        LabelingSession(p, "alice").save(p.item_id("p1"), LabelDraft(outcome="tie"), active_ms=7_000)
    merge_projects(main, [pack])
    with Store.open(main, readonly=True) as store:
        assert store.current_label(store.item_id("p1"), "alice").active_ms == 7_000
    with Store.open(main) as store:  # and a pack of the merged project carries it on
        pack_project(store, tmp_path / "again.pairscope", "alice")
    with Store.open(tmp_path / "again.pairscope", readonly=True) as p:
        assert p.current_label(p.item_id("p1"), "alice").active_ms == 7_000


def test_the_window_feeds_focus_input_and_item_changes(qtbot, tmp_path, clock):
    """In the real window: time with the window deactivated is left out, a key press counts
    as input, and the saved label carries the item's active time."""
    from PySide6.QtCore import QEvent, Qt
    from PySide6.QtWidgets import QApplication

    from helpers import show_active
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow

    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items([pair("p0"), pair("p1")])
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "ann")))
    active = ActiveTime(clock)
    window.controller.active_time = window.shortcuts.activity.active = active
    window.table.select_row(1)
    item_id = window.controller.current.item_id
    assert active.item_id == item_id
    clock.advance(30)
    qtbot.keyClick(window.center, Qt.Key_Shift)  # input, no label
    clock.advance(50)  # 50 s after the key: within the idle threshold
    QApplication.sendEvent(window, QEvent(QEvent.Type.WindowDeactivate))
    clock.advance(600)  # in another window: not counted
    QApplication.sendEvent(window, QEvent(QEvent.Type.WindowActivate))
    clock.advance(5)
    window.save_draft(LabelDraft(outcome="tie"))
    label = window.controller.store.current_label(item_id, "ann")
    assert label is not None and label.active_ms == 85_000
    window.close()


def test_input_counts_as_it_arrives_from_the_screen_on_any_widget(qtbot, tmp_path, clock):
    """Clicks, keys and mouse moves reach the window the way the platform delivers them (to
    the native window, which hands them to the widget under the pointer or with the focus):
    each counts as input, on whichever widget of the window it lands."""
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtTest import QTest

    from helpers import show_active
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow

    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items([pair("p0"), pair("p1")])
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "ann")))
    active = ActiveTime(clock, idle_s=60)
    window.controller.active_time = window.shortcuts.activity.active = active
    window.table.select_row(1)
    item_id = window.controller.current.item_id
    handle = window.windowHandle()
    title = window.item_title.mapTo(window, window.item_title.rect().center())
    elsewhere = title + QPoint(5, 3)
    assert window.childAt(title) is not None and not window.item_title.hasFocus()
    clock.advance(50)
    QTest.mouseClick(handle, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, title)
    clock.advance(50)
    QTest.keyClick(handle, Qt.Key.Key_Shift)
    clock.advance(50)
    QTest.mouseMove(handle, elsewhere)
    clock.advance(50)
    assert active.seconds(item_id) == pytest.approx(200)  # no gap over 60 s: every input counted
    window.close()


def test_the_team_report_gives_seconds_per_item_and_flags_too_fast(tmp_path, capsys):
    """Median, quartiles and histogram of active seconds per annotator; ``too fast`` when the
    median is under the threshold over enough timed labels; untimed labels left out."""
    import json

    from pairscope.app.cli.main import main
    from pairscope.app.stats.team_report import TIME_BINS_S, team_report

    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items([pair(f"p{i}") for i in range(12)])
        ids = [store.item_id(f"p{i}") for i in range(12)]
        for k, item_id in enumerate(ids):  # fast: 1 s each; slow: 10, 20, ... s; slow's last untimed
            store.add_label(Label(item_id, "fast", "tie", active_ms=1_000))
            store.add_label(Label(item_id, "slow", "tie", active_ms=None if k == 11 else 10_000 * (k + 1)))
        rows = {r.annotator: r for r in team_report(store)}
        assert rows["fast"].seconds_n == 12 and rows["fast"].seconds_median == 1.0
        assert "too fast" in rows["fast"].flags and "too fast" not in rows["slow"].flags
        slow = rows["slow"]
        assert slow.seconds_n == 11 and slow.seconds_median == 60.0  # 10..110 s: the 6th is 60
        assert slow.seconds_q1 == 35.0 and slow.seconds_q3 == 85.0
        assert sum(slow.seconds_histogram) == 11 and len(slow.seconds_histogram) == len(TIME_BINS_S)
        # under 12 timed labels the flag needs a lower bar, which the lead states
        assert "too fast" not in team_report(store, min_timed=13)[0].flags
    assert main(["team-report", "--db", str(path), "--json", "--too-fast", "0.5"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["too_fast"] == {"median_below_s": 0.5, "min_timed_labels": 10}
    assert all("too fast" not in r["flags"] for r in report["annotators"])
    assert main(["team-report", "--db", str(path)]) == 0
    text = capsys.readouterr().out
    assert "fast: " in text and "1.0s median [1.0s, 1.0s] of 12" in text and "FLAGS: too fast" in text
