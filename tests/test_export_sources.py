"""Export says what it exports (issue 14.4): which preference goes out and from whom, what is
left out and why, and a manifest that records exactly what was applied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from helpers import write_jsonl
from pairscope.app.cli.main import main
from pairscope.app.curation.export import export_project
from pairscope.app.importer import import_file
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import Label, LabelDraft
from pairscope.app.store import Store


def row(id_, ranking=(0, 1)):
    return {
        "id": id_,
        "query": "<image>\nWhich is right?",
        "response": [f"{id_} first", f"{id_} second"],
        "human_ranking": list(ranking),
        "image_path": "a.png",
        "models": ["m1", "m2"],
    }


# The dataset's reference prefers the first response everywhere (ranking [0, 1]).
IDS = ("wildvision-1", "wildvision-2", "wildvision-3", "RLAIF-V-4", "RLAIF-V-5", "mathverse_6")


@pytest.fixture
def project(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    Image.new("RGB", (4, 4), "red").save(src / "a.png")
    write_jsonl(src / "data.jsonl", [row(i) for i in IDS])
    store = Store.create(tmp_path / "proj" / "p.pairscope")
    import_file(store, src / "data.jsonl", "vlrewardbench")
    yield store
    store.close()


def prefer(store: Store, annotator: str, ext_id: str, response: int) -> None:
    """What pressing the key of the screen side that shows ``response`` saves."""
    session = LabelingSession(store, annotator)
    item_id = store.item_id(ext_id)
    session.save(item_id, LabelDraft(preferred_position=session.order(item_id).index(response) + 1))


def discard(store: Store, annotator: str, ext_id: str, reason: str = "both_wrong") -> None:
    LabelingSession(store, annotator).save(
        store.item_id(ext_id), LabelDraft(outcome="discard", discard_reasons=(reason,))
    )


def adjudicate(store: Store, ext_id: str, outcome: str = "prefer", ranking=(), **kw) -> None:
    store.add_label(Label(store.item_id(ext_id), "lead", outcome, ranking=ranking, kind="adjudication", **kw))


def rows_of(out: Path, name: str = "trl.jsonl") -> dict[str, dict]:
    """Rows by id; a TRL row's chosen/rejected messages as their text (one message, one text part)."""
    rows = {r["id"]: r for r in (json.loads(line) for line in (out / name).read_text("utf-8").splitlines())}
    for row in rows.values():
        for key in ("chosen", "rejected"):
            if isinstance(row.get(key), list):
                [message] = row[key]
                [part] = message["content"]
                row[key] = part["text"]
    return rows


def manifest_of(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text("utf-8"))


# -- the reported defects ---------------------------------------------------------------------------


def test_the_default_export_takes_the_annotators_labels_not_the_dataset_reference(project, tmp_path):
    for who in ("alice", "bob"):
        prefer(project, who, "wildvision-1", 1)  # both against the reference
    result = export_project(project, tmp_path / "out", "trl")
    rows = rows_of(tmp_path / "out")
    assert rows["wildvision-1"]["chosen"] == "wildvision-1 second"
    assert rows["wildvision-1"]["preference_source"] == "consensus"
    assert result.n_items == 1


def test_an_item_an_annotator_discarded_is_not_exported(project, tmp_path):
    prefer(project, "bob", "wildvision-2", 0)
    discard(project, "alice", "wildvision-2")
    for source in ("human", "reference", "annotator:bob"):
        out = tmp_path / source.replace(":", "-")
        result = export_project(project, out, "trl", source=source)
        assert "wildvision-2" not in rows_of(out), source
        assert ("wildvision-2", "discarded by alice (both_wrong)") in result.skipped
    # asked for: the discarded item goes out with the preference of the chosen source
    result = export_project(project, tmp_path / "incl", "trl", source="annotator:bob", include_discarded=True)
    assert rows_of(tmp_path / "incl")["wildvision-2"]["chosen"] == "wildvision-2 first"
    assert manifest_of(tmp_path / "incl")["preference"]["include_discarded"] is True


