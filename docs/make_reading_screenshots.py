"""Screenshots of issue 24's reading fixes, on a virtual screen (Xvfb, the real xcb platform):

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python docs/make_reading_screenshots.py

- screenshot-math.png: a reasoning item of the demo whose responses hold LaTeX, drawn as
  formulas (matplotlib's mathtext), the word diff on the numbers only;
- screenshot-empty-result.png: a search that matches no item: the item is taken away and
  the window says so (label keys do nothing).

The export dialog's result is made by make_export_result_screenshot.py.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))

from make_first_hour_screenshots import label_some, settle, window  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from pairscope.app.demo import create_demo_project  # noqa: E402
from pairscope.app.gui.gc_thread import collect_on_gui_thread  # noqa: E402
from pairscope.widgets.math_render import formulas  # noqa: E402


def main() -> None:
    work = Path(tempfile.mkdtemp())
    project = work / "demo.pairscope"
    create_demo_project(project)
    label_some(project)
    app = QApplication.instance() or QApplication(sys.argv)
    collect_on_gui_thread()
    w = window(app, project, work, item="mathverse_demo_01")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(formulas(c.body.document()) for c in w.responses.cards()):
        settle(app, 0.1)
    settle(app, 1.0)
    w.grab().save(str(DOCS / "screenshot-math.png"))
    print("math:", [formulas(c.body.document()) for c in w.responses.cards()])
    w.search.setText("no item says this")
    w.apply_filter()
    settle(app, 0.6)
    w.grab().save(str(DOCS / "screenshot-empty-result.png"))
    w.close()


if __name__ == "__main__":
    main()
