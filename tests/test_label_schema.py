"""The project-defined label schema: parsing, versions in the store, the CLI, merging."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

from pairscope.app.cli.main import main
from pairscope.app.curation.teamwork import TeamworkError, merge_projects, pack_project
from pairscope.app.labeling.keymap import FIXED, KEYMAP
from pairscope.app.labeling.schema import (
    DEFAULT_SCHEMA,
    LabelSchemaError,
    error_kind_order,
    kind_order_key,
    load_schema,
    normalize_key,
    parse_schema,
    to_toml,
)
from pairscope.app.labeling.session import LabelingSession, project_label_schema
from pairscope.app.records import (
    DISCARD_REASONS,
    ERROR_KINDS,
    STRENGTHS,
    ErrorTag,
    Item,
    LabelDraft,
    Reference,
    Response,
)
from pairscope.app.store import Store
from pairscope.app.store.label_schemas import (
    add_label_schema,
    current_schema_version,
    label_schema_rows,
    label_schema_version,
    labels_per_schema_version,
)

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = (DEFAULT_SCHEMA.to_json(), DEFAULT_SCHEMA.guidelines)

CHART = """\
title = "Chart QA"
strengths = []
guidelines = '''
# Reading charts
Read the **axis** first.
'''

[[error_types]]
name = "wrong_value"
label = "Wrong value"
key = "Ctrl+1"
description = "a value read off the chart is wrong"

[[error_types]]
name = "axis"
key = "Ctrl+2"
subkinds = ["x", "y"]

[[error_types]]
name = "other"
key = "Ctrl+6"
free_text = true

[[discard_reasons]]
name = "unreadable"
label = "Chart unreadable"
key = "Alt+1"
"""


def set_schema(store: Store, text: str, note: str = "") -> int:
    schema = parse_schema(text, "test.toml")
    version, _added = add_label_schema(store, schema.to_json(), schema.guidelines, note, builtin=BUILTIN)
    return version


def pair(ext_id: str) -> Item:
    return Item(
        ext_id=ext_id,
        prompt=f"what is in {ext_id}?",
        responses=(Response(0, f"{ext_id} first"), Response(1, f"{ext_id} second")),
        reference=Reference(ranking=(0, 1)),
    )


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items([pair(f"item_{i}") for i in range(3)])
    return path


# -- the core: parsing and validating -----------------------------------------------------------


def test_the_built_in_schema_is_the_seed_taxonomies_and_the_keymap():
    assert DEFAULT_SCHEMA.version == 1
    assert DEFAULT_SCHEMA.error_names == ERROR_KINDS
    assert DEFAULT_SCHEMA.discard_names == DISCARD_REASONS
    assert DEFAULT_SCHEMA.strength_names == STRENGTHS
    assert DEFAULT_SCHEMA.keymap() == KEYMAP
    assert [c.name for c in DEFAULT_SCHEMA.error_types if c.free_text] == ["other"]
    assert DEFAULT_SCHEMA.error_types[1].subkinds  # recognition's menu


def test_the_example_file_is_the_built_in_schema_and_round_trips():
    example = load_schema(ROOT / "resources" / "label_schema_default.toml")
    assert example.same_as(DEFAULT_SCHEMA)
    chart = parse_schema(CHART, "chart.toml")
    again = parse_schema(to_toml(chart), "again.toml")
    assert again.same_as(chart) and again.strengths == () and "**axis**" in again.guidelines


def test_a_schema_file_drives_names_keys_and_the_keymap():
    chart = parse_schema(CHART, "chart.toml")
    assert chart.error_names == ("wrong_value", "axis", "other")
    assert chart.error_types[1].label == "Axis" and chart.error_types[1].subkinds == ("x", "y")
    assert chart.discard_reasons[0].label == "Chart unreadable"
    assert chart.discard_reasons[0].description == "Chart unreadable"  # defaults to the label
    keymap = {s.action: s for s in chart.keymap()}
    assert keymap["error_wrong_value"].keys == ("Ctrl+1",)
    assert keymap["error_wrong_value"].description == "Error: a value read off the chart is wrong"
    assert "error_counting" not in keymap and not any(a.startswith("strength_") for a in keymap)
    assert keymap["guidelines"].keys == ("F2",)
    # a section left out keeps the built-in entries
    only_errors = parse_schema('[[error_types]]\nname = "blur"\n', "x.toml")
    assert only_errors.discard_reasons == DEFAULT_SCHEMA.discard_reasons
    assert only_errors.strengths == DEFAULT_SCHEMA.strengths


def problems_of(text: str) -> list[str]:
    with pytest.raises(LabelSchemaError) as caught:
        parse_schema(text, "s.toml")
    return caught.value.problems


def test_parse_errors_name_the_file_and_line():
    text = """\
