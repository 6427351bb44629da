"""All SQL lives in ``app/store/``: no SQL text and no ``.query(``/``.execute(`` calls elsewhere in app/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "app" / "store"

#: Files that still hold SQL outside app/store/, owned by others. TODO(lead): move their SQL into
#: app/store/ and empty this list; a file listed here that has become clean fails the test below.
SQL_OUTSIDE_STORE_TODO: set[str] = set()

# Upper-case keywords as this code base writes SQL; English prose ("Select a file") is not matched.
_SQL = re.compile(
    r"\bSELECT\b|\bINSERT\s+(OR\s+\w+\s+)?INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE\s+FROM\b|\bPRAGMA\b"
    r"|\b(CREATE|DROP|ALTER)\s+(TEMP\s+|VIRTUAL\s+)?(TABLE|INDEX|TRIGGER|VIEW)\b"
    r"|^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT)\b"
)
_SQL_CALLS = {"query", "execute", "executemany", "executescript"}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def sql_violations(source: str, name: str) -> list[str]:
    """``name:line: what`` for every SQL string literal (docstrings aside) and every
    ``.query(``/``.execute(``-style call in ``source``."""
    tree = ast.parse(source, filename=name)
    docs = _docstrings(tree)
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if _SQL.search(node.value):
                bad.append(f"{name}:{node.lineno}: SQL text {node.value.strip()[:40]!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SQL_CALLS:
            bad.append(f"{name}:{node.lineno}: call .{node.func.attr}(")
    return sorted(set(bad), key=lambda s: (s.split(":")[0], int(s.split(":")[1]), s))


def app_files_outside_store():
    for path in sorted((ROOT / "app").rglob("*.py")):
        if STORE not in path.parents:
            yield path.relative_to(ROOT).as_posix(), path


def test_no_sql_outside_the_store():
    bad = []
    for name, path in app_files_outside_store():
        if name not in SQL_OUTSIDE_STORE_TODO:
            bad += sql_violations(path.read_text(encoding="utf-8"), name)
    assert bad == [], "SQL belongs in app/store/ (a Store method returning plain records):\n" + "\n".join(bad)


def test_the_todo_list_only_names_files_that_still_hold_sql():
    files = dict(app_files_outside_store())
    stale = [
        name
        for name in sorted(SQL_OUTSIDE_STORE_TODO)
        if name not in files or not sql_violations(files[name].read_text(encoding="utf-8"), name)
    ]
    assert stale == [], f"remove from SQL_OUTSIDE_STORE_TODO (no SQL left there): {stale}"


def test_the_checker_finds_a_planted_violation(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""A module docstring may say SELECT."""\n'
        "def load(store, conn, table):\n"
        '    """So may a function\'s: INSERT INTO x."""\n'
        '    title = "Select a file to import"\n'
        '    rows = store.query("SELECT id FROM items")\n'
        '    conn.execute(f"INSERT OR IGNORE INTO {table} VALUES (?)", (1,))\n'
        '    sql = "UPDATE items SET import_id = ?"\n'
        "    conn.executemany(sql, [])\n"
        '    return title, rows, "DELETE FROM labels", "BEGIN"\n',
        encoding="utf-8",
    )
    found = sql_violations(planted.read_text(encoding="utf-8"), "planted.py")
    assert found == [
        "planted.py:5: SQL text 'SELECT id FROM items'",
        "planted.py:5: call .query(",
        "planted.py:6: SQL text 'INSERT OR IGNORE INTO'",
        "planted.py:6: call .execute(",
        "planted.py:7: SQL text 'UPDATE items SET import_id = ?'",
        "planted.py:8: call .executemany(",
        "planted.py:9: SQL text 'BEGIN'",
        "planted.py:9: SQL text 'DELETE FROM labels'",
    ]