def test_skip_reasons_are_named_and_counted_per_reason_with_their_items(project, tmp_path):
    prefer(project, "alice", "wildvision-1", 1)
    prefer(project, "alice", "wildvision-2", 0)
    prefer(project, "bob", "wildvision-2", 1)  # annotators disagree
    discard(project, "alice", "wildvision-3")
    adjudicate(project, "RLAIF-V-4", outcome="tie")
    result = export_project(project, tmp_path / "out", "trl")
    assert dict(result.skipped) == {
        "wildvision-2": "annotators disagree",
        "wildvision-3": "discarded by alice (both_wrong)",
        "RLAIF-V-4": "tie — the format needs a chosen/rejected pair",
        "RLAIF-V-5": "no human preference",
        "mathverse_6": "no human preference",
    }
    assert result.skipped_by_reason() == {
        "no human preference": ["RLAIF-V-5", "mathverse_6"],
        "annotators disagree": ["wildvision-2"],
        "discarded by alice (both_wrong)": ["wildvision-3"],
        "tie — the format needs a chosen/rejected pair": ["RLAIF-V-4"],
    }
    manifest = manifest_of(tmp_path / "out")
    assert manifest["counts"]["skipped_by_reason"] == {
        "no human preference": 2,
        "annotators disagree": 1,
        "discarded by alice (both_wrong)": 1,
        "tie — the format needs a chosen/rejected pair": 1,
    }
    assert manifest["skipped_ids_by_reason"]["no human preference"] == ["RLAIF-V-5", "mathverse_6"]


def test_the_manifest_never_records_a_filter_that_was_not_applied(project, tmp_path):
    # a table filter's description without the items it selected is refused, not recorded
    with pytest.raises(ValueError, match="table filter"):
        export_project(project, tmp_path / "out", "trl", source="reference", table_filter={"category": "general"})
    assert not (tmp_path / "out").exists()
    export_project(project, tmp_path / "all", "trl", source="reference")
    assert manifest_of(tmp_path / "all")["filters"] == {}  # nothing was filtered
    ids = [project.item_id(i) for i in ("wildvision-1", "wildvision-2")]
    project.add_to_collection("hard", [*ids, project.item_id("mathverse_6")])
    export_project(
        project,
        tmp_path / "t",
        "trl",
        source="reference",
        collection="hard",
        only="adjudicated",
        item_ids=ids,
        table_filter={"category": "general"},
    )
    assert manifest_of(tmp_path / "t")["filters"] == {
        "collection": "hard",
        "only": "adjudicated",
        "table": {"filter": {"category": "general"}, "items": 2},
    }


# -- which preference, chosen explicitly --------------------------------------------------------


def test_the_human_decision_is_the_adjudication_else_the_consensus_else_nothing(project, tmp_path):
    prefer(project, "alice", "wildvision-1", 0)
    prefer(project, "bob", "wildvision-1", 1)
    adjudicate(project, "wildvision-1", ranking=(1, 0))  # settles the disagreement
    prefer(project, "alice", "wildvision-2", 1)  # one annotator: the human decision
    discard(project, "alice", "wildvision-3")
    adjudicate(project, "wildvision-3", ranking=(1, 0))  # the adjudication is final: kept
    result = export_project(project, tmp_path / "out", "jsonl")
    rows = rows_of(tmp_path / "out", "items.jsonl")
    pref = rows["wildvision-1"]["preference"]
    assert (pref["source"], pref["preferred"], pref["annotators"]) == ("adjudication", 1, ["lead"])
    assert rows["wildvision-2"]["preference"]["source"] == "consensus"
    assert rows["wildvision-2"]["preference"]["annotators"] == ["alice"]
    assert rows["wildvision-3"]["preference"]["source"] == "adjudication"
    # the lossless format keeps items without a human preference, saying why
    assert rows["RLAIF-V-4"]["preference"]["source"] == "none"
    assert rows["RLAIF-V-4"]["preference"]["missing"] == "no human preference"
    assert result.per_source == {"adjudication": 2, "consensus": 1, "none": 3}
    manifest = manifest_of(tmp_path / "out")
    assert manifest["preference"]["source"] == "human"
    assert manifest["preference"]["fallback_reference"] is False
    assert manifest["counts"]["per_preference_source"] == {"adjudication": 2, "consensus": 1, "none": 3}
    assert [r["source"] for r in manifest["rows"]][:3] == ["adjudication", "consensus", "adjudication"]