title = "x"
colour = "red"

[[error_types]]
name = "blur"
key = "ctrl+7"

[[error_types]]
name = "blur"
shade = 2

[[error_types]]
name = "dark"
key = "Ctrl+7"

[[discard_reasons]]
name = "Bad Name!"

[[strengths]]
name = "tiny"
key = "T"

[[strengths]]
name = "huge"
key = "N"

[[strengths]]
name = "odd"
key = "Ctrl+Banana"
"""
    found = problems_of(text)
    joined = "\n".join(found)
    assert "s.toml:2: unknown field 'colour'" in joined
    assert "s.toml:10: unknown field 'shade' in error_types" in joined
    assert "s.toml:9: duplicate name 'blur' in error_types" in joined
    assert "s.toml:14: key 'Ctrl+7' of 'dark' is also the key of error_types 'blur'" in joined
    assert "s.toml:17: discard_reasons entry 1 needs a name" in joined
    assert "s.toml:21: key 'T' of 'tiny' is taken by the window (Tie)" in joined
    assert "s.toml:25: key 'N' of 'huge' is taken by the window (Next item)" in joined
    assert "s.toml:29: key 'Ctrl+Banana' of 'odd' is not a key" in joined
    assert len(found) == 8


def test_more_parse_errors():
    assert problems_of("title = [\n") and problems_of("title = [\n")[0].startswith("s.toml:")
    assert "not valid TOML" in problems_of('title = "x"\ntitle = "y"\n')[0]
    assert problems_of('[[error_types]]\nname = "a"\nsubkinds = ["x"]\nfree_text = true\n')[0].startswith("s.toml:4:")
    assert "must be true or false" in problems_of('[[error_types]]\nname = "a"\nfree_text = "yes"\n')[0]
    assert "unknown field 'subkinds' in strengths" in problems_of('[[strengths]]\nname = "a"\nsubkinds = []\n')[0]
    assert "must be a list of tables" in problems_of('error_types = "existence"\n')[0]
    assert "taken by the window (editing text)" in problems_of('[[strengths]]\nname = "s"\nkey = "Escape"\n')[0]
    # every fixed key of the window is refused, whatever the spelling
    for shortcut in FIXED:
        key = shortcut.keys[0]
        assert any("taken by the window" in p for p in problems_of(f'[[strengths]]\nname = "s"\nkey = "{key}"\n')), key


def test_normalize_key():
    assert normalize_key("ctrl+shift+x") == normalize_key("Shift+Ctrl+X") == "Ctrl+Shift+X"
    assert normalize_key("Ctrl++") == "Ctrl++" and normalize_key(",") == ","
    assert normalize_key("f2") == "F2" and normalize_key("ctrl+escape") == "Ctrl+Esc"
    assert normalize_key("Hyper+1") is None and normalize_key("Ctrl+Ctrl+1") is None and normalize_key("") is None


def test_stats_follow_the_projects_schema_order():
    data = SimpleNamespace(error_kind_order=("counting", "existence"))
    kinds = ["zeta", "existence", "counting", "alpha"]
    assert sorted(kinds, key=kind_order_key(error_kind_order(data))) == ["counting", "existence", "alpha", "zeta"]
    assert error_kind_order(SimpleNamespace()) == ERROR_KINDS


def test_the_stats_read_carries_the_projects_schema_order(project):
    from pairscope.app.stats.data import load_stats_data

    with Store.open(project) as store:
        assert load_stats_data(store).error_kind_order == ()  # no schema stored: the built-in order
        set_schema(store, CHART)
        order = load_stats_data(store).error_kind_order
    assert order == parse_schema(CHART, "t.toml").error_names and order[-1] == "other"
    assert sorted(["other", "axis"], key=kind_order_key(order)) == list(order[-2:])


# -- the store: versions, and what labels record ------------------------------------------------


def test_versions_are_added_and_labels_keep_the_version_they_were_given_under(project):
    with Store.open(project) as store:
        assert current_schema_version(store) == 1 and label_schema_rows(store) == []
        assert project_label_schema(store) is DEFAULT_SCHEMA
        first = store.item_id("item_0")
        old = LabelingSession(store, "ann")
        old.save(first, LabelDraft(outcome="tie", error_types=(ErrorTag("counting"),)))
        before = store.current_label(first, "ann")
        assert label_schema_version(store, before.uuid) == 1

        assert set_schema(store, CHART, "charts") == 2
        assert [r.version for r in label_schema_rows(store)] == [1, 2]  # the built-in one is stored too
        assert label_schema_rows(store)[0].note == "built-in default"
        assert set_schema(store, CHART) == 2  # the same schema again: no new version
        schema = project_label_schema(store)
        assert schema.version == 2 and schema.title == "Chart QA" and "Reading charts" in schema.guidelines

        # a session opened now labels under version 2; the old label is untouched
        session = LabelingSession(store, "bob")
        assert session.schema.version == 2
        session.save(first, LabelDraft(outcome="both_bad", error_types=(ErrorTag("wrong_value"),)))
        label = store.current_label(first, "bob")
        assert label.error_types == (ErrorTag("wrong_value"),)
        assert label_schema_version(store, label.uuid) == 2
        kept = store.current_label(first, "ann")
        assert kept == before and kept.error_types == (ErrorTag("counting"),)  # stored by its name
        assert label_schema_version(store, kept.uuid) == 1
        # its meaning is the version it names: "counting" is in version 1, not in version 2
        assert "counting" in project_label_schema(store, 1).error_names
        assert "counting" not in schema.error_names
        assert labels_per_schema_version(store) == {1: 1, 2: 1}
        # a session opened before the change still labels under the schema it shows
        old.save(store.item_id("item_1"), LabelDraft(outcome="tie"))
        assert label_schema_version(store, store.current_label(store.item_id("item_1"), "ann").uuid) == 1
        with pytest.raises(ValueError, match="no label schema version 7"):
            project_label_schema(store, 7)


def test_labels_written_outside_a_session_take_the_newest_version(project):
    from pairscope.app.records import Label

    with Store.open(project) as store:
        set_schema(store, CHART)
        stored = store.add_label(Label(store.item_id("item_2"), "cli", "tie"))
        assert label_schema_version(store, stored.uuid) == 2


# -- the command line ---------------------------------------------------------------------------


def test_cli_show_set_export(project, tmp_path, capsys):
    schema_file = tmp_path / "chart.toml"
    schema_file.write_text(CHART, encoding="utf-8")
    guide = tmp_path / "guide.md"
    guide.write_text("# Our rules\n", encoding="utf-8")
    assert main(["schema", "--db", str(project), "show"]) == 0
    assert "label schema version 1" in capsys.readouterr().out
    assert main(["schema", "--db", str(project), "set", str(schema_file), "--guidelines", str(guide)]) == 0
    assert "stored label schema version 2" in capsys.readouterr().out
    assert main(["schema", "--db", str(project), "set", str(schema_file), "--guidelines", str(guide)]) == 0
    assert "unchanged" in capsys.readouterr().out
    assert main(["schema", "--db", str(project), "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["version"] == 2 and shown["guidelines"] == "# Our rules\n"
    assert [v["version"] for v in shown["versions"]] == [1, 2]
    out = tmp_path / "export.toml"
    assert main(["schema", "--db", str(project), "export", "--out", str(out)]) == 0
    assert "wrote label schema version 2" in capsys.readouterr().out
    exported = load_schema(out)
    assert exported.error_names == ("wrong_value", "axis", "other") and exported.guidelines == "# Our rules\n"
    assert main(["schema", "--db", str(project), "export", "--version", "1"]) == 0
    assert load_schema_text(capsys.readouterr().out).same_as(DEFAULT_SCHEMA)


def load_schema_text(text: str):
    return parse_schema(text, "stdout")


def test_cli_refuses_a_bad_schema_with_file_and_line(project, tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('title = "x"\n\n[[strengths]]\nname = "tiny"\nkey = "1"\n', encoding="utf-8")
    assert main(["schema", "--db", str(project), "set", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:5: key '1' of 'tiny' is taken by the window (Response 1 is better)" in err
    with Store.open(project) as store:
        assert label_schema_rows(store) == []
    assert main(["schema", "--db", str(project), "show", "--version", "5"]) == 1


# -- merging and packing ------------------------------------------------------------------------


def labeled_copy(project: Path, path: Path, annotator: str, schema: str | None) -> Path:
    shutil.copy(project, path)
    with Store.open(path) as store:
        if schema is not None:
            set_schema(store, schema)
        LabelingSession(store, annotator).save(store.item_id("item_0"), LabelDraft(outcome="tie"))
    return path


def schema_rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT version, schema, guidelines FROM label_schemas ORDER BY version").fetchall()


def test_merge_copies_label_schemas_the_output_lacks(project, tmp_path):
    a = labeled_copy(project, tmp_path / "a.pairscope", "alice", CHART)
    b = labeled_copy(project, tmp_path / "b.pairscope", "bob", None)
    out = tmp_path / "out.pairscope"
    report = merge_projects(out, [a, b], trust=["alice", "bob"])  # copies, not packs: names trusted
    assert report.inputs[0].label_schemas_added == 2
    assert schema_rows(out) == schema_rows(a)
    with Store.open(out) as store:
        assert project_label_schema(store).title == "Chart QA"
        alice = store.current_label(store.item_id("item_0"), "alice")
        bob = store.current_label(store.item_id("item_0"), "bob")
        assert label_schema_version(store, alice.uuid) == 2 and label_schema_version(store, bob.uuid) == 1
    again = merge_projects(out, [a], trust=["alice"])
    assert again.inputs[0].label_schemas_added == 0 and again.inputs[0].label_schemas_present == 2


def test_merge_refuses_different_schemas_at_the_same_version(project, tmp_path):
    other = CHART.replace('label = "Wrong value"', 'label = "Misread value"')
    a = labeled_copy(project, tmp_path / "a.pairscope", "alice", CHART)
    b = labeled_copy(project, tmp_path / "b.pairscope", "bob", other)
    before = schema_rows(a)
    with pytest.raises(TeamworkError, match="different label schemas under the same version 2") as caught:
        merge_projects(a, [b], trust=["bob"])
    assert "label_schemas row 2 (version 2)" in str(caught.value)
    assert schema_rows(a) == before
    with Store.open(a) as store:
        assert store.current_label(store.item_id("item_0"), "bob") is None  # nothing was written
    # two inputs that disagree with each other, into a new project: refused whole
    out = tmp_path / "out.pairscope"
    with pytest.raises(TeamworkError, match="different label schemas under the same version 2"):
        merge_projects(out, [a, b], trust=["alice", "bob"])
    assert not out.exists()


def test_a_pack_carries_the_schema_and_its_guidelines(project, tmp_path):
    a = labeled_copy(project, tmp_path / "a.pairscope", "alice", CHART)
    with Store.open(a) as store:
        pack_project(store, tmp_path / "pack.pairscope", "alice")
    assert schema_rows(tmp_path / "pack.pairscope") == schema_rows(a)
    with Store.open(tmp_path / "pack.pairscope") as store:
        assert "Reading charts" in project_label_schema(store).guidelines


# -- keys the window uses, sizes, merge (issue 31, item 7) -----------------------------------------

WINDOW_USES = {
    "Ctrl+Q": "Quit",
    "ctrl+o": "Open a project",
    "Ctrl+Shift+I": "Import a dataset",
    "Alt+F": "the File menu",
    "Alt+L": "the Label menu",
    "alt+h": "the Help menu",
    "Ctrl+C": "Copy",
    "Ctrl+V": "Paste",
    "Ctrl+X": "Cut",
    "Ctrl+A": "Select all",
    "Backspace": "Take back the last ranked response",
    "Del": "Delete",
    "Left": "Move",
    "Right": "Move",
    "Home": "Move",
    "Shift+Left": "Select",
    "Ctrl+Right": "Move",
    "Shift+Tab": "editing text",
}


@pytest.mark.parametrize("key", sorted(WINDOW_USES))
def test_keys_the_window_uses_are_refused(key):
    """``schema set`` accepted Ctrl+Q, Alt+F (a menu mnemonic), Ctrl+C/V, Backspace and the arrows,
    which then stopped working in the window."""
    [problem] = problems_of(f'[[strengths]]\nname = "s"\nkey = "{key}"\n')
    assert f"key '{key}' of 's' is taken by the window ({WINDOW_USES[key]}" in problem, problem


def test_every_key_of_the_window_does_one_thing():
    """Two actions on one key are an "ambiguous shortcut" to Qt: neither fires. ``=`` ties the
    next ranked response (issue 29), so zoom in keeps only ``+``."""
    from collections import Counter

    from pairscope.app.labeling.keymap import BY_ACTION, FILE_KEYS

    keys = Counter(normalize_key(k) for s in (*KEYMAP, *FILE_KEYS) for k in s.keys)
    assert [key for key, n in keys.items() if n > 1] == []
    assert BY_ACTION["rank_tie"].keys == ("=",) and BY_ACTION["zoom_in"].keys == ("+",)
    assert BY_ACTION["rank_back"].keys == ("Backspace",)


def test_a_key_the_window_leaves_free_is_accepted():
    for key in ("Alt+Q", "Ctrl+7", "Ctrl+Alt+Left", "F9", "Q"):
        schema = parse_schema(f'[[strengths]]\nname = "s"\nkey = "{key}"\n', "s.toml")
        assert schema.strengths[0].key == key


def test_the_mnemonics_follow_the_schemas_own_menus():
    """A schema's sections become menus with mnemonics of their own: a key may not take one."""
    from pairscope.app.labeling.keymap import menu_mnemonics

    letters = menu_mnemonics(DEFAULT_SCHEMA.keymap())
    assert letters["&File"] == "F" and letters["Label"] == "L" and letters["Help"] == "H"
    bare = parse_schema("strengths = []\nerror_types = []\ndiscard_reasons = []\n", "s.toml")
    assert "Strength" in letters and "Strength" not in menu_mnemonics(bare.keymap())
    taken = letters["Strength"]
    assert any("the Strength menu" in p for p in problems_of(f'[[error_types]]\nname = "e"\nkey = "Alt+{taken}"\n'))


