"""The transformers judge backend, through the real loading path, on tiny random models.

The models are built from config by ``tests/tiny_models.py`` and saved to disk, then loaded
with ``create_backend("transformers", model=...)`` exactly as a user's model would be.
They emit nonsense: these tests check mechanics (loading, batching, video, streaming,
cancellation, errors), never judgement quality.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time

import pytest
from PIL import Image

import tiny_models
from pairscope.models import _hf_utils
from pairscope.models.base import JudgeError, JudgeRequest, create_backend

FAMILIES = ("qwen2_vl", "llava")


@pytest.fixture(scope="session")
def tiny_qwen2_vl(tmp_path_factory):
    return tiny_models.build_tiny_qwen2_vl(tmp_path_factory.mktemp("models") / "tiny-qwen2-vl")


@pytest.fixture(scope="session")
def tiny_llava(tmp_path_factory):
    return tiny_models.build_tiny_llava(tmp_path_factory.mktemp("models") / "tiny-llava")


@pytest.fixture(scope="module")
def judges(tiny_qwen2_vl, tiny_llava):
    """One loaded backend per family, shared by this module's tests."""
    loaded = {
        "qwen2_vl": create_backend("transformers", model=str(tiny_qwen2_vl), device="cpu"),
        "llava": create_backend("transformers", model=str(tiny_llava), device="cpu", batch_size=4),
    }
    yield loaded
    for backend in loaded.values():
        backend.close()


def image(width: int, height: int, shade: int = 0) -> Image.Image:
    return Image.new("RGB", (width, height), (shade, 120, 255 - shade))


def frames(count: int = 4, size: int = 56) -> tuple[Image.Image, ...]:
    return tuple(image(size, size, shade=40 * i) for i in range(count))


def three_requests(n: int) -> list[JudgeRequest]:
    sizes = [(64, 48), (120, 100), (30, 30)]
    return [
        JudgeRequest(
            prompt="Which answer describes the image better? " * (i + 1),
            images=(image(w, h, shade=60 * i),),
            max_new_tokens=n,
            min_new_tokens=n,
        )
        for i, (w, h) in enumerate(sizes)
    ]


# -- no model needed -----------------------------------------------------------------------


