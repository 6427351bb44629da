"""Exports as their consumers read them (issue 22, items 1-2): TRL's vision DPO collator
(``DataCollatorForVisionPreference``, a tiny Qwen2-VL processor) over ``trl`` and ``hf`` rows,
and 🤗 datasets over the ``hf`` export (``load_dataset("parquet", …)`` and the folder itself,
as the Hub loads it from the card's ``configs``).

These run in CI (``.ci/run`` installs the dev extra): a missing consumer fails there.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
from pathlib import Path

import pytest
from PIL import Image

import tiny_models
from helpers import write_jsonl
from pairscope.app.cli.main import main
from pairscope.app.curation import hf_dataset
from pairscope.app.curation.export import export_project
from pairscope.app.demo import create_demo_project, demo_dir
from pairscope.app.importer import import_file
from pairscope.app.rankings import ranked_fields
from pairscope.app.records import Item, Label, MediaRef, Reference, Response
from pairscope.app.store import Store

#: Image sizes in multiples of 28 px (one Qwen2-VL token per 28×28 block, no resizing), all
#: different, so the collator's ``image_grid_thw`` shows which image went where.
SIZES = {"wide.png": (56, 28), "tall.png": (28, 56), "big.png": (84, 56)}


def need(name: str):
    """Import a consumer; in CI a missing one fails (the set-up installs the dev extra)."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI installs the dev extra, which has {name}: {exc}")
        pytest.skip(f"needs {name} (pip install -e '.[dev]')")


def vlrb(id_, images, ranking=(0, 1)):
    return {
        "id": id_,
        "query": "<image>\n" * len(images) + f"Question {id_}?",
        "response": [f"{id_} first", f"{id_} second"],
        "human_ranking": list(ranking),
        "image_path": images[0] if len(images) == 1 else images,
        "models": ["m1", "m2"],
        "query_source": "wildvision",
    }


@pytest.fixture
def project(tmp_path):
    """One-image items, a two-image item (different sizes, in a known order), a text-only item."""
    src = tmp_path / "src"
    (src / "imgs").mkdir(parents=True)
    for i, (name, size) in enumerate(SIZES.items()):
        Image.new("RGB", size, ("red", "blue", "green")[i]).save(src / "imgs" / name)
    rows = [
        vlrb("wildvision-1", ["imgs/wide.png"]),
        vlrb("wildvision-2", ["imgs/tall.png"], ranking=(1, 0)),
        vlrb("wildvision-two", ["imgs/big.png", "imgs/wide.png"]),
    ]
    write_jsonl(src / "data.jsonl", rows)
    store = Store.create(tmp_path / "proj" / "p.pairscope")
    import_file(store, src / "data.jsonl", "vlrewardbench")
    store.add_items(
        [
            Item(
                ext_id="text-only",
                prompt="Say hi.",
                responses=(Response(0, "hi"), Response(1, "no")),
                reference=Reference(ranking=(0, 1)),
            )
        ]
    )
    yield store
    store.close()


def rows_of(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text("utf-8").splitlines())}


def image_part():
    return {"type": "image", "text": None}


# -- the rows ---------------------------------------------------------------------------------


def test_trl_rows_are_conversational_with_one_placeholder_per_image_in_order(project, tmp_path):
    export_project(project, tmp_path / "out", "trl", source="reference")
    rows = rows_of(tmp_path / "out" / "trl.jsonl")
    two = rows["wildvision-two"]
    assert two["prompt"] == [
        {"role": "user", "content": [image_part(), image_part(), {"type": "text", "text": "Question wildvision-two?"}]}
    ]
    assert two["chosen"] == [{"role": "assistant", "content": [{"type": "text", "text": "wildvision-two first"}]}]
    assert two["rejected"] == [{"role": "assistant", "content": [{"type": "text", "text": "wildvision-two second"}]}]
    sizes = [Image.open(tmp_path / "out" / p).size for p in two["images"]]
    assert sizes == [SIZES["big.png"], SIZES["wide.png"]]  # the dataset's order
    assert rows["wildvision-2"]["chosen"][0]["content"][0]["text"] == "wildvision-2 second"
    assert rows["text-only"]["prompt"][0]["content"] == [{"type": "text", "text": "Say hi."}]
    assert rows["text-only"]["images"] == []
    assert all(set(r) == {"id", "prompt", "chosen", "rejected", "images", "preference_source"} for r in rows.values())


def test_the_plain_string_variant_is_a_format_of_its_own(project, tmp_path):
    export_project(project, tmp_path / "out", "trl-plain", source="reference")
    rows = rows_of(tmp_path / "out" / "trl.jsonl")
    assert rows["wildvision-1"]["prompt"] == "Question wildvision-1?"
    assert rows["wildvision-1"]["chosen"] == "wildvision-1 first" and len(rows["wildvision-two"]["images"]) == 2


