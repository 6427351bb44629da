"""All SQL lives in ``app/store/``: outside it (the rest of app/, models/, widgets/) no SQL text
in any case, and no use of a SQLite connection: no ``.conn``, no ``.execute(``-style call, no
``pd.read_sql``, no ``sqlite3.connect``, no connection bound from ``store.transaction()``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "app" / "store"

#: Files that still hold SQL outside app/store/, owned by others. TODO(lead): move their SQL into
#: app/store/ and empty this list; a file listed here that has become clean fails the test below.
SQL_OUTSIDE_STORE_TODO: set[str] = set()

# SQL in any case, told from English prose ("Select a file", "where there is none") by its
# shape: a column list after SELECT, an operator after WHERE, a statement alone on its line.
_SQL = re.compile(
    r"\bselect\s+(distinct\s+)?(\*|[\w.]+\s*\(|[\w.]+\s*(,|\s+from\b|\s+as\s+\w+))"
    r"|\binsert\s+(or\s+\w+\s+)?into\b|\breplace\s+into\b|\bupdate\s+\w+\s+set\b|\bdelete\s+from\b"
    r"|\bpragma\s+\w+"
    r"|\b(create|drop|alter)\s+(temp\s+|temporary\s+|virtual\s+|unique\s+)?(table|index|trigger|view)\b"
    r"|\bwhere\s+[\w.]+\s*(=|<|>|!=|\bin\s*\(|\bis\s+(not\s+)?null\b|\blike\s+[?'\"]|\bbetween\b)"
    r"|\b(order|group)\s+by\s+[\w.]+\s*(,|\bdesc\b|\basc\b|\blimit\b|\))"
    r"|\b(inner\s+|left\s+|cross\s+)?join\s+\w+\s+(\w+\s+)?(on|using)\b"
    r"|^\s*(begin(\s+(deferred|immediate|exclusive))?(\s+transaction)?|commit|end\s+transaction"
    r"|rollback(\s+to\s+\w+)?|savepoint\s+\w+|release(\s+savepoint)?\s+\w+)\s*;?\s*$",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%\(\w+\)s|%s")  # str.format / %-style fields
#: Calls that run SQL or reach a connection: sqlite3, sqlite-utils (.query) and pandas.
_SQL_CALLS = {
    "query",
    "execute",
    "executemany",
    "executescript",
    "cursor",
    "backup",
    "iterdump",
    "read_sql",
    "read_sql_query",
    "read_sql_table",
    "to_sql",
}
_CONNECTION_ATTRS = {"conn", "_conn", "connection"}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _text(node: ast.AST) -> str | None:
    """The text a string expression builds, with ``x`` for each interpolated value:
    ``f"SELECT {cols} FROM t"`` and ``"PRAGMA " + name`` read as ``SELECT x FROM t``, ``PRAGMA x``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _PLACEHOLDER.sub("x", node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v) or "x" if isinstance(v, ast.Constant) else "x" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        left, right = _text(node.left), _text(node.right)
        if left is None and right is None:
            return None
        return (left or "x") + ("" if isinstance(node.op, ast.Mod) else (right or "x"))
    return None


def _call_name(func: ast.AST) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def sql_violations(source: str, name: str) -> list[str]:
    """``name:line: what`` for every SQL string (docstrings aside) and every use of a
    connection in ``source``."""
    tree = ast.parse(source, filename=name)
    docs = _docstrings(tree)
    bad = []

    def visit(node: ast.AST) -> None:
        text = None if id(node) in docs else _text(node)
        if text is not None:
            if _SQL.search(text):
                bad.append(f"{name}:{node.lineno}: SQL text {text.strip()[:40]!r}")
            return  # its parts are part of this text
        if isinstance(node, ast.Call):
            called = _call_name(node.func)
            if called in _SQL_CALLS:
                bad.append(f"{name}:{node.lineno}: call .{called}(")
            elif called == "connect" and "sqlite" in ast.unparse(node.func):
                bad.append(f"{name}:{node.lineno}: call {ast.unparse(node.func)}(")
        elif isinstance(node, ast.Attribute) and node.attr in _CONNECTION_ATTRS:
            bad.append(f"{name}:{node.lineno}: connection .{node.attr}")
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            if _call_name(getattr(node.context_expr, "func", None)) == "transaction":
                bad.append(f"{name}:{node.context_expr.lineno}: binds the connection of .transaction()")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return sorted(set(bad), key=lambda s: (s.split(":")[0], int(s.split(":")[1]), s))


