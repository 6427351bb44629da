"""The endpoint judge (``--backend openai``) against a real OpenAI-compatible server.

``transformers serve`` runs the tiny random Qwen2-VL on 127.0.0.1 (no mock server); a
fault-injecting proxy in front of it (tests/fault_proxy.py) answers 429s and 500s, drops
connections before and during an answer, rejects fields, holds requests to measure how many
are in flight, and a server is SIGKILLed mid-run. What ``transformers serve`` 5.24 cannot do
was measured and the fallback is tested instead: it returns no log-probabilities (it ignores
``logprobs``) and rejects unknown fields (``min_tokens``) with HTTP 422.

The tests that need the server are ``slow`` (the server takes ~5-10 s to start, once).
"""

from __future__ import annotations

import base64
import io
import math
import sqlite3
import threading
import time
import uuid

import pytest
from PIL import Image

from fault_proxy import FaultProxy, ServedModel
from pairscope.app.cli.main import main
from pairscope.app.demo import create_demo_project
from pairscope.app.judge.results import record_verdicts
from pairscope.app.judge.session import JudgeConfig, JudgeSession, WorkUnit
from pairscope.app.store import Store
from pairscope.models.base import Generation, JudgeError, JudgeRequest, create_backend
from pairscope.models.openai_backend import normalize_endpoint, public_endpoint, token_logprobs

slow = pytest.mark.slow


# -- without a server ------------------------------------------------------------------------


def test_endpoint_urls_are_normalised_and_recorded_without_credentials():
    assert normalize_endpoint("localhost:8000") == "http://localhost:8000/v1"
    assert normalize_endpoint("http://h:1/v1/chat/completions") == "http://h:1/v1"
    assert normalize_endpoint("https://api.example.com/openai/v1/") == "https://api.example.com/openai/v1"
    assert public_endpoint("https://user:secret@h:9/v1?api-key=secret") == "https://h:9/v1"
    with pytest.raises(JudgeError):
        normalize_endpoint("ftp://h/v1")


def test_openai_logprobs_become_the_stored_shape():
    content = [
        {"token": "Answer", "logprob": -0.01, "bytes": [65], "top_logprobs": [{"token": "Answer", "logprob": -0.01}]},
        {
            "token": " 2",
            "logprob": -0.4,
            "top_logprobs": [{"token": " 2", "logprob": -0.4}, {"token": " 1", "logprob": -1.1}],
        },
    ]
    assert token_logprobs(content) == [
        {"token": "Answer", "logprob": -0.01, "top": [{"token": "Answer", "logprob": -0.01}]},
        {"token": " 2", "logprob": -0.4, "top": [{"token": " 2", "logprob": -0.4}, {"token": " 1", "logprob": -1.1}]},
    ]


def test_a_samples_logprobs_are_stored_with_it(tmp_path):
    path = tmp_path / "demo.pairscope"
    create_demo_project(path)
    logprobs = [{"token": "[[A]]", "logprob": -0.25, "top": [{"token": "[[B]]", "logprob": -1.5}]}]
    with Store.open(path) as store:
        from fake_backend import FakeBackend

        session = JudgeSession(store, FakeBackend(), JudgeConfig())
        run = session.start()
        item = store.get_item(store.item_id("wildvision_demo_01"))
        verdict = session.verdict(WorkUnit(item, 0, (0, 1)), Generation("[[A]]", logprobs=logprobs), None)
        record_verdicts(store, run, [verdict])
        (stored,) = store.verdicts(run.id, item.stored_id)
        # P([[A]]) renormalised over the two answers' tokens (models/confidence.py)
        assert stored.logprobs == logprobs and stored.confidence == pytest.approx(1 / (1 + math.exp(-1.25)))
        assert store.verdicts(run.id)[0].logprobs == logprobs


