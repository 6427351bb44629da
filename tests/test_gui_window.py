"""The annotation window, driven with keys as an annotator would."""

from __future__ import annotations

import pytest
from PIL import Image
from PySide6.QtCore import Qt

from helpers import WAIT_MS, show_active, write_jsonl
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.importer import import_file
from pairscope.app.records import LabelDraft
from pairscope.app.store import Store


@pytest.fixture
def project_path(tmp_path):
    Image.new("RGB", (64, 48), "orange").save(tmp_path / "ok.png")
    rows = [
        {
            "id": f"wildvision_{i}",
            "query": f"<image>\nQuestion {i}?",
            "response": [f"first {i}", f"second {i}"],
            "human_ranking": [0, 1],
            "image_path": "ok.png" if i != 2 else "gone.png",
        }
        for i in range(4)
    ]
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        import_file(store, write_jsonl(tmp_path / "vl.jsonl", rows), "vlrewardbench", tmp_path)
    return path


def open_window(qtbot, path, annotator="ann"):
    return show_active(qtbot, MainWindow(AnnotationController(Store.open(path), annotator)))


@pytest.fixture
def window(qtbot, project_path):
    return open_window(qtbot, project_path)


def current_id(win):
    return win.controller.current.item.id


def card_texts(win):
    return [card.response.text for card in win.responses.cards()]


def test_table_lists_items_with_status(window):
    model = window.table.model()
    assert model.rowCount() == 4
    assert [model.index(r, 0).data() for r in range(4)] == [f"wildvision_{i}" for i in range(4)]
    assert model.index(2, 2).data() == "image (missing)"
    assert model.index(0, 3).data() == "unlabeled"


def test_label_blind_with_keys_and_store_holds_index_and_order(window, qtbot):
    store = window.controller.store
    item_id = current_id(window)
    order = store.display_order(item_id, "ann")
    assert card_texts(window) == [f"{['first', 'second'][i]} 0" for i in order]
    qtbot.keyClick(window, Qt.Key_2)
    qtbot.keyClick(window, Qt.Key_S)  # clearly better
    label = store.current_label(item_id, "ann")
    assert label.preferred == order[1] and label.strength == "clearly" and label.display_order == order
    assert window.table.model().index(0, 4).data() == "R2 clearly"
    assert window.progress.format() == "1 / 4 labeled"
    qtbot.keyClick(window, Qt.Key_J)
    assert window.table.current_row() == 1


def test_undo_redo(window, qtbot):
    store = window.controller.store
    item_id = current_id(window)
    qtbot.keyClick(window, Qt.Key_T)
    assert store.current_label(item_id, "ann").outcome == "tie"
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)
    assert store.current_label(item_id, "ann") is None
    assert window.panel.draft() == LabelDraft()
    qtbot.keyClick(window, Qt.Key_Y, Qt.ControlModifier)
    assert store.current_label(item_id, "ann").outcome == "tie"
    assert window.panel.draft().outcome == "tie"
    assert len(store.label_history(item_id, "ann")) == 3


def test_undo_goes_back_to_the_item_it_changed(window, qtbot):
    first = current_id(window)
    qtbot.keyClick(window, Qt.Key_B)
    qtbot.keyClick(window, Qt.Key_J)
    qtbot.keyClick(window, Qt.Key_J)
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)
    assert current_id(window) == first
    assert window.controller.store.current_label(first, "ann") is None


def test_resume_at_first_unlabeled(qtbot, project_path):
    with Store.open(project_path) as store:
        from pairscope.app.labeling.session import LabelingSession

        session = LabelingSession(store, "ann")
        for ext in ("wildvision_0", "wildvision_1"):
            session.save(store.item_id(ext), LabelDraft(outcome="tie"))
    win = open_window(qtbot, project_path)
    assert win.controller.current.item.ext_id == "wildvision_2"
    assert win.progress.format() == "2 / 4 labeled"


def test_missing_media_is_explained(window, qtbot):
    window.table.select_row(2)
    qtbot.waitUntil(lambda: "gone.png" in window.media.placeholder_text(), timeout=WAIT_MS)
    window.table.select_row(1)
    qtbot.waitUntil(lambda: window.media.image_count() == 1, timeout=WAIT_MS)


def test_filter_and_search(window, qtbot):
    qtbot.keyClick(window, Qt.Key_T)
    window.status.setCurrentIndex(window.status.findData("unlabeled"))
    assert window.table.model().rowCount() == 3
    window.status.setCurrentIndex(0)
    qtbot.keyClick(window, Qt.Key_F, Qt.ControlModifier)
    qtbot.keyClicks(window.search, "wildvision_3")
    qtbot.waitUntil(lambda: window.table.model().rowCount() == 1, timeout=WAIT_MS)
    assert window.controller.current.item.ext_id == "wildvision_3"


