"""Screenshots of the judge panel mid-stream and after a verdict (run under xvfb-run).

Uses a tiny random Qwen2-VL built from config (its text is nonsense: the screenshots show
the mechanics, not judgement quality).   xvfb-run -a -s "-screen 0 1600x1000x24" \\
    .venv/bin/python docs/make_judge_screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from pairscope.app.demo import create_demo_project  # noqa: E402
from pairscope.app.gui.controller import AnnotationController  # noqa: E402
from pairscope.app.gui.gc_thread import collect_on_gui_thread  # noqa: E402
from pairscope.app.gui.main_window import MainWindow  # noqa: E402
from pairscope.app.labeling.session import LabelingSession  # noqa: E402
from pairscope.app.records import LabelDraft  # noqa: E402
from pairscope.app.store import Store  # noqa: E402
from tiny_models import build_tiny_qwen2_vl  # noqa: E402


def main() -> None:
    work = Path(tempfile.mkdtemp())
    model = build_tiny_qwen2_vl(work / "tiny-qwen2-vl")
    project = work / "demo.pairscope"
    create_demo_project(project)
    with Store.open(project) as store:
        LabelingSession(store, "alice").save(
            store.item_id("video_demo_01"), LabelDraft(preferred_position=2, strength="clearly")
        )
    app = QApplication(sys.argv[:1])
    collect_on_gui_thread()  # as the app does: a closed dialog is never freed off the GUI thread
    store = Store.open(project)
    window = MainWindow(AnnotationController(store, "alice"), start_item=store.item_id("video_demo_01"))
    window.resize(1600, 1000)
    window.show()
    window.judge.show()
    panel = window.judge.panel
    panel.model.setText(str(model))
    panel.k.setValue(2)
    panel.frames.setValue(8)
    chunks = []

    def on_chunk(_sample: int, _text: str) -> None:
        chunks.append(1)
        if len(chunks) == 60:
            window.grab().save(str(ROOT / "docs" / "screenshot-judge-streaming.png"))

    def on_finished(*_args) -> None:
        QTimer.singleShot(
            300,
            lambda: (
                window.grab().save(str(ROOT / "docs" / "screenshot-judge-verdict.png")),
                window.close(),
                app.quit(),
            ),
        )

    window.judge.worker.chunk.connect(on_chunk)
    window.judge.worker.finished.connect(on_finished)
    window.judge.worker.failed.connect(lambda message: (print(message), app.quit()))
    settings = dict(panel.settings(), max_new_tokens=160)
    QTimer.singleShot(1500, lambda: window.judge.judge_current(settings))
    app.exec()
    print("wrote docs/screenshot-judge-streaming.png and docs/screenshot-judge-verdict.png")


if __name__ == "__main__":
    main()
