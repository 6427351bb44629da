"""A judge run as a request file: the samples a live run would generate, written as OpenAI
Batch JSONL for an executor PairScope does not run (``vllm run-batch``, the OpenAI or Azure
Batch API, Ray Data); ``batch_results`` reads the answers back into the same run.

The plan is the live run's own: a :class:`~.session.JudgeSession` opens (or resumes) the run,
plans every item (``modes``: orders from the seed, K, both orders), groups the samples by the
prompt they send (at temperature 0 one request stands for every sample of an item shown in
the same order, as a live run generates it once) and prepares each request (template, images
and video frames at the session's sizes, the per-sample seed). A sample whose media cannot be
read is stored as that sample's error now, as a live run stores it.

Each line is ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``; the
body is what the endpoint backend (``models/openai_backend.py``) sends, not streamed.
``custom_id`` is ``r<run>-i<item>-s<first sample>-o<order shown>`` (``r3-i12-s0-o1.0``),
at most 64 characters. Lines go into ``requests-0001.jsonl``, ``requests-0002.jsonl``, … of
at most :data:`MAX_REQUESTS` requests and :data:`MAX_BYTES` bytes each (the OpenAI Batch
API's limits per input file: 50,000 requests, 200 MB). ``manifest.json`` beside them records
the run and its protocol (template hash, mode, K, orders, seed, frames, parser), every
request (item, samples, order, seed, what the media were sent as) and the sha256 of every
media file the items name.

Media go as PNG ``data:`` URLs of the exact pixels a live run sends (the default), or, with
``media_as="file"``, as ``file://`` URLs of those PNGs written once each under ``media/``
(named by their sha256) for an executor that reads local files: vLLM reads them only from
the folder given to ``--allowed-local-media-path`` (docs/JUDGE.md).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairscope.models.base import Generation, JudgeError, JudgeRequest

from ..durable import AtomicWriter, Made, file_sha256, store_content
from ..records import Item
from ..store import RunRecord, Store, VerdictRecord
from .results import record_verdicts
from .session import JudgeConfig, JudgeSession

FORMAT = "pairscope-batch-requests/1"
BACKEND = "openai-batch"
URL = "/v1/chat/completions"
MANIFEST = "manifest.json"
SHARD = "requests-{:04d}.jsonl"
MEDIA_DIR = "media"
#: The OpenAI Batch API's limits per input file (the Azure OpenAI Batch API takes the same).
MAX_REQUESTS = 50_000
MAX_BYTES = 200_000_000
MAX_CUSTOM_ID = 64  # some Batch APIs (Together) refuse longer ids
MEDIA_AS = ("url", "file")
TOP_LOGPROBS = 5


class ExportError(Exception):
    """The requests cannot be written; the message says why (nothing of them is left)."""


@dataclass(frozen=True)
class ShardLimits:
    """Requests and bytes per request file."""

    requests: int = MAX_REQUESTS
    bytes: int = MAX_BYTES

    def __post_init__(self) -> None:
        if self.requests < 1 or self.bytes < 1:
            raise ValueError("shard limits must be at least 1")


class BatchPlanner:
    """The judge of an exported run, as the session sees it: it names the served model (the
    run's identity) and generates nothing; the executor answers its requests."""

    name = BACKEND

    def __init__(self, model: str, top_logprobs: int = TOP_LOGPROBS) -> None:
        if not model:
            raise JudgeError("no model name given: pass the name the executor serves (--model)")
        self.model = model
        self.top_logprobs = top_logprobs

    def generate(self, requests: Sequence[JudgeRequest], cancel: threading.Event | None = None) -> list[Generation]:
        raise JudgeError("an exported run is answered by its executor: import its output (docs/JUDGE.md)")

    def generate_stream(
        self, request: JudgeRequest, on_text: Callable[[str], None], cancel: threading.Event | None = None
    ) -> Generation:
        raise JudgeError("an exported run is answered by its executor: import its output (docs/JUDGE.md)")

    def describe(self) -> dict[str, Any]:
        identity = json.dumps({"model": self.model}, sort_keys=True).encode()
        return {
            "backend": BACKEND,
            "model_path": self.model,
            "weights_hash": "sha256:" + hashlib.sha256(identity).hexdigest(),
            "served_model": self.model,
            "device": "batch",
            "dtype": None,
        }

    def close(self) -> None:
        """Nothing to free."""


def custom_id(run_id: int, item_id: int, sample_idx: int, order: Sequence[int]) -> str:
    """``r<run>-i<item>-s<sample>-o<order>``; an order too long to spell out within
    :data:`MAX_CUSTOM_ID` characters is named by a hash of it."""
    spelled = ".".join(str(i) for i in order)
    cid = f"r{run_id}-i{item_id}-s{sample_idx}-o{spelled}"
    if len(cid) > MAX_CUSTOM_ID:
        cid = f"r{run_id}-i{item_id}-s{sample_idx}-oh{hashlib.sha256(spelled.encode()).hexdigest()[:12]}"
    return cid


def png(image: Any) -> bytes:
    """The PNG the endpoint backend sends of an image (its exact pixels, RGB)."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def request_body(model: str, request: JudgeRequest, urls: Sequence[str], top_logprobs: int = TOP_LOGPROBS) -> dict:
    """The chat-completions body of a request, as the endpoint backend sends it (media first,
    then the prompt; log-probabilities asked for; the seed only when sampling), unstreamed."""
    content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": url}} for url in urls]
    content.append({"type": "text", "text": request.prompt})
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": request.max_new_tokens,
        "temperature": max(request.temperature, 0.0),
        "logprobs": True,
    }
    if top_logprobs:
        body["top_logprobs"] = top_logprobs
    if request.min_new_tokens:
        body["min_tokens"] = request.min_new_tokens
    if request.temperature > 0 and request.seed is not None:
        body["seed"] = request.seed
    return body


def sent_media(request: JudgeRequest) -> dict[str, Any]:
    """What the endpoint backend records as sent (``Generation.media_sent``) for a request."""
    media: dict[str, Any] = {}
    if request.images:
        media["images"] = [list(image.size) for image in request.images]
    if request.video_frames:
        media["video_frames"] = [list(frame.size) for frame in request.video_frames]
    return media


@dataclass
class ExportReport:
    """What an export wrote: ``requests`` lines standing for ``samples`` samples in ``shards``;
    ``failed``: samples stored as errors now (media that cannot be read); ``done``: samples
    the run already had."""

    run: RunRecord
    directory: Path
    requests: int = 0
    samples: int = 0
    failed: int = 0
    done: int = 0
    shards: list[dict[str, Any]] = field(default_factory=list)

    def line(self) -> str:
        """One paragraph for the command line."""
        files = ", ".join(f"{s['file']} ({s['requests']} requests, {s['bytes']:,} bytes)" for s in self.shards)
        text = f"run {self.run.id}: {self.requests} requests for {self.samples} samples written to {self.directory}" + (
            f" in {files}" if files else ""
        )
        if self.failed:
            text += f"; {self.failed} samples failed before export (stored as errors, as a live run would)"
        if self.done:
            text += f"; {self.done} samples were already judged"
        return (
            text
            + ". Import the executor's output with: pairscope import-verdicts --openai-batch OUT.jsonl"
            + f" --requests {self.directory}"
        )


class _Shards:
    """Request files of at most ``limits`` each, written atomically (``made`` undoes them)."""

    def __init__(self, directory: Path, limits: ShardLimits, made: Made) -> None:
        self.directory, self.limits, self.made = directory, limits, made
        self.writer: AtomicWriter | None = None
        self.count = 0
        self.done: list[dict[str, Any]] = []

    @property
    def name(self) -> str:
        return SHARD.format(len(self.done) + 1)

    def add(self, line: bytes, what: str) -> str:
        if len(line) > self.limits.bytes:
            raise ExportError(
                f"the request for {what} is {len(line):,} bytes, over the {self.limits.bytes:,} bytes a request file"
                " may hold (--media-as file sends its images as file references)"
            )
        if self.writer is not None and (
            self.count + 1 > self.limits.requests or self.writer.size + len(line) > self.limits.bytes
        ):
            self.close()
        if self.writer is None:
            self.writer = AtomicWriter(self.directory / self.name, self.made)
            self.count = 0
        self.writer.write(line)
        self.count += 1
        return self.name

    def close(self) -> None:
        if self.writer is not None:
            name = self.name
            written = self.writer.commit()
            self.done.append({"file": name, "requests": self.count, **written})
            self.writer = None

    def discard(self) -> None:
        if self.writer is not None:
            self.writer.discard()
            self.writer = None


def _media_files(item: Item) -> list[dict[str, Any]]:
    """The media an item names, with the sha256 of each file (None where unreadable)."""
    out = []
    for m in item.media:
        digest = None
        if m.path is not None:
            try:
                digest = file_sha256(Path(m.path))
            except OSError:
                digest = None
        out.append({"kind": m.kind, "ref": m.ref, "sha256": digest})
    return out


def _check_folder(directory: Path) -> None:
    if directory.exists() and not directory.is_dir():
        raise ExportError(f"{directory} is a file, not a folder")
    if directory.is_dir() and ((directory / MANIFEST).exists() or any(directory.glob("requests-*.jsonl"))):
        raise ExportError(f"{directory} already holds exported requests: give a new or empty folder")


def export_requests(
    store: Store,
    config: JudgeConfig,
    model: str,
    item_ids: Iterable[int],
    directory: Path,
    *,
    media_as: str = "url",
    new_run: bool = False,
    limits: ShardLimits | None = None,
    top_logprobs: int = TOP_LOGPROBS,
) -> ExportReport:
    """Open (or resume, unless ``new_run``) the run a live judge of ``model`` with ``config``
    would make, and write the requests its items still need into ``directory`` (see the
    module doc). Raises :class:`ExportError` (nothing written) or ``ValueError`` for a bad
    ``media_as``."""
    if media_as not in MEDIA_AS:
        raise ValueError(f"media_as must be one of {', '.join(MEDIA_AS)}, got {media_as!r}")
    limits = limits or ShardLimits()
    directory = Path(directory)
    _check_folder(directory)
    session = JudgeSession(store, BatchPlanner(model, top_logprobs), config)
    run = session.start(resume=not new_run)
    ids = list(item_ids)
    session.remaining(ids)  # what the run already holds, for the plan below
    report = ExportReport(run, directory)
    made = Made()
    made.mkdir(directory)
    shards = _Shards(directory, limits, made)
    requests: list[dict[str, Any]] = []
    items: dict[str, dict[str, Any]] = {}
    failed: list[VerdictRecord] = []
    try:
        for item_id in ids:
            item = store.get_item(item_id)
            units = session.units(item)
            planned = len(
                session.mode.plan(item.ext_id, len(item.responses), config.k, config.both_orders, config.seed)
            )
            report.done += planned - len(units)
            if not units:
                continue
            items[str(item.stored_id)] = {"ext_id": item.ext_id, "media": _media_files(item)}
            encoded: dict[int, tuple[str, str]] = {}  # id(image) → (url, sha256), per item
            for group in session._distinct_prompts(units):
                unit = group[0]
                request = session.request(unit)
                if not isinstance(request, JudgeRequest):
                    failed += [session.verdict(u, Generation("", error=request), None) for u in group]
                    continue
                urls, digests = [], []
                for image in (*request.images, *request.video_frames):
                    if id(image) not in encoded:
                        data = png(image)
                        digest = hashlib.sha256(data).hexdigest()
                        if media_as == "file":
                            path, _, _ = store_content(data, directory / MEDIA_DIR, ".png", made=made, digest=digest)
                            url = path.resolve().as_uri()
                        else:
                            url = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
                        encoded[id(image)] = (url, digest)
                    urls.append(encoded[id(image)][0])
                    digests.append(encoded[id(image)][1])
                # What a live run stores as sent, decided by the session itself.
                media = session.verdict(unit, Generation("", media_sent=sent_media(request)), request).media_sent
                cid = custom_id(run.id, item.stored_id, unit.sample_idx, unit.order)
                body = request_body(model, request, urls, top_logprobs)
                line = {"custom_id": cid, "method": "POST", "url": URL, "body": body}
                raw = json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
                shard = shards.add(raw, f"item {item.ext_id} sample {unit.sample_idx}")
                requests.append(
                    {
                        "custom_id": cid,
                        "item": item.stored_id,
                        "ext_id": item.ext_id,
                        "samples": [u.sample_idx for u in group],
                        "order": list(unit.order),
                        "seed": request.seed,
                        "media_sent": media,
                        "images_sha256": digests,
                        "file": shard,
                    }
                )
                report.requests += 1
                report.samples += len(group)
            if len(failed) >= 256:
                record_verdicts(store, run, failed)
                report.failed += len(failed)
                failed = []
        shards.close()
        manifest = {
            "format": FORMAT,
            "run": {
                "id": run.id,
                "uuid": run.uuid,
                "backend": run.backend,
                "model": model,
                "weights_hash": run.weights_hash,
                "template_name": run.template_name,
                "template_hash": run.template_hash,
                "mode": run.mode,
                "k": run.k,
                "both_orders": run.both_orders,
                "frames": run.frames,
                "seed": run.seed,
                "parser": run.parser,
                "max_new_tokens": config.max_new_tokens,
                "temperature": config.temperature,
            },
            "url": URL,
            "media_as": media_as,
            "limits": {"requests": limits.requests, "bytes": limits.bytes},
            "shards": shards.done,
            "requests": requests,
            "items": items,
        }
        writer = AtomicWriter(directory / MANIFEST, made)
        try:
            writer.write(json.dumps(manifest, ensure_ascii=False, indent=1).encode("utf-8"))
            writer.commit()
        except BaseException:
            writer.discard()
            raise
        made.sync()
    except BaseException:
        shards.discard()
        made.undo()
        raise
    finally:
        if failed:
            record_verdicts(store, run, failed)
            report.failed += len(failed)
    store.set_run_status(run.id, "exported" if report.requests else "done")
    report.shards = shards.done
    report.run = store.run(run.id)
    return report


__all__ = [
    "BACKEND",
    "MANIFEST",
    "MAX_BYTES",
    "MAX_REQUESTS",
    "BatchPlanner",
    "ExportError",
    "ExportReport",
    "ShardLimits",
    "custom_id",
    "export_requests",
    "request_body",
    "sent_media",
]