def test_a_missing_key_variable_is_a_clear_error_exit_1(tmp_path, capsys, monkeypatch):
    path = tmp_path / "demo.pairscope"
    create_demo_project(path)
    monkeypatch.delenv("PAIRSCOPE_NO_SUCH_KEY", raising=False)
    args = ["judge", "--db", str(path), "--backend", "openai", "--endpoint", "http://127.0.0.1:9/v1"]
    code = main([*args, "--model", "m", "--api-key-env", "PAIRSCOPE_NO_SUCH_KEY"])
    assert code == 1
    err = capsys.readouterr().err
    assert "PAIRSCOPE_NO_SUCH_KEY" in err and "not set" in err


def test_openai_without_an_endpoint_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "demo.pairscope"
    create_demo_project(path)
    assert main(["judge", "--db", str(path), "--backend", "openai", "--model", "m"]) == 1
    assert "--endpoint" in capsys.readouterr().err


def test_an_unreachable_endpoint_is_a_clear_error():
    with pytest.raises(JudgeError, match="cannot reach the judge endpoint http://127.0.0.1:9/v1"):
        create_backend("openai", endpoint="http://127.0.0.1:9", model="m", retries=0)


# -- a real server ---------------------------------------------------------------------------


@pytest.fixture
def proxy(served):
    server, _, _ = served
    p = FaultProxy(upstream_port=server.port)
    yield p
    p.stop()


@pytest.fixture
def connect(proxy, served):
    """``connect(**options)``: an endpoint judge through the proxy, closed at teardown."""
    _, model, _ = served
    opened = []

    def make(**options):
        options = {"endpoint": proxy.url, "model": model, "backoff_s": 0.05, **options}
        backend = create_backend("openai", **options)
        opened.append(backend)
        return backend

    yield make
    for backend in opened:
        backend.close()


def picture(width: int, height: int, shade: int = 0) -> Image.Image:
    image = Image.new("RGB", (width, height), (shade, 90, 200 - shade))
    image.putpixel((1, 1), (255, 255, 255))
    return image


def decoded(url: str) -> Image.Image:
    head, _, data = url.partition(",")
    assert head == "data:image/png;base64"
    return Image.open(io.BytesIO(base64.b64decode(data)))


@slow
def test_images_and_frames_are_sent_as_their_exact_pixels(connect, proxy):
    judge = connect()
    images = (picture(84, 56), picture(56, 112, 40))
    frames = tuple(picture(56, 56, 10 * i) for i in range(3))
    (gen,) = judge.generate(
        [JudgeRequest("Which answer is better?", images=images, video_frames=frames, max_new_tokens=8)]
    )
    assert gen.error is None and gen.text and gen.tokens_in > 0 and gen.tokens_out > 0
    assert gen.media_sent["images"] == [[84, 56], [56, 112]]
    assert gen.media_sent["video_frames"] == [[56, 56]] * 3
    (seen,) = proxy.chat_requests()
    content = seen.body["messages"][0]["content"]
    assert [c["type"] for c in content] == ["image_url"] * 5 + ["text"]
    assert content[-1]["text"] == "Which answer is better?"
    for part, original in zip(content, images + frames):
        sent = decoded(part["image_url"]["url"])
        assert sent.size == original.size and sent.convert("RGB").tobytes() == original.tobytes()
    assert seen.body["stream"] is True and seen.body["logprobs"] is True


@slow
def test_streaming_delivers_chunks_that_join_to_the_text(connect):
    judge = connect()
    request = JudgeRequest("Which answer is better?", images=(picture(56, 56),), max_new_tokens=24)
    chunks: list[str] = []
    gen = judge.generate_stream(request, chunks.append)
    assert len(chunks) > 1 and "".join(chunks) == gen.text and gen.error is None
    assert judge.generate([request])[0].text == gen.text  # greedy: the same answer either way


