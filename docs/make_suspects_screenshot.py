"""A screenshot of the "Suspect references…" dialog on the synthetic project of
tests/test_suspects.py (60 VL-RewardBench-shaped pairs, 6 references planted flipped; three
judges of different quality and calibration, three annotators), one suspect already marked
"reference is wrong" by a reviewer.

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python docs/make_suspects_screenshot.py

writes docs/screenshot-suspects.png (on a virtual X screen; QT_QPA_PLATFORM=offscreen works too).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from pairscope.app.gui.controller import AnnotationController  # noqa: E402
from pairscope.app.gui.gc_thread import collect_on_gui_thread  # noqa: E402
from pairscope.app.gui.main_window import MainWindow  # noqa: E402
from pairscope.app.stats.suspects import load_suspects  # noqa: E402
from pairscope.app.store import Store  # noqa: E402
from pairscope.app.store.references import ReferenceReview, add_reference_review  # noqa: E402
from test_suspects import build_project  # noqa: E402


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    syn = build_project(folder)
    with Store.open(syn.path) as store:
        queue = load_suspects(store).queue()
        reviewed = queue[1]
        add_reference_review(
            store,
            ReferenceReview(reviewed.item_id, "dana", "wrong", reviewed.alternative, "the image shows two circles"),
        )
    app = QApplication(sys.argv[:1])
    collect_on_gui_thread()
    settings = QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(AnnotationController(Store.open(syn.path), "dana"), settings)
    window.resize(1400, 860)
    window.show()
    window.shortcuts.suspects_action.trigger()
    dialog = window.shortcuts.suspects_dialog
    dialog.resize(1180, 800)
    dialog.raise_()
    while dialog.reading or dialog.report is None:  # the model is fitted off the GUI thread
        app.processEvents()
    dialog.reason.setText("checked the image: response 0 is right")
    for _ in range(30):
        app.processEvents()
    out = ROOT / "docs" / "screenshot-suspects.png"
    dialog.grab().save(str(out))
    dialog.close()
    window.close()
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
