"""Screenshots of the window as a new user meets it (issue 14), offscreen:

    QT_QPA_PLATFORM=offscreen .venv/bin/python docs/make_first_hour_screenshots.py

- screenshot-main.png: the demo project with some labels, the item to label next;
- screenshot-docks.png: the judge and review docks open (one tabbed column) on a run made
  elsewhere and imported (`pairscope import-verdicts`), with the run picker;
- screenshot-export-dialog.png: the export dialog naming its preference source;
- screenshot-schema.png: a project-defined label schema in the label panel, its cheat sheet
  and guidelines;
- screenshot-judge-endpoint.png: the judge panel driving a real `transformers serve` (tiny
  random model: its rationale is nonsense; the screenshot shows the mechanics).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(ROOT / "tests"))

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from pairscope.app.cli.main import main as cli  # noqa: E402
from pairscope.app.demo import create_demo_project  # noqa: E402
from pairscope.app.gui.controller import AnnotationController  # noqa: E402
from pairscope.app.gui.gc_thread import collect_on_gui_thread  # noqa: E402
from pairscope.app.gui.main_window import MainWindow  # noqa: E402
from pairscope.app.labeling.session import LabelingSession  # noqa: E402
from pairscope.app.records import LabelDraft  # noqa: E402
from pairscope.app.store import Store  # noqa: E402

SIZE = (1440, 900)

SCHEMA = """
title = "Chart QA pilot"

[[error_types]]
name = "misread_value"
label = "Misread value"
description = "a number read off the chart is wrong"
key = "Ctrl+1"

[[error_types]]
name = "wrong_series"
label = "Wrong series"
description = "reads another series or axis"
key = "Ctrl+2"

[[error_types]]
name = "arithmetic"
label = "Arithmetic"
description = "right values, wrong calculation"
key = "Ctrl+3"

[[error_types]]
name = "other"
label = "Other"
free_text = true
key = "Ctrl+6"

[[discard_reasons]]
name = "unreadable_chart"
label = "Chart unreadable"
key = "Alt+1"

[[discard_reasons]]
name = "ambiguous_question"
label = "Question ambiguous"
key = "Alt+2"
"""

GUIDELINES = """# Chart QA pilot — guidelines

1. **Read the chart yourself first**, then the two answers.
2. Prefer the answer whose *final number* is right; style does not count.
3. Tick *Misread value* when a number taken from the chart is wrong.

> Unsure? Press **X** and pick *Question ambiguous*.
"""


def settle(app: QApplication, seconds: float = 0.4) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)


def window(app, project: Path, work: Path, item: str | None = None) -> MainWindow:
    store = Store.open(project)
    settings = QSettings(str(work / f"settings-{time.monotonic_ns()}.ini"), QSettings.Format.IniFormat)
    start = store.item_id(item) if item else None
    w = MainWindow(AnnotationController(store, "alice"), settings, start_item=start)
    w.resize(*SIZE)
    w.show()
    settle(app)
    return w


def label_some(project: Path, n: int = 12) -> None:
    with Store.open(project) as store:
        session = LabelingSession(store, "alice")
        for i, summary in enumerate(store.item_summaries(0, n)):
            session.save(summary.id, LabelDraft(preferred_position=1 + i % 2, strength="clearly"))


def imported_run(project: Path, work: Path) -> None:
    """A run "made elsewhere": an API judge's outputs on the first 16 items, imported."""
    rows = []
    with Store.open(project) as store:
        for i, summary in enumerate(store.item_summaries(0, 16)):
            pick = 1 if i % 5 else 2
            rows.append(
                {
                    "item": summary.ext_id,
                    "order": [0, 1],
                    "output": (
                        f"Response {pick} counts the shapes correctly and names their colours; the other"
                        f" response miscounts one of them. Overall, Response {pick} is better."
                    ),
                }
            )
    path = work / "api-judge.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert cli(["import-verdicts", str(path), "--db", str(project), "--name", "gpt-4o (API)"]) == 0


def main() -> None:
    work = Path(tempfile.mkdtemp())
    project = work / "demo.pairscope"
    create_demo_project(project)
    label_some(project)
    imported_run(project, work)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    collect_on_gui_thread()  # as the app does: a closed dialog is never freed off the GUI thread

    w = window(app, project, work)
    w.grab().save(str(DOCS / "screenshot-main.png"))

    w.toggle_review()
    w.toggle_judge()
    w.judge.raise_()
    settle(app)
    w.grab().save(str(DOCS / "screenshot-docks.png"))

    w.shortcuts.show_export()
    settle(app)
    w.shortcuts.export_dialog.grab().save(str(DOCS / "screenshot-export-dialog.png"))
    w.shortcuts.export_dialog.close()
    w.close()

    schema, guide = work / "schema.toml", work / "guidelines.md"
    schema.write_text(SCHEMA)
    guide.write_text(GUIDELINES)
    assert cli(["schema", "--db", str(project), "set", str(schema), "--guidelines", str(guide)]) == 0
    w = window(app, project, work, item="mathverse_demo_01")
    actions = w.shortcuts.handlers()
    actions["error_misread_value"]()
    actions["guidelines"]()
    settle(app)
    w.grab().save(str(DOCS / "screenshot-schema.png"))
    w.close()

    from fault_proxy import ServedModel, serving_missing
    from tiny_models import build_tiny_qwen2_vl

    if serving_missing():
        print(f"skipped screenshot-judge-endpoint.png: {serving_missing()}")
        return
    model = build_tiny_qwen2_vl(work / "tiny-qwen2-vl")
    server = ServedModel(work / "serve.log").start()
    try:
        w = window(app, project, work, item="wildvision_demo_03")
        w.toggle_judge()
        panel = w.judge.panel
        panel.backend.setCurrentIndex(panel.backend.findData("openai"))
        panel.endpoint.setText(server.url)
        os.environ.setdefault("MY_JUDGE_KEY", "sk-local-demo")  # the panel names the variable, never the key
        panel.api_key_env.setText("MY_JUDGE_KEY")
        panel.model.setText(str(model))
        panel.k.setValue(3)
        done = []
        w.judge.worker.finished.connect(lambda *_: done.append(1))
        w.judge.worker.failed.connect(lambda *_: done.append(1))
        w.judge.judge_current()
        deadline = time.monotonic() + 180
        while not done and time.monotonic() < deadline:
            settle(app, 0.1)
        settle(app)
        w.grab().save(str(DOCS / "screenshot-judge-endpoint.png"))
        w.close()
    finally:
        server.stop()
    print("wrote the screenshots to docs/")


if __name__ == "__main__":
    main()