def test_a_conversational_import_keeps_its_messages(tmp_path):
    """A TRL set imported in conversational form goes out with its own turns (a system
    message, the placeholders where it put them), chosen/rejected swapped by the preference."""
    store = Store.create(tmp_path / "p.pairscope")
    Image.new("RGB", (28, 28)).save(tmp_path / "x.png")
    prompt = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Look:"}, {"type": "image"}]},
    ]
    row = {
        "id": "c1",
        "prompt": prompt,
        "chosen": [{"role": "assistant", "content": "yes"}],
        "rejected": [{"role": "assistant", "content": "no"}],
        "images": ["x.png"],
    }
    import_file(store, write_jsonl(tmp_path / "trl.jsonl", [row]), "trl")
    export_project(store, tmp_path / "out", "trl", source="reference")
    got = rows_of(tmp_path / "out" / "trl.jsonl")["c1"]
    assert got["prompt"] == [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "Look:"}, image_part()]},
    ]
    assert got["chosen"] == [{"role": "assistant", "content": [{"type": "text", "text": "yes"}]}]
    store.close()


def test_hf_rows_embed_images_and_keep_a_missing_ones_reference(project, tmp_path):
    import pyarrow.parquet as pq

    gone = tmp_path / "src" / "imgs" / "tall.png"
    gone.unlink()
    export_project(project, tmp_path / "out", "hf", source="reference")
    [shard] = sorted((tmp_path / "out" / "data").iterdir())
    assert shard.name == "train-00000-of-00001.parquet"
    rows = {r["id"]: r for r in pq.read_table(shard).to_pylist()}
    big = (tmp_path / "src" / "imgs" / "big.png").read_bytes()
    assert rows["wildvision-two"]["images"][0]["bytes"] == big
    assert [i["path"] for i in rows["wildvision-two"]["images"]][0].endswith(".png")
    assert rows["wildvision-2"]["images"] == [{"bytes": None, "path": "imgs/tall.png"}]  # the reference stays
    assert len([p for p in rows["wildvision-2"]["prompt"][0]["content"] if p["type"] == "image"]) == 1
    assert rows["text-only"]["images"] == [] and rows["text-only"]["videos"] == []


def test_hf_shards_are_numbered_and_a_forced_export_leaves_no_stale_shard(project, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    monkeypatch.setattr(hf_dataset, "SHARD_BYTES", 1)
    monkeypatch.setattr(hf_dataset, "ROW_GROUP_ROWS", 1)
    export_project(project, out, "hf", source="reference")
    names = sorted(p.name for p in (out / "data").iterdir())
    assert names == [f"train-{i:05d}-of-00004.parquet" for i in range(4)]
    monkeypatch.setattr(hf_dataset, "SHARD_BYTES", 10**9)
    result = export_project(project, out, "hf", source="reference", force=True)
    assert sorted(p.name for p in (out / "data").iterdir()) == ["train-00000-of-00001.parquet"]
    assert pq.read_table(out / "data" / "train-00000-of-00001.parquet").num_rows == result.n_items == 4
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["files"]) >= {"data/train-00000-of-00001.parquet", "README.md"}
    digest = hashlib.sha256((out / "README.md").read_bytes()).hexdigest()
    assert manifest["files"]["README.md"]["sha256"] == digest


def test_an_hf_export_of_nothing_is_one_empty_shard_and_a_card(project, tmp_path):
    import pyarrow.parquet as pq

    result = export_project(project, tmp_path / "out", "hf", only="adjudicated")
    assert result.n_items == 0
    shard = pq.ParquetFile(tmp_path / "out" / "data" / "train-00000-of-00001.parquet")
    assert shard.metadata.num_rows == 0 and shard.metadata.num_row_groups == 0  # datasets refuses a 0-row group
    assert shard.schema_arrow.metadata == hf_dataset.SCHEMA.metadata
    assert "num_examples: 0" in (tmp_path / "out" / "README.md").read_text()


def test_hf_embeds_images_without_copying_them_with_media_reference(project, tmp_path):
    import pyarrow.parquet as pq

    export_project(project, tmp_path / "out", "hf", source="reference", media="reference")
    assert not (tmp_path / "out" / "media").exists()
    rows = {r["id"]: r for r in pq.read_table(tmp_path / "out" / "data").to_pylist()}
    assert rows["wildvision-1"]["images"] == [
        {"bytes": (tmp_path / "src" / "imgs" / "wide.png").read_bytes(), "path": "wide.png"}
    ]


