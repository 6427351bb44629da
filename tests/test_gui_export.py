"""File → Export in the window: the dialog names the preference source, leaves discarded items
out unless asked, lists every skip reason with its items, and the manifest records only the
filters that were applied. Real widgets, a real SQLite project, real files."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from helpers import show_active, write_jsonl
from pairscope.app.importer import import_file
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import LabelDraft
from pairscope.app.store import Store

# general: wildvision-*; hallucination: RLAIF-V-*; reasoning: mathverse_*. The dataset's
# reference prefers the first response everywhere.
IDS = ("wildvision-1", "wildvision-2", "wildvision-3", "RLAIF-V-4", "RLAIF-V-5", "mathverse_6")


def row(id_):
    return {
        "id": id_,
        "query": "<image>\nWhich is right?",
        "response": [f"{id_} first", f"{id_} second"],
        "human_ranking": [0, 1],
        "image_path": "a.png",
    }


def prefer(store, annotator, ext_id, response):
    session = LabelingSession(store, annotator)
    item_id = store.item_id(ext_id)
    session.save(item_id, LabelDraft(preferred_position=session.order(item_id).index(response) + 1))


@pytest.fixture
def project_path(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    Image.new("RGB", (4, 4), "red").save(src / "a.png")
    write_jsonl(src / "data.jsonl", [row(i) for i in IDS])
    path = tmp_path / "proj" / "p.pairscope"
    with Store.create(path) as store:
        import_file(store, src / "data.jsonl", "vlrewardbench")
        prefer(store, "alice", "wildvision-1", 1)  # against the reference
        prefer(store, "bob", "wildvision-1", 1)
        prefer(store, "alice", "wildvision-2", 1)
        LabelingSession(store, "bob").save(
            store.item_id("wildvision-2"), LabelDraft(outcome="discard", discard_reasons=("media_unusable",))
        )
    return path


def open_export(qtbot, path):

    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow

    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "ann")))
    return window


def show_dialog(qtbot, window):
    from PySide6.QtCore import Qt

    qtbot.keyClick(window, Qt.Key_E, Qt.ControlModifier | Qt.ShiftModifier)
    return window.shortcuts.export_dialog


def choose(combo, text):
    index = combo.findText(text)
    assert index >= 0, [combo.itemText(i) for i in range(combo.count())]
    combo.setCurrentIndex(index)


def export_and_wait(qtbot, dialog, out):
    dialog.folder.setText(str(out))
    dialog.buttons.button(dialog.buttons.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: (out / "manifest.json").exists() and not dialog.running, timeout=15000)
    return json.loads((out / "manifest.json").read_text("utf-8"))


def test_every_item_does_not_record_the_tables_filter(qtbot, project_path, tmp_path):
    window = open_export(qtbot, project_path)
    choose(window.category, "general")  # the table shows the three wildvision items
    assert window.controller.row_count() == 3
    dialog = show_dialog(qtbot, window)
    choose(dialog.scope, "Every item")
    manifest = export_and_wait(qtbot, dialog, tmp_path / "all")
    assert "table" not in manifest["filters"] and "description" not in manifest["filters"]
    assert manifest["filters"] == {}
    assert manifest["counts"]["items"] + manifest["counts"]["skipped"] == len(IDS)  # every item was considered

    choose(dialog.scope, "Items shown in the table")
    manifest = export_and_wait(qtbot, dialog, tmp_path / "table")
    assert manifest["filters"] == {"table": {"filter": {"category": "general"}, "items": 3}}
    assert manifest["counts"]["items"] + manifest["counts"]["skipped"] == 3


def test_the_dialog_names_the_source_and_exports_the_annotators_decision(qtbot, project_path, tmp_path):
    window = open_export(qtbot, project_path)
    dialog = show_dialog(qtbot, window)
    sources = [dialog.source.itemText(i) for i in range(dialog.source.count())]
    assert sources[0].startswith("The human decision")  # the default
    assert dialog.source.currentIndex() == 0
    assert {"Adjudication", "Annotators' consensus", "One annotator: alice", "One annotator: bob"} <= set(sources)
    assert sources[-1] == "Dataset reference"
    assert "left out" in dialog.explain.text()  # says what happens to items nobody decided
    choose(dialog.scope, "Every item")
    choose(dialog.format, "trl")
    manifest = export_and_wait(qtbot, dialog, tmp_path / "out")
    rows = [json.loads(line) for line in (tmp_path / "out" / "trl.jsonl").read_text("utf-8").splitlines()]
    assert [(r["id"], r["chosen"][0]["content"][0]["text"], r["preference_source"]) for r in rows] == [
        ("wildvision-1", "wildvision-1 second", "consensus")
    ]
    assert manifest["preference"]["source"] == "human"
    # the result stays on screen with every reason and its items
    assert dialog.isVisible()
    text = dialog.result_text
    assert "Exported 1 item" in text and "Skipped 5" in text
    assert "1 discarded by bob (media_unusable): wildvision-2" in text
    assert "4 no human preference: wildvision-3, RLAIF-V-4, RLAIF-V-5, mathverse_6" in text
    assert text in dialog.details.toPlainText()
    assert "Exported 1 item" in window.statusBar().currentMessage()


def test_discarded_items_only_go_out_when_asked_and_the_fallback_is_explicit(qtbot, project_path, tmp_path):
    window = open_export(qtbot, project_path)
    dialog = show_dialog(qtbot, window)
    choose(dialog.scope, "Every item")
    choose(dialog.format, "trl")
    choose(dialog.source, "One annotator: alice")
    assert "alice" in dialog.explain.text()
    dialog.include_discarded.setChecked(True)
    manifest = export_and_wait(qtbot, dialog, tmp_path / "incl")
    assert manifest["preference"] == manifest["preference"] | {"source": "annotator:alice", "include_discarded": True}
    assert manifest["counts"]["items"] == 2  # wildvision-2, which bob discarded, with alice's choice

    dialog.include_discarded.setChecked(False)
    choose(dialog.source, "The human decision (adjudication, else the annotators' consensus)")
    dialog.fallback.setChecked(True)
    assert "reference" in dialog.explain.text()
    manifest = export_and_wait(qtbot, dialog, tmp_path / "fallback")
    assert manifest["counts"]["per_preference_source"] == {"consensus": 1, "reference": 4}
    assert manifest["counts"]["skipped_by_reason"] == {"discarded by bob (media_unusable)": 1}


def test_the_media_choice_is_stated_and_reference_copies_nothing(qtbot, project_path, tmp_path):
    window = open_export(qtbot, project_path)
    dialog = show_dialog(qtbot, window)
    assert dialog.media.currentData() == "copy"  # the format's own default
    assert "copied into the folder" in dialog.explain.text()
    choose(dialog.scope, "Every item")
    choose(dialog.source, "Dataset reference")
    manifest = export_and_wait(qtbot, dialog, tmp_path / "copy")
    assert manifest["media"]["mode"] == "copy" and manifest["counts"]["media_files"] == 1
    assert "Media: copied 1 file into the export folder" in dialog.result_text
    choose(dialog.media, "Reference the dataset's media paths (copy nothing)")
    assert "No media file is copied" in dialog.explain.text()
    manifest = export_and_wait(qtbot, dialog, tmp_path / "ref")
    assert manifest["media"]["mode"] == "reference" and not (tmp_path / "ref" / "media").exists()
    rows = [json.loads(line) for line in (tmp_path / "ref" / "vlrewardbench.jsonl").read_text("utf-8").splitlines()]
    assert {r["image_path"] for r in rows} == {"a.png"}  # the dataset's own path
    assert "Media: not copied" in dialog.result_text
    choose(dialog.format, "trl")
    assert dialog.media.currentData() == "copy"  # a format change takes that format's default
