"""Curated export: formats, which preference goes out, filters, media, manifest, safety."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from helpers import WAIT_MS, write_jsonl
from helpers import item as stored_item
from pairscope.app import __version__
from pairscope.app.curation import export as export_mod
from pairscope.app.curation.export import export_project
from pairscope.app.curation.export_formats import EXPORT_FORMATS, JSONL_IMPORT_MAP, full_ranks
from pairscope.app.importer import import_file
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import (
    ErrorTag,
    Item,
    Label,
    LabelDraft,
    MediaRef,
    Reference,
    Response,
)
from pairscope.app.store import Store

MEDIA_NAME = re.compile(r"media/[0-9a-f]{64}\.png")


def png(path: Path, colour: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (6, 4), colour).save(path, "PNG")
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def vlrb_row(id_, ranking=(0, 1), image="imgs/a.png", **kw):
    row = {
        "id": id_,
        "query": "<image>\nHow many sinks?",
        "response": [f"{id_} first", f"{id_} second"],
        "human_ranking": list(ranking),
        "image_path": image,
        "models": ["m1", "m2"],
        "judge": "gpt-4o",
        "rationale": "counted",
        "query_source": "wildvision",
        "human_error_analysis": ["counting"],
        "ground_truth": "3",
        "meta": {"k": [1, 2]},
    }
    row.update(kw)
    return row


SOURCE_ROWS = [
    vlrb_row("wildvision-battle-1"),
    vlrb_row("RLAIF-V-2", (1, 0), "imgs/b.png", human_error_analysis=["hallucination"], query_source="rlaif"),
    vlrb_row("mathverse_3", image="imgs/a.png", human_error_analysis=["recognition(text)", "others, wrong sign"]),
    vlrb_row("mmmu_4", image="imgs/gone.png"),
    vlrb_row("vlfeedback_5", (0, 0)),  # a tie: no reference preference
    vlrb_row("wildvision-6", (1, 0), ["imgs/a.png", "imgs/b.png"], unknown_field={"kept": True}),
]


@pytest.fixture
def project(tmp_path):
    """A project imported from a VL-RewardBench file with real PNGs (two items share one)."""
    src = tmp_path / "src"
    png(src / "imgs" / "a.png", "red")
    png(src / "imgs" / "b.png", "blue")
    write_jsonl(src / "data.jsonl", SOURCE_ROWS)
    store = Store.create(tmp_path / "proj" / "p.pairscope")
    import_file(store, src / "data.jsonl", "vlrewardbench")
    yield store
    store.close()


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def by_id(rows):
    return {r["id"]: r for r in rows}


def format_rows(out: Path, fmt: str) -> list[dict]:
    """The rows of an export in any format: its JSONL file, or (``hf``) its Parquet shards."""
    if EXPORT_FORMATS[fmt].sink is None:
        return read_rows(out / EXPORT_FORMATS[fmt].filename)
    import pyarrow.parquet as pq

    return [r for shard in sorted(out.glob(EXPORT_FORMATS[fmt].filename)) for r in pq.read_table(shard).to_pylist()]


def said(messages):
    """The text of a TRL conversational field (one message, its last part the text)."""
    [message] = messages
    return message["content"][-1]["text"]


def prefer(session: LabelingSession, store: Store, ext_id: str, response: int, **kw):
    """Label as the annotator would: press the screen position where ``response`` is shown."""
    item_id = store.item_id(ext_id)
    position = session.order(item_id).index(response) + 1
    session.save(item_id, LabelDraft(preferred_position=position, **kw))


def adjudicate(store, ext_id, outcome="prefer", ranking=(), **kw):
    return store.add_label(Label(store.item_id(ext_id), "lead", outcome, ranking=ranking, kind="adjudication", **kw))


# -- vlrewardbench --------------------------------------------------------------------------------


def test_vlrewardbench_rows_follow_the_benchmark_schema(project, tmp_path):
    out = tmp_path / "out"
    result = export_project(project, out, "vlrewardbench", source="reference")
    rows = by_id(read_rows(out / "vlrewardbench.jsonl"))
    assert result.n_items == 5 and set(rows) == {r["id"] for r in SOURCE_ROWS} - {"vlfeedback_5"}
    assert result.skipped == [("vlfeedback_5", "no dataset reference")]
    row = rows["wildvision-battle-1"]
    assert set(row) >= {
        "id",
        "query",
        "response",
        "human_ranking",
        "image_path",
        "query_source",
        "human_error_analysis",
        "models",
        "ground_truth",
    }
    assert row["query"] == "<image>\nHow many sinks?"  # the original query, image token kept
    assert row["response"] == ["wildvision-battle-1 first", "wildvision-battle-1 second"]
    assert row["human_ranking"] == [0, 1] and rows["RLAIF-V-2"]["human_ranking"] == [1, 0]
    assert row["models"] == ["m1", "m2"] and row["ground_truth"] == "3" and row["query_source"] == "wildvision"
    assert row["human_error_analysis"] == ["counting"]
    assert rows["mathverse_3"]["human_error_analysis"] == ["recognition(text)", "others, wrong sign"]
    # unknown fields survive verbatim
    assert row["judge"] == "gpt-4o" and row["rationale"] == "counted" and row["meta"] == {"k": [1, 2]}
    assert rows["wildvision-6"]["unknown_field"] == {"kept": True}
    # one image: a relative path string (the dataset's own, which the official scripts read
    # the subset from); several: a list
    assert row["image_path"] == "imgs/a.png" and (out / row["image_path"]).is_file()
    assert isinstance(rows["wildvision-6"]["image_path"], list) and len(rows["wildvision-6"]["image_path"]) == 2
    assert "category" not in row  # the id prefix already says it


def test_missing_media_keep_their_path_and_are_counted_once(project, tmp_path):
    out = tmp_path / "out"
    result = export_project(project, out, "vlrewardbench", source="reference")
    row = by_id(read_rows(out / "vlrewardbench.jsonl"))["mmmu_4"]
    assert row["image_path"] == "imgs/gone.png"  # the reference is never erased (issue 22)
    assert result.warnings == [] and result.missing_media == 1 and result.items_missing_media == 1
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["missing_media"] == 1
    assert manifest["media"]["missing"]["examples"] == [
        {"id": "mmmu_4", "ref": "imgs/gone.png", "reason": "image not found when imported"}
    ]


def test_media_gone_since_import_are_counted_not_a_crash(project, tmp_path):
    (tmp_path / "src" / "imgs" / "b.png").unlink()
    result = export_project(project, tmp_path / "out", "vlrewardbench", source="reference")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert {e["id"] for e in manifest["media"]["missing"]["examples"]} == {"mmmu_4", "RLAIF-V-2", "wildvision-6"}
    assert result.missing_media == 3 and "image no longer on disk: 2" in result.media_summary


def test_round_trip_through_the_vlrewardbench_importer(project, tmp_path):
    out = tmp_path / "out"
    export_project(project, out, "vlrewardbench", source="reference")  # the dataset's own ranking
    with Store.create(tmp_path / "again.pairscope") as again:
        report = import_file(again, out / "vlrewardbench.jsonl", "vlrewardbench", media_root=out)
        assert report.added == 5 and report.missing_media == project.info().missing_media == 1  # mmmu_4's
        for summary in again.item_summaries(0, 100):
            new = again.get_item(summary.id)
            old = stored_item(project, new.ext_id)
            for name in ("ext_id", "prompt", "prompt_raw", "category", "subset", "extra", "source_format"):
                assert getattr(new, name) == getattr(old, name), (new.ext_id, name)
            assert new.responses == old.responses
            assert new.reference == old.reference  # ranking, error tags (raw kept), ground truth
            old_files = [sha256(Path(m.path)) if m.path else m.ref for m in old.media]
            assert [sha256(Path(m.path)) if m.path else m.ref for m in new.media] == old_files
        assert again.item_count() == 5


def test_full_ranks_direction_and_partial_rankings():
    assert full_ranks((0, 1), 2) == [0, 1] and full_ranks((1, 0), 2) == [1, 0]
    assert full_ranks((1,), 2) == [1, 0]  # one short: completed
    assert full_ranks((2, 0, 1), 3) == [1, 2, 0]
    assert full_ranks((2,), 4) == [1, 1, 0, 1]  # best only: the rest share the next rank


# -- which preference -----------------------------------------------------------------------------


def test_adjudication_overrides_the_reference(project, tmp_path):
    adjudicate(
        project,
        "wildvision-battle-1",
        ranking=(1, 0),
        strength="much",
        error_types=(ErrorTag("attribute", note="colour"),),
    )
    result = export_project(project, tmp_path / "vl", "vlrewardbench", fallback_reference=True)
    row = by_id(read_rows(tmp_path / "vl" / "vlrewardbench.jsonl"))["wildvision-battle-1"]
    assert row["human_ranking"] == [1, 0]
    assert row["human_error_analysis"] == ["attribute: colour"]  # the adjudicator's tags
    assert result.n_items == 5
    export_project(project, tmp_path / "trl", "trl", fallback_reference=True)
    trl = by_id(read_rows(tmp_path / "trl" / "trl.jsonl"))["wildvision-battle-1"]
    assert said(trl["chosen"]) == "wildvision-battle-1 second" and said(trl["rejected"]) == "wildvision-battle-1 first"
    manifest = json.loads((tmp_path / "trl" / "manifest.json").read_text())
    assert manifest["counts"]["per_preference_source"] == {"adjudication": 1, "reference": 4}


def test_newest_adjudication_wins_and_a_cleared_one_falls_back(project, tmp_path):
    adjudicate(project, "RLAIF-V-2", ranking=(0, 1))
    adjudicate(project, "RLAIF-V-2", ranking=(1, 0))
    adjudicate(project, "mathverse_3", ranking=(1, 0))
    adjudicate(project, "mathverse_3", outcome="cleared")
    export_project(project, tmp_path / "out", "trl", fallback_reference=True)
    rows = by_id(read_rows(tmp_path / "out" / "trl.jsonl"))
    assert said(rows["RLAIF-V-2"]["chosen"]) == "RLAIF-V-2 second"
    assert said(rows["mathverse_3"]["chosen"]) == "mathverse_3 first"  # back to the reference


def test_only_agreed_uses_the_annotators_common_preference(project, tmp_path):
    alice, bob, carol = (LabelingSession(project, n) for n in ("alice", "bob", "carol"))
    # agreed against the reference (reference prefers response 0)
    prefer(alice, project, "wildvision-battle-1", 1, strength="clearly")
    prefer(bob, project, "wildvision-battle-1", 1, strength="clearly", error_types=(ErrorTag("counting"),))
    # disagreement
    prefer(alice, project, "mathverse_3", 0)
    prefer(bob, project, "mathverse_3", 1)
    # one annotator only
    prefer(alice, project, "wildvision-6", 0)
    # disagreement, settled by an adjudication
    prefer(alice, project, "RLAIF-V-2", 0)
    prefer(bob, project, "RLAIF-V-2", 1)
    adjudicate(project, "RLAIF-V-2", ranking=(0, 1))
    # agreed on a discard
    for s in (alice, bob):
        s.save(project.item_id("mmmu_4"), LabelDraft(outcome="discard", discard_reasons=("both_wrong",)))
    # a label with no decision neither agrees nor disagrees
    carol.save(project.item_id("wildvision-battle-1"), LabelDraft(note="looked at it"))

    result = export_project(project, tmp_path / "agreed", "trl", only="agreed")
    rows = by_id(read_rows(tmp_path / "agreed" / "trl.jsonl"))
    assert set(rows) == {"wildvision-battle-1", "RLAIF-V-2"}
    assert said(rows["wildvision-battle-1"]["chosen"]) == "wildvision-battle-1 second"
    assert said(rows["RLAIF-V-2"]["chosen"]) == "RLAIF-V-2 first"
    skipped = dict(result.skipped)
    assert skipped["mathverse_3"] == "not agreed: annotators disagree"
    assert skipped["wildvision-6"] == "not agreed: only one annotator decided (alice)"
    assert skipped["vlfeedback_5"] == "not agreed: no annotator decided"
    assert skipped["mmmu_4"] == "discarded by alice, bob (both_wrong)"

    # the dataset's reference only when it is the chosen source
    export_project(project, tmp_path / "all", "trl", source="reference")
    rows = by_id(read_rows(tmp_path / "all" / "trl.jsonl"))
    assert said(rows["wildvision-battle-1"]["chosen"]) == "wildvision-battle-1 first"
    assert said(rows["mathverse_3"]["chosen"]) == "mathverse_3 first"
    # the default is the human decision: the annotators' consensus where nobody adjudicated
    export_project(project, tmp_path / "human", "trl")
    rows = by_id(read_rows(tmp_path / "human" / "trl.jsonl"))
    assert said(rows["wildvision-battle-1"]["chosen"]) == "wildvision-battle-1 second"
    assert said(rows["wildvision-6"]["chosen"]) == "wildvision-6 first"  # alice's label: a consensus of one

    # the jsonl row carries the agreed preference with its strength and merged error types
    export_project(project, tmp_path / "js", "jsonl", only="agreed")
    row = by_id(read_rows(tmp_path / "js" / "items.jsonl"))["wildvision-battle-1"]
    assert row["preference"]["source"] == "consensus" and row["preference"]["preferred"] == 1
    assert row["preference"]["strength"] == "clearly" and row["preference"]["annotators"] == ["alice", "bob"]
    assert [t["kind"] for t in row["preference"]["error_types"]] == ["counting"]


def test_only_adjudicated_keeps_adjudicated_items(project, tmp_path):
    adjudicate(project, "mathverse_3", ranking=(1, 0))
    adjudicate(project, "mmmu_4", outcome="discard", discard_reasons=("media_unusable",))
    result = export_project(project, tmp_path / "out", "vlrewardbench", only="adjudicated")
    rows = read_rows(tmp_path / "out" / "vlrewardbench.jsonl")
    assert [r["id"] for r in rows] == ["mathverse_3"] and rows[0]["human_ranking"] == [1, 0]
    skipped = dict(result.skipped)
    assert skipped["mmmu_4"] == "discarded by lead's adjudication (media_unusable)"
    assert skipped["wildvision-battle-1"] == "not adjudicated"
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["filters"]["only"] == "adjudicated" and manifest["counts"]["skipped"] == 5


def test_discarded_items_are_skipped_in_every_format(project, tmp_path):
    adjudicate(project, "wildvision-battle-1", outcome="discard", discard_reasons=("both_wrong",))
    for fmt in EXPORT_FORMATS:
        result = export_project(project, tmp_path / fmt, fmt, source="reference")
        assert ("wildvision-battle-1", "discarded by lead's adjudication (both_wrong)") in result.skipped
        rows = format_rows(tmp_path / fmt, fmt)
        assert "wildvision-battle-1" not in {r["id"] for r in rows}


def test_ties_and_both_bad_have_no_chosen_response(project, tmp_path):
    adjudicate(project, "wildvision-battle-1", outcome="tie")
    adjudicate(project, "RLAIF-V-2", outcome="both_bad")
    result = export_project(project, tmp_path / "out", "trl")
    skipped = dict(result.skipped)
    assert skipped["wildvision-battle-1"] == "tie — the format needs a chosen/rejected pair"
    assert skipped["RLAIF-V-2"] == "both responses bad — the format needs a chosen/rejected pair"
    export_project(project, tmp_path / "js", "jsonl")  # the lossless format keeps them
    rows = by_id(read_rows(tmp_path / "js" / "items.jsonl"))
    assert rows["wildvision-battle-1"]["preference"]["outcome"] == "tie"


# -- filters --------------------------------------------------------------------------------------


def test_collection_and_item_ids_restrict_the_export(project, tmp_path):
    ids = {e: project.item_id(e) for e in ("wildvision-battle-1", "RLAIF-V-2", "mathverse_3")}
    project.add_to_collection("hard", list(ids.values()))
    result = export_project(project, tmp_path / "c", "vlrewardbench", source="reference", collection="hard")
    assert [r["id"] for r in read_rows(tmp_path / "c" / "vlrewardbench.jsonl")] == list(ids)
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert manifest["filters"] == {"collection": "hard"}  # only what was applied
    assert result.per_category == {"general": 1, "hallucination": 1, "reasoning": 1}

    export_project(
        project, tmp_path / "i", "vlrewardbench", source="reference", item_ids=[ids["mathverse_3"], ids["RLAIF-V-2"]]
    )
    assert [r["id"] for r in read_rows(tmp_path / "i" / "vlrewardbench.jsonl")] == ["RLAIF-V-2", "mathverse_3"]

    export_project(
        project,
        tmp_path / "both",
        "vlrewardbench",
        source="reference",
        collection="hard",
        item_ids=[ids["mathverse_3"], project.item_id("mmmu_4")],
    )
    assert [r["id"] for r in read_rows(tmp_path / "both" / "vlrewardbench.jsonl")] == ["mathverse_3"]

    result = export_project(project, tmp_path / "gone", "vlrewardbench", item_ids=[999])
    assert result.n_items == 0 and result.skipped == [("#999", "no such item in the project")]


def test_bad_arguments_are_refused_before_anything_is_written(project, tmp_path):
    for kwargs in (
        {"fmt": "csv"},
        {"fmt": "trl", "only": "majority"},
        {"fmt": "trl", "collection": "nope"},
        {"fmt": "trl", "source": "majority"},
        {"fmt": "trl", "source": "annotator:nobody"},
    ):
        fmt = kwargs.pop("fmt")
        with pytest.raises(ValueError):
            export_project(project, tmp_path / "out", fmt, **kwargs)
        assert not (tmp_path / "out").exists()


# -- media and manifest ---------------------------------------------------------------------------


def test_media_are_copied_once_and_the_manifest_hashes_every_file(project, tmp_path):
    out = tmp_path / "out"
    result = export_project(project, out, "trl", source="reference")
    media = sorted(p.relative_to(out).as_posix() for p in (out / "media").iterdir())
    assert len(media) == 2  # a.png is used by three items, b.png by two
    assert {sha256(out / m) for m in media} == {sha256(tmp_path / "src" / "imgs" / n) for n in ("a.png", "b.png")}
    for m in media:
        assert m == f"media/{sha256(out / m)}.png"
    kept = tmp_path / "kept"
    export_project(
        project, kept, "vlrewardbench", source="reference"
    )  # the dataset's own relative paths, each file once
    assert sorted(p.relative_to(kept).as_posix() for p in (kept / "imgs").iterdir()) == ["imgs/a.png", "imgs/b.png"]
    manifest = json.loads((out / "manifest.json").read_text())
    on_disk = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert sorted([*manifest["files"], "manifest.json"]) == on_disk
    assert result.files[-1] == "manifest.json" and sorted(result.files) == on_disk
    for name, entry in manifest["files"].items():
        assert entry == {"sha256": sha256(out / name), "bytes": (out / name).stat().st_size}
    assert manifest["format"] == "trl" and manifest["tool"]["version"] == __version__
    assert manifest["source"]["project"] == project.path.name  # by name, not a machine path
    assert manifest["source"]["schema_version"] == project.schema_version
    assert manifest["counts"]["items"] == 5 and manifest["counts"]["media_files"] == 2
    assert manifest["counts"]["per_category"] == {"general": 2, "hallucination": 1, "reasoning": 2}
    assert manifest["skipped"] == [{"id": "vlfeedback_5", "reason": result.skipped[0][1]}]
    assert manifest["created_at"]


def test_a_failing_export_leaves_no_data_file_and_no_manifest(project, tmp_path, monkeypatch):
    calls, visible = [], []
    out = tmp_path / "out"

    def explode(entry):
        calls.append(entry)
        if len(calls) == 2:  # mid-write, as a killed process would leave it:
            visible.extend(p.name for p in out.iterdir() if p.is_file())
            raise RuntimeError("disk on fire")
        return {"id": entry.item.ext_id}

    broken = dataclasses.replace(EXPORT_FORMATS["trl"], row=explode)
    monkeypatch.setitem(export_mod.EXPORT_FORMATS, "trl", broken)
    with pytest.raises(RuntimeError):
        export_project(project, out, "trl", source="reference")
    # only PairScope's working files (a temporary name, the journal), never trl.jsonl or manifest.json
    assert all(n.startswith(".pairscope-") for n in visible) and any(n.startswith(".pairscope-tmp-") for n in visible)
    assert not out.exists()  # the failed export removed everything it made


# -- safety ---------------------------------------------------------------------------------------


def test_refuses_a_non_empty_folder_unless_forced(project, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not empty"):
        export_project(project, out, "trl")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    first = export_project(project, out, "trl", source="reference", force=True)
    assert (out / "notes.txt").read_text() == "mine" and first.n_items == 5
    with pytest.raises(FileExistsError):
        export_project(project, out, "trl")
    (out / f".pairscope-tmp-{'0' * 32}").write_text("half")  # an interrupted export's leftover
    project.add_to_collection("one", [project.item_id("mathverse_3")])
    again = export_project(project, out, "trl", source="reference", collection="one", force=True)
    assert again.n_items == 1 and [r["id"] for r in read_rows(out / "trl.jsonl")] == ["mathverse_3"]
    assert json.loads((out / "manifest.json").read_text())["counts"]["items"] == 1
    assert not (out / (".pairscope-tmp-" + "0" * 32)).exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError):
        export_project(project, tmp_path / "file", "trl", force=True)


def test_item_ids_and_media_names_never_shape_file_paths(tmp_path):
    weird_dir = tmp_path / "src" / "we ird;dir"
    a = png(weird_dir / "..evil name.PNG", "green")
    b = png(weird_dir / "no_suffix", "white")
    c = png(weird_dir / "x.p$g", "black")
    ids = ["../../etc/passwd", "a/b", "x\x00y", "..", "/abs", "C:\\win", "ok"]
    with Store.create(tmp_path / "proj" / "p.pairscope") as store:
        store.add_items(
            [
                Item(
                    ext_id=e,
                    prompt="q",
                    responses=(Response(0, "r0"), Response(1, "r1")),
                    media=(MediaRef("image", f"../{n}/{e}", str(p)),),
                    reference=Reference(ranking=(0, 1)),
                )
                for e, n, p in zip(ids, range(7), (a, b, c, a, b, c, a))
            ]
        )
        before = {p for p in tmp_path.rglob("*")}
        for fmt in EXPORT_FORMATS:
            out = tmp_path / "exports" / fmt
            result = export_project(store, out, fmt, source="reference")
            assert result.n_items == len(ids)
            names = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
            allowed = re.compile(
                r"manifest\.json|[a-z0-9]+\.jsonl|media/[0-9a-f]{64}(\.png)?|README\.md|data/train-0000\d-of-0000\d\.parquet"
            )
            assert all(allowed.fullmatch(n) for n in names), names
            assert len([n for n in names if n.startswith("media/")]) == 3
            assert {r["id"] for r in format_rows(out, fmt)} == set(ids)
        created = {p for p in tmp_path.rglob("*")} - before
        assert all(tmp_path / "exports" in p.parents or p == tmp_path / "exports" for p in created)


# -- trl ------------------------------------------------------------------------------------------


def test_trl_rows_are_preference_rows(project, tmp_path):
    project.add_items(
        [
            Item(
                ext_id="bon",
                prompt="q",
                responses=tuple(Response(i, str(i)) for i in range(3)),
                reference=Reference(ranking=(2, 0, 1)),
            )
        ]
    )
    out = tmp_path / "out"
    result = export_project(project, out, "trl", source="reference")
    rows = read_rows(out / "trl.jsonl")
    assert all(set(r) == {"id", "prompt", "chosen", "rejected", "images", "preference_source"} for r in rows)
    assert {r["preference_source"] for r in rows} == {"reference"}
    assert all(isinstance(r["id"], str) and r["prompt"][0]["role"] == "user" for r in rows)
    row = by_id(rows)["RLAIF-V-2"]
    assert row["prompt"][0]["content"] == [{"type": "image", "text": None}, {"type": "text", "text": "How many sinks?"}]
    assert said(row["chosen"]) == "RLAIF-V-2 second" and row["chosen"][0]["role"] == "assistant"
    assert said(row["rejected"]) == "RLAIF-V-2 first" and len(row["images"]) == 1
    export_project(project, tmp_path / "plain", "trl-plain", source="reference")
    plain = by_id(read_rows(tmp_path / "plain" / "trl.jsonl"))
    assert plain["RLAIF-V-2"]["prompt"] == "How many sinks?" and plain["RLAIF-V-2"]["chosen"] == "RLAIF-V-2 second"
    assert all((out / p).is_file() for r in rows if r["id"] != "mmmu_4" for p in r["images"])
    assert by_id(rows)["mmmu_4"]["images"] == ["imgs/gone.png"]  # missing: its reference is kept (and counted)
    assert "bon" not in dict(result.skipped)  # a full ranking of 3: a row per induced pair (test_export_rankings.py)
    assert sorted(r["id"] for r in rows if r["id"].startswith("bon:")) == ["bon:0>1", "bon:2>0", "bon:2>1"]


def test_trl_and_vlrewardbench_files_load_as_arrow_tables(project, tmp_path):
    """🤗 datasets' JSON loader reads JSONL through pyarrow: one consistent type per column."""
    import pyarrow.json as paj

    for fmt in ("trl", "vlrewardbench"):
        export_project(
            project,
            tmp_path / fmt,
            fmt,
            source="reference",
            item_ids=[project.item_id(e) for e in ("wildvision-battle-1", "RLAIF-V-2", "mathverse_3")],
        )
        table = paj.read_json(tmp_path / fmt / EXPORT_FORMATS[fmt].filename)
        assert table.num_rows == 3
    assert table.column("human_ranking").to_pylist() == [[0, 1], [1, 0], [0, 1]]


