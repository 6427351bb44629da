"""Shared fixtures. Qt runs offscreen; a test that leaves a thread running fails."""

from __future__ import annotations

import os
import threading

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def no_leaked_threads():
    """Fail any test that starts a Python thread and leaves it running."""
    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive() and not t.daemon]
    for t in leaked:
        t.join(timeout=2)
    leaked = [t for t in leaked if t.is_alive()]
    assert not leaked, f"test leaked running threads: {[t.name for t in leaked]}"


@pytest.fixture
def store(tmp_path):
    from pairscope.app.store import Store

    s = Store.create(tmp_path / "project.pairscope")
    yield s
    s.close()
