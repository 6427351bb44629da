"""An import's memory does not grow with the rows: its report keeps counts and the first
examples, not the items, and what earlier batches added is looked up in the project."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from pairscope.app import importer
from pairscope.app.importer import import_file
from pairscope.app.store import Store


def write_rows(path: Path, n: int, start: int = 0) -> Path:
    with open(path, "w") as fh:
        for i in range(start, start + n):
            row = {
                "id": f"RLAIF-V-{i}",
                "query": f"<image>\nHow many circles are there in picture {i}?",
                "response": [f"There are {i % 7} circles, first answer {i}.", f"Second answer {i} is longer."],
                "human_ranking": [0, 1] if i % 2 else [1, 0],
                "image_path": f"images/missing_{i % 50}.png",
            }
            fh.write(json.dumps(row) + "\n")
    return path


def peak_of_import(tmp_path: Path, n: int) -> tuple[int, object]:
    src = write_rows(tmp_path / f"rows{n}.jsonl", n)
    with Store.create(tmp_path / f"p{n}.pairscope") as store:
        tracemalloc.start()
        try:
            report = import_file(store, src, "vlrewardbench")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    return peak, report


def test_peak_memory_is_flat_in_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(importer, "BATCH_SIZE", 100)  # many batches at a test's size
    small, small_report = peak_of_import(tmp_path, 800)
    large, large_report = peak_of_import(tmp_path, 3200)
    assert small_report.added == 800 and large_report.added == 3200
    # Keeping every item (as the report once did) made the peak grow 4x with 4x the rows.
    assert large < small * 1.5, (small, large)


def test_the_report_still_counts_everything_and_keeps_the_first_examples(tmp_path, monkeypatch):
    monkeypatch.setattr(importer, "BATCH_SIZE", 100)
    src = write_rows(tmp_path / "rows.jsonl", 750)
    with open(src, "a") as fh:  # a repeated id with other responses: a distinct item, renamed
        fh.write(json.dumps({"id": "RLAIF-V-3", "query": "q", "response": ["a", "b"], "human_ranking": [0, 1]}) + "\n")
        fh.write(open(src).readline())  # the first row again, byte for byte: imported once
    with Store.create(tmp_path / "p.pairscope") as store:
        report = import_file(store, src, "vlrewardbench")
        again = import_file(store, src, "vlrewardbench")
    assert report.added == 751 and report.identical_duplicates == 1
    assert report.renamed == [("RLAIF-V-3#2", "RLAIF-V-3")]
    assert report.per_category == {"hallucination": 751}
    assert report.items_missing_media == 750 and report.missing_media == 750
    assert report.missing_examples == [(f"RLAIF-V-{i}", f"images/missing_{i}.png") for i in range(5)]
    assert report.missing_prefix == "images/"
    assert again.added == 0 and again.unchanged == 751 and again.identical_duplicates == 1


def test_a_repeat_with_other_content_across_batches_is_fatal(tmp_path, monkeypatch):
    monkeypatch.setattr(importer, "BATCH_SIZE", 100)
    src = write_rows(tmp_path / "rows.jsonl", 300)
    first = json.loads(open(src).readline())
    first["image_path"] = "images/other.png"  # same id, prompt and responses; other media
    with open(src, "a") as fh:
        fh.write(json.dumps(first) + "\n")
    with Store.create(tmp_path / "p.pairscope") as store:
        try:
            import_file(store, src, "vlrewardbench")
        except importer.FormatError as exc:
            assert "repeats line 1's id" in str(exc) and ":301" in str(exc)
        else:
            raise AssertionError("the conflicting repeat was imported")
        assert store.item_count() == 0