def test_trl_rows_load_with_datasets(project, tmp_path):
    datasets = pytest.importorskip("datasets")
    export_project(project, tmp_path / "out", "trl", source="reference")
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "out" / "trl.jsonl"), split="train")
    assert set(ds.column_names) == {"id", "prompt", "chosen", "rejected", "images", "preference_source"}
    assert len(ds) == 5


# -- jsonl ----------------------------------------------------------------------------------------


def test_jsonl_rows_carry_items_labels_and_adjudication(project, tmp_path):
    alice = LabelingSession(project, "alice")
    prefer(alice, project, "RLAIF-V-2", 0, strength="slightly", error_types=(ErrorTag("existence"),), note="hm")
    alice.save(project.item_id("mathverse_3"), LabelDraft(outcome="discard", discard_reasons=("needs_expert",)))
    adjudicate(project, "mathverse_3", ranking=(1, 0), note="checked")
    out = tmp_path / "out"
    export_project(project, out, "jsonl")
    rows = by_id(read_rows(out / "items.jsonl"))
    assert set(rows) == {r["id"] for r in SOURCE_ROWS}  # ties and missing media are kept
    row = rows["RLAIF-V-2"]
    assert row["prompt"] == "How many sinks?" and row["prompt_raw"] == "<image>\nHow many sinks?"
    assert row["responses"] == ["RLAIF-V-2 first", "RLAIF-V-2 second"] and row["models"] == ["m1", "m2"]
    assert row["category"] == "hallucination" and row["subset"] == "rlaif-v" and row["steps"] is None
    assert row["reference"]["ranking"] == [1, 0] and row["reference"]["error_tags"] == ["hallucination"]
    assert row["reference"]["error_tags_parsed"][0]["kind"] == "existence"
    [media] = row["media"]
    assert media["kind"] == "image" and media["ref"] == "imgs/b.png" and MEDIA_NAME.fullmatch(media["path"])
    assert media["sha256"] == sha256(out / media["path"]) and row["image"] == [media["path"]]
    [label] = row["labels"]
    assert label["annotator"] == "alice" and label["outcome"] == "prefer" and label["preferred"] == 0
    assert label["strength"] == "slightly" and label["error_types"][0]["kind"] == "existence"
    assert label["note"] == "hm" and row["adjudication"] is None
    # alice's label is the human decision (the old default exported the reference over it)
    assert row["preference"]["source"] == "consensus" and row["preference"]["annotators"] == ["alice"]
    assert row["extra"]["judge"] == "gpt-4o"
    assert rows["wildvision-battle-1"]["preference"]["source"] == "none"  # kept, marked
    assert rows["wildvision-battle-1"]["preference"]["missing"] == "no human preference"
    m3 = rows["mathverse_3"]
    assert m3["labels"][0]["discard_reasons"] == ["needs_expert"]
    assert m3["adjudication"]["annotator"] == "lead" and m3["adjudication"]["preferred"] == 1
    assert m3["preference"]["source"] == "adjudication"
    missing = rows["mmmu_4"]["media"][0]
    assert missing["path"] == missing["ref"] == "imgs/gone.png" and missing["sha256"] is None
    assert missing["problem"] == "image not found when imported"  # no machine path in a row
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["reimport"] == {"format": "jsonl", "media_root": ".", "map": JSONL_IMPORT_MAP}


