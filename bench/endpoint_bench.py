"""Judge endpoint cost on CPU: the same tiny model judged in-process vs behind an endpoint.

A tiny random Qwen2-VL built from config (tests/tiny_models.py) judges N synthetic image
pairs (bench/judge_bench.py's prompts, greedy, up to T new tokens) two ways:

- in-process: the transformers backend, batched (batch B) and one request at a time;
- endpoint: ``transformers serve`` on 127.0.0.1 with the same folder, through the openai
  backend (PNG data URLs, streamed answers, C requests in flight).

Median of R runs each; the ratio endpoint ÷ in-process is the figure (these VMs are noisy).
It measures what the HTTP path costs, not what a real server buys: ``transformers serve``
without continuous batching runs one request at a time, where vLLM/SGLang batch them.

    python bench/endpoint_bench.py [--items 32] [--tokens 16] [--batch 8] [--concurrency 1 8] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from fault_proxy import ServedModel, serving_missing  # noqa: E402
from judge_bench import synthetic_requests  # noqa: E402
from pairscope.models.base import create_backend  # noqa: E402


def timed(backend, requests) -> tuple[float, int, int]:
    """items/s, output tokens, failures of one ``generate`` over all requests."""
    start = time.perf_counter()
    gens = backend.generate(requests)
    elapsed = time.perf_counter() - start
    return len(requests) / elapsed, sum(g.tokens_out for g in gens), sum(1 for g in gens if g.error)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads in each process (OMP_NUM_THREADS; default 1)"
    )
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "pairscope-endpoint-bench")
    args = parser.parse_args()
    # Both processes get the same torch thread count, set before torch loads. On a 2-core VM
    # shared with other work, 2 threads per process ran the in-process judge ~5x slower than 1
    # (OpenMP threads spinning against each other), which would make the comparison meaningless.
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    reason = serving_missing()
    if reason:
        sys.exit(f"endpoint_bench: {reason}")
    from tiny_models import build_tiny_qwen2_vl

    args.workdir.mkdir(parents=True, exist_ok=True)
    folder = args.workdir / "tiny-qwen2-vl"
    if not (folder / "config.json").exists():
        build_tiny_qwen2_vl(folder)
    # Greedy with no minimum length: the server path cannot force one (transformers serve
    # refuses min_tokens), so both paths stop where the model does; token totals are printed.
    requests = [
        r.__class__(r.prompt, images=r.images, max_new_tokens=args.tokens)
        for r in synthetic_requests(args.items, args.tokens)
    ]
    med = statistics.median

    local = create_backend("transformers", model=str(folder), device="cpu", batch_size=args.batch)
    local.generate(requests[:2])  # warm-up
    in_process = [timed(local, requests) for _ in range(args.runs)]
    local.batch_size = 1
    one_by_one = [timed(local, requests) for _ in range(args.runs)]
    local.close()

    server = ServedModel(args.workdir / "serve.log", pinned=str(folder))
    started = time.perf_counter()
    server.start()
    startup = time.perf_counter() - started
    endpoint: dict[int, list[tuple[float, int, int]]] = {}
    try:
        for concurrency in args.concurrency:
            remote = create_backend("openai", endpoint=server.url, model=str(folder), concurrency=concurrency)
            remote.generate(requests[:2])  # warm-up (the first request loads the processor)
            endpoint[concurrency] = [timed(remote, requests) for _ in range(args.runs)]
            remote.close()
    finally:
        server.stop()

    base = med(r[0] for r in in_process)
    print(
        f"{args.items} synthetic pairs, greedy, up to {args.tokens} new tokens; median of {args.runs} runs;"
        f" {args.threads} torch thread(s) per process"
    )
    print(f"transformers serve up (/health answers) in {startup:.1f} s")
    print(
        f"in-process (transformers, batch {args.batch}): median {base:.2f} items/s"
        f"  runs {[round(r[0], 2) for r in in_process]}  tokens out {in_process[0][1]}"
    )
    print(
        f"in-process (transformers, batch 1): median {med(r[0] for r in one_by_one):.2f} items/s"
        f"  runs {[round(r[0], 2) for r in one_by_one]}  tokens out {one_by_one[0][1]}"
    )
    for concurrency, runs in endpoint.items():
        rate = med(r[0] for r in runs)
        print(
            f"endpoint (transformers serve + openai, concurrency {concurrency}): median {rate:.2f} items/s"
            f"  runs {[round(r[0], 2) for r in runs]}  tokens out {runs[0][1]}  failed {runs[0][2]}"
            f"  ratio {rate / base:.2f}x in-process batched, {rate / med(r[0] for r in one_by_one):.2f}x one at a time"
        )


if __name__ == "__main__":
    main()
