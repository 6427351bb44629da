"""The project's label schema versions (table ``label_schemas``, schema migration 5).

Each row is one version: the schema as JSON (``app.labeling.schema.LabelSchema.to_json``), its
Markdown guidelines, when it was stored and a note. Versions are only ever added. Version 1
is the built-in default; a project that never stored a schema has no rows and uses it.
``labels.schema_version`` names the version a label was given under (written by
``Store.add_label``).

The store compares schemas as JSON values and never interprets them (that is
``app/labeling/schema.py``'s business).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .connection import utc_now
from .schema import SchemaError

if TYPE_CHECKING:  # pragma: no cover
    from .connection import StoreBase

#: The version of the built-in schema (the one a project without rows uses).
BUILTIN_VERSION = 1
_COLUMNS = "version, schema, guidelines, created_at, note"


@dataclass(frozen=True)
class SchemaRow:
    """One stored version."""

    version: int
    schema: str
    guidelines: str
    created_at: str
    note: str


class LabelSchemaConflict(SchemaError):
    """Two projects hold different label schemas under the same version number."""


def same_schema(a: SchemaRow, b: SchemaRow) -> bool:
    """The same schema (as JSON values) and the same guidelines."""
    try:
        return json.loads(a.schema) == json.loads(b.schema) and a.guidelines == b.guidelines
    except ValueError:
        return a.schema == b.schema and a.guidelines == b.guidelines


def label_schema_rows(store: StoreBase) -> list[SchemaRow]:
    """Every stored version, oldest first (empty: the project uses the built-in schema)."""
    return [SchemaRow(*r) for r in store.query(f"SELECT {_COLUMNS} FROM label_schemas ORDER BY version")]


def label_schema_row(store: StoreBase, version: int | None = None) -> SchemaRow | None:
    """The stored version ``version`` (``None``: the newest), or ``None`` when not stored."""
    if version is None:
        rows = store.query(f"SELECT {_COLUMNS} FROM label_schemas ORDER BY version DESC LIMIT 1")
    else:
        rows = store.query(f"SELECT {_COLUMNS} FROM label_schemas WHERE version = ?", (version,))
    return SchemaRow(*rows[0]) if rows else None


def add_label_schema(
    store: StoreBase, schema: str, guidelines: str, note: str, *, builtin: tuple[str, str] | None = None
) -> tuple[int, bool]:
    """Store a schema as the project's newest version: ``(version, added)``.

    When it equals the newest stored version nothing is written (``added`` is False). A
    project without rows first stores ``builtin`` (the built-in schema's JSON and
    guidelines) as version 1, so that the labels given before keep a stored meaning.
    """
    new = SchemaRow(0, schema, guidelines, "", note)
    with store.transaction() as conn:
        latest = conn.execute(f"SELECT {_COLUMNS} FROM label_schemas ORDER BY version DESC LIMIT 1").fetchone()
        if latest is None and builtin is not None:
            conn.execute(
                f"INSERT INTO label_schemas ({_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                (BUILTIN_VERSION, builtin[0], builtin[1], utc_now(), "built-in default"),
            )
            latest = (BUILTIN_VERSION, builtin[0], builtin[1], "", "")
        if latest is not None and same_schema(SchemaRow(*latest), new):
            return latest[0], False
        version = (latest[0] if latest else 0) + 1
        conn.execute(
            f"INSERT INTO label_schemas ({_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
            (version, schema, guidelines, utc_now(), note),
        )
    return version, True


def current_schema_version(store: StoreBase) -> int:
    """The version new labels are given under: the newest stored, else the built-in one."""
    return store.query("SELECT coalesce(max(version), ?) FROM label_schemas", (BUILTIN_VERSION,))[0][0]


def label_schema_version(store: StoreBase, label_uuid: str) -> int | None:
    """The schema version a stored label was given under (``None``: before schemas, i.e. the
    built-in one; ``KeyError`` for an unknown uuid)."""
    rows = store.query("SELECT schema_version FROM labels WHERE uuid = ?", (label_uuid,))
    if not rows:
        raise KeyError(f"no label with uuid {label_uuid}")
    return rows[0][0]


def labels_per_schema_version(store: StoreBase) -> dict[int, int]:
    """How many label rows were given under each version (before schemas: the built-in one)."""
    rows = store.query(
        "SELECT coalesce(schema_version, ?), count(*) FROM labels GROUP BY 1 ORDER BY 1", (BUILTIN_VERSION,)
    )
    return {version: count for version, count in rows}


# -- merging ---------------------------------------------------------------------------------


def has_label_schemas(conn: sqlite3.Connection) -> bool:
    """Whether a project file has the ``label_schemas`` table (schema 5 and later)."""
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'label_schemas'").fetchone()
        is not None
    )


def schema_rows_of(conn: sqlite3.Connection) -> list[SchemaRow]:
    """Every version in a connection's project (another project's, for merging)."""
    if not has_label_schemas(conn):
        return []
    return [SchemaRow(*r) for r in conn.execute(f"SELECT {_COLUMNS} FROM label_schemas ORDER BY version")]


def conflict_message(source: str, target: str, version: int) -> str:
    return (
        f"{source} and {target} hold different label schemas under the same version {version}: their labels"
        f" of version {version} would mean different things. Give one project the other's schema"
        " (pairscope schema --db P export, then set) and merge again"
    )


def copy_label_schemas(conn: sqlite3.Connection, rows: list[SchemaRow], source: str, target: str) -> tuple[int, int]:
    """Copy another project's versions into the project of ``conn`` (inside the caller's
    transaction): ``(added, present)``. A version the target holds with another schema
    raises :class:`LabelSchemaConflict` (the caller's transaction is then rolled back)."""
    added = present = 0
    for row in rows:
        stored = conn.execute(f"SELECT {_COLUMNS} FROM label_schemas WHERE version = ?", (row.version,)).fetchone()
        if stored is None:
            conn.execute(
                f"INSERT INTO label_schemas ({_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                (row.version, row.schema, row.guidelines, row.created_at, row.note),
            )
            added += 1
        elif same_schema(SchemaRow(*stored), row):
            present += 1
        else:
            raise LabelSchemaConflict(conflict_message(source, target, row.version))
    return added, present