def test_jsonl_export_reimports_items_references_categories_and_media(project, tmp_path):
    """What the generic JSONL importer brings back (documented): ids, prompts, responses,
    category, subset, the reference (ranking, strength, error tags, ground truth) and the
    media files. Not: prompt_raw, models, steps, source format, labels."""
    project.add_items(
        [
            Item(
                ext_id="strong",
                prompt="which?",
                category="safety",
                subset="s1",
                responses=(Response(0, "a"), Response(1, "b")),
                reference=Reference(ranking=(1, 0), strength="much"),
            )
        ]
    )
    out = tmp_path / "out"
    export_project(project, out, "jsonl")
    with Store.create(tmp_path / "again.pairscope") as again:
        report = import_file(again, out / "items.jsonl", "jsonl", media_root=out, mapping=JSONL_IMPORT_MAP)
        assert report.added == 7
        for summary in again.item_summaries(0, 100):
            new = again.get_item(summary.id)
            old = stored_item(project, new.ext_id)
            assert (new.prompt, new.category, new.subset) == (old.prompt, old.category, old.subset)
            assert [r.text for r in new.responses] == [r.text for r in old.responses]
            assert new.reference == old.reference
            digests = [[sha256(Path(m.path)) if m.path else m.ref for m in x.media] for x in (new, old)]
            assert digests[0] == digests[1]  # a missing file comes back missing, with its reference
            assert new.extra["extra"] == old.extra  # the original extra rides along, nested


