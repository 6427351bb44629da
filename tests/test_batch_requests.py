"""A run as a request file and back (``pairscope judge --export-requests``, ``pairscope
import-verdicts --openai-batch``; app/judge/batch_requests.py, batch_results.py).

The slow tests run the round trip through a real executor (tests/batch_runner.py posting to
``transformers serve`` with the tiny Qwen2-VL; ``ray[data]`` is not installed here) and compare
it with a live run of the same plan through the endpoint backend against the same server.
The fast ones answer from a fixed table through the same output format: joins, partial,
duplicate and bad lines, idempotent re-imports, shard limits, sampled runs' seeds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from pathlib import Path

import pytest

from batch_runner import answer_from_table, completion, read_requests, run_batch
from pairscope.app.cli.main import main
from pairscope.app.demo import create_demo_project
from pairscope.app.judge.batch_requests import (
    MAX_BYTES,
    MAX_REQUESTS,
    ExportError,
    ShardLimits,
    custom_id,
    export_requests,
)
from pairscope.app.judge.batch_results import BatchResultsError, import_batch_results
from pairscope.app.judge.results import item_verdicts
from pairscope.app.judge.session import JudgeConfig, JudgeSession
from pairscope.app.records import Item, MediaRef, Response
from pairscope.app.store import Store
from pairscope.models.base import create_backend

slow = pytest.mark.slow
VERDICT = "Overall Judgment: Answer {} is better"


@pytest.fixture
def demo(tmp_path):
    path = tmp_path / "demo.pairscope"
    create_demo_project(path)
    return path


def shards(folder: Path) -> list[Path]:
    return sorted(folder.glob("requests-*.jsonl"))


def first_answer(request) -> str:
    return VERDICT.format(1)


def comparable(verdicts, cut_char: bool = False):
    """What a reader of the run sees of each sample (timing and bookkeeping left out).
    ``cut_char``: a trailing U+FFFD left out of the texts — measured on ``transformers serve``
    5.24: where ``max_tokens`` ends inside a character, its streamed answer (the live run) holds
    the partial bytes back and its whole answer (the batch) decodes them as U+FFFD."""

    def text(value):
        return value.rstrip("\ufffd") if cut_char and value else value

    return {
        (v.item_id, v.sample_idx): (
            v.order_shown,
            text(v.raw_output),
            v.choice,
            v.scores,
            v.parsed,
            text(v.rationale),
            v.error,
            {k: x for k, x in (v.media_sent or {}).items() if k != "served_by"},
            v.confidence,
            v.tokens_in,  # the server counted the same prompt and image tokens
            v.tokens_out,
        )
        for v in verdicts
    }


def export(store, tmp_path, config=None, limit=4, **options):
    ids = [s.id for s in store.item_summaries(0, limit)]
    folder = tmp_path / f"requests-{len(list(tmp_path.iterdir()))}"
    return export_requests(store, config or JudgeConfig(k=2, both_orders=True), "judge-m", ids, folder, **options)


# -- the request file ------------------------------------------------------------------------


def test_the_batch_api_limits_are_the_documented_ones():
    assert (MAX_REQUESTS, MAX_BYTES) == (50_000, 200_000_000)  # per input file (OpenAI, Azure)
    assert len(custom_id(12, 345, 99, tuple(range(40)))) <= 64


def test_every_planned_sample_is_in_one_line_with_the_live_plan(demo, tmp_path):
    with Store.open(demo) as store:
        config = JudgeConfig(k=3, both_orders=True, seed=7)
        report = export(store, tmp_path, config)
        run = report.run
        lines = read_requests(shards(report.directory))
        manifest = json.loads((report.directory / "manifest.json").read_text())
        assert run.status == "exported" and run.backend == "openai-batch" and run.k == 3 and run.seed == 7
        # Greedy: one request per (item, order), standing for every sample of that order.
        live = JudgeSession(store, _planner(), config)
        live.run = run
        planned = {}
        for item_id in [s.id for s in store.item_summaries(0, 4)]:
            item = store.get_item(item_id)
            for sample, order in live.mode.plan(item.ext_id, len(item.responses), 3, True, 7):
                planned[(item_id, sample)] = order
        covered = {(r["item"], s): tuple(r["order"]) for r in manifest["requests"] for s in r["samples"]}
        assert covered == planned and report.samples == len(planned) == 4 * 6
        assert len(lines) == report.requests == 4 * 2  # two orders per item
        for line, entry in zip(lines, manifest["requests"], strict=True):
            assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
            assert (
                line["custom_id"]
                == entry["custom_id"]
                == custom_id(run.id, entry["item"], entry["samples"][0], entry["order"])
            )
            body = line["body"]
            assert body["model"] == "judge-m" and body["temperature"] == 0.0 and "stream" not in body
            assert body["logprobs"] is True and "seed" not in body
            image, text = body["messages"][0]["content"]
            assert image["image_url"]["url"].startswith("data:image/png;base64,")
            png = base64.b64decode(image["image_url"]["url"].split(",", 1)[1])
            assert hashlib.sha256(png).hexdigest() == entry["images_sha256"][0]
            assert text["type"] == "text" and "Answer 1" in text["text"]
        assert manifest["run"]["template_hash"] == run.template_hash and manifest["run"]["mode"] == "pairwise"
        media = next(iter(manifest["items"].values()))["media"]
        assert media and all(len(m["sha256"]) == 64 for m in media)


def _planner():
    from pairscope.app.judge.batch_requests import BatchPlanner

    return BatchPlanner("judge-m")


def test_shards_keep_to_the_request_and_byte_limits(demo, tmp_path):
    with Store.open(demo) as store:
        report = export(store, tmp_path, limits=ShardLimits(requests=3))
        counts = [len(read_requests([p])) for p in shards(report.directory)]
        assert counts == [3, 3, 2] and [s["requests"] for s in report.shards] == counts
        one = max(p.stat().st_size for p in shards(report.directory))
        report = export(store, tmp_path, JudgeConfig(k=2, both_orders=True, seed=1), limits=ShardLimits(bytes=one))
        assert all(p.stat().st_size <= one for p in shards(report.directory)) and len(report.shards) >= 2
        assert sum(s["requests"] for s in report.shards) == 8
        with pytest.raises(ExportError, match="over the 100 bytes"):
            export(store, tmp_path, JudgeConfig(seed=2), limits=ShardLimits(bytes=100))


def test_a_folder_that_holds_requests_is_refused(demo, tmp_path):
    with Store.open(demo) as store:
        report = export(store, tmp_path)
        with pytest.raises(ExportError, match="already holds exported requests"):
            export_requests(store, JudgeConfig(), "judge-m", [1], report.directory)


def test_images_as_file_references_are_written_once_each(demo, tmp_path):
    with Store.open(demo) as store:
        report = export(store, tmp_path, media_as="file")
        urls = [
            line["body"]["messages"][0]["content"][0]["image_url"]["url"]
            for line in read_requests(shards(report.directory))
        ]
        files = sorted((report.directory / "media").iterdir())
        assert all(u.startswith("file://") for u in urls) and len(files) == len(set(urls)) == 4
        assert {Path(u[len("file://") :]).name for u in urls} == {f.name for f in files}


def test_a_sampled_run_sends_each_sample_with_the_seed_a_live_run_uses(demo, tmp_path):
    with Store.open(demo) as store:
        config = JudgeConfig(k=2, temperature=0.7, seed=5)
        report = export(store, tmp_path, config, limit=2)
        lines = read_requests(shards(report.directory))
        assert len(lines) == report.samples == 4  # sampled: one line per sample
        session = JudgeSession(store, _planner(), config)
        session.run = report.run
        for line in lines:
            item_id, sample = (int(p[1:]) for p in line["custom_id"].split("-")[1:3])
            item = store.get_item(item_id)
            unit = next(u for u in session.units(item) if u.sample_idx == sample)
            assert line["body"]["seed"] == session.request(unit).seed
        out = tmp_path / "out.jsonl"
        answer_from_table(shards(report.directory), out, first_answer)
        import_batch_results(store, [out], report.directory)
        seeds = {(v.item_id, v.sample_idx): v.media_sent["seed"] for v in store.verdicts(report.run.id)}
        assert len(set(seeds.values())) == 4


def test_unreadable_media_are_errors_before_export_as_in_a_live_run(store, tmp_path):
    responses = (Response(0, "one"), Response(1, "two"))
    gone = (MediaRef("image", "gone.png", None, "not found"),)
    store.add_items([Item("seen", "q", responses), Item("gone", "q", responses, media=gone)])
    ids = [store.item_id("seen"), store.item_id("gone")]
    report = export_requests(store, JudgeConfig(), "judge-m", ids, tmp_path / "req")
    assert report.failed == 1 and report.requests == 1
    (failed,) = [v for v in store.verdicts(report.run.id) if v.error]
    assert failed.item_id == ids[1] and failed.error.startswith("media:")


# -- and back --------------------------------------------------------------------------------


def test_answers_join_on_custom_id_whatever_their_order(demo, tmp_path):
    with Store.open(demo) as store:
        report = export(store, tmp_path)
        out = tmp_path / "out.jsonl"
        answer_from_table(
            shards(report.directory),
            out,
            lambda r: VERDICT.format(1 + r["body"]["messages"][0]["content"][1]["text"].count("x") % 2),
        )
        lines = out.read_text().splitlines()
        shuffled = tmp_path / "shuffled.jsonl"
        shuffled.write_text("\n".join(reversed(lines)) + "\n")
        result = import_batch_results(store, [shuffled], report.directory)
        assert result.answered == 8 and result.samples == 16 and not result.missing and result.run.status == "done"
        stored = store.verdicts(report.run.id)
        assert len(stored) == 16 and all(v.parsed and v.error is None for v in stored)
        for v in stored:  # the position named is mapped back through the order shown
            assert v.choice == v.order_shown[int(v.raw_output[-len("1 is better")]) - 1]
        assert len(item_verdicts(store, result.run)) == 4


def test_logprobs_become_the_confidence_a_live_run_records(demo, tmp_path):
    with Store.open(demo) as store:
        report = export(store, tmp_path, JudgeConfig(), limit=1)
        text = "Overall Judgment: Answer 2 is better"
        tokens = ["Overall", " Judgment", ":", " Answer", " 2", " is", " better"]
        logprobs = [{"token": t, "logprob": -0.1, "top_logprobs": [{"token": t, "logprob": -0.1}]} for t in tokens]
        logprobs[4]["top_logprobs"].append({"token": " 1", "logprob": -1.5})
        out = tmp_path / "out.jsonl"
        answer_from_table(shards(report.directory), out, lambda r: completion(text, "m", logprobs))
        import_batch_results(store, [out], report.directory)
        (v,) = store.verdicts(report.run.id)
        assert v.logprobs[4]["token"] == " 2" and v.confidence == pytest.approx(1 / (1 + math.exp(-1.4)))
        assert v.tokens_in == 10 and v.media_sent["served_by"] == {"model": "m"}


def test_a_partial_output_imports_what_is_there_names_the_rest_and_a_second_import_completes_it(demo, tmp_path, capsys):
    with Store.open(demo) as store:
        report = export(store, tmp_path)
    out = tmp_path / "out.jsonl"
    answer_from_table(shards(report.directory), out, first_answer)
    lines = out.read_text().splitlines()
    first, rest = tmp_path / "first.jsonl", tmp_path / "rest.jsonl"
    first.write_text("\n".join(lines[:5]) + "\n" + lines[5][:40])  # a download cut mid-line
    rest.write_text("\n".join(lines[5:]) + "\n")
    args = ["import-verdicts", "--db", str(demo), "--requests", str(report.directory)]
    assert main([*args, "--openai-batch", str(first)]) == 0
    err = capsys.readouterr().err
    assert "missing: 3 requests have no answer yet" in err and f"{first}:6" in err and "cut off" in err
    with Store.open(demo) as store:
        run = store.run(report.run.id)
        assert run.status == "partial" and len(store.verdicts(run.id)) == 10
        before = comparable(store.verdicts(run.id))
    assert main([*args, "--openai-batch", str(first), "--openai-batch", str(rest)]) == 0
    err = capsys.readouterr().err
    assert "6 samples stored" in err and "10 already stored and kept" in err and "missing:" not in err
    with Store.open(demo) as store:
        after = comparable(store.verdicts(report.run.id))
        assert len(after) == 16 and all(after[k] == v for k, v in before.items())
        assert store.run(report.run.id).status == "done"
    assert main([*args, "--openai-batch", str(out)]) == 0  # once more: nothing changes
    with Store.open(demo) as store:
        assert comparable(store.verdicts(report.run.id)) == after


def test_duplicate_lines_count_once_and_an_answer_beats_an_error(demo, tmp_path):
    with Store.open(demo) as store:
        report = export(store, tmp_path, JudgeConfig(), limit=2)
        failed, ok = tmp_path / "errors.jsonl", tmp_path / "ok.jsonl"
        answer_from_table(shards(report.directory), failed, lambda r: (500, {"error": {"message": "overloaded"}}))
        answer_from_table(shards(report.directory), ok, first_answer)
        result = import_batch_results(store, [failed, ok, ok], report.directory)
        assert result.duplicates == 4 and result.samples == 2 and result.failed == 0
        assert all(v.error is None for v in store.verdicts(report.run.id))


def test_failed_requests_are_errors_and_a_later_answer_replaces_them(demo, tmp_path):
    with Store.open(demo) as store:
        report = export(store, tmp_path, JudgeConfig(), limit=3)
        lines = read_requests(shards(report.directory))
        failed = tmp_path / "errors.jsonl"
        failed.write_text(
            json.dumps(
                {
                    "custom_id": lines[0]["custom_id"],
                    "response": {"status_code": 400, "body": {"error": {"message": "bad image"}}},
                    "error": None,
                }
            )
            + "\n"
            + json.dumps(
                {
                    "custom_id": lines[1]["custom_id"],
                    "response": None,
                    "error": {"code": "batch_expired", "message": "not run within 24h"},
                }
            )
            + "\n"
            + json.dumps(
                {
                    "custom_id": lines[2]["custom_id"],
                    "response": {"status_code": 200, "body": {"choices": "?"}},
                    "error": None,
                }
            )
            + "\n"
        )
        result = import_batch_results(store, [failed], report.directory)
        errors = sorted(v.error for v in store.verdicts(report.run.id))
        assert result.failed == 3 and errors == [
            "HTTP 400: bad image",
            "`choices` is a string, not a list",
            "batch: batch_expired: not run within 24h",
        ]
        ok = tmp_path / "ok.jsonl"
        answer_from_table(shards(report.directory), ok, first_answer)
        lines_ok = ok.read_text().splitlines()
        (tmp_path / "one.jsonl").write_text(lines_ok[0] + "\n")
        import_batch_results(store, [tmp_path / "one.jsonl"], report.directory)
        stored = {v.item_id: v.error for v in store.verdicts(report.run.id)}
        assert sum(1 for e in stored.values() if e is None) == 1 and sum(1 for e in stored.values() if e) == 2


@pytest.mark.parametrize(
    "bad, message",
    [
        ("not json", ":2: not JSON"),
        ("[1, 2]", ":2: not a JSON object"),
        ('{"response": null}', ":2: no custom_id"),
        (
            '{"custom_id": "r99-i1-s0-o0.1", "response": null, "error": null}',
            ":2: custom_id r99-i1-s0-o0.1 is no request",
        ),
    ],
)
def test_a_bad_line_names_its_file_and_line_and_imports_nothing(demo, tmp_path, capsys, bad, message):
    with Store.open(demo) as store:
        report = export(store, tmp_path, JudgeConfig(), limit=2)
    out = tmp_path / "out.jsonl"
    answer_from_table(shards(report.directory), out, first_answer)
    good = out.read_text().splitlines()
    out.write_text(good[0] + "\n" + bad + "\n" + good[1] + "\n")
    args = ["import-verdicts", "--db", str(demo), "--openai-batch", str(out), "--requests", str(report.directory)]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "nothing imported" in err and f"{out}{message}" in err
    with Store.open(demo) as store:
        assert store.verdicts(report.run.id) == []


def test_requests_of_another_folder_or_project_are_refused(demo, tmp_path, capsys):
    assert main(["import-verdicts", "--db", str(demo), "--openai-batch", "x.jsonl", "--requests", str(tmp_path)]) == 1
    assert "manifest.json: not found" in capsys.readouterr().err
    assert main(["import-verdicts", "--db", str(demo), "--openai-batch", "x.jsonl"]) == 2
    other = tmp_path / "other.pairscope"
    create_demo_project(other)
    with Store.open(demo) as store:
        report = export(store, tmp_path, JudgeConfig(), limit=1)
    out = tmp_path / "out.jsonl"
    answer_from_table(shards(report.directory), out, first_answer)
    with Store.open(other) as store, pytest.raises(BatchResultsError, match="not in this project|not the run"):
        import_batch_results(store, [out], report.directory)


def test_the_cli_exports_without_opening_a_backend_and_resumes_what_is_left(demo, tmp_path, capsys):
    folder = tmp_path / "req"
    base = ["judge", "--db", str(demo), "--model", "served-name", "--limit", "3"]
    assert main([*base, "--export-requests", str(folder)]) == 0
    err = capsys.readouterr().err
    assert "3 requests for 3 samples" in err and "import-verdicts --openai-batch" in err
    out = tmp_path / "out.jsonl"
    answer_from_table(shards(folder)[:1], out, first_answer)
    (tmp_path / "two.jsonl").write_text("".join(out.read_text().splitlines(keepends=True)[:2]))
    assert (
        main(
            [
                "import-verdicts",
                "--db",
                str(demo),
                "--openai-batch",
                str(tmp_path / "two.jsonl"),
                "--requests",
                str(folder),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main([*base, "--export-requests", str(tmp_path / "again")]) == 0  # the same run: what is left
    err = capsys.readouterr().err
    assert "run 1: 1 requests for 1 samples" in err and "2 samples were already judged" in err


# -- through a real executor -----------------------------------------------------------------


def short_template(folder: Path) -> str:
    """A short template, so that the tiny random model's greedy text follows the item (under
    the long bundled one it says the same for every item: measured)."""
    template = folder / "short.txt"
    template.write_text("{query}\n{answers}\nWhich is better?")
    return str(template)


def _live_and_batch(demo, tmp_path, served, config, media_as="url", limit=3):
    server, model, _ = served
    root = server.url[: -len("/v1")]
    with Store.open(demo) as store:
        ids = [s.id for s in store.item_summaries(0, limit)]
        backend = create_backend("openai", endpoint=server.url, model=model)
        try:
            live = JudgeSession(store, backend, config)
            live_run = live.start()
            live.judge(ids)
        finally:
            backend.close()
        report = export_requests(store, config, model, ids, tmp_path / "req", media_as=media_as)
        out = tmp_path / "out.jsonl"
        allowed = tmp_path / "req" / "media" if media_as == "file" else None
        assert run_batch(shards(report.directory), out, root, allowed_local_media_path=allowed) == report.requests
        result = import_batch_results(store, [out], report.directory)
        return store.verdicts(live_run.id), store.verdicts(result.run.id), result


@slow
def test_export_executor_import_equals_a_live_run_of_the_same_plan(demo, tmp_path, served):
    config = JudgeConfig(k=2, both_orders=True, max_new_tokens=16, seed=3, template=short_template(tmp_path))
    live, batch, result = _live_and_batch(demo, tmp_path, served, config)
    assert result.failed == 0 and not result.missing and len(live) == len(batch) == 3 * 4
    # same orders, texts, verdicts, media sent, token counts
    assert comparable(batch, cut_char=True) == comparable(live, cut_char=True)
    assert len({v.tokens_in for v in batch}) == 3 and len({v.raw_output for v in batch}) > 1  # texts follow the item


@slow
def test_images_as_file_references_give_the_same_answers(demo, tmp_path, served):
    config = JudgeConfig(max_new_tokens=16, template=short_template(tmp_path))
    live, batch, _ = _live_and_batch(demo, tmp_path, served, config, media_as="file", limit=2)
    assert comparable(batch, cut_char=True) == comparable(live, cut_char=True)
    assert all(v.error is None for v in batch)


def test_the_ray_data_script_reads_the_export_and_is_no_part_of_the_app(demo, tmp_path):
    import importlib.util

    script = Path(__file__).resolve().parents[1] / "examples" / "ray_data_judge.py"
    spec = importlib.util.spec_from_file_location("ray_data_judge", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # ray is imported only when it runs
    with Store.open(demo) as store:
        report = export(store, tmp_path, JudgeConfig(), limit=2)
    rows = module.read_requests(report.directory)
    assert [r["custom_id"] for r in rows] == [r["custom_id"] for r in read_requests(shards(report.directory))]
    image, text = module.engine_messages(json.loads(rows[0]["body"]))[0]["content"]
    assert image["type"] == "image" and image["image"].startswith("data:image/png") and text["type"] == "text"
    app = Path(__file__).resolve().parents[1] / "app"
    assert not [p for p in app.rglob("*.py") if "ray_data_judge" in p.read_text(encoding="utf-8")]


def test_an_edited_manifest_and_a_missing_template_are_clear_errors(demo, tmp_path, capsys):
    with Store.open(demo) as store:
        report = export(store, tmp_path, JudgeConfig(), limit=2)
    manifest = report.directory / "manifest.json"
    data = json.loads(manifest.read_text())
    data["requests"][1]["samples"] = "0"
    manifest.write_text(json.dumps(data))
    args = ["import-verdicts", "--db", str(demo), "--openai-batch", str(tmp_path / "x.jsonl")]
    assert main([*args, "--requests", str(report.directory)]) == 1
    assert "manifest.json: request 2 is not as --export-requests wrote it" in capsys.readouterr().err
    judge = ["judge", "--db", str(demo), "--model", "m", "--export-requests", str(tmp_path / "t")]
    assert main([*judge, "--template", str(tmp_path / "nope.txt")]) == 1
    err = capsys.readouterr().err
    assert "nothing exported" in err and "nope.txt" in err and not (tmp_path / "t").exists()


def test_an_imported_run_is_read_by_stats_and_reparse_as_any_other(demo, tmp_path, capsys):
    with Store.open(demo) as store:
        report = export(store, tmp_path, JudgeConfig(k=3), limit=4)
    out = tmp_path / "out.jsonl"
    answer_from_table(shards(report.directory), out, lambda r: VERDICT.format(1 + len(r["custom_id"]) % 2))
    args = ["import-verdicts", "--db", str(demo), "--openai-batch", str(out), "--requests", str(report.directory)]
    assert main(args) == 0
    assert main(["stats", "--db", str(demo), "--run", str(report.run.id)]) == 0
    assert main(["reparse", "--db", str(demo), "--run", str(report.run.id), "--parser", "strict"]) == 0
    with Store.open(demo) as store:
        imported, reparsed = store.runs()[-2:]
        assert reparsed.derived_from == imported.id and reparsed.k == 3
        assert [v.choice for v in store.verdicts(reparsed.id)] == [v.choice for v in store.verdicts(imported.id)]
        assert len(item_verdicts(store, reparsed)) == 4