@slow
def test_cancel_closes_the_stream(connect, proxy):
    judge = connect()
    cancel = threading.Event()
    chunks: list[str] = []

    def on_text(chunk: str) -> None:
        chunks.append(chunk)
        cancel.set()

    started = time.monotonic()
    gen = judge.generate_stream(JudgeRequest("Write a lot.", max_new_tokens=2000), on_text, cancel)
    assert gen.cancelled and gen.error is None and len(chunks) == 1
    assert time.monotonic() - started < 5
    deadline = time.monotonic() + 5
    while proxy.in_flight and time.monotonic() < deadline:  # the proxy sees the client hang up
        time.sleep(0.02)
    assert proxy.in_flight == 0
    assert judge.generate([JudgeRequest("again", max_new_tokens=4)], cancel)[0].cancelled


@slow
def test_concurrency_bound_is_respected(connect, proxy):
    proxy.hold_s = 0.3  # every request stays open long enough to overlap
    judge = connect(concurrency=3)
    requests = [JudgeRequest(f"Which answer is better? {i}", max_new_tokens=4) for i in range(9)]
    started = time.monotonic()
    gens = judge.generate(requests)
    elapsed = time.monotonic() - started
    assert all(g.error is None for g in gens) and len(gens) == 9
    assert proxy.max_held == 3
    assert elapsed >= 3 * 0.3  # three waves of three
    proxy.reset()
    connect(concurrency=1).generate(requests[:3])
    assert proxy.max_held == 1


@slow
def test_429_and_5xx_are_retried_with_exponential_backoff(connect, proxy):
    judge = connect(backoff_s=0.2, retries=4)
    clean = judge.generate([JudgeRequest("Which answer is better?", max_new_tokens=8)])[0]
    proxy.reset()
    proxy.faults.extend(["429", "500", "503"])
    gen = judge.generate([JudgeRequest("Which answer is better?", max_new_tokens=8)])[0]
    assert gen.error is None and gen.text == clean.text and gen.media_sent["attempts"] == 4
    times = [s.at for s in proxy.chat_requests()]
    assert [s.fault for s in proxy.chat_requests()] == ["429", "500", "503", "pass"]
    gaps = [b - a for a, b in zip(times, times[1:])]
    for n, gap in enumerate(gaps):  # step 0.2·2ⁿ: at least half of it, at most all of it (+ slack)
        assert 0.1 * 2**n * 0.95 <= gap <= 0.2 * 2**n + 1.5, gaps
    assert gaps[2] > gaps[0]


@slow
def test_retry_after_is_honoured(connect, proxy):
    proxy.retry_after = 0.6
    proxy.faults.append("429")
    gen = connect(backoff_s=0.01).generate([JudgeRequest("hi", max_new_tokens=4)])[0]
    assert gen.error is None
    first, second = proxy.chat_requests()
    assert second.at - first.at >= 0.55


@slow
def test_dropped_connections_are_retried(connect, proxy):
    judge = connect()
    request = JudgeRequest("Which answer is better?", max_new_tokens=16)
    clean = judge.generate([request])[0]
    proxy.reset()
    proxy.faults.extend(["drop", "drop_mid_stream"])
    gen = judge.generate([request])[0]
    assert gen.error is None and gen.text == clean.text
    assert [s.fault for s in proxy.chat_requests()] == ["drop", "drop_mid_stream", "pass"]


@slow
def test_retries_are_bounded_and_a_failure_is_an_error_not_an_exception(connect, proxy):
    proxy.faults.extend(["500"] * 10)
    gens = connect(retries=2).generate([JudgeRequest("hi", max_new_tokens=4)] * 2)
    assert len(proxy.chat_requests()) == 6
    for gen in gens:
        assert gen.error == "HTTP 500: injected 500 (after 3 attempts)" and gen.text == ""


@slow
def test_a_rejected_request_is_not_retried(connect, proxy):
    proxy.reject_fields.add("max_tokens")  # a field the backend cannot do without
    gen = connect().generate([JudgeRequest("hi", max_new_tokens=4)])[0]
    assert gen.error == "HTTP 400: Unrecognized request argument supplied: max_tokens"
    assert len(proxy.chat_requests()) == 1


