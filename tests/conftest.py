"""Shared fixtures. Qt runs offscreen; a test that leaves a thread running fails."""

from __future__ import annotations

import os
import shutil
import threading
import time
import weakref

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import tqdm  # noqa: E402

# tqdm's stall monitor is a process-lifetime daemon thread owned by tqdm, started by the first
# progress bar (transformers' save/load) and, via huggingface_hub's subclass, not stopped when
# the bars close.
# It is not PairScope's to join; switched off, it cannot land in whichever test draws first.
tqdm.tqdm.monitor_interval = 0

pytest_plugins = ["pytester"]  # tests/test_guards.py runs the leak check on a planted leak

THREAD_GRACE_S = 2.0
_reported_threads: weakref.WeakSet[threading.Thread] = weakref.WeakSet()  # failed once already


@pytest.fixture(autouse=True)
def no_leaked_threads():
    """Fail any test that leaves a thread it started running, daemon or not.

    Every PairScope thread is a daemon, so daemons count. A thread gets THREAD_GRACE_S
    seconds to finish after the test (a cancelled worker may need a moment to notice).
    """
    before = set(threading.enumerate())
    yield
    _assert_no_new_threads(before, "test")


@pytest.fixture(autouse=True, scope="module")
def no_threads_leaked_by_module_fixtures():
    """The same for module-scoped fixtures (a shared model, window or store)."""
    before = set(threading.enumerate())
    yield
    _assert_no_new_threads(before, "test module")


def _assert_no_new_threads(before, what):
    # A _DummyThread stands for a thread Python did not start (a QThread that ran Python
    # code): it never reports finishing, so its lifetime is not ours to judge here.
    leaked = [
        t
        for t in threading.enumerate()
        if t not in before and t not in _reported_threads and t.is_alive() and not isinstance(t, threading._DummyThread)
    ]
    deadline = time.monotonic() + THREAD_GRACE_S
    for t in leaked:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    leaked = [t for t in leaked if t.is_alive()]
    _reported_threads.update(leaked)
    assert not leaked, f"{what} leaked running threads: {[t.name for t in leaked]}"


@pytest.fixture(autouse=True, scope="session")
def gc_on_gui_thread(qapp):
    """Cyclic garbage is collected on the GUI thread only, as in the app
    (``launch.start_application``): a collection on a worker thread that frees a closed
    window's widgets crashed the suite (tests/test_gc_thread.py)."""
    from pairscope.app.gui.gc_thread import collect_on_gui_thread

    return collect_on_gui_thread()


@pytest.fixture(autouse=True)
def collect_after_test(gc_on_gui_thread):
    """A test that never runs the event loop still gets its garbage collected."""
    yield
    gc_on_gui_thread.check()


@pytest.fixture
def store(tmp_path):
    from pairscope.app.store import Store

    s = Store.create(tmp_path / "project.pairscope")
    yield s
    s.close()


@pytest.fixture
def pane(qtbot):
    """A shown response pane (two cards side by side) at the window's usual size."""
    from pairscope.widgets.response_view import ResponsePane

    widget = ResponsePane()
    qtbot.addWidget(widget)
    widget.resize(1100, 750)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    """One ``transformers serve`` for the session, loading model folders on demand; the tiny
    Qwen2-VL is saved twice (two served names behind one URL)."""
    from fault_proxy import ServedModel, serving_missing

    reason = serving_missing()
    if reason:
        pytest.skip(reason)
    from tiny_models import build_tiny_qwen2_vl

    root = tmp_path_factory.mktemp("served")
    model = build_tiny_qwen2_vl(root / "qwen")
    twin = root / "qwen-twin"
    shutil.copytree(model, twin)
    server = ServedModel(root / "serve.log").start()
    try:
        yield server, str(model), str(twin)
    finally:
        server.stop()


@pytest.fixture(autouse=True, scope="session")
def private_quick_check_cache(tmp_path_factory):
    """The quick-check cache (app/store/checked.py) of the tests' projects, and of the commands
    they run, stays out of the user's own."""
    if "PAIRSCOPE_CACHE_DIR" in os.environ:
        yield
        return
    os.environ["PAIRSCOPE_CACHE_DIR"] = str(tmp_path_factory.mktemp("quick-check-cache"))
    yield
    os.environ.pop("PAIRSCOPE_CACHE_DIR", None)
