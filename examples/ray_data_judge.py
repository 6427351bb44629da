"""Answer an exported PairScope run on a Ray cluster (multi-node vLLM) with Ray Data LLM.

Not part of PairScope (nothing imports it). The requests come from
``pairscope judge --export-requests DIR``; the output this script writes is what
``pairscope import-verdicts --openai-batch OUT.jsonl --requests DIR`` reads (docs/JUDGE.md).

    pip install -U "ray[data,llm]" vllm      # on every node of the cluster
    python examples/ray_data_judge.py DIR OUT.jsonl --model Qwen/Qwen2.5-VL-7B-Instruct --replicas 4

``--replicas`` vLLM engines (``--tp`` GPUs each) are spread over the cluster. With
``--endpoint URL`` the requests go to OpenAI-compatible servers you already run instead
(Ray Data's HTTP processor), each body exactly as exported.

Ray Data API: ``ray.data.llm.build_llm_processor`` with ``vLLMEngineProcessorConfig`` or
``HttpRequestProcessorConfig`` (docs.ray.io, "Working with LLMs"). Through the vLLM engine
processor the answers carry the generated text only (no log-probabilities: confidence n/a);
through the HTTP processor they are the servers' whole answers.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def read_requests(folder: Path) -> list[dict]:
    rows = []
    for shard in sorted(folder.glob("requests-*.jsonl")):
        for line in shard.read_text(encoding="utf-8").splitlines():
            if line.strip():
                request = json.loads(line)
                # Ray Data columns must have one type: the body travels as JSON text.
                rows.append({"custom_id": request["custom_id"], "body": json.dumps(request["body"])})
    return rows


def engine_messages(body: dict) -> list[dict]:
    """The exported OpenAI messages in the vLLM engine processor's form (images as ``image`` parts)."""
    messages = []
    for message in body["messages"]:
        parts = []
        for part in message["content"]:
            if part["type"] == "image_url":
                parts.append({"type": "image", "image": part["image_url"]["url"]})
            else:
                parts.append(part)
        messages.append({"role": message["role"], "content": parts})
    return messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("requests", type=Path, help="the folder pairscope judge --export-requests wrote")
    parser.add_argument("output", type=Path, help="the Batch output JSONL to write")
    parser.add_argument("--model", required=True, help="model for vLLM (a Hub id or a folder every node sees)")
    parser.add_argument("--replicas", type=int, default=1, help="vLLM engines (default: 1)")
    parser.add_argument("--tp", type=int, default=1, help="GPUs per engine, tensor parallel (default: 1)")
    parser.add_argument("--batch-size", type=int, default=32, help="rows per engine batch (default: 32)")
    parser.add_argument("--endpoint", help="an OpenAI-compatible chat completions URL to post to instead")
    args = parser.parse_args()

    import ray
    from ray.data.llm import HttpRequestProcessorConfig, build_llm_processor, vLLMEngineProcessorConfig

    ray.init()
    ds = ray.data.from_items(read_requests(args.requests))

    if args.endpoint:
        config = HttpRequestProcessorConfig(url=args.endpoint, concurrency=args.replicas, batch_size=args.batch_size)
        processor = build_llm_processor(
            config,
            preprocess=lambda row: {"payload": json.loads(row["body"])},
            postprocess=lambda row: {
                "custom_id": row["custom_id"],
                "line": json.dumps(
                    {
                        "custom_id": row["custom_id"],
                        "response": {"status_code": 200, "body": row["http_response"]},
                        "error": None,
                    }
                ),
            },
        )
    else:
        config = vLLMEngineProcessorConfig(
            model_source=args.model,
            engine_kwargs={"tensor_parallel_size": args.tp, "limit_mm_per_prompt": {"image": 8}},
            concurrency=args.replicas,
            batch_size=args.batch_size,
            has_image=True,
        )

        def preprocess(row: dict) -> dict:
            body = json.loads(row["body"])
            sampling = {"temperature": body["temperature"], "max_tokens": body["max_tokens"]}
            if "seed" in body:
                sampling["seed"] = body["seed"]
            return {"messages": engine_messages(body), "sampling_params": sampling}

        def postprocess(row: dict) -> dict:
            body = json.loads(row["body"])
            answer = {
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": row["generated_text"]},
                        "finish_reason": "stop",
                    }
                ],
            }
            line = {"custom_id": row["custom_id"], "response": {"status_code": 200, "body": answer}, "error": None}
            return {"custom_id": row["custom_id"], "line": json.dumps(line)}

        processor = build_llm_processor(config, preprocess=preprocess, postprocess=postprocess)

    with open(args.output, "w", encoding="utf-8") as out:
        for row in processor(ds).iter_rows():
            out.write(row["line"] + "\n")


if __name__ == "__main__":
    main()
