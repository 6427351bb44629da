"""The judging-mode registry (``app/judge/modes.py``) is the one place that branches on a mode's
name: elsewhere a mode is asked (``get_mode(name).votes_on_preference``), never compared."""

from __future__ import annotations

import ast
from pathlib import Path

from pairscope.app.judge.modes import MODES

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = "app/judge/modes.py"


def _mode_names(node: ast.AST | None, names: set[str], aliases: dict[str, frozenset[str]]) -> frozenset[str]:
    """The mode names a literal, a tuple/list/set of them, or a name bound to one, stands for."""
    if isinstance(node, ast.Constant) and node.value in names:
        return frozenset({node.value})
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return frozenset().union(*(_mode_names(e, names, aliases) for e in node.elts))
    if isinstance(node, ast.Name):
        return aliases.get(node.id, frozenset())
    return frozenset()


def mode_name_branches(source: str, filename: str, names: set[str]) -> list[str]:
    """``file:line: ...`` for every comparison with, and every ``case`` on, a mode name.

    A comparison with *every* name (``mode in ("pairwise", "pointwise", "step")``) checks that
    a mode exists rather than picking one; it is flagged once a mode is added that it misses.
    """
    tree = ast.parse(source, filename=filename)
    aliases: dict[str, frozenset[str]] = {}
    for node in ast.walk(tree):  # PAIRWISE = "pairwise", then `mode == PAIRWISE`
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found = _mode_names(node.value, names, {})
            for target in targets:
                if found and isinstance(target, ast.Name):
                    aliases[target.id] = found
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            named = frozenset().union(*(_mode_names(o, names, aliases) for o in [node.left, *node.comparators]))
            if named and named != names:
                bad.append(f"{filename}:{node.lineno}: compares with {', '.join(sorted(named))}")
        elif isinstance(node, ast.match_case):
            for pattern in ast.walk(node.pattern):
                if isinstance(pattern, ast.MatchValue) and _mode_names(pattern.value, names, aliases):
                    bad.append(f"{filename}:{pattern.lineno}: case {ast.unparse(pattern.value)}")
    return sorted(bad, key=lambda s: int(s.split(":")[1]))


def production_files():
    for folder in ("app", "models", "widgets"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name != REGISTRY:
                yield name, path


def test_nothing_outside_the_registry_branches_on_a_mode_name():
    bad = []
    for name, path in production_files():
        bad += mode_name_branches(path.read_text(encoding="utf-8"), name, set(MODES))
    assert bad == [], "ask the mode (app/judge/modes.py) instead of comparing its name:\n" + "\n".join(bad)


def test_the_registry_knows_the_modes_the_rule_is_about():
    assert {"pairwise", "pointwise", "step"} <= set(MODES)


def test_the_checker_finds_planted_branches():
    planted = (
        "STEP = 'step'\n"
        "PREFERENCE = ('pairwise', 'pointwise')\n"
        "def show(run, mode, known):\n"
        "    title = 'pairwise'  # naming a mode is fine; comparing with it is not\n"
        "    if run.mode == 'pairwise':\n"
        "        pass\n"
        "    if mode.name != STEP or mode in PREFERENCE:\n"
        "        pass\n"
        "    if 'pointwise' in known or mode not in {'step'}:\n"
        "        pass\n"
        "    if mode in ('pairwise', 'pointwise', 'step'):  # every mode: a validity check\n"
        "        pass\n"
        "    match run.mode:\n"
        "        case 'step' | 'pointwise':\n"
        "            pass\n"
        "        case other:\n"
        "            pass\n"
        "    return title\n"
    )
    assert mode_name_branches(planted, "planted.py", {"pairwise", "pointwise", "step"}) == [
        "planted.py:5: compares with pairwise",
        "planted.py:7: compares with step",
        "planted.py:7: compares with pairwise, pointwise",
        "planted.py:9: compares with pointwise",
        "planted.py:9: compares with step",
        "planted.py:14: case 'step'",
        "planted.py:14: case 'pointwise'",
    ]
