"""Untrusted text is plain text everywhere (issue 16, point 2).

A project whose every field is hostile markup (``<img src="file://…">``, a link, ``<b>``,
``&lt;``, control characters, a 1 MB line) is opened in the real window. Every widget, every
tooltip, every item-table cell and every message box built from that text must show it as
text: a QLabel in PlainText, a tooltip either plain or escaped inside one inert ``<p>`` and
bounded, never markup Qt would render (an ``<img>`` Qt would load from disk when the mouse
passes: a FIFO hangs the window, ``/dev/zero`` fills memory).
"""

from __future__ import annotations

import html
import re

import pytest
from PIL import Image
from PySide6.QtCore import QEvent, QPoint, QSettings, Qt
from PySide6.QtGui import QHelpEvent, QImage
from PySide6.QtGui import Qt as QtGui
from PySide6.QtWidgets import QAbstractItemView, QApplication, QLabel, QMessageBox, QToolTip, QWidget

import fake_backend  # noqa: F401  (registers "fake")
from fake_backend import FakeBackend
from helpers import WAIT_MS, show_active
from pairscope.app.gui import export_dialog, launch, stats_view
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.judge.session import JudgeConfig, JudgeSession
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import ErrorTag, Item, ItemSummary, LabelDraft, MediaRef, Reference, Response, Step, TableRow
from pairscope.app.store import Store
from pairscope.widgets.item_table import ItemTableModel
from pairscope.widgets.media_view import MediaView

might_be_rich_text = QtGui.mightBeRichText
TOOLTIP_LIMIT = 2000
INERT = re.compile(r"<p style='white-space:pre-wrap'>(.*)</p>", re.DOTALL)
ONE_MB = "x" * 1_000_000


def hostile(tall, tag: str = "") -> str:
    """Markup Qt would render (with an image it would load from disk), entities, control characters."""
    return (
        f'<img src="file://{tall}"><a href="file:///etc/passwd">link</a> <b>bold</b> &lt;i&gt; &amp;'
        f" \x00\x07\x1b[31m\x7f\r{tag}"
    )


@pytest.fixture
def tall(tmp_path):
    """A 40×3000 image: a tooltip that loads it is 3000 pixels tall."""
    path = tmp_path / "tall.png"
    Image.new("RGB", (40, 3000), "red").save(path)
    return path


@pytest.fixture
def project(tmp_path, tall):
    h = hostile(tall)
    items = [
        Item(
            ext_id=hostile(tall, f"#{i}"),
            prompt=f"{h} prompt {i}\n{ONE_MB if i == 2 else h}",
            responses=(Response(0, f"{h} GOOD\n{h}", model=h), Response(1, f"{h} BAD")),
            media=(
                MediaRef("image", hostile(tall, " missing"), None, h),
                MediaRef("image", hostile(tall, " shown"), str(tall)),
                MediaRef("image", ONE_MB + ".png", None, ONE_MB),
            ),
            category=hostile(tall, " category"),
            subset=h,
            reference=Reference(ranking=(0, 1), strength=h, ground_truth=h, error_tags=(ErrorTag("other", note=h),)),
            extra={"note": h},
        )
        for i in range(3)
    ]
    items.append(Item(ext_id="steps", prompt=h, responses=(Response(0, h, steps=(Step(h, True), Step(h))),)))
    path = tmp_path / "p&lt;<b>.pairscope"
    with Store.create(path) as store:
        store.add_items(items)
        ids = [s.id for s in store.item_summaries(0, 10)]
        LabelingSession(store, hostile(tall, "alice")).save(ids[0], LabelDraft(outcome="tie", note=h))
        script = lambda r: f"{h}\nOverall Judgment: Answer 1 is better\n{h}"  # noqa: E731
        JudgeSession(store, FakeBackend(model_path=h, script=script), JudgeConfig(k=2)).judge(ids[:2])
    return path


# -- the checks ---------------------------------------------------------------------------------


def inert(text: str) -> bool:
    """Escaped text inside the one wrapper that makes Qt treat it as (inert) rich text."""
    match = INERT.fullmatch(text)
    return match is not None and html.escape(html.unescape(match[1])) == match[1]


def shown_length(text: str) -> int:
    match = INERT.fullmatch(text)
    return len(html.unescape(match[1]).replace("\u200b", "")) if match else len(text)  # less wrap points


def text_problem(text: str, what: str) -> str | None:
    """A text Qt may render as rich text must be inert; no text may be markup."""
    if inert(text) or ("<" not in text and "&" not in text):
        return None
    return f"{what} shows markup: {text[:80]!r}"


def tooltip_problem(tip: str) -> str | None:
    if not tip:
        return None
    if shown_length(tip) > TOOLTIP_LIMIT + 1:
        return f"tooltip of {shown_length(tip)} characters"
    return text_problem(tip, "tooltip")


