"""File → Assign… and File → Team report… (issue 28), on a virtual screen:

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python docs/make_team_screenshots.py

- screenshot-assign-dialog.png: the demo assigned to ana, ben and chen with overlap 2, 10% gold
  items, balanced; the round's result (new items and pack per annotator) under the form.
- screenshot-team-report.png: after each annotator labeled their pack (with active times: chen
  quick, always picking the response shown first) and the packs were merged back: the team
  report with gold accuracy, kappa, first-shown share, seconds per item and flags.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))

from make_first_hour_screenshots import settle, window  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from pairscope.app.curation.teamwork import merge_projects  # noqa: E402
from pairscope.app.demo import create_demo_project  # noqa: E402
from pairscope.app.gui.gc_thread import collect_on_gui_thread  # noqa: E402
from pairscope.app.labeling.session import LabelingSession  # noqa: E402
from pairscope.app.records import LabelDraft  # noqa: E402
from pairscope.app.store import Store  # noqa: E402
from pairscope.app.store.assignments import GoldItem, set_gold_items  # noqa: E402

TEAM = ("ana", "ben", "chen")


def mark_gold(project: Path, n: int = 8) -> None:
    """The first ``n`` items with a reference become gold: the reference's choice expected."""
    with Store.open(project) as store:
        gold = []
        for summary in store.item_summaries(0, 200):
            ranking = store.get_item(summary.id).reference.ranking
            if ranking and len(gold) < n:
                gold.append(GoldItem(summary.id, "prefer", ranking[0], "marked"))
        set_gold_items(store, gold)


def label_packs(packs: Path) -> None:
    """ana follows the reference, ben mostly, chen clicks the first response within ~2 s."""
    rng = random.Random(7)
    for name in TEAM:
        with Store.open(packs / f"{name}.pairscope") as pack:
            session = LabelingSession(pack, name)
            for summary in pack.item_summaries(0, 500):
                item = pack.get_item(summary.id)
                order = session.order(summary.id)
                ref = item.reference.ranking[0] if item.reference.ranking else 0
                if name == "chen":
                    position, ms = 1, rng.randint(900, 2600)
                else:
                    pick = ref if name == "ana" or rng.random() < 0.8 else order[rng.randrange(len(order))]
                    position, ms = order.index(pick) + 1, rng.randint(8_000, 45_000)
                session.save(summary.id, LabelDraft(preferred_position=position, strength="clearly"), active_ms=ms)


def main() -> None:
    work = Path(tempfile.mkdtemp())
    project = work / "demo.pairscope"
    create_demo_project(project)
    mark_gold(project)
    app = QApplication.instance() or QApplication(sys.argv)
    collect_on_gui_thread()
    w = window(app, project, work)
    dialog = w.file_menu.show_team_dialog("assign")
    dialog.annotators.setText(", ".join(TEAM))
    dialog.overlap.setValue(2)
    dialog.gold_share.setValue(10)
    dialog.folder.setText(str(work / "packs"))
    settle(app)
    dialog.run()
    deadline = time.monotonic() + 120
    while dialog.running and time.monotonic() < deadline:
        settle(app, 0.1)
    settle(app)
    dialog.grab().save(str(DOCS / "screenshot-assign-dialog.png"))
    print(dialog.result_text)
    dialog.close()
    w.close()
    settle(app)

    label_packs(work / "packs")
    merge_projects(project, [work / "packs" / f"{name}.pairscope" for name in TEAM])
    w = window(app, project, work)
    report = w.file_menu.show_team_dialog("team_report")
    deadline = time.monotonic() + 120
    while report.section is None and time.monotonic() < deadline:
        settle(app, 0.1)
    settle(app)
    report.grab().save(str(DOCS / "screenshot-team-report.png"))
    print(report.text.toPlainText())
    report.close()
    w.close()


if __name__ == "__main__":
    main()
