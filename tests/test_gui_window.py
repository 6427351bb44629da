"""The minimal window: lists the project's items and shows one, blind."""

from __future__ import annotations

import json

import pytest
from pairscope.app.gui.controller import ProjectController
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.importer import import_file
from PIL import Image
from PySide6.QtCore import Qt


@pytest.fixture
def project(store, tmp_path):
    Image.new("RGB", (64, 48), "orange").save(tmp_path / "ok.png")
    rows = [
        {"id": f"wildvision_{i}", "query": f"<image>\nQuestion {i}?", "response": [f"first {i}", f"second {i}"],
         "human_ranking": [0, 1], "image_path": "ok.png" if i != 2 else "gone.png"}
        for i in range(3)
    ]
    src = tmp_path / "vl.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows))
    import_file(store, src, "vlrewardbench", tmp_path)
    return store


@pytest.fixture
def window(qtbot, project):
    win = MainWindow(ProjectController(project, "ann"))
    qtbot.addWidget(win)
    win.show()
    return win


def response_titles(win):
    from PySide6.QtWidgets import QGroupBox, QPlainTextEdit

    boxes = win.preview.findChildren(QGroupBox)
    return [(b.title(), b.findChild(QPlainTextEdit).toPlainText()) for b in boxes if b.isVisibleTo(win)]


def test_table_lists_every_item(window):
    model = window.table.model()
    assert model.rowCount() == 3
    assert [model.index(r, 0).data() for r in range(3)] == ["wildvision_0", "wildvision_1", "wildvision_2"]
    assert model.index(2, 2).data() == "image (missing)"


def test_selected_item_shows_in_annotators_blind_order(window, project, qtbot):
    item_id = project.item_id("wildvision_0")
    order = project.display_order(item_id, "ann")
    qtbot.waitUntil(lambda: len(response_titles(window)) == 2)
    texts = [text for _, text in response_titles(window)]
    assert texts == [f"{['first', 'second'][i]} 0" for i in order]
    titles = [title for title, _ in response_titles(window)]
    assert titles[0].startswith("Response 1") and "chosen" not in " ".join(titles).lower()


def test_keyboard_moves_and_missing_media_is_explained(window, qtbot):
    qtbot.keyClick(window, Qt.Key_J)
    qtbot.keyClick(window, Qt.Key_J)
    assert window.table.currentIndex().row() == 2
    assert "Missing image: gone.png" in window.preview.media_text()
    qtbot.keyClick(window, Qt.Key_K)
    assert window.table.currentIndex().row() == 1
    assert window.preview.media_text() == ""  # an image is shown, not a placeholder


def test_lazy_loading_pages_through_large_projects(qtbot, store):
    from pairscope.app.records import Item, Response

    items = [Item(ext_id=f"i{n}", prompt="p", responses=(Response(0, "a"), Response(1, "b"))) for n in range(1200)]
    store.add_items(items)
    win = MainWindow(ProjectController(store, "ann"))
    qtbot.addWidget(win)
    model = win.table.model()
    assert model.rowCount() == 500  # first page only
    while model.canFetchMore():
        model.fetchMore()
    assert model.rowCount() == 1200