def label_problem(label: QLabel) -> str | None:
    if label.textFormat() == Qt.TextFormat.PlainText:
        return None
    return text_problem(label.text(), f"{label.textFormat().name} label")


def box_problem(box: QMessageBox) -> str | None:
    if box.textFormat() == Qt.TextFormat.PlainText:
        return None
    return text_problem(box.text(), "message box")


def widget_problems(widget: QWidget) -> list[str]:
    found = [tooltip_problem(widget.toolTip())]
    if isinstance(widget, QLabel):
        found.append(label_problem(widget))
    if isinstance(widget, QMessageBox):
        found.append(box_problem(widget))
    if isinstance(widget, QAbstractItemView) and widget.model() is not None:
        model = widget.model()
        for row in range(min(model.rowCount(), 50)):
            for column in range(model.columnCount()):
                tip = model.index(row, column).data(Qt.ItemDataRole.ToolTipRole)
                found.append(tooltip_problem(tip) if isinstance(tip, str) else None)
    where = f"{type(widget).__name__} {widget.objectName()!r}"
    return [f"{where}: {p}" for p in found if p]


def all_problems() -> list[str]:
    """Every problem in every window open now (the main window, docks, dialogs, boxes)."""
    problems = []
    for top in QApplication.topLevelWidgets():
        for widget in [top, *top.findChildren(QWidget)]:
            problems += widget_problems(widget)
    return problems


def tooltip_label() -> QLabel | None:
    return next((w for w in QApplication.topLevelWidgets() if w.objectName() == "qtooltip_label"), None)


def hover(qtbot, widget: QWidget, pos: QPoint) -> QLabel:
    """What a mouse pause at ``pos`` shows: Qt's tooltip label."""
    QToolTip.hideText()
    QApplication.sendEvent(widget, QHelpEvent(QEvent.Type.ToolTip, pos, widget.mapToGlobal(pos)))
    qtbot.waitUntil(lambda: tooltip_label() is not None and tooltip_label().text() != "", timeout=WAIT_MS)
    label = tooltip_label()
    assert label is not None
    return label


# -- the window ---------------------------------------------------------------------------------


@pytest.fixture
def window(qtbot, project, tall):
    win = show_active(qtbot, MainWindow(AnnotationController(Store.open(project), hostile(tall, "ann"))))
    yield win
    QToolTip.hideText()


def test_every_widget_shows_hostile_dataset_text_as_text(window, qtbot, tall):
    h = hostile(tall)
    window.table.select_row(0)
    qtbot.keyClick(window, Qt.Key_2)  # a save: the status bar names the (hostile) annotator
    window.panel.set_draft(LabelDraft(error_types=(ErrorTag(h),), discard_reasons=(h,), note=h))
    window.toggle_review()
    assert "link</a>" in window.review.text.toPlainText()  # the labels' notes and the judge's words
    window.toggle_judge()
    assert window.judge.panel.result.text()
    window.judge.worker._factory = lambda options: FakeBackend(options.model, script=lambda r: h)
    window.judge.panel.model.setText(h)
    with qtbot.waitSignal(window.judge.worker.finished, timeout=10000):
        window.judge.judge_current()
    window.shortcuts.show_cheat_sheet()
    problems = []
    for row in range(window.table.model().rowCount()):
        window.table.select_row(row)
        qtbot.waitUntil(lambda: window.media.placeholder_text() != "Loading…", timeout=WAIT_MS)
        problems += all_problems()
        for _ in range(1, window.media.image_count()):  # every image's caption and note
            window.media.next_image()
            problems += all_problems()
    problems = sorted(set(problems))
    assert not problems, "\n".join(problems)


def test_item_table_tooltips_are_escaped(window):
    model = window.table.model()
    tips = [model.index(r, c).data(Qt.ItemDataRole.ToolTipRole) for r in range(4) for c in range(model.columnCount())]
    assert all(inert(tip) for tip in tips if tip)  # every tooltip (the whole id too, issue 24)
    prompts = [model.index(r, 5).data(Qt.ItemDataRole.ToolTipRole) for r in range(4)]
    assert len([tip for tip in prompts if tip]) == 4
    for tip in prompts:
        assert inert(tip) and "&lt;img src=" in tip and "<img" not in tip and "<b>" not in tip
        assert "&amp;lt;i&amp;gt;" in tip  # an entity in the dataset stays the text it is
        assert "\x00" not in tip and "\x1b" not in tip  # control characters show as symbols


def test_item_table_tooltip_is_bounded(qtbot):
    summary = ItemSummary(1, "a", "general", None, "none", 2, "<b>" + ONE_MB, 0)
    model = ItemTableModel(1, lambda offset, limit: [TableRow(summary, "unlabeled", "")])
    tip = model.index(0, 5).data(Qt.ItemDataRole.ToolTipRole)
    assert inert(tip) and shown_length(tip) <= TOOLTIP_LIMIT + 1 and tip.endswith("…</p>")


