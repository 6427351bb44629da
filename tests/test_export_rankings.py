"""Export of rankings (issue 29, Build 4): TRL pairs induced from a ranking with ties, the
full ranking in ``jsonl`` (re-imported), and the ranking releases' own rows (``mr2bench``,
``rewardbench2``), each re-imported through PairScope's reader of that layout, detected.

The projects are real: a store, items of four responses, rankings stored as labels by
``Store.add_label`` (``ranked_fields``), exported through the CLI's own entry."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from pairscope.app.cli.main import main
from pairscope.app.curation.export import export_project
from pairscope.app.curation.export_formats import EXPORT_FORMATS, JSONL_IMPORT_MAP
from pairscope.app.formats.base import FormatError
from pairscope.app.importer import import_file
from pairscope.app.rankings import ranked_fields
from pairscope.app.records import Item, Label, MediaRef, Reference, Response
from pairscope.app.store import Store


def four(ext_id: str, image: Path | None = None, reference: Reference | None = None) -> Item:
    media = (MediaRef("image", image.name, str(image)),) if image is not None else ()
    return Item(
        ext_id=ext_id,
        prompt=f"Which answer to {ext_id}?",
        responses=tuple(Response(i, f"{ext_id} answer {i}", f"model-{i}") for i in range(4)),
        media=media,
        category="reasoning",
        reference=reference or Reference(),
    )


def rank(store: Store, ext_id: str, annotator: str, ranks: tuple[int, ...]) -> None:
    outcome, ranking, dense = ranked_fields(ranks)
    store.add_label(Label(store.item_id(ext_id), annotator, outcome, ranking=ranking, ranks=dense))


def prefer(store: Store, ext_id: str, annotator: str, ranking: tuple[int, ...]) -> None:
    store.add_label(Label(store.item_id(ext_id), annotator, "prefer", ranking=ranking))


@pytest.fixture
def project(tmp_path):
    """``tied``: ranks (2, 1, 2, 3); ``two-level``: (2, 1, 2, 2), with an image; ``pair``: two
    responses, the second preferred; ``best-of``: only the best named; all by alice."""
    image = tmp_path / "src" / "pic.png"
    image.parent.mkdir(parents=True)
    Image.new("RGB", (28, 28), "red").save(image)
    store = Store.create(tmp_path / "proj" / "p.pairscope")
    pair = Item(ext_id="pair", prompt="Pick one.", responses=(Response(0, "no"), Response(1, "yes")))
    store.add_items([four("tied"), four("two-level", image), pair, four("best-of")])
    rank(store, "tied", "alice", (2, 1, 2, 3))
    rank(store, "two-level", "alice", (2, 1, 2, 2))
    prefer(store, "pair", "alice", (1, 0))
    prefer(store, "best-of", "alice", (2,))
    yield store
    store.close()


def cli_export(store: Store, out: Path, fmt: str, *extra: str) -> dict:
    """``pairscope export`` as a user runs it; returns the manifest."""
    assert main(["export", "--db", str(store.path), "--format", fmt, "--out", str(out), *extra]) == 0
    return json.loads((out / "manifest.json").read_text("utf-8"))


def rows(out: Path, fmt: str) -> list[dict]:
    return [json.loads(line) for line in (out / EXPORT_FORMATS[fmt].filename).read_text("utf-8").splitlines()]


def said(messages: list[dict]) -> str:
    return messages[0]["content"][0]["text"]


# -- TRL pairs induced from a ranking -------------------------------------------------------------


def test_a_ranking_with_a_tie_gives_one_trl_row_per_ordered_pair(project, tmp_path):
    """(2, 1, 2, 3): response 1 best, 0 and 2 tie second, 3 last. Of the six pairs five are
    ordered — 1>0, 1>2, 1>3, 0>3, 2>3 — and the tie 0=2 is left out."""
    manifest = cli_export(project, tmp_path / "out", "trl", "--source", "annotator:alice")
    got = rows(tmp_path / "out", "trl")
    tied = {r["id"]: (said(r["chosen"]), said(r["rejected"])) for r in got if r["id"].startswith("tied:")}
    assert tied == {
        f"tied:{b}>{w}": (f"tied answer {b}", f"tied answer {w}") for b, w in ((1, 0), (1, 2), (1, 3), (0, 3), (2, 3))
    }
    assert [r["id"] for r in got if r["id"].startswith("tied:")] == [
        "tied:1>0",
        "tied:0>3",
        "tied:1>2",
        "tied:1>3",
        "tied:2>3",
    ]
    two_level = [r for r in got if r["id"].startswith("two-level:")]
    assert [r["id"] for r in two_level] == ["two-level:1>0", "two-level:1>2", "two-level:1>3"]  # 0=2=3 tied
    assert all(len(r["images"]) == 1 and r["prompt"][0]["content"][0]["type"] == "image" for r in two_level)
    pair = next(r for r in got if r["id"] == "pair")  # a two-response item: one row, as always
    assert (said(pair["chosen"]), said(pair["rejected"])) == ("yes", "no")
    assert {r["preference_source"] for r in got} == {"annotator"}
    assert [r["id"] for r in manifest["rows"]] == [r["id"] for r in got]  # one entry per line
    assert manifest["counts"]["items"] == 3 and len(got) == 5 + 3 + 1
    assert manifest["skipped_ids_by_reason"] == {
        "no full ranking of the 4 responses (only the best named) — the format needs one": ["best-of"]
    }


def test_trl_plain_rows_are_induced_the_same_way(project, tmp_path):
    cli_export(project, tmp_path / "out", "trl-plain", "--source", "annotator:alice")
    got = {r["id"]: r for r in rows(tmp_path / "out", "trl-plain")}
    assert sorted(i for i in got if i.startswith("tied:")) == [
        "tied:0>3",
        "tied:1>0",
        "tied:1>2",
        "tied:1>3",
        "tied:2>3",
    ]
    assert (got["tied:0>3"]["chosen"], got["tied:0>3"]["rejected"]) == ("tied answer 0", "tied answer 3")


def test_the_references_ranks_induce_pairs_with_source_reference(tmp_path):
    with Store.create(tmp_path / "p.pairscope") as store:
        store.add_items([four("ref", reference=Reference(ranking=(1, 0, 2, 3), ranks=(2, 1, 2, 3)))])
        assert store.get_item(store.item_id("ref")).reference.ranks == (2, 1, 2, 3)
        cli_export(store, tmp_path / "out", "trl", "--source", "reference")
    got = rows(tmp_path / "out", "trl")
    assert sorted(r["id"] for r in got) == ["ref:0>3", "ref:1>0", "ref:1>2", "ref:1>3", "ref:2>3"]
    assert {r["preference_source"] for r in got} == {"reference"}


def test_a_ranking_that_ties_everything_orders_no_pair(tmp_path):
    with Store.create(tmp_path / "p.pairscope") as store:
        store.add_items([four("flat")])
        rank(store, "flat", "alice", (1, 1, 1, 1))
        result = export_project(store, tmp_path / "out", "trl", source="annotator:alice")
    assert result.skipped == [("flat", "every one of the 4 responses is tied — no ordered pair")]
    assert rows(tmp_path / "out", "trl") == []


# -- agreement compares ranks -------------------------------------------------------------------------


def test_agreed_rankings_must_have_equal_ranks_not_only_the_same_order(tmp_path):
    """(2, 1, 3, 4) and (2, 1, 2, 3) have the same order (1, 0, 2, 3); the second ties 0 and 2.
    They agree on the best, not on the ranking: no full ranking goes out."""
    with Store.create(tmp_path / "p.pairscope") as store:
        store.add_items([four("same"), four("differ")])
        for name in ("alice", "bob"):
            rank(store, "same", name, (2, 1, 2, 3))
        rank(store, "differ", "alice", (2, 1, 3, 4))
        rank(store, "differ", "bob", (2, 1, 2, 3))
        result = export_project(store, tmp_path / "trl", "trl")
        mr2 = export_project(store, tmp_path / "mr2", "mr2bench")
        export_project(store, tmp_path / "js", "jsonl")
    why = "annotators rank the responses differently — the format needs one agreed full ranking"
    assert result.skipped == [("differ", why)] and mr2.skipped == [("differ", why)]
    assert len(rows(tmp_path / "trl", "trl")) == 5 and result.per_source == {"consensus": 1}
    [same] = rows(tmp_path / "mr2", "mr2bench")
    assert same["id"] == "same" and same["rankings"] == [2, 1, 2, 3]
    prefs = {r["id"]: r["preference"] for r in rows(tmp_path / "js", "jsonl")}
    assert prefs["same"]["ranks"] == [2, 1, 2, 3] and prefs["same"]["annotators"] == ["alice", "bob"]
    assert prefs["differ"]["preferred"] == 1 and prefs["differ"]["ranks"] == []  # the best, agreed; no ranking


# -- jsonl: the full ranking, re-imported --------------------------------------------------------------


def test_jsonl_rows_carry_ranks_and_reimport_them(project, tmp_path):
    project.add_items([four("ref-tied", reference=Reference(ranking=(1, 0, 2, 3), ranks=(2, 1, 2, 3)))])
    manifest = cli_export(project, tmp_path / "out", "jsonl")
    got = {r["id"]: r for r in rows(tmp_path / "out", "jsonl")}
    [label] = got["tied"]["labels"]
    assert (label["outcome"], label["ranking"], label["ranks"]) == ("prefer", [1, 0, 2, 3], [2, 1, 2, 3])
    assert got["tied"]["preference"]["ranks"] == [2, 1, 2, 3]
    assert got["ref-tied"]["reference"]["ranks"] == [2, 1, 2, 3]
    assert got["ref-tied"]["reference"]["ranking"] == [1, 0, 2, 3]
    assert got["pair"]["labels"][0]["ranks"] == [] and got["pair"]["reference"]["ranks"] is None
    assert manifest["reimport"]["map"] == JSONL_IMPORT_MAP and JSONL_IMPORT_MAP["ranks"] == "reference.ranks"

    with Store.create(tmp_path / "again.pairscope") as again:
        report = import_file(again, tmp_path / "out" / "items.jsonl", "jsonl", tmp_path / "out", JSONL_IMPORT_MAP)
        assert report.added == 5 and not report.problems
        back = again.get_item(again.item_id("ref-tied")).reference
        assert (back.ranking, back.ranks) == ((1, 0, 2, 3), (2, 1, 2, 3))
        assert again.get_item(again.item_id("pair")).reference.ranks == ()


# -- the releases' own layouts ------------------------------------------------------------------------


def test_mr2bench_rows_hold_the_ranking_and_reimport_detected(project, tmp_path):
    manifest = cli_export(project, tmp_path / "out", "mr2bench", "--source", "annotator:alice")
    got = {r["id"]: r for r in rows(tmp_path / "out", "mr2bench")}
    assert set(got["tied"]) == {"id", "prompt", "responses", "rankings", "image", "video", "category"}
    assert got["tied"]["rankings"] == [2, 1, 2, 3] and got["tied"]["image"] == [] and got["tied"]["video"] == []
    assert got["pair"]["rankings"] == [2, 1]  # a pair is a ranking of two
    assert got["two-level"]["image"][0].startswith("media/")
    assert manifest["skipped"] == [
        {"id": "best-of", "reason": "no full ranking of the 4 responses (only the best named) — the format needs one"}
    ]
    assert manifest["reimport"] == {"format": "mr2bench", "media_root": "."}

    with Store.create(tmp_path / "again.pairscope") as again:
        report = import_file(again, tmp_path / "out" / "mr2bench.jsonl", media_root=tmp_path / "out")
        assert report.format == "mr2bench" and report.added == 3 and report.missing_media == 0
        tied = again.get_item(again.item_id("tied"))
        assert tied.source_format == "mr2bench" and tied.reference.ranks == (2, 1, 2, 3)
        assert tied.reference.ranking == (1, 0, 2, 3) and tied.category == "reasoning"
        assert [r.text for r in tied.responses] == [f"tied answer {i}" for i in range(4)]
        assert again.get_item(again.item_id("pair")).reference.ranking == (1, 0)
        picture = again.get_item(again.item_id("two-level")).media[0]
        assert Path(picture.path).read_bytes() == (tmp_path / "src" / "pic.png").read_bytes()


def test_rewardbench2_rows_take_two_rank_levels_and_reimport_detected(project, tmp_path):
    rank(project, "tied", "alice", (1, 1, 2, 2))  # two chosen: the Ties subset's shape
    project.add_items([four("three-levels")])
    rank(project, "three-levels", "alice", (1, 2, 3, 3))
    manifest = cli_export(project, tmp_path / "out", "rewardbench2", "--source", "annotator:alice")
    got = {r["id"]: r for r in rows(tmp_path / "out", "rewardbench2")}
    two = got["two-level"]
    assert two["chosen"] == ["two-level answer 1"]
    assert two["rejected"] == ["two-level answer 0", "two-level answer 2", "two-level answer 3"]
    assert (two["num_correct"], two["num_rejected"], two["total_completions"]) == (1, 3, 4)
    assert two["models"] == ["model-1", "model-0", "model-2", "model-3"] and two["subset"] == "reasoning"
    assert two["image"][0].startswith("media/")  # not RewardBench 2's schema, but not dropped
    assert got["tied"]["chosen"] == ["tied answer 0", "tied answer 1"] and got["tied"]["num_correct"] == 2
    assert got["best-of"]["chosen"] == ["best-of answer 2"] and len(got["best-of"]["rejected"]) == 3
    assert (got["pair"]["chosen"], got["pair"]["rejected"]) == (["yes"], ["no"])
    reason = (
        "RewardBench 2 rows hold two rank levels (chosen = rank 1, rejected = the rest); the ranking has 3 rank levels"
    )
    assert manifest["skipped"] == [{"id": "three-levels", "reason": reason}]

    with Store.create(tmp_path / "again.pairscope") as again:
        report = import_file(again, tmp_path / "out" / "rewardbench2.jsonl", media_root=tmp_path / "out")
        assert report.format == "rewardbench2" and report.added == 4
        back = again.get_item(again.item_id("two-level"))
        assert back.source_format == "rewardbench2" and back.category == "reasoning"
        assert [r.text for r in back.responses] == two["chosen"] + two["rejected"]  # chosen first
        assert back.reference.ranks == (1, 2, 2, 2) and back.reference.ranking == (0,)
        tied = again.get_item(again.item_id("tied")).reference
        assert tied.ranks == (1, 1, 2, 2) and tied.ranking is None  # two chosen: no single best


def test_the_cli_offers_every_export_format(capsys):
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    listed = capsys.readouterr().out.split("--format {", 1)[1].split("}", 1)[0]
    assert listed.split(",") == list(EXPORT_FORMATS) and {"mr2bench", "rewardbench2"} <= set(EXPORT_FORMATS)


def test_another_layouts_keys_never_make_a_row_look_like_that_layout(tmp_path):
    """An MM-RLHF pair keeps ``chosen_reason`` among its fields; copied into a RewardBench 2 row
    it would be detected as MM-RLHF again. The row re-imports as RewardBench 2."""
    Image.new("RGB", (28, 28), "red").save(tmp_path / "short.png")
    row = {
        "id": "mm-1",
        "image": "short.png",
        "prompt": "Red?",
        "chosen": "yes",
        "rejected": "no",
        "chosen_reason": "red",
    }
    (tmp_path / "mm.jsonl").write_text(json.dumps(row) + "\n", "utf-8")
    with Store.create(tmp_path / "p.pairscope") as store:
        import_file(store, tmp_path / "mm.jsonl", "mm_rlhf", media_root=tmp_path)
        assert "chosen_reason" in store.get_item(store.item_id("mm-1")).extra
        cli_export(store, tmp_path / "out", "rewardbench2", "--source", "reference")
    [got] = rows(tmp_path / "out", "rewardbench2")
    assert (got["chosen"], got["rejected"]) == (["yes"], ["no"]) and "chosen_reason" not in got
    with Store.create(tmp_path / "again.pairscope") as again:
        report = import_file(again, tmp_path / "out" / "rewardbench2.jsonl", media_root=tmp_path / "out")
        assert report.format == "rewardbench2" and report.added == 1


@pytest.mark.parametrize(
    ("ranks", "ranking", "problem"),
    [
        ([1, 2], None, "expected a rank per response (3)"),
        ([0, 1, 2], None, "ranks must be whole numbers >= 1"),
        ([2, 1, 2], [0, 1, 2], "ranking [0, 1, 2] is not the order of ranks [2, 1, 2]"),
    ],
)
def test_the_generic_importer_refuses_ranks_that_do_not_rank_the_responses(tmp_path, ranks, ranking, problem):
    row = {"id": "x", "prompt": "p", "responses": ["a", "b", "c"], "ranks": ranks, "ranking": ranking}
    (tmp_path / "x.jsonl").write_text(json.dumps(row) + "\n", "utf-8")
    with Store.create(tmp_path / "p.pairscope") as store, pytest.raises(FormatError, match=re.escape(problem)):
        import_file(store, tmp_path / "x.jsonl", "jsonl")
