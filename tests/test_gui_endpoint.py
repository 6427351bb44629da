"""The judge panel driving a served judge: a real ``transformers serve`` (the ``served``
fixture in conftest.py), chosen in the panel by endpoint, served name and key variable."""

from __future__ import annotations

import uuid

import pytest
from PySide6.QtCore import QSettings

from helpers import good_bad_items, show_active
from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.store import Store

pytestmark = pytest.mark.slow


def test_the_judge_panel_judges_through_an_endpoint_and_never_keeps_the_key(qtbot, served, tmp_path, monkeypatch):
    server, model, _ = served
    key = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv("PAIRSCOPE_TEST_KEY", key)
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items(good_bad_items(3))
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "ann"), settings), (1500, 900))
    window.toggle_judge()
    panel = window.judge.panel
    assert not panel.endpoint.isVisible()  # a local model needs no endpoint fields
    panel.backend.setCurrentIndex(panel.backend.findData("openai"))
    assert panel.endpoint.isVisible() and panel.api_key_env.isVisible() and not panel.browse.isVisible()
    panel.endpoint.setText(server.url)
    panel.api_key_env.setText("PAIRSCOPE_TEST_KEY")
    panel.concurrency.setValue(2)
    panel.model.setText(model)
    panel.k.setValue(2)
    chunks = []
    window.judge.worker.chunk.connect(lambda _i, text: chunks.append(text))
    with qtbot.waitSignal(window.judge.worker.finished, timeout=120000):
        panel.judge_item.click()
    assert chunks  # streamed into the panel as it came
    assert "Judge:" in panel.result.text() or "no majority" in panel.result.text()
    store = window.controller.store
    run = store.run(window.controller.run_id)
    assert run.backend == "openai" and run.model_path == model
    assert "openai" in window.run_picker.currentText() or "qwen" in window.run_picker.currentText()
    assert len(store.verdicts(run.id)) == 2
    window.close()
    settings.sync()
    for stored in (path, tmp_path / "settings.ini"):
        assert key.encode() not in stored.read_bytes(), stored
    assert b"PAIRSCOPE_TEST_KEY" in (tmp_path / "settings.ini").read_bytes()  # the variable's name only
