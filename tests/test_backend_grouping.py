"""Batching by prompt length in the transformers backend (issue 27, build 4), on the tiny
random Qwen2-VL built from config (``tests/tiny_models.py``) and loaded through the real path.

Grouping must not change a greedy answer or the order answers come back in, must pad less on
a mixed-length workload (pad tokens counted, not timed), and a failing batch must still fail
only its own requests.
"""

from __future__ import annotations

import threading

import pytest
from PIL import Image

import tiny_models
from pairscope.models.base import JudgeRequest, create_backend

BATCH = 3


@pytest.fixture(scope="module")
def tiny_qwen2_vl(tmp_path_factory):
    return tiny_models.build_tiny_qwen2_vl(tmp_path_factory.mktemp("models") / "tiny-qwen2-vl")


@pytest.fixture(scope="module")
def judges(tiny_qwen2_vl):
    """The same model twice: batching by length on (the default) and off."""
    loaded = {
        on: create_backend("transformers", model=str(tiny_qwen2_vl), device="cpu", batch_size=BATCH, group_by_length=on)
        for on in (True, False)
    }
    yield loaded
    for backend in loaded.values():
        backend.close()


def image(size: int = 56, shade: int = 0) -> Image.Image:
    return Image.new("RGB", (size, size), (shade, 120, 255 - shade))


def mixed(n: int = 9) -> list[JudgeRequest]:
    """Long and short prompts interleaved (so batches in the order given pad), one image each."""
    repeats = [1, 30, 2, 28, 1, 32, 3, 29, 2][:n]
    return [
        JudgeRequest(
            prompt="Which answer describes the image better? " * r,
            images=(image(shade=25 * i),),
            max_new_tokens=4,
            min_new_tokens=4,
        )
        for i, r in enumerate(repeats)
    ]


@pytest.mark.slow
def test_greedy_answers_are_the_same_and_in_the_callers_order(judges):
    requests = mixed()
    grouped = judges[True].generate(requests)
    given = judges[False].generate(requests)
    assert all(g.error is None and g.tokens_out == 4 for g in grouped + given)
    assert [g.text for g in grouped] == [g.text for g in given]
    assert [g.tokens_in for g in grouped] == [g.tokens_in for g in given]  # each answer is its own request's
    assert [g.seed for g in grouped] == [None] * len(requests)
    for i in (0, 1, 5):  # and each is what that request gives alone
        assert judges[True].generate([requests[i]])[0].text == grouped[i].text


@pytest.mark.slow
def test_grouping_pads_fewer_tokens_on_a_mixed_workload(judges):
    requests = mixed()
    for judge in judges.values():
        judge.padding_tokens = 0
        judge.generate(requests)
    on, off = judges[True].padding_tokens, judges[False].padding_tokens
    assert off > 0 and on < off / 2, (on, off)


@pytest.mark.slow
def test_a_failing_batch_fails_only_its_own_requests(judges):
    requests = mixed()
    bad = 4  # a 6000×10 image: the Qwen2-VL image processor refuses it, so its batch fails
    wide = Image.new("RGB", (6000, 10))
    requests[bad] = JudgeRequest(prompt=requests[bad].prompt, images=(wide,), max_new_tokens=4, min_new_tokens=4)
    for judge in judges.values():
        results = judge.generate(requests)
        failed = [i for i, g in enumerate(results) if g.error]
        assert bad in failed and len(failed) == BATCH, failed  # exactly one batch failed
        assert all(g.error is None and g.tokens_out == 4 for i, g in enumerate(results) if i not in failed)
    grouped_failed = [i for i, g in enumerate(judges[True].generate(requests)) if g.error]
    assert grouped_failed != [3, 4, 5]  # grouping put the bad one with other short prompts
    assert all(len(requests[i].prompt) < 200 for i in grouped_failed)


@pytest.mark.slow
def test_the_next_batch_is_preprocessed_on_a_worker_with_the_same_answers(judges, tiny_qwen2_vl, monkeypatch):
    judge = judges[True]
    threads: list[str] = []
    real = judge._encode

    def encode(batch):  # observe (not replace) where each batch's preprocessing runs
        threads.append(threading.current_thread().name)
        return real(batch)

    monkeypatch.setattr(judge, "_encode", encode)
    requests = mixed()
    ahead = judge.generate(requests)
    assert len(threads) == 3 and threads[0] == threading.current_thread().name
    assert all(name.startswith("pairscope-judge-encode") for name in threads[1:])
    inline = create_backend(
        "transformers", model=str(tiny_qwen2_vl), device="cpu", batch_size=BATCH, encode_ahead=False
    )
    try:
        assert [g.text for g in inline.generate(requests)] == [g.text for g in ahead]
    finally:
        inline.close()


@pytest.mark.slow
def test_cancelling_drops_the_batch_prepared_ahead(judges):
    judge = judges[True]
    cancel = threading.Event()
    real = judge._results

    def results_then_cancel(*args, **kwargs):  # the user presses Stop as the first batch ends
        out = real(*args, **kwargs)
        cancel.set()
        return out

    judge._results = results_then_cancel
    try:
        results = judge.generate(mixed(), cancel)
    finally:
        del judge._results
    assert sum(g.cancelled for g in results) == 2 * BATCH
    assert sum(g.error is None and not g.cancelled and g.tokens_out == 4 for g in results) == BATCH
