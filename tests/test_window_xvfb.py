"""The first window on a real X server (issue 24, builds 2 and 3): the installed
``pairscope`` process on Xvfb under a window manager (openbox), looked at with xdotool,
xwininfo and xprop — the window, frame included, within a 1440×900 and a 1280×720 screen,
the annotator named in the title and the status bar; SIGINT and SIGTERM end it as Quit
does (the label typed is in the project), with status 130 / 0 and no crash.

Needs the apt packages ``xvfb openbox xdotool x11-utils`` (``.ci/run`` installs them).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from helpers import good_bad_items
from pairscope.app.store import Store

pytestmark = pytest.mark.slow

TOOLS = ("Xvfb", "openbox", "xdotool", "xwininfo", "xprop")


def _poll(check, timeout=120.0, what="condition"):  # a bound for a loaded machine, not a speed target
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@contextlib.contextmanager
def x_server(tmp_path, size):
    """An Xvfb screen of ``size`` with openbox on it; yields the environment to run in."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must install {missing} (apt): .ci/run does")
        pytest.skip(f"needs {missing} (apt install xvfb openbox xdotool x11-utils)")
    read, write = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", f"{size[0]}x{size[1]}x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    with os.fdopen(read) as pipe:
        display = f":{pipe.readline().strip()}"
    env = {**os.environ, "DISPLAY": display, "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    env.pop("QT_QPA_PLATFORM", None)
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


def tool(env, *args, check=True) -> str:
    return subprocess.run(args, env=env, check=check, capture_output=True, text=True, timeout=60).stdout


@contextlib.contextmanager
def window_process(env, project, annotator="ann"):
    """``pairscope PROJECT --annotator NAME`` running; yields (process, X window id)."""
    app = subprocess.Popen(
        [sys.executable, "-m", "pairscope.app.cli.main", str(project), "--annotator", annotator],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        window = _poll(
            lambda: (
                app.poll() is None and tool(env, "xdotool", "search", "--name", "^PairScope — ", check=False).split()
            ),
            what="the window",
        )[-1]
        yield app, window
    finally:
        if app.poll() is None:
            app.kill()
        app.communicate(timeout=10)


def frame_on_screen(env, window) -> tuple[tuple[int, int, int, int], tuple[int, int]]:
    """The window's frame (x, y, right, bottom, all inclusive of the window manager's frame)
    and the screen's size."""
    info = tool(env, "xwininfo", "-id", window)
    x = int(re.search(r"Absolute upper-left X:\s+(-?\d+)", info)[1])
    y = int(re.search(r"Absolute upper-left Y:\s+(-?\d+)", info)[1])
    width = int(re.search(r"Width:\s+(\d+)", info)[1])
    height = int(re.search(r"Height:\s+(\d+)", info)[1])
    extents = tool(env, "xprop", "-id", window, "_NET_FRAME_EXTENTS", check=False)
    found = re.findall(r"\d+", extents.partition("=")[2])
    left, right, top, bottom = (int(v) for v in found) if len(found) == 4 else (0, 0, 0, 0)
    root = tool(env, "xwininfo", "-root")
    screen = int(re.search(r"Width:\s+(\d+)", root)[1]), int(re.search(r"Height:\s+(\d+)", root)[1])
    return (x - left, y - top, x + width + right, y + height + bottom), screen


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items(good_bad_items(5))
    return path


@pytest.mark.parametrize("size", [(1440, 900), (1280, 720)])
def test_the_first_window_fits_the_screen_and_names_the_annotator(tmp_path, project, size):
    with x_server(tmp_path, size) as env, window_process(env, project, "Ada Lovelace") as (app, window):
        time.sleep(2.0)  # the window manager frames it; the window then fits itself once more
        (left, top, right, bottom), screen = frame_on_screen(env, window)
        assert screen == size
        assert left >= 0 and top >= 0 and right <= size[0] and bottom <= size[1], (left, top, right, bottom)
        title = tool(env, "xdotool", "getwindowname", window)
        assert "Ada Lovelace" in title and "p.pairscope" in title
        tool(env, "xdotool", "windowactivate", "--sync", window)
        tool(env, "xdotool", "key", "ctrl+q")
        assert app.wait(20) == 0


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
def test_a_signal_closes_the_window_as_quit_does_without_a_crash(tmp_path, project, sig, status):
    with x_server(tmp_path, (1440, 900)) as env, window_process(env, project) as (app, window):
        tool(env, "xdotool", "windowactivate", "--sync", window)
        time.sleep(1.0)
        tool(env, "xdotool", "key", "1")  # a label, saved before the signal arrives

        def labeled():
            with Store.open(project, readonly=True) as store:
                return store.current_label(store.item_id("it0"), "ann") is not None

        _poll(labeled, what="the label of the first key")
        app.send_signal(sig)
        code = app.wait(120)
        _out, err = app.communicate(timeout=10)
    assert code == status, (code, err[-2000:])
    assert "Traceback" not in err and "Segmentation fault" not in err and "KeyboardInterrupt" not in err, err
    with Store.open(project, readonly=True) as store:
        assert store.current_label(store.item_id("it0"), "ann").outcome == "prefer"


def test_open_demo_without_a_screen_prints_the_display_and_a_screenshot_command(tmp_path):
    """``open-demo.sh`` on a machine without a screen: the virtual display it starts is named,
    with a command that takes a screenshot of it (which works), and Ctrl-C ends it cleanly."""
    if shutil.which("Xvfb") is None or shutil.which("import") is None:
        pytest.skip("needs Xvfb and ImageMagick's import")
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "cfg"), PAIRSCOPE_ANNOTATOR="demo")
    script = subprocess.Popen(
        ["bash", str(root / "packaging" / "open-demo.sh"), str(tmp_path / "demo.pairscope")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        lines = []
        while not any("screenshot:" in line for line in lines):
            line = script.stderr.readline()
            assert line, "".join(lines)
            lines.append(line)
        command = next(line for line in lines if "screenshot:" in line).split("screenshot:")[1].split("(")[0].strip()
        display = re.search(r"DISPLAY=(:\d+)", command)[1]
        shot = tmp_path / "shot.png"
        title = _poll(
            lambda: tool({**env, "DISPLAY": display}, "xdotool", "search", "--name", "^PairScope — ", check=False),
            timeout=120.0,
            what="the demo window",
        )
        assert title

        def painted() -> bool:  # a window mapped but not yet painted shoots as one flat colour (~300 B)
            done = subprocess.run(
                ["import", "-window", "root", str(shot)], env={**env, "DISPLAY": display}, timeout=60, check=False
            )
            return done.returncode == 0 and shot.stat().st_size > 1000

        _poll(painted, timeout=120.0, what="a screenshot of the painted window")
        os.killpg(script.pid, signal.SIGINT)  # what Ctrl-C in its terminal does
        assert script.wait(120) in (0, 130)
    finally:
        if script.poll() is None:
            os.killpg(script.pid, signal.SIGKILL)
            script.wait()
    assert "Traceback" not in script.stderr.read()
