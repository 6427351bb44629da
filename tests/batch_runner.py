"""A small OpenAI Batch executor for the tests: reads request JSONL files (``custom_id``,
``method``, ``url``, ``body``) and writes output JSONL as the Batch API and ``vllm run-batch``
do — ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``.

Ray Data's HTTP processor would be the executor of choice on CPU, but ``ray[data]`` is not
installed in this environment (and nothing is downloaded here), so :func:`run_batch` posts
each body to a real OpenAI-compatible server (``transformers serve`` in the tests) itself.
``file://`` image URLs are read only from ``allowed_local_media_path`` and sent inline, as
vLLM does with ``--allowed-local-media-path``; any other file URL is that request's error.

:func:`answer_from_table` is the deterministic executor of the fast tests: the same output
format, the text of each answer taken from a table (or a function of the request).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit


def read_requests(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every request line of these files, in order."""
    out = []
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line))
    return out


def output_line(custom_id: str, n: int, status: int | None, body: Any, error: dict | None = None) -> str:
    """One line of a Batch output file."""
    response = None if status is None else {"status_code": status, "request_id": f"req_{n}", "body": body}
    return json.dumps({"id": f"batch_req_{n}", "custom_id": custom_id, "response": response, "error": error})


def completion(text: str, model: str, logprobs: list[dict] | None = None) -> dict[str, Any]:
    """A ``chat.completion`` body answering ``text``."""
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs}
    return {
        "id": "chatcmpl-table",
        "object": "chat.completion",
        "model": model,
        "choices": [choice],
        "usage": {"prompt_tokens": 10, "completion_tokens": max(1, len(text.split())), "total_tokens": 11},
    }


def answer_from_table(
    requests: Iterable[Path],
    out: Path,
    answer: Callable[[dict[str, Any]], str | tuple[int, Any] | dict[str, Any]],
) -> int:
    """Write the output file for these request files: ``answer(request)`` gives the text (a
    200 answer), a ``(status, body)`` pair, or a whole ``chat.completion`` body. Returns the
    number of lines written."""
    lines = []
    for n, request in enumerate(read_requests(requests), 1):
        result = answer(request)
        model = request["body"].get("model", "table")
        if isinstance(result, str):
            lines.append(output_line(request["custom_id"], n, 200, completion(result, model)))
        elif isinstance(result, tuple):
            lines.append(output_line(request["custom_id"], n, result[0], result[1]))
        else:
            lines.append(output_line(request["custom_id"], n, 200, result))
    Path(out).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def _inline_local_files(body: dict[str, Any], allowed: Path | None) -> dict[str, Any]:
    """``file://`` image URLs read from ``allowed`` and sent as data URLs; ``ValueError``
    for a file outside it (or any file URL without it)."""
    for message in body.get("messages", []):
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            url = part.get("image_url", {}).get("url", "") if isinstance(part, dict) else ""
            if not url.startswith("file://"):
                continue
            path = Path(unquote(urlsplit(url).path)).resolve()
            if allowed is None or not path.is_relative_to(Path(allowed).resolve()):
                raise ValueError(f"cannot load local files without --allowed-local-media-path: {path}")
            part["image_url"]["url"] = "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()
    return body


def run_batch(
    requests: Iterable[Path],
    out: Path,
    base_url: str,
    allowed_local_media_path: Path | None = None,
    timeout_s: float = 300.0,
) -> int:
    """Post every request's body to ``base_url`` (the server root, e.g. ``http://127.0.0.1:8000``)
    plus the line's ``url``, one at a time, and write the Batch output file. Returns the number of
    lines written."""
    import httpx

    lines = []
    with httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_s) as client:
        for n, request in enumerate(read_requests(requests), 1):
            try:
                body = _inline_local_files(json.loads(json.dumps(request["body"])), allowed_local_media_path)
            except ValueError as exc:
                lines.append(output_line(request["custom_id"], n, 400, {"error": {"message": str(exc)}}))
                continue
            response = client.request(request.get("method", "POST"), request["url"], json=body)
            try:
                answer = response.json()
            except ValueError:
                answer = {"error": {"message": response.text[:500]}}
            lines.append(output_line(request["custom_id"], n, response.status_code, answer))
    Path(out).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)
