"""The export dialog after an export (issue 22), on a virtual screen (issue 24: the result
ran under the buttons; the dialog is no longer resized by this script):

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python docs/make_export_result_screenshot.py

- screenshot-export-result.png: the demo exported as VL-RewardBench with media by reference
  (rows name the dataset's own paths; nothing is copied); the result, with every skip and its
  reason, stays on screen.
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


def main() -> None:
    work = Path(tempfile.mkdtemp())
    project = work / "demo.pairscope"
    create_demo_project(project)
    label_some(project)
    app = QApplication.instance() or QApplication(sys.argv)
    collect_on_gui_thread()
    w = window(app, project, work)
    w.shortcuts.show_export()
    dialog = w.shortcuts.export_dialog
    dialog.format.setCurrentText("vlrewardbench")
    dialog.media.setCurrentIndex(dialog.media.findData("reference"))
    dialog.folder.setText(str(work / "export"))
    settle(app)
    dialog.run()
    deadline = time.monotonic() + 120
    while dialog.running and time.monotonic() < deadline:
        settle(app, 0.1)
    settle(app)  # the dialog's own size after the export: it grows to show the result (issue 24)
    dialog.grab().save(str(DOCS / "screenshot-export-result.png"))
    print(dialog.result_text)
    dialog.close()
    w.close()


if __name__ == "__main__":
    main()