def test_video_items_and_best_of_n_items(tmp_path):
    clip = tmp_path / "src" / "clip.mp4"
    clip.parent.mkdir(parents=True)
    clip.write_bytes(b"\x00\x00\x00\x18ftypmp42 not really a video")
    with Store.create(tmp_path / "p.pairscope") as store:
        store.add_items(
            [
                Item(
                    ext_id="vid-1",
                    prompt="what happens?",
                    category="long-form perception",
                    responses=(Response(0, "a"), Response(1, "b")),
                    media=(MediaRef("video", "clip.mp4", str(clip)),),
                    reference=Reference(ranking=(1, 0), strength="2"),
                ),
                Item(
                    ext_id="bon-1",
                    prompt="best?",
                    responses=tuple(Response(i, str(i)) for i in range(3)),
                    reference=Reference(ranking=(2, 0, 1)),
                ),
            ]
        )
        adjudicate(store, "bon-1", ranking=(1,))  # best of three: only the best is named
        seen = []
        export_project(
            store,
            tmp_path / "vl",
            "vlrewardbench",
            fallback_reference=True,
            progress=lambda done, total: seen.append((done, total)),
        )
        assert seen == [(1, 2), (2, 2)]
        rows = by_id(read_rows(tmp_path / "vl" / "vlrewardbench.jsonl"))
        assert rows["vid-1"]["image_path"] is None and rows["vid-1"]["human_ranking"] == [1, 0]
        assert re.fullmatch(r"media/[0-9a-f]{64}\.mp4", rows["vid-1"]["video_path"])
        assert rows["vid-1"]["category"] == "long-form perception"  # the id prefix would say general
        assert rows["bon-1"]["human_ranking"] == [1, 0, 1]
        result = export_project(store, tmp_path / "trl", "trl")
        assert dict(result.skipped) == {
            "vid-1": "TRL rows hold images only; the item has a video",
            "bon-1": "no full ranking of the 3 responses (only the best named) — the format needs one",
        }
        export_project(store, tmp_path / "js", "jsonl")
        row = by_id(read_rows(tmp_path / "js" / "items.jsonl"))["vid-1"]
        assert row["video"] == [rows["vid-1"]["video_path"]] and row["image"] == []
        assert row["reference"]["strength"] == "2"


