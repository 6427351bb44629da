"""Screenshots of the "Compare two judges…" dialog on the demo project.

The three scripted judges of make_ensemble_screenshot.py judge the demo (K = 1, K = 3, K = 3 in
both orders); the dialog compares the first two: the Flips tab on the first flip (both rationales
side by side, the deciding sentence highlighted, the human labels above) and the Dashboard tab
(2×2 table, difference, per-slice table, forest plot). Runs under Xvfb or offscreen:

    xvfb-run -a .venv/bin/python docs/make_compare_screenshot.py

writes docs/screenshot-compare.png and docs/screenshot-compare-dashboard.png.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

if not os.environ.get("DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "docs"))

from make_ensemble_screenshot import simulate  # noqa: E402
from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from pairscope.app.demo import create_demo_project  # noqa: E402
from pairscope.app.gui.controller import AnnotationController  # noqa: E402
from pairscope.app.gui.gc_thread import collect_on_gui_thread  # noqa: E402
from pairscope.app.gui.main_window import MainWindow  # noqa: E402
from pairscope.app.store import Store  # noqa: E402


def settle(app: QApplication, rounds: int = 30) -> None:
    for _ in range(rounds):
        app.processEvents()


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    project = folder / "demo.pairscope"
    create_demo_project(project)
    with Store.open(project) as store:
        simulate(store)
    app = QApplication(sys.argv[:1])
    collect_on_gui_thread()
    settings = QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(AnnotationController(Store.open(project), "ann"), settings)
    window.resize(1500, 900)
    window.show()
    dialog = window.shortcuts.show_compare()
    dialog.resize(1250, 780)
    while dialog.reading or dialog.comparison is None:  # read off the GUI thread
        app.processEvents()
    settle(app)
    dialog.raise_()
    settle(app)
    dialog.grab().save(str(ROOT / "docs" / "screenshot-compare.png"))
    dialog.tabs.setCurrentIndex(1)
    settle(app)
    dialog.grab().save(str(ROOT / "docs" / "screenshot-compare-dashboard.png"))
    dialog.close()
    window.close()
    print("wrote docs/screenshot-compare.png, docs/screenshot-compare-dashboard.png")


if __name__ == "__main__":
    main()