def test_fallback_to_the_reference_only_when_asked_and_never_over_a_disagreement(project, tmp_path):
    prefer(project, "alice", "wildvision-1", 1)
    prefer(project, "alice", "wildvision-2", 0)
    prefer(project, "bob", "wildvision-2", 1)
    result = export_project(project, tmp_path / "out", "trl", fallback_reference=True)
    rows = rows_of(tmp_path / "out")
    assert rows["wildvision-1"]["preference_source"] == "consensus"
    assert rows["RLAIF-V-4"]["preference_source"] == "reference"
    assert rows["RLAIF-V-4"]["chosen"] == "RLAIF-V-4 first"
    assert dict(result.skipped) == {"wildvision-2": "annotators disagree"}
    assert result.per_source == {"consensus": 1, "reference": 4}
    assert manifest_of(tmp_path / "out")["preference"]["fallback_reference"] is True


def test_each_source_can_be_chosen(project, tmp_path):
    prefer(project, "alice", "wildvision-1", 1)
    prefer(project, "bob", "wildvision-1", 1)
    prefer(project, "bob", "wildvision-2", 1)
    adjudicate(project, "wildvision-3", ranking=(1, 0))

    def export(source):
        out = tmp_path / source.replace(":", "-")
        result = export_project(project, out, "trl", source=source)
        return result, {i: r["chosen"].split()[1] for i, r in rows_of(out).items()}

    result, chosen = export("adjudicated")
    assert chosen == {"wildvision-3": "second"} and dict(result.skipped)["wildvision-1"] == "not adjudicated"
    result, chosen = export("consensus")  # the adjudication is not an annotator's label
    assert chosen == {"wildvision-1": "second", "wildvision-2": "second"}
    assert dict(result.skipped)["wildvision-3"] == "no annotator preference"
    result, chosen = export("annotator:alice")
    assert chosen == {"wildvision-1": "second"} and dict(result.skipped)["wildvision-2"] == "no label by alice"
    result, chosen = export("reference")
    assert set(chosen.values()) == {"first"} and len(chosen) == len(IDS)
    with pytest.raises(ValueError, match="source"):
        export_project(project, tmp_path / "bad", "trl", source="majority")
    with pytest.raises(ValueError, match="carol"):
        export_project(project, tmp_path / "bad", "trl", source="annotator:carol")


# -- the command line -------------------------------------------------------------------------------


def test_cli_names_the_source_and_lists_every_skip_reason_with_its_items(project, tmp_path, capsys):
    prefer(project, "alice", "wildvision-1", 1)
    discard(project, "bob", "wildvision-2", "needs_expert")
    out = tmp_path / "out"
    assert main(["export", "--db", str(project.path), "--format", "trl", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "preference: the human decision" in text
    assert "exported 1 item" in text and "consensus 1" in text
    assert "skipped 5:" in text
    assert "4 no human preference: wildvision-3, RLAIF-V-4, RLAIF-V-5, mathverse_6" in text
    assert "1 discarded by bob (needs_expert): wildvision-2" in text

    args = ["export", "--db", str(project.path), "--format", "trl", "--force", "--out", str(out)]
    assert main([*args, "--source", "annotator:bob", "--include-discarded"]) == 0
    assert "preference: bob's label" in capsys.readouterr().out
    assert main([*args, "--source", "reference", "--collection", "nope"]) == 1
    assert "no collection named 'nope'" in capsys.readouterr().err
    assert main([*args, "--fallback-reference"]) == 0
    manifest = manifest_of(out)
    assert manifest["preference"]["fallback_reference"] is True and manifest["counts"]["items"] == 5
