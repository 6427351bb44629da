"""Judge throughput: items/s batched vs one at a time, through the real backend.

CPU (default): a tiny random Qwen2-VL built from config (tests/tiny_models.py), N synthetic
image pairs rendered with the bundled pairwise template, a fixed output length
(min_new_tokens = max_new_tokens), batch size B vs 1. Median of R runs; the ratio is the
figure (these VMs are noisy).

GPU (--gpu, needs a CUDA machine): a full-size Qwen2.5-VL-7B-shaped model built from config
with random bf16 weights (no download), saved once and loaded through the same backend a
user's folder takes; 1,250 synthetic pairs, 256 output tokens, batched vs sequential
(sequential measured on the first --seq-items items). Targets on one H200: ≥ 10 items/s
and ≥ 10× sequential.

    python bench/judge_bench.py [--items 48] [--tokens 32] [--batch 8] [--runs 3]
    python bench/judge_bench.py --gpu [--items 1250] [--tokens 256] [--batch 128]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pairscope.models.base import JudgeRequest, create_backend  # noqa: E402
from pairscope.models.prompts import load_template, render_pairwise  # noqa: E402


def synthetic_requests(n: int, tokens: int, size: int = 96) -> list[JudgeRequest]:
    """``n`` pairwise prompts over small drawn scenes, each asking for exactly ``tokens``."""
    rng = random.Random(0)
    template = load_template("pairwise")
    requests = []
    for _ in range(n):
        img = Image.new("RGB", (size, size), "white")
        draw = ImageDraw.Draw(img)
        count = rng.randint(1, 5)
        for _ in range(count):
            x, y = rng.randint(0, size - 16), rng.randint(0, size - 16)
            draw.ellipse((x, y, x + 14, y + 14), fill="red")
        answers = [f"There are {count} red circles.", f"There are {count + 1} red circles."]
        rng.shuffle(answers)
        prompt = render_pairwise(template, "How many red circles are in the image?", answers)
        requests.append(JudgeRequest(prompt, images=(img,), max_new_tokens=tokens, min_new_tokens=tokens))
    return requests


def items_per_s(backend, requests, batch: int) -> float:
    backend.batch_size = batch
    start = time.perf_counter()
    if batch == 1:
        for r in requests:
            backend.generate([r])
    else:
        backend.generate(requests)
    return len(requests) / (time.perf_counter() - start)


def build_7b_shaped(folder: Path) -> Path:
    """A Qwen2.5-VL-7B-shaped model with random bf16 weights, saved with the tiny processor."""
    import torch
    from transformers import AutoProcessor, Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    from tiny_models import build_tiny_qwen2_vl

    if (folder / "config.json").exists():
        return folder
    tiny = build_tiny_qwen2_vl(folder.parent / "tiny-processor")
    processor = AutoProcessor.from_pretrained(tiny)
    tok = processor.tokenizer
    config = Qwen2_5_VLConfig(
        text_config=dict(
            hidden_size=3584,
            intermediate_size=18944,
            num_hidden_layers=28,
            num_attention_heads=28,
            num_key_value_heads=4,
            vocab_size=152064,
            max_position_embeddings=32768,
            rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]},
            bos_token_id=tok.bos_token_id or 0,
            eos_token_id=tok.eos_token_id or 0,
            pad_token_id=tok.pad_token_id or 0,
        ),
        vision_config=dict(
            depth=32,
            hidden_size=1280,
            intermediate_size=3420,
            num_heads=16,
            out_hidden_size=3584,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
        ),
        image_token_id=tok.convert_tokens_to_ids("<|image_pad|>"),
        video_token_id=tok.convert_tokens_to_ids("<|video_pad|>"),
        vision_start_token_id=tok.convert_tokens_to_ids("<|vision_start|>"),
    )
    with torch.device("cuda"):
        model = Qwen2_5_VLForConditionalGeneration._from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(folder, safe_serialization=True)
    processor.save_pretrained(folder)
    del model
    torch.cuda.empty_cache()
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--items", type=int)
    parser.add_argument("--tokens", type=int)
    parser.add_argument("--batch", type=int)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seq-items", type=int, default=16)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "pairscope-judge-bench")
    args = parser.parse_args()
    items = args.items or (1250 if args.gpu else 48)
    tokens = args.tokens or (256 if args.gpu else 32)
    batch = args.batch or (128 if args.gpu else 8)
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.gpu:
        folder = build_7b_shaped(args.workdir / "qwen2.5-vl-7b-shaped")
        backend = create_backend("transformers", model=str(folder), device="cuda", dtype="bfloat16")
        runs = 1
    else:
        from tiny_models import build_tiny_qwen2_vl

        folder = args.workdir / "tiny-qwen2-vl"
        if not (folder / "config.json").exists():
            build_tiny_qwen2_vl(folder)
        backend = create_backend("transformers", model=str(folder), device="cpu")
        runs = args.runs
    requests = synthetic_requests(items, tokens)
    seq_requests = requests[: args.seq_items] if args.gpu else requests
    backend.generate(requests[:2])  # warm-up
    batched, sequential = [], []
    for _ in range(runs):
        sequential.append(items_per_s(backend, seq_requests, 1))
        batched.append(items_per_s(backend, requests, batch))
    info = backend.describe()
    med = statistics.median
    print(
        f"model: {info.get('model_type')} on {info.get('device')} ({info.get('dtype')}); {items} items,"
        f" {tokens} output tokens each, runs: {runs}"
    )
    print(f"sequential: median {med(sequential):.2f} items/s  runs {[round(x, 2) for x in sequential]}")
    print(f"batched (batch {batch}): median {med(batched):.2f} items/s  runs {[round(x, 2) for x in batched]}")
    print(f"ratio:      {med(batched) / med(sequential):.1f}x sequential")
    if args.gpu:
        ok = med(batched) >= 10 and med(batched) / med(sequential) >= 10
        print(f"target ≥ 10 items/s and ≥ 10x sequential: {'met' if ok else 'NOT met'}")
    backend.close()


if __name__ == "__main__":
    main()
