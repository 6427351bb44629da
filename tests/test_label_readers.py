"""The label's whole content in every reader (issue 22, item 7): an "other" error type's
note in ``pairscope.open(p).labels()`` and ``stats --csv``; ``info`` counts current labels
and the history apart."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import pairscope
from pairscope.app.cli.main import main
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import ErrorTag, Item, LabelDraft, Reference, Response
from pairscope.app.store import Store

NOTE = "the clock shows 3:40, not 4:15"


@pytest.fixture
def project(tmp_path):
    """4 items; alice labels all (once changing her mind, once clearing), with an "other" note."""
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items(
            [
                Item(f"i{n}", "Q?", (Response(0, "A"), Response(1, "B")), reference=Reference(ranking=(0, 1)))
                for n in range(4)
            ]
        )
        ids = [s.id for s in store.item_summaries(0, 10)]
        alice = LabelingSession(store, "alice")
        other = (ErrorTag("other", note=NOTE), ErrorTag("recognition", "text"))
        alice.save(ids[0], LabelDraft(preferred_position=1, error_types=other))
        alice.save(ids[1], LabelDraft(preferred_position=1))
        alice.save(ids[1], LabelDraft(preferred_position=2))  # changed: 2 history rows, 1 current
        alice.save(ids[2], LabelDraft(preferred_position=1))
        alice.save(ids[2], LabelDraft(outcome="cleared"))  # cleared: history only
    return path


def test_research_labels_carry_the_other_error_types_note(project):
    with pairscope.open(project) as p:
        labels = p.labels()
        history = p.labels(current=False)
    row = labels[labels["ext_id"] == "i0"].iloc[0]
    assert row["error_types"] == ["other", "recognition/text"]
    assert row["error_notes"] == [NOTE, None]  # was: the note was dropped
    exploded = labels.explode(["error_types", "error_notes"])  # aligned: one row per error type
    assert exploded.loc[exploded["error_types"] == "other", "error_notes"].tolist() == [NOTE]
    assert NOTE in history["error_notes"].explode().tolist()


def test_stats_csv_carries_the_note(project, tmp_path):
    assert main(["stats", "--db", str(project), "--bootstrap", "10", "--csv", str(tmp_path / "csv")]) == 0
    for table in ("labels", "label_history"):
        frame = pd.read_csv(tmp_path / "csv" / f"{table}.csv")
        notes = [json.loads(cell) for cell in frame["error_notes"]]
        assert [NOTE, None] in notes, (table, notes)


def test_info_reports_current_labels_and_the_history_apart(project, capsys):
    assert main(["info", "--db", str(project)]) == 0
    out = capsys.readouterr().out
    assert "labels: 2 " in out  # i0 and i1; i2 was cleared (was: "labels: 5", the history)
    assert "label history rows: 5" in out
    assert main(["info", "--db", str(project), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["labels"] == 2 and info["label_history_rows"] == 5 and info["adjudications"] == 0
    with pairscope.open(project) as p:
        assert len(p.labels(kind=None)) == info["labels"] + info["adjudications"]
        assert "4 items, 2 labels" in repr(p)  # current labels, as info (was the history: 5)