def test_a_stored_schema_with_a_key_the_window_now_keeps_still_opens(project):
    """A project whose schema took a window key before this check existed opens: that key is
    left unbound (the label kind stays)."""
    schema = parse_schema('[[strengths]]\nname = "s"\nkey = "Ctrl+7"\n', "s.toml")
    with Store.open(project) as store:
        add_label_schema(store, schema.to_json().replace("Ctrl+7", "Ctrl+Q"), "", "old", builtin=BUILTIN)
        opened = project_label_schema(store)
    assert opened.strength_names == ("s",) and opened.strengths[0].key is None


def test_guidelines_past_their_limit_are_refused_before_being_read_whole(project, tmp_path, capsys):
    """``--guidelines`` stored 50 MB past the 200,000-character limit."""
    schema_file = tmp_path / "chart.toml"
    schema_file.write_text(CHART, encoding="utf-8")
    big = tmp_path / "big.md"
    with big.open("w", encoding="utf-8") as fh:
        fh.write("# Rules\n" + "x" * 5_000_000)
    assert main(["schema", "--db", str(project), "set", str(schema_file), "--guidelines", str(big)]) == 1
    err = capsys.readouterr().err
    assert "guidelines longer than 200,000 characters" in err and "internal error" not in err
    just = tmp_path / "just.md"
    just.write_text("é" * 200_001, encoding="utf-8")
    assert main(["schema", "--db", str(project), "set", str(schema_file), "--guidelines", str(just)]) == 1
    assert "longer than 200,000 characters" in capsys.readouterr().err
    huge_schema = tmp_path / "huge.toml"
    huge_schema.write_text(CHART + "\n# " + "x" * 5_000_000 + "\n", encoding="utf-8")
    assert main(["schema", "--db", str(project), "set", str(huge_schema)]) == 1
    assert "larger than" in capsys.readouterr().err
    assert main(["schema", "--db", str(project), "set", str(schema_file), "--note", "n" * 5_000]) == 1
    assert "note" in capsys.readouterr().err
    with Store.open(project) as store:
        assert label_schema_rows(store) == []


