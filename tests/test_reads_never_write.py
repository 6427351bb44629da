"""Reads never write: opening, browsing and filtering a project take no write lock, so they
go on while another process (an import, a merge) holds the project's write transaction.
A read that took the write lock would wait the 5 s busy timeout and then fail with
"database is locked"."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager

import pytest

from helpers import LOCK_WAIT_BOUND_S
from pairscope.app.curation.export import current_labels
from pairscope.app.judge.review import review_data
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import (
    Item,
    ItemFilter,
    Label,
    LabelDraft,
    Reference,
    Response,
)
from pairscope.app.store import Store

N_ITEMS = 24
#: A statement that writes, or starts a write transaction.
WRITES = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|BEGIN\s+(IMMEDIATE|EXCLUSIVE))\b", re.I)


@contextmanager
def statements_of(conn):
    """Every SQL statement ``conn`` runs inside the block (counted, not timed: a read that
    writes is caught however fast or slow the machine is)."""
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        conn.set_trace_callback(None)


_HOLDER = textwrap.dedent("""
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO annotators (name, created_at) VALUES ('importer', '2025-01-01')")
    print("locked", flush=True)
    time.sleep(10)
""")


@contextmanager
def write_locked(path):
    """Another process holds the project's write transaction for the duration of the block."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        yield
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


@pytest.fixture
def project(tmp_path):
    """Items, earlier labels by ann and an adjudication; an order kept by an earlier version."""
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items(
            [
                Item(
                    ext_id=f"it{k}",
                    prompt=f"Which is right, {k}?",
                    responses=(Response(0, f"yes {k}"), Response(1, f"no {k}"), Response(2, f"maybe {k}")),
                    reference=Reference(ranking=(0, 1, 2)),
                )
                for k in range(N_ITEMS)
            ]
        )
        ids = [s.id for s in store.item_summaries(0, 100)]
        session = LabelingSession(store, "ann")
        for item_id in ids[:3]:
            session.save(item_id, LabelDraft(outcome="tie"))
        LabelingSession(store, "ann", "adjudication").save(ids[0], LabelDraft(outcome="both_bad"))
        with store.transaction() as conn:  # as earlier versions drew and kept it
            conn.execute("INSERT INTO display_orders VALUES (?, ?, '[2, 0, 1]')", (ids[5], store.find_annotator("ann")))
    return path


def test_the_window_opens_items_while_another_process_writes(qtbot, project):
    from PySide6.QtCore import Qt

    from helpers import show_active
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow

    with write_locked(project):
        window = show_active(qtbot, MainWindow(AnnotationController(Store.open(project), "newcomer")))
        assert window.table.current_row() == 0
        waits = []
        with statements_of(window.controller.store.conn) as statements:
            for row in range(1, 21):
                start = time.perf_counter()
                qtbot.keyClick(window, Qt.Key_J)  # next item
                waits.append(time.perf_counter() - start)
                assert window.table.current_row() == row
                assert window.controller.current.item.ext_id == f"it{row}"
                assert len(window.responses.cards()) == 3
            window.status.setCurrentIndex(window.status.findData("unlabeled"))  # filtering reads too
            assert window.table.model().rowCount() == N_ITEMS
            qtbot.keyClick(window, Qt.Key_D, Qt.ControlModifier)  # adjudication mode: a read as well
            assert window.progress.format() == f"0 / {N_ITEMS} adjudicated"
        assert statements and not [s for s in statements if WRITES.match(s)]
        assert max(waits) < LOCK_WAIT_BOUND_S, [round(w, 3) for w in waits]  # none waited out the lock
    with Store.open(project) as store:
        assert store.annotators() == ["ann"]  # nobody was created by looking


def test_store_reads_work_during_another_process_write(project):
    with Store.open(project) as store:
        ids = [s.id for s in store.item_summaries(0, 100)]
        before = {i: store.display_order(i, "ann") for i in ids} | {-i: store.display_order(i, "bob") for i in ids}
        with write_locked(project), statements_of(store.conn) as statements:
            start = time.perf_counter()
            assert set(store.current_labels("ann")) == set(ids[:3])
            assert store.current_label(ids[0], "ann").outcome == "tie"
            assert store.current_label(ids[0], "ann", "adjudication").outcome == "both_bad"
            assert store.labeled_count("ann") == 3 and store.labeled_count("ann", "adjudication") == 1
            assert store.first_unlabeled("ann") == ids[3] and store.first_unlabeled("bob") == ids[0]
            assert store.first_unlabeled("ann", kind="adjudication") == ids[1]
            assert store.display_order(ids[5], "ann") == (2, 0, 1)  # the kept order is still shown
            assert {i: store.display_order(i, "ann") for i in ids} | {
                -i: store.display_order(i, "bob") for i in ids
            } == before
            assert store.find_annotator("bob") is None
            assert len(store.item_summaries(0, 100, filter=ItemFilter(status="unlabeled", annotator="bob"))) == N_ITEMS
            labels, adjudication = current_labels(store, ids[0])
            assert set(labels) == {"ann"} and adjudication.outcome == "both_bad"
            assert len(review_data(store, store.get_item(ids[0]), before[ids[0]]).labels) == 2
            bob = LabelingSession(store, "bob")
            assert bob.progress() == (0, N_ITEMS) and bob.draft(ids[0]) == LabelDraft()
            assert [r.status for r in bob.table_rows(0, 5)] == ["unlabeled"] * 5
            assert time.perf_counter() - start < LOCK_WAIT_BOUND_S  # no read waited for the lock (5 s)
        assert statements and not [s for s in statements if WRITES.match(s)]
        assert store.annotators() == ["ann"]


def test_display_order_is_kept_derived_or_from_the_label_and_never_written(store):
    """A stored order wins; else the order the current label was given in; else one derived
    from the annotator and the item's identity — the same in every copy of the project."""
    store.add_items(
        [
            Item(ext_id=f"d{k}", prompt="q", responses=tuple(Response(i, f"r{k}.{i}") for i in range(4)))
            for k in range(40)
        ]
    )
    ids = [s.id for s in store.item_summaries(0, 100)]
    orders = {i: store.display_order(i, "ann") for i in ids}
    assert all(sorted(o) == [0, 1, 2, 3] for o in orders.values()) and len(set(orders.values())) > 1
    assert store.query("SELECT count(*) FROM display_orders")[0][0] == 0 and store.annotators() == []
    assert {i: store.display_order(i, "bob") for i in ids} != orders  # per annotator
    store.add_label(Label(ids[0], "ann", "tie", display_order=(3, 2, 1, 0)))  # labeled as seen elsewhere
    assert store.display_order(ids[0], "ann") == (3, 2, 1, 0)
    assert store.display_orders("ann", ids[:2]) == {ids[0]: (3, 2, 1, 0), ids[1]: orders[ids[1]]}
    with pytest.raises(KeyError):
        store.display_order(10_000, "ann")