@slow
def test_a_server_that_rejects_logprobs_is_asked_again_without_and_remembered(connect, proxy):
    # Measured: transformers serve 5.24 accepts but ignores logprobs (no logprobs come back).
    judge = connect()
    gen = judge.generate([JudgeRequest("hi", max_new_tokens=4)])[0]
    assert gen.error is None and gen.logprobs is None
    proxy.reset()
    proxy.reject_fields.add("logprobs")  # as a server without logprob support answers
    first = judge.generate([JudgeRequest("hi", max_new_tokens=4)])[0]
    second = judge.generate([JudgeRequest("hello", max_new_tokens=4)])[0]
    assert first.error is None and second.error is None and first.text == gen.text
    sent = [("logprobs" in s.body, "top_logprobs" in s.body) for s in proxy.chat_requests()]
    assert sent == [(True, True), (False, False), (False, False)]
    assert judge.describe()["logprobs"] is False


@slow
def test_an_unsupported_min_tokens_is_dropped_once(connect, proxy):
    # Measured: transformers serve answers HTTP 422 "Unexpected fields in the request: {'min_tokens'}".
    judge = connect()
    gens = [judge.generate([JudgeRequest(text, max_new_tokens=6, min_new_tokens=6)])[0] for text in ("hi", "ho")]
    assert all(g.error is None for g in gens)
    assert ["min_tokens" in s.body for s in proxy.chat_requests()] == [True, False, False]


@slow
def test_describe_names_the_endpoint_and_the_served_model(connect, proxy, served):
    _, model, _ = served
    judge = connect()
    judge.generate([JudgeRequest("hi", max_new_tokens=2)])  # the server loads the model on demand
    info = connect().describe()
    assert info["backend"] == "openai" and info["endpoint"] == proxy.url and info["served_model"] == model
    assert info["model_path"] == model and info["weights_hash"].startswith("sha256:")
    assert info["server_model"] == {"id": model, "owned_by": "local"}  # what transformers serve reports
    assert info["weights_hash"] == judge.describe()["weights_hash"]  # loaded or not: the same identity


# -- runs through the CLI and the session ----------------------------------------------------


@pytest.fixture
def demo(tmp_path):
    path = tmp_path / "demo.pairscope"
    create_demo_project(path)
    return path


def judge_args(demo, proxy, model, *extra):
    return [
        "judge",
        "--db",
        str(demo),
        "--backend",
        "openai",
        "--endpoint",
        proxy.url,
        "--model",
        model,
        "--max-new-tokens",
        "8",
        *extra,
    ]


def sample_rows(path, run_id):
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT item_id, sample_idx, id, created_at, error FROM verdicts WHERE run_id = ? ORDER BY id", (run_id,)
        ).fetchall()


@slow
def test_the_key_is_sent_but_never_stored_logged_or_exported(demo, proxy, served, tmp_path, monkeypatch, capsys):
    _, model, _ = served
    key = f"sk-pairscope-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("PAIRSCOPE_TEST_KEY", key)
    reader = sqlite3.connect(demo)  # held open, so the project's -wal survives the CLI closing it
    try:
        reader.execute("SELECT count(*) FROM items").fetchone()
        code = main([*judge_args(demo, proxy, model, "--api-key-env", "PAIRSCOPE_TEST_KEY"), "--limit", "3"])
        assert code == 0
        assert main(["export", "--db", str(demo), "--format", "jsonl", "--out", str(tmp_path / "export")]) == 0
        out, err = capsys.readouterr()
        assert {s.authorization for s in proxy.seen} == {f"Bearer {key}"}
        wal = demo.with_name(demo.name + "-wal")
        assert wal.exists()
        files = [demo, wal, *[p for p in (tmp_path / "export").rglob("*") if p.is_file()]]
        for path in files:
            assert key.encode() not in path.read_bytes(), path
        assert key not in out and key not in err
        with Store.open(demo) as store:
            run = store.runs()[-1]
            assert run.backend == "openai" and run.generation["api_key_env"] == "PAIRSCOPE_TEST_KEY"
            assert run.generation["endpoint"] == proxy.url
    finally:
        reader.close()