# -- from the window -------------------------------------------------------------------------------


@pytest.fixture
def export_window(qtbot, tmp_path):
    """The window on a project imported from SOURCE_ROWS, with File → Export open."""
    from PySide6.QtCore import Qt

    from helpers import show_active
    from pairscope.app.gui.controller import AnnotationController
    from pairscope.app.gui.main_window import MainWindow

    src = tmp_path / "src"
    png(src / "imgs" / "a.png", "red")
    png(src / "imgs" / "b.png", "blue")
    write_jsonl(src / "data.jsonl", SOURCE_ROWS)
    path = tmp_path / "proj" / "p.pairscope"
    with Store.create(path) as store:
        import_file(store, src / "data.jsonl", "vlrewardbench")
    window = show_active(qtbot, MainWindow(AnnotationController(Store.open(path), "ann")))
    qtbot.keyClick(window, Qt.Key_E, Qt.ControlModifier | Qt.ShiftModifier)
    window.shortcuts.export_dialog.scope.setCurrentIndex(1)  # every item
    source = window.shortcuts.export_dialog.source
    source.setCurrentIndex(source.findData("reference"))  # the project has no labels
    return window


def test_export_from_the_dialog_runs_in_the_background_with_a_progress_bar(qtbot, export_window, tmp_path):
    from PySide6.QtCore import QTimer

    window, out = export_window, tmp_path / "out"
    dialog = window.shortcuts.export_dialog
    dialog.folder.setText(str(out))
    ticks = []
    timer = QTimer(interval=5)
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start()
    # The export reads through its own connection (issue 24): the window's store holding a write
    # transaction neither stalls the GUI nor holds the export up (WAL: readers see the last commit).
    with window.controller.store.transaction():
        dialog.buttons.button(dialog.buttons.StandardButton.Ok).click()
        assert dialog.progress.isVisible() and not dialog.buttons.button(dialog.buttons.StandardButton.Ok).isEnabled()
        qtbot.waitUntil(lambda: (out / "manifest.json").exists() and not dialog.running, timeout=WAIT_MS)
        assert ticks and dialog.isVisible()
    timer.stop()
    # the result stays on screen with its reasons (it used to close on "1 skipped")
    assert json.loads((out / "manifest.json").read_text())["counts"]["items"] == 5
    assert dialog.result_text.startswith("Exported 5 items") and dialog.isVisible()
    assert "1 no dataset reference: vlfeedback_5" in dialog.details.toPlainText()
    assert "Exported 5 items" in window.statusBar().currentMessage()