def test_importing_the_backend_loads_neither_torch_nor_transformers():
    code = (
        "import sys, pairscope.models, pairscope.models.transformers_backend, pairscope.models.base;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(JudgeError, match="no model folder at .*nowhere"):
        create_backend("transformers", model=str(tmp_path / "nowhere"))


def test_folder_without_config_is_a_clear_error(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"not really weights")
    with pytest.raises(JudgeError, match="has no config.json"):
        create_backend("transformers", model=str(tmp_path))


def test_unknown_video_mode_is_rejected(tmp_path):
    with pytest.raises(JudgeError, match="video_mode"):
        create_backend("transformers", model=str(tmp_path), video_mode="sideways")


def test_weights_hash_covers_the_index_and_the_weight_files(tmp_path):
    (tmp_path / "model-00001-of-00002.safetensors").write_bytes(b"x" * 10)
    (tmp_path / "model-00002-of-00002.safetensors").write_bytes(b"y" * 20)
    by_listing = _hf_utils.weights_hash(tmp_path)
    assert by_listing == _hf_utils.weights_hash(tmp_path)
    (tmp_path / "model-00002-of-00002.safetensors").write_bytes(b"y" * 21)
    assert _hf_utils.weights_hash(tmp_path) != by_listing
    (tmp_path / "model.safetensors.index.json").write_text('{"weight_map": {"a": "model-00001-of-00002.safetensors"}}')
    by_index = _hf_utils.weights_hash(tmp_path)
    assert by_index.startswith("sha256:") and by_index != by_listing
    (tmp_path / "model-00001-of-00002.safetensors").write_bytes(b"z" * 10)  # same size, new bytes
    assert _hf_utils.weights_hash(tmp_path) != by_index


# -- loading errors that need transformers ---------------------------------------------------


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    # Outside the test: saving a model starts tqdm's lifelong monitor thread (not a leak).
    return tiny_models.build_not_a_vlm(tmp_path_factory.mktemp("models") / "gpt2")


@pytest.mark.slow
def test_text_only_model_is_a_clear_error(tiny_gpt2):
    with pytest.raises(JudgeError, match=r"is a gpt2 model, not a vision-language model PairScope can use"):
        create_backend("transformers", model=str(tiny_gpt2))


@pytest.mark.slow
def test_cuda_requested_without_cuda_is_a_clear_error(tiny_llava):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(JudgeError, match="CUDA is not available"):
        create_backend("transformers", model=str(tiny_llava), device="cuda")


# -- generation ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_batch_of_three_images_of_different_sizes(judges, family):
    results = judges[family].generate(three_requests(6))
    assert len(results) == 3
    for g in results:
        assert g.error is None and not g.cancelled
        assert g.tokens_out == 6 and g.tokens_in > 0 and g.latency_s > 0
        assert isinstance(g.text, str)
        assert len(g.media_sent["images"]) == 1
    if family == "qwen2_vl":  # sizes follow the image, in 28-px blocks; LLaVA crops all to one size
        sizes = [g.media_sent["images"][0] for g in results]
        assert all(w % 28 == 0 and h % 28 == 0 for w, h in sizes)
        assert len(set(map(tuple, sizes))) == 3
        assert len({g.tokens_in for g in results}) == 3
    else:
        assert all(g.media_sent["images"] == [[32, 32]] for g in results)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_batched_greedy_equals_one_at_a_time(judges, family):
    requests = three_requests(12)
    batched = judges[family].generate(requests)
    alone = [judges[family].generate([r])[0] for r in requests]
    assert [g.text for g in batched] == [g.text for g in alone]
    assert [g.tokens_in for g in batched] == [g.tokens_in for g in alone]


@pytest.mark.slow
def test_qwen2_vl_takes_video_frames_as_a_native_video(judges):
    judge = judges["qwen2_vl"]
    assert judge.native_video
    request = JudgeRequest(
        prompt="What happens in the video?", video_frames=frames(4), max_new_tokens=5, min_new_tokens=5
    )
    g = judge.generate([request])[0]
    assert g.error is None and g.tokens_out == 5
    assert g.media_sent == {"video_frames": [[56, 56]] * 4}
    mixed = JudgeRequest(
        prompt="And now?", images=(image(40, 40),), video_frames=frames(4), max_new_tokens=5, min_new_tokens=5
    )
    g = judge.generate([mixed, request])[0]
    assert g.error is None and g.media_sent["images"] == [[28, 28]] and len(g.media_sent["video_frames"]) == 4


@pytest.mark.slow
def test_llava_takes_video_frames_as_images(judges):
    judge = judges["llava"]
    assert not judge.native_video
    request = JudgeRequest(
        prompt="What happens?", images=(image(50, 70),), video_frames=frames(4), max_new_tokens=5, min_new_tokens=5
    )
    g = judge.generate([request])[0]
    assert g.error is None and g.tokens_out == 5
    assert g.media_sent == {"images": [[32, 32]], "video_frames": [[32, 32]] * 4}


@pytest.mark.slow
def test_sampling_with_a_seed_is_reproducible(judges):
    request = JudgeRequest(
        prompt="Score it.", images=(image(60, 60),), max_new_tokens=10, min_new_tokens=10, temperature=1.0, seed=7
    )
    first, second = (judges["qwen2_vl"].generate([request])[0] for _ in range(2))
    assert first.text == second.text and first.tokens_out == 10


def count_generate_calls(judge, monkeypatch) -> list[int]:
    """Wrap the loaded model's ``generate`` on the instance; the list grows by the batch size per call."""
    real = judge.model.generate
    calls: list[int] = []

    def counted(*args, **kwargs):
        calls.append(int(kwargs["input_ids"].shape[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(judge.model, "generate", counted)
    return calls


def sampled(seed: int | None, n: int = 10, prompt: str = "Score it.") -> JudgeRequest:
    return JudgeRequest(
        prompt=prompt, images=(image(60, 60),), max_new_tokens=n, min_new_tokens=n, temperature=1.0, seed=seed
    )


@pytest.mark.slow
def test_sampled_requests_that_differ_only_in_seed_share_one_batch(judges, monkeypatch):
    judge = judges["qwen2_vl"]  # batch_size 8
    calls = count_generate_calls(judge, monkeypatch)
    requests = [sampled(seed) for seed in (41, 7, 99, 3, 12, 8)]
    first = judge.generate(requests)
    assert calls == [6]
    assert all(g.error is None and g.tokens_out == 10 for g in first)
    assert [g.seed for g in first] == [41] * 6  # the batch is seeded once, from its first request
    assert len({g.text for g in first}) > 1  # every row still samples on its own
    second = judge.generate(requests)
    assert calls == [6, 6]
    assert [g.text for g in second] == [g.text for g in first]


@pytest.mark.slow
def test_each_batch_records_the_seed_it_was_generated_with(judges, monkeypatch):
    judge = judges["qwen2_vl"]
    calls = count_generate_calls(judge, monkeypatch)
    greedy = JudgeRequest(prompt="Score it.", max_new_tokens=4, min_new_tokens=4, seed=5)
    requests = [sampled(100 + i, n=4) for i in range(10)] + [greedy, sampled(None, n=4, prompt="unseeded")]
    results = judge.generate(requests)
    assert calls == [8, 3, 1]  # the 11 sampled requests in batches of 8, then the greedy one
    assert all(g.error is None for g in results)
    assert [g.seed for g in results] == [100] * 8 + [108, 108, None, 108]  # greedy: no seed
    alone = judge.generate([sampled(108, n=4), sampled(109, n=4), sampled(None, n=4, prompt="unseeded")])
    assert [g.text for g in alone] == [g.text for g in results[8:10]] + [results[11].text]


@pytest.mark.slow
def test_streaming_records_its_own_seed(judges):
    judge = judges["qwen2_vl"]
    streamed = judge.generate_stream(sampled(23), lambda _: None)
    assert streamed.seed == 23 and streamed.error is None
    assert streamed.text == judge.generate([sampled(23)])[0].text
    assert judge.generate_stream(three_requests(3)[0], lambda _: None).seed is None


@pytest.mark.slow
def test_a_failing_batch_becomes_an_error_not_a_crash(judges, monkeypatch):
    judge = judges["llava"]
    real = judge.model.generate
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(*args, **kwargs)

    monkeypatch.setattr(judge.model, "generate", flaky)
    short, long = three_requests(3)[0], three_requests(4)[1]  # different settings: two batches
    first, second = judge.generate([short, long])
    assert first.text == "" and "out of memory" in first.error and "batch size" in first.error
    assert second.error is None and second.tokens_out == 4


@pytest.mark.slow
def test_a_set_cancel_event_skips_generation(judges):
    event = threading.Event()
    event.set()
    results = judges["llava"].generate(three_requests(5), cancel=event)
    assert [g.cancelled for g in results] == [True] * 3
    assert all(g.tokens_out == 0 for g in results)


class EventSetAfter(threading.Event):
    """An event that reads as set from its ``n``-th check on: cancels at a known token."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.checks, self.n = 0, n

    def is_set(self) -> bool:
        self.checks += 1
        return self.checks >= self.n or super().is_set()


@pytest.mark.slow
def test_cancel_during_a_batch_stops_between_tokens(judges):
    requests = three_requests(400) + [JudgeRequest(prompt="later", max_new_tokens=3)]
    results = judges["qwen2_vl"].generate(requests, cancel=EventSetAfter(6))
    assert all(g.cancelled for g in results)
    assert all(1 <= g.tokens_out < 10 for g in results[:3])
    assert results[3].tokens_out == 0 and results[3].text == ""


# -- streaming and cancellation -----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_streaming_chunks_join_to_the_returned_text(judges, family):
    chunks: list[str] = []
    request = JudgeRequest(
        prompt="Explain your verdict.", images=(image(80, 60),), max_new_tokens=30, min_new_tokens=30
    )
    g = judges[family].generate_stream(request, chunks.append)
    assert len(chunks) >= 2
    assert "".join(chunks) == g.text
    assert g.tokens_out == 30 and not g.cancelled
    assert g.text == judges[family].generate([request])[0].text


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_cancel_mid_stream_returns_quickly(judges, family):
    cancel = threading.Event()
    chunks: list[str] = []

    def on_text(chunk: str) -> None:
        chunks.append(chunk)
        cancel.set()

    request = JudgeRequest(prompt="Explain at length.", images=(image(40, 40),), max_new_tokens=400, min_new_tokens=400)
    started = time.perf_counter()
    g = judges[family].generate_stream(request, on_text, cancel)
    assert time.perf_counter() - started < 3.0
    assert g.cancelled and g.error is None
    assert 1 <= g.tokens_out < 50
    assert chunks


@pytest.mark.slow
def test_an_exception_in_on_text_stops_generation_and_propagates(judges):
    def on_text(chunk: str) -> None:
        raise KeyError("widget gone")

    request = JudgeRequest(prompt="Explain at length.", max_new_tokens=400, min_new_tokens=400)
    started = time.perf_counter()
    with pytest.raises(KeyError):
        judges["qwen2_vl"].generate_stream(request, on_text)
    assert time.perf_counter() - started < 3.0


# -- description and lifetime ----------------------------------------------------------------


@pytest.mark.slow
def test_describe_records_a_stable_weights_hash(judges, tiny_llava, tmp_path):
    d = judges["llava"].describe()
    assert d["backend"] == "transformers" and d["model_type"] == "llava"
    assert d["model_path"] == str(tiny_llava.resolve())
    assert d["device"] == "cpu" and d["dtype"] == "float32"
    assert d["weights_hash"].startswith("sha256:")
    copy = shutil.copytree(tiny_llava, tmp_path / "copy")
    again = create_backend("transformers", model=str(copy))  # device and dtype "auto"
    try:
        assert again.describe()["weights_hash"] == d["weights_hash"]
        assert again.describe()["device"] in ("cpu", "cuda")
    finally:
        again.close()
    assert judges["qwen2_vl"].describe()["weights_hash"] != d["weights_hash"]


@pytest.mark.slow
def test_a_closed_judge_refuses_work(tiny_llava):
    judge = create_backend("transformers", model=str(tiny_llava))
    judge.close()
    with pytest.raises(JudgeError, match="closed"):
        judge.generate(three_requests(2))


@pytest.mark.slow
def test_on_a_gpu_auto_means_cuda_and_bfloat16(tiny_qwen2_vl):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA here")
    judge = create_backend("transformers", model=str(tiny_qwen2_vl))
    try:
        assert judge.describe()["device"] == "cuda" and judge.describe()["dtype"] == "bfloat16"
        video = JudgeRequest(prompt="v", video_frames=frames(4), max_new_tokens=6, min_new_tokens=6)
        results = judge.generate(three_requests(6) + [video])
        assert [(g.error, g.tokens_out) for g in results] == [(None, 6)] * 4
        cancel = threading.Event()
        g = judge.generate_stream(
            JudgeRequest(prompt="long", max_new_tokens=400, min_new_tokens=400), lambda _: cancel.set(), cancel
        )
        assert g.cancelled and g.tokens_out < 50
    finally:
        judge.close()