def app_files_outside_store():
    """Production code outside app/store/: the rest of app/, models/ and widgets/."""
    for folder in ("app", "models", "widgets"):
        for path in sorted((ROOT / folder).rglob("*.py")):
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
        "planted.py:6: SQL text 'INSERT OR IGNORE INTO x VALUES (?)'",
        "planted.py:6: call .execute(",
        "planted.py:7: SQL text 'UPDATE items SET import_id = ?'",
        "planted.py:8: call .executemany(",
        "planted.py:9: SQL text 'BEGIN'",
        "planted.py:9: SQL text 'DELETE FROM labels'",
    ]


def test_lower_case_and_assembled_sql_is_caught():
    planted = (
        "def load(cols, name, where):\n"
        '    a = f"select {cols} from items"\n'
        '    b = "pragma " + name\n'
        '    c = "select count(*) from labels where annotator = ?"\n'
        '    d = "delete from labels where id in (%s)" % where\n'
        '    e = "  commit  "\n'
        '    f = "Create Index ix on items(ext_id)"\n'
        '    g = "SELECT {} FROM items".format(cols)\n'
        "    return a, b, c, d, e, f, g\n"
    )
    assert sql_violations(planted, "planted.py") == [
        "planted.py:2: SQL text 'select x from items'",
        "planted.py:3: SQL text 'pragma x'",
        "planted.py:4: SQL text 'select count(*) from labels where annota'",
        "planted.py:5: SQL text 'delete from labels where id in (x)'",
        "planted.py:6: SQL text 'commit'",
        "planted.py:7: SQL text 'Create Index ix on items(ext_id)'",
        "planted.py:8: SQL text 'SELECT x FROM items'",
    ]


def test_prose_is_not_sql():
    prose = (
        "NOTES = [\n"
        '    "Select a file to import",\n'
        '    "select the items from the list",\n'
        '    "; where there is none, the reference",\n'
        '    "Begin labeling",\n'
        '    "Order by strength",\n'
        '    "Update the schema first",\n'
        '    "the release notes",\n'
        "]\n"
    )
    assert sql_violations(prose, "prose.py") == []


def test_any_use_of_a_connection_is_caught():
    planted = (
        "import sqlite3\n"
        "import pandas as pd\n"
        "def frame(store, path):\n"
        "    df = pd.read_sql(store.sql_for_items(), store.conn)\n"
        "    raw = sqlite3.connect(path)\n"
        "    with store.transaction() as conn:\n"
        "        cur = conn.cursor()\n"
        "    store._conn.backup(raw)\n"
        "    df.to_sql('items', raw)\n"
        "    with store.transaction():  # a transaction without its connection is the store's API\n"
        "        store.add_label(None)\n"
        "    return cur, sqlite3.DatabaseError\n"
    )
    assert sql_violations(planted, "planted.py") == [
        "planted.py:4: call .read_sql(",
        "planted.py:4: connection .conn",
        "planted.py:5: call sqlite3.connect(",
        "planted.py:6: binds the connection of .transaction()",
        "planted.py:7: call .cursor(",
        "planted.py:8: call .backup(",
        "planted.py:8: connection ._conn",
        "planted.py:9: call .to_sql(",
    ]


def test_the_checker_finds_the_sql_the_store_holds():
    """Recall on the real SQL: every line of app/store/ that the upper-case-only guard this
    replaced flagged is still found."""
    upper = re.compile(
        r"\bSELECT\b|\bINSERT\s+(OR\s+\w+\s+)?INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE\s+FROM\b|\bPRAGMA\b"
        r"|\b(CREATE|DROP|ALTER)\s+(TEMP\s+|VIRTUAL\s+)?(TABLE|INDEX|TRIGGER|VIEW)\b"
        r"|^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT)\b"
    )
    missed = []
    for path in sorted(STORE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        docs = _docstrings(tree)
        found = {int(v.split(":")[1]) for v in sql_violations(source, "s") if ": SQL text" in v}
        for node in ast.walk(tree):
            text = _text(node)
            if text and id(node) not in docs and upper.search(text) and not _SQL.search(text):
                if node.lineno not in found:
                    missed.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text.strip()[:50]!r}")
    assert missed == []