def test_cancelling_an_export_writes_nothing_and_keeps_the_dialog(qtbot, export_window, tmp_path):
    window, out = export_window, tmp_path / "out"
    dialog = window.shortcuts.export_dialog
    dialog.folder.setText(str(out))
    with window.controller.store.transaction():
        dialog.run()
        dialog.buttons.button(dialog.buttons.StandardButton.Cancel).click()  # cancels the export, not the dialog
        assert dialog.isVisible()
    qtbot.waitUntil(lambda: "cancelled" in dialog.status.text(), timeout=15000)
    assert dialog.isVisible() and dialog.progress.isHidden()
    assert not (out / "manifest.json").exists() and not (out / "vlrewardbench.jsonl").exists()
    assert dialog.buttons.button(dialog.buttons.StandardButton.Ok).isEnabled()


def test_a_failed_export_is_shown_and_the_dialog_stays(qtbot, export_window, tmp_path, monkeypatch):
    from pairscope.app.gui import tasks

    shown = []
    monkeypatch.setattr(tasks, "show_error", lambda parent, title, message, details="": shown.append((title, message)))
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    dialog = export_window.shortcuts.export_dialog
    dialog.folder.setText(str(blocker / "out"))  # a folder inside a file cannot be made
    dialog.run()
    qtbot.waitUntil(lambda: bool(shown), timeout=15000)
    assert shown[0][0] == "Export failed" and "a-file" in shown[0][1]
    assert dialog.isVisible() and dialog.buttons.button(dialog.buttons.StandardButton.Ok).isEnabled()


