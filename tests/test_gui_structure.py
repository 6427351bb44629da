"""The window composes its parts (issue 21, build 4): no import circle in app/gui, nothing
outside main_window.py sets attributes on the window, and one plain-text label helper. Each
check is proven on a violation planted in a scratch copy."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

from checkout import plant
from test_architecture import ROOT, imports_of, module_name, python_files

GUI = "app/gui"


def gui_import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module of app/gui → the modules of app/gui it imports: every import counts, at module
    level, inside a function or under ``if TYPE_CHECKING:``."""
    modules = {module_name(p, root): p for p in python_files(GUI, root=root)}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = set()
        for _line, imported, _eager in imports_of(path, root):
            # ``from .tasks import BackgroundOp`` names pairscope.app.gui.tasks.BackgroundOp
            for candidate in (imported, imported.rpartition(".")[0]):
                if candidate in modules:
                    if candidate != name:
                        graph[name].add(candidate)
                    break
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules that import each other, directly or round a circle: each strongly
    connected component of more than one module (Tarjan), short names sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(m.rpartition(".")[2] for m in component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_app_gui_has_no_import_circle():
    assert import_circles(gui_import_graph()) == []


def scratch_gui(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / GUI, tmp_path / GUI, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@pytest.mark.parametrize(
    "where, added, circle",
    [
        (  # a function-level import: the kind the old File menu made to build the next window
            "file_menu.py",
            "\n\ndef _planted():\n    from .main_window import MainWindow\n\n    return MainWindow\n",
            ["file_menu", "main_window"],
        ),
        (  # a type-only import, round the modules that reach the judge dock
            "judge_worker.py",
            "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .main_window import MainWindow\n",
            ["actions", "judge_dock", "judge_worker", "main_window"],
        ),
    ],
)
def test_a_planted_import_circle_is_found(tmp_path, where, added, circle):
    root = scratch_gui(tmp_path)
    path = root / GUI / where
    plant(root, {f"{GUI}/{where}": path.read_text() + added})
    assert import_circles(gui_import_graph(root)) == [circle]


# -- nothing sets attributes on the window from outside ------------------------------------

#: Names the window goes by where it is passed in (``self.window``, ``w``, ``self.window_`` …).
WINDOWISH = re.compile(r"(^|\.)_?(w|win|window_?|main_?window|parent|host|owner)$")


def window_attribute_writes(root: Path = ROOT) -> list[str]:
    """``file:line target`` for every assignment to (or ``setattr`` on) an attribute of the
    window in app/gui outside main_window.py."""
    found = []
    for path in python_files(GUI, root=root):
        if path.name == "main_window.py":
            continue
        rel = path.relative_to(root)
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
                if node.args and WINDOWISH.search(ast.unparse(node.args[0])):
                    found.append(f"{rel}:{node.lineno} {ast.unparse(node)}")
                continue
            else:
                continue
            while any(isinstance(t, (ast.Tuple, ast.List)) for t in targets):
                targets = [e for t in targets for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])]
            for target in targets:
                if isinstance(target, ast.Attribute) and WINDOWISH.search(ast.unparse(target.value)):
                    found.append(f"{rel}:{target.lineno} {ast.unparse(target)}")
    return found


def test_no_module_sets_attributes_on_the_window():
    assert window_attribute_writes() == []


def test_planted_attribute_writes_on_the_window_are_found(tmp_path):
    root = scratch_gui(tmp_path)
    planted = (
        "def install(window, w, controller):\n"
        "    window.successor = controller\n"  # 2
        "    w.cheat_sheet, other = 1, 2\n"  # 3
        "    setattr(w, 'file_actions', {})\n"  # 4
        "    controller.queue_order = 'id'\n"  # not the window
        "\n\n"
        "class Part:\n"
        "    def __init__(self, window):\n"
        "        self.window = window\n"  # its own attribute
        "        self.window.export_dialog = None\n"  # 11
        "        self.window_.count += 1\n"  # 12
    )
    plant(root, {f"{GUI}/planted.py": planted})
    assert window_attribute_writes(root) == [
        "app/gui/planted.py:2 window.successor",
        "app/gui/planted.py:3 w.cheat_sheet",
        "app/gui/planted.py:4 setattr(w, 'file_actions', {})",
        "app/gui/planted.py:11 self.window.export_dialog",
        "app/gui/planted.py:12 self.window_.count",
    ]


# -- one plain-text label helper -------------------------------------------------------------

#: The one place a QLabel is set to plain text (pairscope.widgets.plain_text.plain_label), and
#: the one message box that is (tasks.py: a static-looking box that quotes untrusted text).
PLAIN_TEXT_HOMES = {"widgets/plain_text.py": 1, "app/gui/tasks.py": 1}


def plain_text_settings(root: Path = ROOT) -> dict[str, int]:
    """How often each file of widgets/ and app/gui names the plain-text format
    (``Qt.TextFormat.PlainText`` or ``Qt.PlainText``)."""
    counts: dict[str, int] = {}
    for folder in ("widgets", GUI):
        for path in python_files(folder, root=root):
            n = sum(
                1
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.Attribute)
                and node.attr == "PlainText"
                and ast.unparse(node.value) in ("Qt", "Qt.TextFormat")
            )
            if n:
                counts[str(path.relative_to(root))] = n
    return counts


def test_labels_are_plain_text_through_one_helper():
    assert plain_text_settings() == PLAIN_TEXT_HOMES


def test_a_planted_plain_text_label_is_found(tmp_path):
    root = scratch_gui(tmp_path)
    shutil.copytree(ROOT / "widgets", root / "widgets", ignore=shutil.ignore_patterns("__pycache__"))
    plant(
        root,
        {
            "widgets/caption.py": "def caption(QLabel, Qt):\n    return QLabel(textFormat=Qt.TextFormat.PlainText)\n",
            f"{GUI}/status.py": "def status(label, Qt):\n    label.setTextFormat(Qt.PlainText)\n",
        },
    )
    assert plain_text_settings(root) == {**PLAIN_TEXT_HOMES, "widgets/caption.py": 1, f"{GUI}/status.py": 1}
