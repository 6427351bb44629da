"""The first keys of a session, typed for real: the installed ``pairscope`` window on an X
server (Xvfb) under a window manager (openbox), keys sent by xdotool through the X server to
whatever has the keyboard focus — not to a widget chosen by the test.

Needs the apt packages ``xvfb openbox xdotool`` (``.ci/run`` installs them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from pairscope.app.records import Item, Reference, Response
from pairscope.app.store import Store

pytestmark = pytest.mark.slow

TOOLS = ("Xvfb", "openbox", "xdotool")


def _poll(check, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def x_display(tmp_path):
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must install {missing} (apt): .ci/run does")
        pytest.skip(f"needs {missing} (apt install xvfb openbox xdotool)")
    read, write = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", "1440x900x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    with os.fdopen(read) as pipe:
        display = f":{pipe.readline().strip()}"
    env = {**os.environ, "DISPLAY": display, "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    env.pop("QT_QPA_PLATFORM", None)  # the real xcb platform, not offscreen
    env.pop("WAYLAND_DISPLAY", None)
    wm = subprocess.Popen(["openbox"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        yield env
    finally:
        for proc in (wm, xvfb):
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def xdotool(env, *args, check=True) -> str:
    return subprocess.run(["xdotool", *args], env=env, check=check, capture_output=True, text=True, timeout=30).stdout


def test_real_keys_under_a_window_manager_label_search_and_return(x_display, tmp_path):
    project = tmp_path / "p.pairscope"
    with Store.create(project) as store:
        store.add_items(
            [
                Item(
                    ext_id=f"it{i}",
                    prompt=f"Question {i}: which is right?",
                    responses=(Response(0, f"GOOD {i}"), Response(1, f"BAD {i}")),
                    reference=Reference(ranking=(0, 1)),
                )
                for i in range(5)
            ]
        )
    env = x_display
    app = subprocess.Popen(
        [sys.executable, "-m", "pairscope.app.cli.main", str(project), "--annotator", "ann"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def label(ext_id):
        with Store.open(project, readonly=True) as store:
            found = store.current_label(store.item_id(ext_id), "ann")
            return found.outcome if found else None

    try:
        window = _poll(
            lambda: app.poll() is None and xdotool(env, "search", "--name", "PairScope", check=False).split(),
            what="the window",
        )[0]
        xdotool(env, "windowactivate", "--sync", window)
        time.sleep(1.0)  # the first paint, and focus settled by the window manager
        xdotool(env, "key", "1")
        assert _poll(lambda: label("it0"), what="the first key's label") == "prefer"

        xdotool(env, "key", "ctrl+f")
        xdotool(env, "type", "--delay", "30", "Question 3")
        xdotool(env, "key", "Return")  # filters and gives the keyboard back to labeling
        time.sleep(0.5)
        xdotool(env, "key", "t")
        assert _poll(lambda: label("it3"), what="T after Enter in the search box") == "tie"

        xdotool(env, "key", "ctrl+f")
        xdotool(env, "key", "Escape")
        xdotool(env, "key", "b")
        assert _poll(lambda: label("it3") == "both_bad", what="B after Esc in the search box")

        xdotool(env, "key", "ctrl+q")
        assert app.wait(15) == 0
    finally:
        if app.poll() is None:
            app.kill()
        out, err = app.communicate(timeout=10)
    assert "Traceback" not in err, err
    assert "QFontDatabase" not in err  # Qt's font notices are not printed on every run
