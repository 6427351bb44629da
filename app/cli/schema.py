"""``pairscope schema --db P show|set FILE|export``: the project's label schema from the
command line (the parser is in :mod:`.cli`)."""

from __future__ import annotations

import json
import sys

from ..project import open_project


def run_schema_command(args) -> int:
    """Run ``args.schema_action`` (show, set or export); the exit status."""
    from ..labeling.schema import (
        DEFAULT_SCHEMA,
        MAX_NOTE,
        LabelSchemaError,
        label_schema_problems,
        load_guidelines,
        load_schema,
        to_toml,
    )
    from ..labeling.session import project_label_schema
    from ..store.label_schemas import add_label_schema, label_schema_rows, labels_per_schema_version

    if args.schema_action == "set":
        schema = load_schema(args.file)
        guidelines = schema.guidelines if args.guidelines is None else load_guidelines(args.guidelines)
        if len(args.note) > MAX_NOTE:
            raise LabelSchemaError([f"--note is longer than {MAX_NOTE:,} characters"])
        if problems := label_schema_problems(schema.to_json(), guidelines):  # what merge checks too
            raise LabelSchemaError(problems)
        builtin = (DEFAULT_SCHEMA.to_json(), DEFAULT_SCHEMA.guidelines)
        with open_project(args.db) as store:
            note = args.note or f"from {args.file.name}"
            version, added = add_label_schema(store, schema.to_json(), guidelines, note, builtin=builtin)
            earlier = sum(n for v, n in labels_per_schema_version(store).items() if v < version)
        if not added:
            print(f"unchanged: {args.db} already labels under this schema (version {version})")
            return 0
        kept = f"; {earlier:,} labels given under earlier versions keep their meaning" if earlier else ""
        print(f"stored label schema version {version} in {args.db}{kept}")
        return 0
    with open_project(args.db, readonly=True) as store:
        schema = project_label_schema(store, args.schema_version)
        rows, counts = label_schema_rows(store), labels_per_schema_version(store)
    if args.schema_action == "export":
        text = to_toml(schema)
        if args.out is None:
            sys.stdout.write(text)
        else:
            args.out.write_text(text, encoding="utf-8")
            print(f"wrote label schema version {schema.version} to {args.out}")
        return 0
    versions = [(r.version, r.created_at, r.note) for r in rows] or [(schema.version, "", "built-in default")]
    if args.json:
        body = {
            "version": schema.version,
            "title": schema.title,
            "schema": json.loads(schema.to_json()),
            "guidelines": schema.guidelines,
            "versions": [
                {"version": v, "created_at": t, "note": n, "labels": counts.get(v, 0)} for v, t, n in versions
            ],
        }
        print(json.dumps(body, indent=2, ensure_ascii=False))
        return 0
    from ..formats.messages import shown

    print(f"label schema version {schema.version} of {args.db}: {shown(schema.title or 'untitled', 200)}")
    for section in ("error_types", "discard_reasons", "strengths"):
        entries = [
            f"{c.name}" + (f" [{c.key}]" if c.key else "") + (f" {shown(c.label, 80)!r}" if c.label != c.name else "")
            for c in getattr(schema, section)
        ]
        print(f"  {section.replace('_', ' ')}: {', '.join(entries) or '(none)'}")
    print(f"  guidelines: {len(schema.guidelines):,} characters of Markdown")
    for v, when, note in versions:
        said = f" — {shown(note, 200)}" if note else ""
        print(f"  version {v}{' ' + when[:19] if when else ''}: {counts.get(v, 0):,} labels{said}")
    return 0