@slow
def test_cli_shows_failures_live_and_a_rerun_retries_them(demo, proxy, served, capsys):
    _, model, _ = served
    proxy.faults.extend(["500", "500"])
    assert main([*judge_args(demo, proxy, model, "--retries", "0", "--concurrency", "1"), "--limit", "4"]) == 0
    out, err = capsys.readouterr()
    assert "4/4 samples" in err and "2 failed" in err and "/s" in err
    assert "2 failed" in out and "HTTP 500" in out
    with Store.open(demo) as store:
        run = store.runs()[-1]
    before = sample_rows(demo, run.id)
    assert len(before) == 4 and sum(1 for r in before if r[4]) == 2
    assert main([*judge_args(demo, proxy, model, "--retries", "0"), "--limit", "4"]) == 0
    out, err = capsys.readouterr()
    assert f"run {run.id}" in err and "0 failed" in out
    after = sample_rows(demo, run.id)
    assert len(after) == 4 and not any(r[4] for r in after)
    kept = [r for r in before if not r[4]]
    assert all(r in after for r in kept)  # finished samples were not redone
    assert len({(r[0], r[1]) for r in after}) == 4


@slow
def test_a_different_served_model_at_the_same_url_is_a_new_run(demo, proxy, served, capsys):
    _, model, twin = served
    assert main([*judge_args(demo, proxy, model), "--limit", "2"]) == 0
    assert main([*judge_args(demo, proxy, model), "--limit", "2"]) == 0
    assert "is complete" in capsys.readouterr().err  # same name: the same run, nothing to do
    assert main([*judge_args(demo, proxy, twin), "--limit", "2"]) == 0
    with Store.open(demo) as store:
        runs = store.runs()
    assert len(runs) == 2 and [r.model_path for r in runs] == [model, twin]
    assert runs[0].weights_hash != runs[1].weights_hash


@slow
def test_a_server_killed_mid_run_loses_nothing_and_duplicates_nothing(demo, served, tmp_path):
    _, model, _ = served
    server = ServedModel(tmp_path / "killed.log", pinned=model).start()
    proxy = FaultProxy(upstream_port=server.port)
    try:
        with Store.open(demo) as store:
            ids = [s.id for s in store.item_summaries(0, 6)]
            backend = create_backend(
                "openai", endpoint=proxy.url, model=model, concurrency=2, retries=1, backoff_s=0.05
            )
            session = JudgeSession(store, backend, JudgeConfig(max_new_tokens=8, batch_size=2))
            run = session.start()

            def kill_after_first_batch(state):
                if state.done:
                    server.kill()

            try:
                first = session.judge(ids, progress=kill_after_first_batch)
            finally:
                backend.close()
            assert first.failed == first.done - 2 > 0  # everything after the kill failed, and was stored
        before = sample_rows(demo, run.id)
        server.start()  # back up, on a new port behind the same URL
        proxy.upstream_port = server.port
        with Store.open(demo) as store:
            backend = create_backend("openai", endpoint=proxy.url, model=model, concurrency=2, backoff_s=0.05)
            try:
                session = JudgeSession(store, backend, JudgeConfig(max_new_tokens=8, batch_size=2))
                assert session.start().id == run.id  # the same run resumes
                assert session.judge(ids).failed == 0
            finally:
                backend.close()
        after = sample_rows(demo, run.id)
        assert len(after) == len({(r[0], r[1]) for r in after}) == 6  # one sample per item, none twice
        assert not any(r[4] for r in after)
        assert [r for r in before if not r[4]] == [r for r in after if r in before]  # finished ones kept as they were
    finally:
        proxy.stop()
        server.stop()