@pytest.mark.parametrize(
    "broken, problem",
    [
        (lambda j: j.replace('"Ctrl+1"', '"Ctrl+Q"'), "key 'Ctrl+Q' of 'wrong_value' is taken by the window (Quit)"),
        (lambda j: j.replace('"wrong_value"', '"Wrong Value!"'), "needs a name of lower-case letters"),
        (lambda j: j.replace('"format":1', '"format":1,"colour":"red"'), "unknown field 'colour'"),
        (lambda j: "[" * 100_000 + "]" * 100_000, "nested deeper than 100 levels"),
        (lambda j: "{not json", "not valid JSON"),
    ],
)
def test_merge_validates_a_packs_schema_as_schema_set_does(project, tmp_path, capsys, broken, problem):
    """Merge took a pack's invalid label schema, and the team project then crashed the window at start."""
    with Store.open(project) as store:
        set_schema(store, CHART)
        pack_project(store, tmp_path / "a.pairscope", "alice")
    pack = tmp_path / "a.pairscope"
    with Store.open(pack) as store:
        LabelingSession(store, "alice").save(store.item_id("item_0"), LabelDraft(outcome="tie"))
    with sqlite3.connect(pack) as conn:
        (stored,) = conn.execute("SELECT schema FROM label_schemas WHERE version = 2").fetchone()
        conn.execute("UPDATE label_schemas SET schema = ? WHERE version = 2", (broken(stored),))
    conn.close()
    out = tmp_path / "team.pairscope"
    assert main(["merge", str(out), str(pack)]) == 1
    err = capsys.readouterr().err
    assert "label_schemas row 2 (version 2)" in err and problem in err, err
    assert "internal error" not in err and not out.exists()