# -- a full disk, a killed export, durability -------------------------------------------------------


def fill_disk_at(monkeypatch, where: str) -> None:
    """The disk fills up while the export writes ``where`` (media, data file or manifest):
    half the bytes land in the temporary file, then ENOSPC."""
    real = export_mod._AtomicWriter.write

    def write(self, data):
        name = self.target.name
        hit = {
            "media": self.target.parent.name == export_mod.MEDIA_DIR,
            "data": name.endswith(".jsonl"),
            "manifest": name == export_mod.MANIFEST,
        }[where]
        if hit:
            real(self, data[: len(data) // 2])
            self.fh.flush()
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, data)

    monkeypatch.setattr(export_mod._AtomicWriter, "write", write)


def tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


@pytest.mark.parametrize("where", ["media", "data", "manifest"])
def test_a_full_disk_stops_the_export_and_leaves_nothing_behind(project, tmp_path, monkeypatch, capsys, where):
    from pairscope.app.cli.main import main

    fill_disk_at(monkeypatch, where)
    out = tmp_path / "out"
    with pytest.raises(OSError, match="the disk is full") as raised:
        export_project(project, out, "jsonl")
    assert raised.value.errno == errno.ENOSPC
    assert not out.exists()  # no temporary files, no media, no empty folders
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(OSError, match="the disk is full"):
        export_project(project, out, "jsonl", force=True)
    assert tree(out) == ["notes.txt"] and (out / "notes.txt").read_text() == "mine"
    cli_out = tmp_path / "cli"
    code = main(["export", "--db", str(project.path), "--format", "jsonl", "--out", str(cli_out)])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: ") and "the disk is full" in err
    assert "Traceback" not in err and not cli_out.exists()


KILLED_EXPORT = """
import os, signal, sys
from pairscope.app.curation.export import export_project
from pairscope.app.store import Store

def progress(done, total):
    if done == 4:
        os.kill(os.getpid(), signal.SIGKILL)

with Store.open(sys.argv[1], readonly=True) as store:
    export_project(store, sys.argv[2], sys.argv[3], progress=progress)
"""


@pytest.mark.parametrize("fmt", ["jsonl", "vlrewardbench"])
def test_a_killed_export_is_swept_by_the_next_one(project, tmp_path, fmt):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_EXPORT, str(project.path), str(out), fmt], capture_output=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    left = tree(out)
    assert left and "manifest.json" not in left  # what a killed export leaves
    result = export_project(project, out, fmt)  # the leftovers are its own: no --force needed
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted(result.files)
    assert all(p.is_file() or any(p.iterdir()) for p in out.rglob("*"))  # no empty folders
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            KILLED_EXPORT.replace("progress=progress", "progress=progress, force=True"),
            str(project.path),
            str(mine),
            fmt,
        ],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    with pytest.raises(FileExistsError, match="not empty"):  # the user's file is still there
        export_project(project, mine, fmt)
    assert tree(mine) == ["notes.txt"]  # but the killed export's files are gone


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name fsynced files")
def test_media_are_durable_before_the_manifest_is_written(project, tmp_path, monkeypatch):
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.path.realpath(os.readlink(f"/proc/self/fd/{fd}"))))
        real_fsync(fd)

    def replace(src, dst, **kwargs):
        real_replace(src, dst, **kwargs)
        events.append(("replace", os.path.realpath(dst)))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    out = Path(os.path.realpath(tmp_path)) / "out"
    result = export_project(project, out, "jsonl")
    manifest_in_place = events.index(("replace", str(out / "manifest.json")))
    media_folder_synced = events.index(("fsync", str(out / "media")))
    media = [name for name in result.files if name.startswith("media/")]
    assert media
    for name in media:
        assert events.index(("replace", str(out / name))) < media_folder_synced
    assert media_folder_synced < manifest_in_place
    assert ("fsync", str(out)) in events[:manifest_in_place]  # the data file's rename
    assert ("fsync", str(out)) in events[manifest_in_place:]  # the manifest's rename
