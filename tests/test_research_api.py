"""The research API: ``pairscope.open(path)`` → pandas tables, read-only; ``stats --csv``."""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys

import pandas as pd
import pytest

import fake_backend  # noqa: F401
import pairscope
from fake_backend import FakeBackend
from pairscope.app.cli.main import main
from pairscope.app.judge.session import JudgeConfig, JudgeSession
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import SCORING_CONVENTIONS, Item, LabelDraft, Reference, Response
from pairscope.app.store import Store


@pytest.fixture
def project(tmp_path):
    """30 items with a reference, two annotators (~80% agree with it), one judge run (K=3)."""
    path = tmp_path / "p.pairscope"
    rng = random.Random(5)
    with Store.create(path) as store:
        store.add_items(
            [
                Item(
                    ext_id=f"i{n}",
                    prompt=f"Question {n}?",
                    category=("general", "reasoning")[n % 2],
                    responses=(Response(0, "GOOD answer"), Response(1, "BAD answer")),
                    reference=Reference(ranking=(0, 1)),
                )
                for n in range(30)
            ]
        )
        ids = [s.id for s in store.item_summaries(0, 100)]
        for name in ("alice", "bob"):
            session = LabelingSession(store, name)
            for item_id in ids:
                good = session.order(item_id).index(0) + 1
                session.save(item_id, LabelDraft(preferred_position=good if rng.random() < 0.8 else 3 - good))
        session = LabelingSession(store, "alice")  # alice changes her mind once: history ≠ current
        good = session.order(ids[0]).index(0) + 1
        session.save(ids[0], LabelDraft(preferred_position=3 - good))
        JudgeSession(store, FakeBackend(), JudgeConfig(k=3, both_orders=False)).judge(ids)
    return path


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_open_reads_every_table_as_pandas_and_never_writes(project):
    before = digest(project)
    with pairscope.open(project) as p:
        items = p.items()
        labels = p.labels(current=True)
        history = p.labels(current=False)
        runs = p.runs()
        verdicts = p.verdicts(int(runs.index[0]))
        votes = p.verdicts(int(runs.index[0]), per_item=True)
        report = p.stats(bootstrap=20)
        assert "30 items" in repr(p)
    assert digest(project) == before
    assert not project.with_name(project.name + "-wal").exists() or digest(project) == before

    assert isinstance(items, pd.DataFrame) and items.index.name == "item_id" and len(items) == 30
    assert items["category"].value_counts().to_dict() == {"general": 15, "reasoning": 15}
    assert (items["ref_chosen"] == 0).all()

    assert len(labels) == 60 and set(labels["annotator"]) == {"alice", "bob"}
    assert set(labels["outcome"]) == {"prefer"} and set(labels["preferred"]) <= {0, 1}
    assert len(history) == 61  # alice's changed label: both rows in the history, one current

    # Accuracy against the reference, from the tables, equals the statistics' own figure.
    merged = labels.join(items["ref_chosen"], on="item_id")
    for name, group in merged.groupby("annotator"):
        mine = (group["preferred"] == group["ref_chosen"]).mean()
        assert mine == pytest.approx(report["annotator_accuracy"][name]["with_ties"]["accuracy"])

    [run] = runs.index
    assert runs.loc[run, "k"] == 3 and runs.loc[run, "n_items"] == 30 and runs.loc[run, "backend"] == "fake"
    assert len(verdicts) == 90 and set(verdicts["choice"].dropna()) <= {0, 1}
    assert list(verdicts.columns[:3]) == ["run", "item_id", "ext_id"]
    assert len(votes) == 30
    judged = report["judges"][str(run)]["official"]
    assert (votes["verdict"] == "right").sum() == judged["correct"]


def test_stats_csv_writes_the_tables(project, tmp_path, capsys):
    out = tmp_path / "csv"
    assert main(["stats", "--db", str(project), "--bootstrap", "20", "--csv", str(out)]) == 0
    assert "csv: 10 tables" in capsys.readouterr().err
    written = {p.stem for p in out.glob("*.csv")}
    assert written == set(pairscope.app.research.CSV_TABLES)
    labels = pd.read_csv(out / "labels.csv")
    assert len(labels) == 60
    judges = pd.read_csv(out / "judges.csv")
    # every scoring convention of the registry: the "score as" rows (issue 23); the official one
    # keeps its stored name
    assert set(judges["vote"]) == {"official", *SCORING_CONVENTIONS[1:]}
    with pairscope.open(project) as p:
        official = p.stats(bootstrap=20)["judges"]["1"]["official"]["overall"]
    assert judges.loc[judges["vote"] == "official", "overall"].item() == pytest.approx(official)
    agreement = pd.read_csv(out / "agreement.csv")
    assert "alice|bob" in set(agreement["pair"].dropna())


def test_an_empty_project_gives_empty_tables_with_their_columns(tmp_path):
    path = tmp_path / "empty.pairscope"
    Store.create(path).close()
    with pairscope.open(path) as p:
        tables = p.tables()
    assert [name for name, frame in tables.items() if not frame.empty] == ["agreement"]
    assert tables["agreement"]["value"].isna().all()  # every statistic named, none computable
    assert {"item_id", "annotator", "outcome", "preferred"} <= set(tables["labels"].columns)
    assert {"run", "item_id", "choice"} <= set(tables["verdicts"].columns)


def test_open_warns_that_labels_kept_in_the_journal_are_left_out(project):
    from pairscope.app.labeling.pending import Journal, journal_path
    from pairscope.app.records import Label

    with pairscope.open(project) as p:
        assert p.unsaved == ""
        n_labels = len(p.labels(current=False))
    kept = Label(1, "carol", "tie", display_order=(0, 1), uuid="u-9", created_at="2025-01-01T00:00:00+00:00")
    Journal(journal_path(project)).append(kept)
    before = digest(project), digest(journal_path(project))
    with pytest.warns(UserWarning, match="1 label is not saved in the project yet"), pairscope.open(project) as p:
        assert "p.pairscope.pending.jsonl" in p.unsaved
        assert len(p.labels(current=False)) == n_labels  # carol's label is not in the tables
    assert (digest(project), digest(journal_path(project))) == before


def test_open_refuses_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        pairscope.open(tmp_path / "nope.pairscope")
    assert not (tmp_path / "nope.pairscope").exists()


def test_importing_pairscope_loads_no_pandas():
    code = "import sys, pairscope; print('pandas' in sys.modules, callable(pairscope.open), pairscope.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "0.1.0"]