def test_hovering_hostile_text_loads_nothing(window, qtbot, tall):
    """The real tooltip path: a mouse pause over the prompt cell and over the media caption.
    A tooltip that rendered the ``<img>`` would load the 3000-pixel-tall file."""
    table = window.table
    table.select_row(0)
    rect = table.visualRect(table.model().index(0, 5))
    label = hover(qtbot, table.viewport(), rect.center())
    assert "&lt;img" in label.text() and inert(label.text())
    assert label.sizeHint().height() < 1000
    qtbot.waitUntil(lambda: window.media.image_count() == 3, timeout=WAIT_MS)
    window.media.next_image()  # the image shown, captioned with its hostile reference
    caption = window.media.findChild(QLabel, "media-caption")
    label = hover(qtbot, caption, caption.rect().center())
    assert "&lt;img" in label.text() and inert(label.text())
    assert label.sizeHint().height() < 1000


def test_status_bar_names_the_annotator_as_text(window, qtbot):
    window.table.select_row(0)
    qtbot.keyClick(window, Qt.Key_2)
    status = [w for w in window.statusBar().findChildren(QLabel) if "Saved" in w.text()]
    assert status and status[0].textFormat() == Qt.TextFormat.PlainText


def test_caption_and_video_text_are_plain_and_bounded(qtbot, tall):
    view = MediaView()
    qtbot.addWidget(view)
    h = hostile(tall)
    frame = QImage(8, 8, QImage.Format.Format_RGB32)
    view.show_video(ONE_MB + h, 3, 25.0, [(0, 0.0, frame)], lambda i: frame)
    view.set_highlighted_frames([0], h)
    view.show()
    assert not [p for w in [view, *view.findChildren(QWidget)] for p in widget_problems(w)]
    caption = view.findChild(QLabel, "media-caption")
    assert inert(caption.toolTip()) and caption.toolTip().endswith("…</p>")
    assert len(caption.text()) <= TOOLTIP_LIMIT + 1
    view.show_placeholder(ONE_MB)
    assert len(view.placeholder_text()) <= 20_001


@pytest.mark.parametrize("text", [ONE_MB, "line\n" * 100_000, "word " * 200_000], ids=["run", "lines", "words"])
def test_a_huge_tooltip_stays_screen_sized(qtbot, text):
    view = MediaView()
    qtbot.addWidget(view)
    view.resize(640, 480)
    view.show()
    view.show_images([(text, None, "gone")])
    caption = view.findChild(QLabel, "media-caption")
    size = hover(qtbot, caption, caption.rect().center()).sizeHint()
    QToolTip.hideText()
    assert size.width() < 1000 and size.height() < 1000


# -- dialogs ------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::UserWarning")  # matplotlib, on hostile category names
def test_stats_and_export_messages_are_plain(window, qtbot, tmp_path, monkeypatch):
    bad = tmp_path / "<img src=x>&lt;"
    bad.mkdir()
    monkeypatch.setattr(stats_view.QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(bad)))
    view = window.shortcuts.show_statistics()
    qtbot.waitUntil(lambda: view.report is not None, timeout=30000)
    view._write_report()
    qtbot.waitUntil(lambda: view.status.text().startswith(("Wrote", "Could")), timeout=30000)
    assert view.status.text().startswith("Wrote") and "<img src=x>" in view.status.text()
    assert label_problem(view.status) is None

    asked = []
    no = export_dialog.QMessageBox.StandardButton.No
    monkeypatch.setattr(export_dialog.QMessageBox, "question", staticmethod(lambda *a, **k: asked.append(a[2]) or no))
    dialog = window.shortcuts.show_export()
    dialog.folder.setText(str(bad))  # not empty: the dialog asks first
    dialog.run()
    assert asked and inert(asked[0]) and "&lt;img src=x&gt;&amp;lt;" in asked[0]
    blocked = bad / "a-file"
    blocked.write_text("")
    dialog.folder.setText(str(blocked / "out"))  # under a file: the export fails and says where
    dialog.run()
    qtbot.waitUntil(lambda: "Export failed" in dialog.status.text(), timeout=10000)
    assert label_problem(dialog.status) is None
    boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox)]
    assert boxes
    for box in boxes:
        assert box_problem(box) is None
        box.close()
    dialog.reject()


def test_launch_error_box_is_plain(tmp_path, qapp, monkeypatch):
    target = tmp_path / "<img src=x>&lt;.pairscope"
    target.mkdir()  # a folder: cannot be opened
    shown = []
    monkeypatch.setattr(launch.QMessageBox, "critical", lambda *args: shown.append(args))
    monkeypatch.setattr(launch, "QSettings", lambda: QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))
    assert launch.run(target, "ann") == 1
    assert inert(shown[0][2]) and "&lt;img src=x&gt;&amp;lt;.pairscope" in shown[0][2]