def test_cheat_sheet_lists_every_shortcut(window, qtbot):
    from pairscope.app.labeling.keymap import KEYMAP

    window.shortcuts.actions["cheat_sheet"].trigger()
    rows = window.shortcuts.cheat_sheet.rows()
    assert len(rows) == len(KEYMAP)
    assert any(keys == "T" and "Tie" in text for _, keys, text in rows)


def test_large_project_opens_lazily(qtbot, tmp_path):
    from pairscope.app.records import Item, Response

    path = tmp_path / "big.pairscope"
    with Store.create(path) as store:
        store.add_items(
            [Item(ext_id=f"i{n}", prompt="p", responses=(Response(0, "a"), Response(1, "b"))) for n in range(5000)]
        )
    win = open_window(qtbot, path)
    model = win.table.model()
    assert model.rowCount() == 5000
    assert len(model._pages) <= 3  # only what was painted
    win.table.select_row(4999)
    assert win.controller.current.item.ext_id == "i4999"


def test_hostile_and_broken_items_display_without_reading_files(qtbot, tmp_path, monkeypatch):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    (tmp_path / "corrupt.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    huge = tmp_path / "huge.png"
    Image.new("1", (12000, 10000)).save(huge)  # 120 megapixels: over the decompression-bomb guard
    hostile = (
        f'![x](file://{secret}) <img src="file://{secret}"> [link](file://{secret}) <script>alert(1)</script> **bold**'
    )
    rows = [
        {"id": "w_corrupt", "query": "q", "response": ["a", "b"], "human_ranking": [0, 1], "image_path": "corrupt.jpg"},
        {"id": "w_huge", "query": "q", "response": ["a", "b"], "human_ranking": [0, 1], "image_path": "huge.png"},
        {"id": "w_hostile", "query": hostile, "response": [hostile, "x" * 100_000], "human_ranking": [0, 1]},
        {"id": "w_empty", "query": "q", "response": ["", " "], "human_ranking": [0, 1]},
    ]
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        import_file(store, write_jsonl(tmp_path / "vl.jsonl", rows), "vlrewardbench", tmp_path)
    opened: list[str] = []
    real_open = open

    def spy(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", spy)
    win = open_window(qtbot, path)
    qtbot.waitUntil(lambda: "corrupt.jpg" in win.media.placeholder_text(), timeout=WAIT_MS)
    win.move(1)
    qtbot.waitUntil(lambda: "huge.png" in win.media.placeholder_text(), timeout=WAIT_MS)
    assert "pixels" in win.media.placeholder_text()
    win.move(1)
    assert win.prompt.textFormat() == Qt.PlainText
    texts = [card.body.toPlainText() for card in win.responses.cards()]
    assert not any("TOP-SECRET" in t for t in texts) and any("<script>" in t for t in texts)
    assert any(c.is_cut() and len(c.response.text) >= 100_000 for c in win.responses.cards())  # run cut: Show all
    win.move(1)
    assert all("(empty response)" in card.body.toPlainText() for card in win.responses.cards())
    assert str(secret) not in opened


def test_splitters_and_geometry_are_kept_between_runs(qtbot, project_path, tmp_path):
    from PySide6.QtCore import QSettings

    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)
    win = MainWindow(AnnotationController(Store.open(project_path), "ann"), settings)
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    win.main.setSizes([300, 800, 300])
    sizes = win.main.sizes()
    win.close()
    again = MainWindow(AnnotationController(Store.open(project_path), "ann"), settings)
    qtbot.addWidget(again)
    again.resize(1400, 900)  # what restoreGeometry does under a window manager
    again.show()
    assert again.main.sizes() == sizes


def test_annotator_name_is_asked_once_and_remembered(qtbot, tmp_path, monkeypatch):
    from PySide6.QtCore import QSettings

    from pairscope.app.gui import launch

    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)
    asked = []
    monkeypatch.setattr(
        launch.QInputDialog, "getText", staticmethod(lambda *a, **k: asked.append(1) or ("  carol ", True))
    )
    assert launch.ask_annotator(settings) == "carol"
    settings.setValue("annotator/name", "carol")
    assert launch.ask_annotator(settings) == "carol" and len(asked) == 1


def test_typing_a_note_never_triggers_label_keys(window, qtbot):
    store = window.controller.store
    item_id = current_id(window)
    qtbot.keyClick(window, Qt.Key_E, Qt.ControlModifier)  # focus the note
    qtbot.keyClicks(window.panel.note_edit, "tbx12 nj")
    window.panel.flush()
    label = store.current_label(item_id, "ann")
    assert label is not None and label.note == "tbx12 nj" and label.outcome == "unrated"
    assert current_id(window) == item_id  # "n"/"j" did not move on