def test_hf_export_reimports_the_same_items_and_images(project, tmp_path):
    export_project(project, tmp_path / "out", "hf", source="reference")
    again = Store.create(tmp_path / "again" / "p.pairscope")
    report = import_file(again, tmp_path / "out", "hf-preference")
    assert report.added == 4
    item = again.get_item(again.item_id("wildvision-two"))
    stored = [Path(again.path.parent / m.path).read_bytes() for m in item.media]
    originals = [(tmp_path / "src" / "imgs" / n).read_bytes() for n in ("big.png", "wide.png")]
    assert stored == originals
    again.close()


# -- 🤗 datasets -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_hf(tmp_path_factory):
    """The bundled demo, exported as ``hf`` (the dataset's reference as preference)."""
    folder = tmp_path_factory.mktemp("demo")
    create_demo_project(folder / "demo.pairscope")
    code = main(
        [
            "export",
            "--db",
            str(folder / "demo.pairscope"),
            "--format",
            "hf",
            "--out",
            str(folder / "hf"),
            "--source",
            "reference",
        ]
    )
    assert code == 0
    return folder / "hf"


@pytest.mark.slow
def test_the_hf_export_of_the_demo_loads_with_datasets(demo_hf, tmp_path):
    datasets = need("datasets")
    import pyarrow.parquet as pq
    from huggingface_hub import DatasetCard

    manifest = json.loads((demo_hf / "manifest.json").read_text())
    cache = str(tmp_path / "cache")
    ds = datasets.load_dataset(
        "parquet", data_files=str(demo_hf / "data" / "train-*.parquet"), split="train", cache_dir=cache
    )
    assert len(ds) == manifest["counts"]["items"] > 0
    assert [r["id"] for r in manifest["rows"]] == ds["id"]
    assert isinstance(ds.features["images"].feature, datasets.Image)
    source = {r["id"]: r["image_path"] for r in map(json.loads, (demo_dir() / "images.jsonl").read_text().splitlines())}
    checked = 0
    for row in ds:
        if row["id"] in source:
            [image] = row["images"]
            assert isinstance(image, Image.Image)
            assert image.size == Image.open(demo_dir() / source[row["id"]]).size
            checked += 1
        n_placeholders = sum(p["type"] == "image" for p in row["prompt"][0]["content"])
        assert n_placeholders == len(row["images"])
    assert checked >= 30
    videos = [row for row in ds if row["videos"]]
    assert videos and all((demo_hf / p).is_file() for row in videos for p in row["videos"])

    card = DatasetCard.load(demo_hf / "README.md")
    info = datasets.info.DatasetInfo._from_yaml_dict(card.data["dataset_info"])
    schema = pq.read_schema(demo_hf / "data" / "train-00000-of-00001.parquet")
    assert info.features == datasets.Features.from_arrow_schema(schema) == ds.features
    assert info.splits["train"].num_examples == len(ds)
    assert card.data["configs"] == [
        {"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*"}]}
    ]
    assert "`reference`" in card.text and f"| missing media | {manifest['counts']['missing_media']} |" in card.text
    for reason, n in manifest["counts"]["skipped_by_reason"].items():
        assert f"| skipped: {reason} | {n} |" in card.text

    # As the Hub loads it: the folder, read through the card's configs (media and manifest ignored).
    hub = datasets.load_dataset(str(demo_hf), split="train", cache_dir=cache)
    assert hub["id"] == ds["id"] and hub.features == ds.features


# -- TRL's collator ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def collator(tmp_path_factory):
    need("trl")
    from transformers import AutoProcessor
    from trl.trainer.dpo_trainer import DataCollatorForVisionPreference

    folder = tiny_models.build_tiny_qwen2_vl(tmp_path_factory.mktemp("models") / "tiny-qwen2-vl")
    return DataCollatorForVisionPreference(processor=AutoProcessor.from_pretrained(folder))


def image_tokens(collator, batch) -> int:
    pad = collator.processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    return int((batch["input_ids"] == pad).sum())


