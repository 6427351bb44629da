"""Small helpers shared by the tests (pytest puts this folder on sys.path)."""

from __future__ import annotations

import json

#: How long a test waits for something the window does on its own (a worker's result, focus,
#: a repaint). A wait returns as soon as the condition holds, so this only bounds a failure:
#: generous, because the suite runs on busy 2-core machines.
WAIT_MS = 20_000

#: A bound that tells "waited for another process's write lock" (the store's 5 s busy
#: timeout) from "did not": half the busy timeout, dozens of times what a read needs.
LOCK_WAIT_BOUND_S = 2.5


def write_jsonl(path, rows):
    """Write rows (dicts, or raw strings for malformed lines) as a JSONL file; return the path."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def good_bad_items(n):
    """``n`` two-response items ``it0``…: response 0 says GOOD (the reference), 1 says BAD."""
    from pairscope.app.records import Item, Reference, Response

    return [
        Item(
            ext_id=f"it{i}",
            prompt="Which is right?",
            responses=(Response(0, "GOOD answer"), Response(1, "BAD answer")),
            reference=Reference(ranking=(0, 1)),
        )
        for i in range(n)
    ]


def item(store, ext_id):
    """The stored item with this dataset id."""
    return store.get_item(store.item_id(ext_id))


def show_active(qtbot, window, size=(1400, 900)):
    """Show a top-level window and make it the active one: window-wide shortcuts only
    fire in the active window (offscreen, a shown window is not always activated)."""
    from PySide6.QtWidgets import QApplication

    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    window.windowHandle().requestActivate()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=WAIT_MS)
    return window


def fake_run(store, **overrides):
    """A judge run record for tests that store verdicts by hand (pairwise, K = 1 unless told)."""
    fields = dict(
        backend="fake",
        model_path="m",
        weights_hash=None,
        template_name=None,
        template_text="t",
        template_hash="h",
        mode="pairwise",
        k=1,
        both_orders=False,
        frames=None,
        seed=0,
        generation={},
    )
    return store.create_run(**{**fields, **overrides})
