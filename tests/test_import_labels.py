"""``pairscope import-labels`` (issue 28): each foreign format's fixture (tests/fixtures/labels,
each naming where its format was read) imported into the real store; bad rows refused whole
with file:line (or task/record) problems; importing twice adds nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import good_bad_items, write_jsonl
from pairscope.app.cli.main import main
from pairscope.app.curation.label_import import LabelImportError, import_labels
from pairscope.app.curation.label_readers import option_index, sniff
from pairscope.app.store import Store

FIXTURES = Path(__file__).parent / "fixtures" / "labels"


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "p.pairscope")
    s.add_items(good_bad_items(4))
    yield s
    s.close()


def current(store, name):
    ids = dict(store.query("SELECT id, ext_id FROM items"))
    return {ids[i]: (lab.outcome, lab.ranking) for i, lab in store.current_labels(name).items()}


def test_simple_jsonl(store):
    result = import_labels(store, FIXTURES / "simple.jsonl")
    assert (result.format, result.added, result.present) == ("jsonl", 4, 0)
    assert current(store, "ana") == {"it0": ("prefer", (0,)), "it1": ("prefer", (1,))}
    assert current(store, "ben") == {"it2": ("tie", ()), "it0": ("prefer", (1,))}
    ana = store.current_labels("ana")
    first = ana[store.item_id("it0")]
    assert first.strength == "clearly" and first.created_at == "2025-01-02T10:00:00Z"
    assert [e.kind for e in ana[store.item_id("it1")].error_types] == ["existence"]
    again = import_labels(store, FIXTURES / "simple.jsonl")
    assert (again.added, again.present) == (0, 4)  # the same file twice adds nothing


def test_label_studio_pairwise(store):
    result = import_labels(store, FIXTURES / "label_studio_pairwise.json")
    assert result.format == "label-studio" and result.added == 2  # the cancelled annotation is no label
    assert current(store, "label-studio-3") == {"it0": ("prefer", (0,))}  # left = the first object
    assert current(store, "ben@example.org") == {"it0": ("prefer", (1,))}


def test_argilla_ranking(store):
    result = import_labels(store, FIXTURES / "argilla_records.json")
    assert result.format == "argilla" and result.added == 4  # the draft is skipped
    assert current(store, "ana") == {"it0": ("prefer", (0,)), "it1": ("tie", ())}  # two ranked first: a tie
    assert current(store, "ben") == {"it0": ("prefer", (1,))}
    assert current(store, "chen") == {"it1": ("discard", ())}


def test_potato_pairwise(store):
    result = import_labels(store, FIXTURES / "potato_annotated_instances.jsonl")
    assert result.format == "potato" and result.added == 3
    assert current(store, "ana") == {"it0": ("prefer", (0,)), "it1": ("tie", ())}
    assert current(store, "ben") == {"it0": ("prefer", (1,))}


def four_response_project(tmp_path):
    from pairscope.app.records import Item, Reference, Response

    store = Store.create(tmp_path / "ranked.pairscope")
    responses = tuple(Response(i, f"answer {i}") for i in range(4))
    store.add_items([Item(f"q{n}", "Rank them.", responses, reference=Reference(ranking=(0,))) for n in range(2)])
    return store


def potato_ranking(user, item, order, **kw):
    """A Potato ``ranking`` scheme's line: ``{"rank_order": "B,D=A,C"}`` (Potato's docs,
    annotation-types/comparison/ranking.md: labels best first, ``=`` between tied ones)."""
    return {
        "user_id": user,
        "instance_id": item,
        "label_annotations": {"response_quality": {"rank_order": order}},
        **kw,
    }


def test_potato_rank_order_with_ties_is_a_ranking_label(tmp_path):
    rows = [
        potato_ranking("ana", "q0", "B,D=A,C", behavioral_data={"timestamp": "2024-01-01T12:00:00Z"}),
        potato_ranking("ben", "q0", "Response A=Response C,Response B,Response D"),
        potato_ranking("ana", "q1", "B,D,A,C"),  # the same order without the tie: another label
    ]
    path = write_jsonl(tmp_path / "annotated_instances.jsonl", rows)
    with four_response_project(tmp_path) as store:
        result = import_labels(store, path)
        assert (result.format, result.added) == ("potato", 3)
        assert import_labels(store, path).present == 3  # the same file twice adds nothing
    with Store.open(tmp_path / "ranked.pairscope", readonly=True) as project:  # read back from the file
        q0, q1 = project.item_id("q0"), project.item_id("q1")
        ana, ben = project.current_labels("ana"), project.current_labels("ben")
        # B best; D and A tie second; C last — by response index (A = response 0)
        assert (ana[q0].ranks, ana[q0].outcome, ana[q0].ranking) == ((2, 1, 3, 2), "prefer", (1, 0, 3, 2))
        assert ana[q0].created_at == "2024-01-01T12:00:00Z"
        assert (ben[q0].ranks, ben[q0].outcome, ben[q0].ranking) == ((1, 2, 1, 3), "tie", (0, 2, 1, 3))
        assert ana[q1].ranks == (3, 1, 4, 2) and ana[q1].uuid != ana[q0].uuid


def test_a_bad_potato_rank_order_names_its_line(tmp_path):
    rows = [potato_ranking("ana", "q0", "B,D=A,C"), potato_ranking("ana", "q1", "B,E,A")]
    rows += [potato_ranking("ben", "q0", "B,?,A"), potato_ranking("ben", "q1", "A,B=A")]
    path = write_jsonl(tmp_path / "annotated_instances.jsonl", rows)
    with four_response_project(tmp_path) as store:
        with pytest.raises(LabelImportError) as err:
            import_labels(store, path)
        assert store.query("SELECT count(*) FROM labels")[0][0] == 0  # nothing partial
    text = str(err.value)
    assert f"{path}:1:" not in text
    assert f"{path}:2: rank_order 'B,E,A'" in text and "names response 5; the item has 4" in text
    assert f"{path}:3: " in text and "'?' names no response" in text
    assert f"{path}:4: " in text and "ranked twice" in text


def test_sniffing_each_fixture():
    assert [sniff(FIXTURES / f) for f in sorted(p.name for p in FIXTURES.iterdir() if p.suffix != ".md")] == [
        "argilla",
        "label-studio",
        "potato",
        "jsonl",
    ]


def test_bad_rows_name_file_and_line_and_nothing_is_written(store, tmp_path):
    path = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {"item": "it0", "annotator": "ana", "preference": 0},
            {"item": "nope", "annotator": "ana", "preference": 0},
            "{not json",
            {"item": "it1", "annotator": "ana", "preference": 5},
            {"item": "it2", "annotator": "ana", "preference": 0, "strength": "hugely"},
            {"item": "it3", "annotator": "ana", "preference": 0, "time": "2999-01-01T00:00:00Z"},
            {"item": "it3", "preference": 0},
            {"item": "it3", "annotator": "ana", "preferred_text": "no such text"},
        ],
    )
    with pytest.raises(LabelImportError) as err:
        import_labels(store, path)
    text = str(err.value)
    for line, words in [
        (2, "no item 'nope'"),
        (3, "not valid JSON"),
        (4, "has no response 5"),
        (5, "'strength' is one of"),
        (6, "in the future"),
        (7, "no 'annotator'"),
        (8, "matches no response"),
    ]:
        assert f"{path}:{line}: " in text and words in text, (line, words, text)
    assert store.query("SELECT count(*) FROM labels")[0][0] == 0  # nothing partial


def test_a_bad_task_in_label_studio_names_the_task(store, tmp_path):
    path = tmp_path / "ls.json"
    shutil.copy(FIXTURES / "label_studio_pairwise.json", path)
    path.write_text(path.read_text().replace('"selected": "right"', '"selected": "middle"'))
    with pytest.raises(LabelImportError, match=r"task 1 \(id 1\) annotation 2: pairwise 'selected'"):
        import_labels(store, path)
    assert store.query("SELECT count(*) FROM labels")[0][0] == 0


def test_option_names():
    assert option_index("response-2") == ("prefer", 1) and option_index("B") == ("prefer", 1)
    assert option_index("left") == ("prefer", 0) and option_index("Tie") == ("tie", None)
    assert option_index("both bad") == ("both_bad", None) and option_index("maybe") is None


def test_cli(store, capsys):
    db = str(store.path)
    store.close()
    assert main(["import-labels", str(FIXTURES / "potato_annotated_instances.jsonl"), "--db", db]) == 0
    assert "imported 3 labels" in capsys.readouterr().out
    assert main(["import-labels", str(FIXTURES / "simple.jsonl"), "--db", db, "--format", "argilla"]) == 1
    assert "nothing imported" in capsys.readouterr().err


def test_argilla_with_two_questions_needs_one_named(store, tmp_path):
    path = tmp_path / "two.json"
    record = {
        "id": "it0",
        "responses": {
            "ranking": [{"value": [{"value": "response-2", "rank": 1}], "user_id": "ana", "status": "submitted"}],
            "label": [{"value": "response-1", "user_id": "ana", "status": "submitted"}],
        },
    }
    path.write_text(__import__("json").dumps([record]))
    with pytest.raises(LabelImportError, match="several questions .*--question"):
        import_labels(store, path)
    assert import_labels(store, path, question="label").added == 1
    assert current(store, "ana") == {"it0": ("prefer", (0,))}


def test_seconds_as_time_are_stored_as_active_time(store, tmp_path):
    """A numeric ``time`` is the seconds spent on the item (schema 9: ``labels.active_ms``);
    ``seconds`` says it beside an ISO time; Label Studio's ``lead_time`` is read the same way."""
    rows = [
        {"item": "it0", "annotator": "ana", "preference": 0, "time": 12.5},
        {"item": "it1", "annotator": "ana", "outcome": "tie", "time": "2025-01-02T10:00:00Z", "seconds": 3},
    ]
    import_labels(store, write_jsonl(tmp_path / "t.jsonl", rows))
    ana = store.current_labels("ana")
    assert ana[store.item_id("it0")].active_ms == 12_500 and ana[store.item_id("it0")].created_at
    assert ana[store.item_id("it1")].active_ms == 3_000
    assert ana[store.item_id("it1")].created_at == "2025-01-02T10:00:00Z"
    import_labels(store, FIXTURES / "label_studio_pairwise.json")
    assert store.current_labels("label-studio-3")[store.item_id("it0")].active_ms == 4_200


@pytest.mark.parametrize(
    "extra, words",
    [
        ({"time": -1}, "a number of seconds >= 0"),
        ({"time": True}, "'time' is when the label was made"),
        ({"seconds": "12"}, "a number of seconds >= 0"),
        ({"time": 2.0, "seconds": 3}, "both 'time'"),
    ],
)
def test_a_bad_time_spent_is_refused_with_its_line(store, tmp_path, extra, words):
    row = {"item": "it0", "annotator": "ana", "preference": 0, **extra}
    path = write_jsonl(tmp_path / "t.jsonl", [{"item": "it1", "annotator": "ana", "preference": 0}, row])
    with pytest.raises(LabelImportError, match=rf"t.jsonl:2: .*{words}"):
        import_labels(store, path)
    assert store.query("SELECT count(*) FROM labels")[0][0] == 0