def grid(size) -> list[int]:
    width, height = size
    return [1, height // 14, width // 14]


def trl_dataset(datasets, out: Path):
    """The export's recipe (docs/EXPORT.md): the JSONL, its image paths joined to the folder."""
    ds = datasets.load_dataset(
        "json", data_files=str(out / "trl.jsonl"), split="train", cache_dir=str(out.parent / "cache")
    )
    ds = ds.map(lambda r: {"images": [str(out / p) for p in r["images"]]})
    return ds.cast_column("images", datasets.List(datasets.Image()))


@pytest.mark.slow
def test_trl_collator_accepts_trl_rows_and_refuses_the_plain_strings(project, tmp_path, collator):
    datasets = need("datasets")
    export_project(project, tmp_path / "plain", "trl-plain", source="reference")
    plain = trl_dataset(datasets, tmp_path / "plain")
    with pytest.raises(ValueError, match=re.escape("Found total 0 <|image_pad|> tokens")):  # the defect
        collator([plain[0]])

    export_project(project, tmp_path / "out", "trl", source="reference")
    ds = trl_dataset(datasets, tmp_path / "out")
    by_id = {r["id"]: i for i, r in enumerate(ds)}
    singles = collator([ds[by_id["wildvision-1"]], ds[by_id["wildvision-2"]]])
    assert singles["image_grid_thw"].tolist() == [grid(SIZES["wide.png"]), grid(SIZES["tall.png"])] * 2
    assert image_tokens(collator, singles) == 2 * (2 + 2)  # 56×28 and 28×56: 2 tokens each, chosen + rejected
    two = collator([ds[by_id["wildvision-two"]]])
    assert two["image_grid_thw"].tolist() == [grid(SIZES["big.png"]), grid(SIZES["wide.png"])] * 2
    assert image_tokens(collator, two) == 2 * (6 + 2)
    text = collator([ds[by_id["text-only"]]])
    assert "pixel_values" not in text and text["completion_mask"].sum() > 0


@pytest.mark.slow
def test_trl_collator_takes_the_pairs_induced_from_a_ranking(tmp_path, collator):
    """A 4-response item ranked (2, 1, 2, 3) with one image: five rows (the tie 0 = 2 left
    out), read by 🤗 datasets as the docs say and collated by TRL, one image per side."""
    datasets = need("datasets")
    Image.new("RGB", SIZES["wide.png"], "red").save(tmp_path / "wide.png")
    store = Store.create(tmp_path / "p.pairscope")
    store.add_items(
        [
            Item(
                ext_id="ranked",
                prompt="Which is right?",
                responses=tuple(Response(i, f"answer {i}") for i in range(4)),
                media=(MediaRef("image", "wide.png", str(tmp_path / "wide.png")),),
            )
        ]
    )
    outcome, ranking, ranks = ranked_fields((2, 1, 2, 3))
    store.add_label(Label(store.item_id("ranked"), "alice", outcome, ranking=ranking, ranks=ranks))
    export_project(store, tmp_path / "out", "trl", source="annotator:alice")
    store.close()
    ds = trl_dataset(datasets, tmp_path / "out")
    assert sorted(ds["id"]) == ["ranked:0>3", "ranked:1>0", "ranked:1>2", "ranked:1>3", "ranked:2>3"]
    by_id = {r["id"]: r for r in ds}
    assert by_id["ranked:0>3"]["chosen"][0]["content"][0]["text"] == "answer 0"
    assert by_id["ranked:0>3"]["rejected"][0]["content"][0]["text"] == "answer 3"
    batch = collator([ds[i] for i in range(len(ds))])
    assert batch["input_ids"].shape[0] == 2 * 5  # chosen and rejected of each pair
    assert batch["image_grid_thw"].tolist() == [grid(SIZES["wide.png"])] * 10
    assert image_tokens(collator, batch) == 10 * 2  # 56×28: 2 tokens per image


@pytest.mark.slow
def test_trl_collator_accepts_hf_rows(project, tmp_path, collator, demo_hf):
    datasets = need("datasets")
    export_project(project, tmp_path / "out", "hf", source="reference")
    cache = str(tmp_path / "cache")
    ds = datasets.load_dataset(
        "parquet", data_files=str(tmp_path / "out" / "data" / "*.parquet"), split="train", cache_dir=cache
    )
    by_id = {r["id"]: i for i, r in enumerate(ds)}
    two = collator([ds[by_id["wildvision-two"]]])
    assert two["image_grid_thw"].tolist() == [grid(SIZES["big.png"]), grid(SIZES["wide.png"])] * 2
    demo = datasets.load_dataset(
        "parquet", data_files=str(demo_hf / "data" / "*.parquet"), split="train", cache_dir=cache
    )
    images_only = demo.filter(lambda r: not r["videos"])
    batch = collator([images_only[i] for i in range(4)])
    assert batch["input_ids"].shape[0] == 8 and batch["image_grid_thw"].shape[0] == 8
    assert image_tokens(collator, batch) == int(batch["image_grid_thw"].prod(dim=1).sum()) // 4


def test_relative_out_works_for_hf(project, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["export", "--db", str(project.path), "--format", "hf", "--out", "rel", "--source", "reference"])
    assert code == 0 and (tmp_path / "rel" / "data" / "train-00000-of-00001.parquet").is_file()
    assert (tmp_path / "rel" / "README.md").is_file()
