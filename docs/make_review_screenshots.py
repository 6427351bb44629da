"""Screenshots of failure stepping (the items a judge got wrong, with the review panel) and of
adjudication, on the demo project with simulated annotators and a scripted judge (see
make_stats_screenshot.py).   xvfb-run -a -s "-screen 0 1600x1000x24" \\
    .venv/bin/python docs/make_review_screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))

from make_stats_screenshot import simulate  # noqa: E402
from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from pairscope.app.demo import create_demo_project  # noqa: E402
from pairscope.app.gui.controller import AnnotationController  # noqa: E402
from pairscope.app.gui.gc_thread import collect_on_gui_thread  # noqa: E402
from pairscope.app.gui.main_window import MainWindow  # noqa: E402
from pairscope.app.store import Store  # noqa: E402


def main() -> None:
    project = Path(tempfile.mkdtemp()) / "demo.pairscope"
    create_demo_project(project)
    with Store.open(project) as store:
        simulate(store)
    app = QApplication(sys.argv[:1])
    collect_on_gui_thread()  # as the app does: a closed dialog is never freed off the GUI thread
    window = MainWindow(AnnotationController(Store.open(project), "dana"))
    window.resize(1600, 1000)
    window.show()

    def stepping() -> None:
        window.focus.setCurrentIndex(window.focus.findData("judge_wrong"))
        window.move(1)
        QTimer.singleShot(
            800, lambda: (window.grab().save(str(ROOT / "docs" / "screenshot-failures.png")), adjudicate())
        )

    def adjudicate() -> None:
        window.focus.setCurrentIndex(window.focus.findData("annotators_disagree"))
        window.toggle_adjudicate()
        window.panel.prefer(2)
        window.panel.set_strength("clearly")
        window.panel.note_edit.setPlainText("The square is purple: the shorter answer is the right one.")
        window.panel.flush()
        QTimer.singleShot(
            800,
            lambda: (
                window.grab().save(str(ROOT / "docs" / "screenshot-adjudication.png")),
                window.close(),
                app.quit(),
            ),
        )

    QTimer.singleShot(1000, stepping)
    app.exec()
    print("wrote docs/screenshot-failures.png and docs/screenshot-adjudication.png")


if __name__ == "__main__":
    main()
