"""Helpers for the transformers backend that need no torch: folder checks, the weights
hash, device/dtype names, and reading back the media sizes a processor produced.

Nothing here imports torch or transformers at module level.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .base import JudgeError

DTYPE_NAMES = {
    "float32": "float32",
    "fp32": "float32",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
}


def check_model_folder(model_path: str) -> tuple[Path, dict[str, Any]]:
    """The absolute model folder and its parsed ``config.json``; ``JudgeError`` if either is missing."""
    folder = Path(model_path).expanduser()
    if not folder.is_dir():
        raise JudgeError(
            f"no model folder at {folder}: choose the folder that holds the model's config.json and *.safetensors files"
        )
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise JudgeError(
            f"{folder} has no config.json: it is not a transformers model folder "
            "(download the whole model repository, not only the weights)"
        )
    try:
        with config_file.open("rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise JudgeError(f"{config_file} is larger than {MAX_CONFIG_BYTES:,} bytes: not a model configuration")
        config = json.loads(raw.decode("utf-8"))
    except RecursionError:
        config = None
    except (OSError, ValueError) as exc:
        raise JudgeError(f"{config_file} cannot be read as JSON: {exc}") from None
    if config is None or _too_deep(config):  # transformers would read it again, unbounded
        raise JudgeError(
            f"{config_file} is nested too deeply (more than {MAX_CONFIG_DEPTH} levels): not a model configuration"
        )
    if not isinstance(config, dict):
        raise JudgeError(f"{config_file} is not a model configuration (expected a JSON object)")
    return folder.resolve(), config


#: A model folder's ``config.json`` is read only up to this size and nesting (real ones: a few KB, ~4 levels).
MAX_CONFIG_BYTES = 16 << 20
MAX_CONFIG_DEPTH = 100


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > MAX_CONFIG_DEPTH:
                return True
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return False


def not_a_vlm_message(folder: Path, model_type: str) -> str:
    return (
        f"{folder} is a {model_type or 'unknown'} model, not a vision-language model PairScope can use "
        "(AutoModelForImageTextToText)"
    )


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
SAMPLE_BYTES = 1 << 20
SAFETENSORS_MAX_HEADER = 100_000_000  # the safetensors format's own limit


def weights_hash(folder: Path) -> str:
    """sha256 of the safetensors index file or, without one, of the sorted (file name, size)
    list of ``*.safetensors``; plus :func:`weights_fingerprint`, so a checkpoint saved over
    the same folder gets a new hash. Cheap by design: never reads gigabytes of weights."""
    digest = hashlib.sha256()
    indexes = sorted(folder.glob("*.safetensors.index.json"))
    if indexes:
        for index in indexes:
            digest.update(index.name.encode() + b"\0" + index.read_bytes())
    else:
        listing = sorted((p.name, p.stat().st_size) for p in folder.glob("*.safetensors"))
        digest.update(json.dumps(listing).encode())
    digest.update(b"\0" + json.dumps(weights_fingerprint(folder)).encode())
    return "sha256:" + digest.hexdigest()


def weights_fingerprint(folder: Path) -> list[list[Any]]:
    """Per weight file (``*.safetensors``, ``*.bin``, ``*.pt``, ``*.pth``), sorted by name:
    name, size, mtime_ns, sha256 of its first and last MiB and, for safetensors, sha256 of
    the JSON header. Reads at most a few MiB per file."""
    files = sorted(p for p in folder.iterdir() if p.name.endswith(WEIGHT_SUFFIXES) and p.is_file())
    out = []
    for path in files:
        stat = path.stat()
        with path.open("rb") as f:
            ends = hashlib.sha256(f.read(SAMPLE_BYTES))
            if stat.st_size > SAMPLE_BYTES:
                f.seek(max(SAMPLE_BYTES, stat.st_size - SAMPLE_BYTES))
                ends.update(f.read(SAMPLE_BYTES))
            header = _safetensors_header_hash(f, stat.st_size) if path.suffix == ".safetensors" else None
        out.append([path.name, stat.st_size, stat.st_mtime_ns, ends.hexdigest(), header])
    return out


def _safetensors_header_hash(f: Any, size: int) -> str | None:
    """sha256 of the header JSON (after its 8-byte little-endian length); None if malformed."""
    f.seek(0)
    raw = f.read(8)
    length = int.from_bytes(raw, "little") if len(raw) == 8 else -1
    if not 0 <= length <= min(SAFETENSORS_MAX_HEADER, size - 8):
        return None
    return hashlib.sha256(f.read(length)).hexdigest()


def dtype_name(dtype: str, device: str) -> str:
    """Resolve ``"auto"`` (bfloat16 on CUDA, float32 elsewhere) and common aliases."""
    if dtype == "auto":
        return "bfloat16" if device.startswith("cuda") else "float32"
    try:
        return DTYPE_NAMES[dtype.lower()]
    except KeyError:
        raise JudgeError(f"unknown dtype {dtype!r}; use auto, {', '.join(sorted(set(DTYPE_NAMES.values())))}") from None


def media_sizes(inputs: Any, processor: Any, n_images: list[int], n_videos: list[int]) -> list[dict[str, Any]]:
    """Best effort: per request, the sizes of the images and video frames as the processor
    fed them to the model, as ``{"images": [[w, h], ...], "video_frames": [[w, h], ...]}``.

    Read from ``image_grid_thw``/``video_grid_thw`` × patch size (Qwen2-VL family), else from
    a 4-D ``pixel_values`` (one tensor per image, e.g. LLaVA) or a 5-D
    ``pixel_values_videos`` (one per video). Layouts that tile images (Idefics3, LLaVA-Next)
    are left out rather than guessed."""
    out: list[dict[str, Any]] = [{} for _ in n_images]
    image_sizes = _grid_sizes(inputs.get("image_grid_thw"), processor, "image_processor")
    if image_sizes is None:
        pixels = inputs.get("pixel_values")
        if pixels is not None and pixels.ndim == 4 and pixels.shape[0] == sum(n_images):
            image_sizes = [[[int(pixels.shape[3]), int(pixels.shape[2])]] for _ in range(pixels.shape[0])]
    video_sizes = _grid_sizes(inputs.get("video_grid_thw"), processor, "video_processor")
    if video_sizes is None:
        videos = inputs.get("pixel_values_videos")
        if videos is not None and videos.ndim == 5 and videos.shape[0] == sum(n_videos):
            video_sizes = [[[int(videos.shape[4]), int(videos.shape[3])]] * int(videos.shape[1])] * videos.shape[0]
    for key, sizes, counts in (("images", image_sizes, n_images), ("video_frames", video_sizes, n_videos)):
        if sizes is None or len(sizes) != sum(counts):
            continue
        start = 0
        for i, count in enumerate(counts):
            if count:
                out[i][key] = [size for item in sizes[start : start + count] for size in item]
            start += count
    return out


def _grid_sizes(grid: Any, processor: Any, part: str) -> list[list[list[int]]] | None:
    """Per image or video, its frames' [w, h] from a (t, h, w) patch grid."""
    sub = getattr(processor, part, None)
    patch = getattr(sub, "patch_size", None)
    if grid is None or not isinstance(patch, int):
        return None
    temporal = getattr(sub, "temporal_patch_size", 1) if part == "video_processor" else 1
    result = []
    for t, h, w in grid.tolist():
        result.append([[int(w * patch), int(h * patch)]] * (int(t) * int(temporal or 1)))
    return result
