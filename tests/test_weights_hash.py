"""The weights hash identifies a run's model: a checkpoint retrained over the same folder must
get a new hash (and so a new run), while an untouched folder keeps its hash — without ever
reading whole weight files."""

from __future__ import annotations

import json
import os
import shutil
import struct
import time

import pytest

import tiny_models
from pairscope.models import _hf_utils
from pairscope.models.base import create_backend


def retrain(folder, seed: int) -> None:
    """Save a model with the same shapes but another random init over ``folder``."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    torch.manual_seed(seed)
    AutoModelForImageTextToText.from_config(config).save_pretrained(folder, safe_serialization=True)


def keep_times(path, stat: os.stat_result) -> None:
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def fake_safetensors(path, header: dict, size: int) -> None:
    """A safetensors-shaped file: 8-byte little-endian header length, the JSON header, then
    ``size`` bytes of data left sparse (no disk used)."""
    raw = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + size)


@pytest.fixture(scope="module")
def built_llava(tmp_path_factory):
    # Module scope: building starts tqdm's lifelong monitor thread outside any test's leak check.
    return tiny_models.build_tiny_llava(tmp_path_factory.mktemp("models") / "tiny-llava")


@pytest.fixture
def tiny_llava(built_llava, tmp_path):
    """A fresh copy per test: the tests save over it."""
    return shutil.copytree(built_llava, tmp_path / "tiny-llava")


@pytest.mark.slow
def test_a_model_retrained_over_the_same_folder_gets_a_new_hash(tiny_llava):
    weights = tiny_llava / "model.safetensors"
    before, stat = _hf_utils.weights_hash(tiny_llava), weights.stat()
    assert _hf_utils.weights_hash(tiny_llava) == before  # unchanged folder, same hash
    retrain(tiny_llava, seed=1)
    assert weights.stat().st_size == stat.st_size  # same shapes: same size, same header
    after = _hf_utils.weights_hash(tiny_llava)
    assert after != before and after == _hf_utils.weights_hash(tiny_llava)
    keep_times(weights, stat)  # even with the old mtime, the sampled bytes differ
    assert _hf_utils.weights_hash(tiny_llava) not in (before, after)


@pytest.mark.slow
def test_judging_a_retrained_folder_opens_a_new_run(tiny_llava, store):
    from pairscope.app.judge.session import JudgeConfig, JudgeSession

    def start():
        backend = create_backend("transformers", model=str(tiny_llava), device="cpu")
        try:
            return JudgeSession(store, backend, JudgeConfig(max_new_tokens=4)).start()
        finally:
            backend.close()

    first = start()
    assert start().id == first.id  # unchanged folder: the unfinished run resumes
    retrain(tiny_llava, seed=1)
    second = start()
    assert second.id != first.id and second.weights_hash != first.weights_hash
    assert [r.id for r in store.runs()] == [first.id, second.id]


def test_a_rewritten_bin_file_of_the_same_size_gets_a_new_hash(tmp_path):
    weights = tmp_path / "pytorch_model.bin"
    weights.write_bytes(b"a" * (3 << 20))
    before, stat = _hf_utils.weights_hash(tmp_path), weights.stat()
    weights.write_bytes(b"a" * ((3 << 20) - 1) + b"b")  # only the last byte changes
    keep_times(weights, stat)
    assert _hf_utils.weights_hash(tmp_path) != before
    weights.write_bytes(b"a" * (3 << 20))
    keep_times(weights, stat)
    assert _hf_utils.weights_hash(tmp_path) == before
    time.sleep(0.01)
    weights.touch()  # same bytes, newer mtime: treated as a new checkpoint
    assert _hf_utils.weights_hash(tmp_path) != before


def test_the_safetensors_header_is_part_of_the_hash(tmp_path):
    path = tmp_path / "model.safetensors"
    fake_safetensors(path, {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, 16)
    stat = path.stat()
    before = _hf_utils.weights_hash(tmp_path)
    fake_safetensors(path, {"w": {"dtype": "I32", "shape": [4], "data_offsets": [0, 16]}}, 16)
    keep_times(path, stat)
    assert path.stat().st_size == stat.st_size and _hf_utils.weights_hash(tmp_path) != before


def test_a_15_gb_checkpoint_hashes_without_reading_its_weights(tmp_path):
    header = {f"layer{i}.weight": {"dtype": "BF16", "shape": [4096, 4096], "data_offsets": [0, 1]} for i in range(400)}
    for shard in range(4):
        path = tmp_path / f"model-0000{shard + 1}-of-00004.safetensors"
        fake_safetensors(path, header, 4 << 30)
        if path.stat().st_blocks * 512 > (1 << 30):
            pytest.skip("this file system does not keep sparse files")
    started = time.perf_counter()
    digest = _hf_utils.weights_hash(tmp_path)
    assert time.perf_counter() - started < 1.0  # reading 16 GiB (even of holes) takes seconds
    assert digest == _hf_utils.weights_hash(tmp_path)
