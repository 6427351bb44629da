"""What the faster local judge of issue 27 buys on CPU, measured through the real
transformers backend (tiny random Qwen2-VL, tests/tiny_models.py): the backend's own batching
by prompt length (``group_by_length``) and preprocessing of the next batch on a worker
(``encode_ahead``), each on and off, the pad tokens the backend counted, the image processor's
share of an inline run, and prefill against decode.

Every variant is the same request list handed to ``generate`` of a backend loaded with those
options (answers in the caller's order; the greedy answers are checked equal across variants).
Prefill is a batch generating 1 token; decode is (time for T tokens − time for 1) / (T − 1).
Synthetic pairs whose answers run from a few words to a few hundred, so batches pad.

    python bench/grouping_bench.py [--items 64] [--tokens 16] [--batch 8] [--runs 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pairscope.models.base import JudgeRequest, create_backend  # noqa: E402
from pairscope.models.prompts import load_template, render_pairwise  # noqa: E402


def requests_of_mixed_length(n: int, tokens: int, size: int = 96) -> list[JudgeRequest]:
    """``n`` pairwise prompts, answers of 3 to 300 words (so a batch in the order given pads)."""
    rng = random.Random(0)
    template = load_template("pairwise")
    words = "the red circle sits left of a blue square near two small green dots".split()
    out = []
    for _ in range(n):
        img = Image.new("RGB", (size, size), "white")
        draw = ImageDraw.Draw(img)
        x, y = rng.randint(0, size - 16), rng.randint(0, size - 16)
        draw.ellipse((x, y, x + 14, y + 14), fill="red")
        answers = [" ".join(rng.choice(words) for _ in range(int(3 * 100 ** rng.random()))) for _ in range(2)]
        prompt = render_pairwise(template, "Where is the red circle?", answers)
        out.append(JudgeRequest(prompt, images=(img,), max_new_tokens=tokens, min_new_tokens=tokens))
    return out


def prompt_tokens(backend, request: JudgeRequest) -> int:
    return len(backend.tokenizer(request.prompt)["input_ids"])


def padding_share(lengths: list[int], batch: int) -> float:
    """Pad tokens / all tokens when ``lengths`` are batched in this order."""
    pad = total = 0
    for start in range(0, len(lengths), batch):
        chunk = lengths[start : start + batch]
        pad += max(chunk) * len(chunk) - sum(chunk)
        total += max(chunk) * len(chunk)
    return pad / total


def run_generate(backend, requests: list[JudgeRequest]) -> tuple[float, int, list[str]]:
    """(seconds, pad tokens the backend counted, answers) for one ``generate`` of ``requests``."""
    backend.padding_tokens = 0
    start = time.perf_counter()
    results = backend.generate(requests)
    seconds = time.perf_counter() - start
    assert all(r.error is None for r in results), [r.error for r in results if r.error][:1]
    return seconds, backend.padding_tokens, [r.text for r in results]


def encode_and_generate(backend, requests: list[JudgeRequest], batch: int, overlap: bool) -> tuple[float, float]:
    """(total seconds, seconds spent in the image processor + chat template) over all batches;
    with ``overlap`` the next batch is encoded on a worker while this one generates."""
    import torch

    batches = [requests[i : i + batch] for i in range(0, len(requests), batch)]
    encode_s = [0.0]

    def encode(chunk):
        t = time.perf_counter()
        inputs, _ = backend._encode(chunk)
        encode_s[0] += time.perf_counter() - t
        return inputs

    kwargs = backend._generate_kwargs(batches[0][0], [threading.Event()], None, None)
    start = time.perf_counter()
    with torch.inference_mode():
        if overlap:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-encode") as pool:
                pending = pool.submit(encode, batches[0])
                for i in range(len(batches)):
                    inputs = pending.result()
                    if i + 1 < len(batches):
                        pending = pool.submit(encode, batches[i + 1])
                    backend.model.generate(**inputs, **kwargs)
        else:
            for chunk in batches:
                backend.model.generate(**encode(chunk), **kwargs)
    return time.perf_counter() - start, encode_s[0]


def prefill_decode(backend, requests: list[JudgeRequest], batch: int, tokens: int) -> tuple[float, float]:
    """(prefill seconds per batch, decode ms per token per batch) on the first batch."""
    import dataclasses

    import torch

    chunk = requests[:batch]
    inputs, _ = backend._encode(chunk)
    times = {}
    for n in (1, tokens):
        req = dataclasses.replace(chunk[0], max_new_tokens=n, min_new_tokens=n)
        kwargs = backend._generate_kwargs(req, [threading.Event()], None, None)
        with torch.inference_mode():
            t = time.perf_counter()
            backend.model.generate(**inputs, **kwargs)
            times[n] = time.perf_counter() - t
    return times[1], 1000 * (times[tokens] - times[1]) / (tokens - 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "pairscope-grouping-bench")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from tiny_models import build_tiny_qwen2_vl

    folder = args.workdir / "tiny-qwen2-vl"
    if not (folder / "config.json").exists():
        args.workdir.mkdir(parents=True, exist_ok=True)
        build_tiny_qwen2_vl(folder)
    variants = {
        "order given, encode inline (before)": dict(group_by_length=False, encode_ahead=False),
        "grouped, encode inline": dict(group_by_length=True, encode_ahead=False),
        "order given, encode ahead": dict(group_by_length=False, encode_ahead=True),
        "grouped, encode ahead (default)": dict(group_by_length=True, encode_ahead=True),
    }
    backends = {
        name: create_backend(
            "transformers", model=str(folder), device="cpu", batch_size=args.batch, top_logprobs=0, **options
        )
        for name, options in variants.items()
    }
    backend = backends["order given, encode inline (before)"]
    requests = requests_of_mixed_length(args.items, args.tokens)
    lengths = [prompt_tokens(backend, r) for r in requests]
    backend.generate(requests[: args.batch])  # warm up
    rows: dict[str, list[float]] = {name: [] for name in variants}
    pads: dict[str, int] = {}
    answers: dict[str, list[str]] = {}
    encode_share = []
    for _ in range(args.runs):
        for name, judge in backends.items():
            seconds, pads[name], answers[name] = run_generate(judge, requests)
            rows[name].append(seconds)
        total, encode = encode_and_generate(backend, requests, args.batch, overlap=False)
        encode_share.append(encode / total)
    assert all(a == answers[next(iter(answers))] for a in answers.values()), "greedy answers differ"
    prefill, decode = zip(*(prefill_decode(backend, requests, args.batch, args.tokens) for _ in range(args.runs)))
    for judge in backends.values():
        judge.close()
    print(
        f"{args.items} pairs × {args.tokens} tokens, batch {args.batch}, {args.threads} torch thread(s),"
        f" median of {args.runs}; prompt tokens {min(lengths)}–{max(lengths)}"
    )
    print(
        f"padding (text tokens): order given {100 * padding_share(lengths, args.batch):.1f}%,"
        f" sorted {100 * padding_share(sorted(lengths), args.batch):.1f}%"
    )
    for name, values in rows.items():
        seconds = statistics.median(values)
        print(f"{name:36s} {seconds:7.2f} s  {args.items / seconds:6.2f} pairs/s  pad tokens {pads[name]}")
    print("greedy answers identical across the variants")
    print(f"image processor + chat template: {100 * statistics.median(encode_share):.1f}% of the inline run")
    print(
        f"prefill {1000 * statistics.median(prefill):.1f} ms a batch; decode {statistics.median(decode):.2f} ms a token"
    )


if __name__ == "__main__":
    main()
