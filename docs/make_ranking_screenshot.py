"""Screenshot of ranking an item of four responses with keys (issue 29): an MR2Bench-style row
(prompt, four responses, an image of the demo set) imported as published, then the keys
3, =, 4, 1 pressed in the window: R3 and R4 (both right) tie first, then R1 (off by one); R2 is left last.

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python docs/make_ranking_screenshot.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from pairscope.app.gui.controller import AnnotationController
from pairscope.app.gui.gc_thread import collect_on_gui_thread
from pairscope.app.gui.main_window import MainWindow
from pairscope.app.importer import import_file
from pairscope.app.store import Store

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshot-ranking.png"
IMAGE = ROOT / "resources" / "demo" / "images" / "wildvision_demo_01.png"
ROW = {
    "id": "squares_bo4",
    "prompt": "How many orange squares are there in the image? Explain briefly.",
    "responses": [
        "There are 4 orange squares; the blue square and the red shapes do not count.\n\nAnswer: **4**",
        "I count 3 orange squares.\n\nAnswer: **3**",
        "Four orange squares, next to a blue square, a red circle, a red square and a red triangle.",
        "There are 8 squares in the image.\n\nAnswer: **8**",
    ],
    "rankings": [1, 3, 1, 4],
    "image": "squares.png",
}


def main() -> None:
    work = Path(tempfile.mkdtemp())
    shutil.copy(IMAGE, work / "squares.png")
    data = work / "bo4.jsonl"
    data.write_text(json.dumps(ROW) + "\n")
    project = work / "ranking.pairscope"
    with Store.create(project) as store:
        import_file(store, data, None, work)
    app = QApplication(sys.argv[:1])
    collect_on_gui_thread()  # as the app does: a closed dialog is never freed off the GUI thread
    window = MainWindow(AnnotationController(Store.open(project), "alice"))
    window.resize(1600, 1000)
    window.show()
    window.activateWindow()

    def rank() -> None:
        for key in (Qt.Key.Key_3, Qt.Key.Key_Equal, Qt.Key.Key_4, Qt.Key.Key_1):
            QTest.keyClick(window, key)
        QTimer.singleShot(800, shoot)

    def shoot() -> None:
        print("ranking:", window.panel.ranking.text(), "· tie pending:", window.panel.ranking.tie_pending)
        window.grab().save(str(OUT))
        window.close()
        app.quit()

    QTimer.singleShot(1500, rank)
    app.exec()
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
