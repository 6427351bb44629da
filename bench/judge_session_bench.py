"""K-sample judging through JudgeSession and the real transformers backend (tiny random Qwen2-VL
on CPU): what the efficiency rules of the judging protocol save, each against a baseline run in
the same process.

  greedy   K = 5 at temperature 0: each distinct prompt (≤ 2 orders per pair) is generated
           once and stored for every sample it stands for; baseline = the same items at K = 1
           (one generation per item), so the ratio says how many K = 1 runs a K = 5 run costs
           (it was 5 when every sample was generated).
  sampled  K = 5 at temperature 1.0, batch 8: samples with different seeds share a batch;
           baseline = batch size 1 (what every sampled run got before: one request per batch).

    python bench/judge_session_bench.py [--items 24] [--tokens 16] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def project(folder: Path, n: int):
    from PIL import Image

    from pairscope.app.records import Item, MediaRef, Reference, Response
    from pairscope.app.store import Store

    image = folder / "pic.png"
    Image.new("RGB", (64, 48), "red").save(image)
    store = Store.create(folder / f"p{time.monotonic_ns()}.pairscope")
    store.add_items(
        [
            Item(
                ext_id=f"i{i}",
                prompt=f"How many red squares are in picture {i}?",
                responses=(Response(0, f"There are {i % 4} squares."), Response(1, f"I see {i % 4 + 1} squares.")),
                media=(MediaRef("image", "pic.png", str(image)),),
                reference=Reference(ranking=(0, 1)),
            )
            for i in range(n)
        ]
    )
    return store


def timed(backend, folder: Path, n: int, **config) -> tuple[float, int]:
    from pairscope.app.judge.session import JudgeConfig, JudgeSession

    store = project(folder, n)
    calls = []
    generate = backend.generate

    def counting(requests, cancel=None):
        calls.append(len(requests))
        return generate(requests, cancel)

    backend.generate = counting
    try:
        session = JudgeSession(store, backend, JudgeConfig(**config))
        start = time.perf_counter()
        session.judge([s.id for s in store.item_summaries(0, n)])
        return time.perf_counter() - start, sum(calls)
    finally:
        backend.generate = generate
        store.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=24)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from pairscope.models.base import create_backend
    from tiny_models import build_tiny_qwen2_vl

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model = build_tiny_qwen2_vl(folder / "model")
        backend = create_backend("transformers", model=str(model), device="cpu", batch_size=8)
        common = dict(max_new_tokens=args.tokens, batch_size=8)
        timed(backend, folder, 4, **common)  # warm-up
        rows = {
            "greedy K=5": dict(k=5, **common),
            "greedy K=1 (baseline)": dict(k=1, **common),
            "sampled K=5, batch 8": dict(k=5, temperature=1.0, **common),
            "sampled K=5, batch 1 (baseline)": dict(k=5, temperature=1.0, max_new_tokens=args.tokens, batch_size=1),
        }
        results = {}
        for name, config in rows.items():
            runs = [timed(backend, folder, args.items, **config) for _ in range(args.runs)]
            results[name] = (statistics.median(t for t, _ in runs), runs[0][1])
            print(f"{name:34s} median {results[name][0]:.2f} s over {args.runs} runs, {runs[0][1]} generations")
        backend.close()
    g, g1 = results["greedy K=5"][0], results["greedy K=1 (baseline)"][0]
    s, s1 = results["sampled K=5, batch 8"][0], results["sampled K=5, batch 1 (baseline)"][0]
    print(f"greedy K=5 costs {g / g1:.2f}x a K=1 run (every sample generated: 5x)")
    print(f"sampled K=5 batched runs in {s / s1:.2f}x the time of one-request batches ({s1 / s:.1f}x faster)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
