"""A judge behind any OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM, SGLang,
``transformers serve``, a hosted API).

The app core renders the prompt exactly as for the local judge; this backend only places the
media: every still image, then every sampled video frame, each as a PNG ``data:`` URL of the
very pixels the session prepared (its ``IMAGE_MAX_SIZE`` / ``FRAME_MAX_SIZE`` rule, applied
before any backend sees an image), then the prompt text. ``media_sent`` records those sizes.
The server may resize further inside its own processor; PairScope cannot see that.

Every request streams (``stream: true``), so a set ``cancel`` event closes the connection
within a token. ``concurrency`` requests are in flight at once (one semaphore per backend,
shared by every call). A 408/409/425/429/5xx answer, a timeout, a refused or dropped
connection and a stream that ends without a finish reason are retried with exponential
backoff and jitter (``Retry-After`` honoured, up to ``max_backoff_s``), at most ``retries``
times; any failure left becomes ``Generation.error``, never an exception, so the session
stores it per sample and a rerun retries it.

Log-probabilities (``logprobs`` + ``top_logprobs``) are asked for; a server that rejects a
field this backend can do without (``logprobs``, ``top_logprobs``, ``stream_options``,
``min_tokens``, ``seed``) is asked once more without it, and the field stays off for the
rest of the session. The stored log-probabilities are what ``models.confidence`` reads a
verdict's confidence from (none returned: no confidence, shown as n/a).

The API key is read from the environment variable named by ``api_key_env`` when the backend
is created and is only ever placed in the ``Authorization`` header: never in ``describe()``,
an error message, or anything the project stores.

The run's model identity (``weights_hash``) covers the served model name and what the
server's own ``/v1/models`` entry says stands behind it (``root``, ``parent``: vLLM and SGLang
report the model path there), so a different checkpoint served under the same name opens a
new run, and so does a different name at the same URL. ``system_fingerprint`` and the model
name each response reports are recorded per sample (``media_sent["served_by"]``), not in the
identity: hosted APIs rotate fingerprints, and a run must still resume.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import random
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .base import Generation, JudgeError, JudgeRequest, register_backend

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: Request fields the backend drops (once, then for good) when a server rejects them.
OPTIONAL_FIELDS = ("top_logprobs", "logprobs", "stream_options", "min_tokens", "seed")
#: The fields of a ``/v1/models`` entry recorded with a run (``created`` and ``status`` change
#: from call to call on some servers, so they are left out).
SERVER_FIELDS = ("id", "root", "parent", "owned_by", "max_model_len")
#: Those that say *which weights* stand behind the served name and so enter the run identity:
#: vLLM and SGLang report the model path as ``root`` (a LoRA adapter's base as ``parent``).
#: ``id`` is the name itself; ``owned_by`` names the server software; ``max_model_len`` is a
#: serving limit; and a server that loads models on demand lists a model only once loaded,
#: so none of those may decide whether a rerun resumes.
IDENTITY_FIELDS = ("root", "parent")
ENCODE_CACHE = 64


class _Retryable(Exception):
    """A failure worth another attempt; ``wait_s`` is the server's ``Retry-After``."""

    def __init__(self, message: str, wait_s: float | None = None) -> None:
        super().__init__(message)
        self.wait_s = wait_s


class _Rejected(Exception):
    """A 4xx answer: retrying the same request cannot help (unless a field is dropped)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


def normalize_endpoint(url: str) -> str:
    """The API base URL (``…/v1``) from what a user types: ``http://host:8000``,
    ``http://host:8000/v1`` or a full ``…/v1/chat/completions``."""
    url = (url or "").strip()
    if not url:
        raise JudgeError("no endpoint given: pass the server's URL, e.g. http://localhost:8000/v1")
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise JudgeError(f"the endpoint must be an http(s) URL, got {url!r}")
    path = parts.path.rstrip("/")
    for suffix in ("/chat/completions", "/completions", "/models"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    if not path:
        path = "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def public_endpoint(base_url: str) -> str:
    """The endpoint as recorded with a run: no user:password, no query string (either may
    hold a credential)."""
    parts = urlsplit(base_url)
    netloc = parts.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _retry_after(headers: Any) -> float | None:
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def _error_message(body: bytes) -> str:
    """The server's own words from an error body (OpenAI ``{"error": {"message"}}``,
    FastAPI ``{"detail"}``), shortened."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:300] or "(empty answer)"
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            return str(error)[:300]
    return text[:300]


def token_logprobs(entries: Any) -> list[dict[str, Any]]:
    """OpenAI's ``choices[i].logprobs.content`` (a list of ``{token, logprob, top_logprobs}``)
    as stored: ``[{"token", "logprob", "top": [{"token", "logprob"}, ...]}, ...]``."""
    out = []
    for entry in entries or ():
        if not isinstance(entry, dict) or "token" not in entry:
            continue
        top = [
            {"token": str(t.get("token", "")), "logprob": _logprob(t.get("logprob", 0.0))}
            for t in entry.get("top_logprobs") or ()
            if isinstance(t, dict)
        ]
        out.append({"token": str(entry["token"]), "logprob": _logprob(entry.get("logprob", 0.0)), "top": top})
    return out


def _logprob(value: Any) -> float:
    """A server's log-probability as a float; ``null`` or garbage (some servers send them for
    probabilities that underflow) is −∞, i.e. probability 0."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("-inf")


@register_backend("openai")
class OpenAIBackend:
    """A judge served over HTTP. ``endpoint``: the server's base URL; ``model``: the served
    model name (``model_path`` is accepted as an alias, so the CLI's ``--model`` works for
    both backends); ``api_key_env``: the *name* of the environment variable holding the key
    (None: no key); ``concurrency``: requests in flight; ``timeout``: seconds per request
    (connect, each read, and the whole streamed answer); ``retries``: extra attempts after a
    retryable failure; ``backoff_s``/``max_backoff_s``: the first and the largest wait."""

    name = "openai"

    def __init__(
        self,
        endpoint: str | None = None,
        model: str | None = None,
        api_key_env: str | None = None,
        concurrency: int = 8,
        timeout: float = 120.0,
        retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        logprobs: bool = True,
        top_logprobs: int = 5,
        model_path: str | None = None,
        **_ignored: Any,  # options meant for other backends (device, batch_size, …)
    ) -> None:
        try:
            import httpx  # imported here: labeling never pays for it
        except ImportError:
            raise JudgeError("the openai judge backend needs httpx: pip install 'pairscope[endpoint]'") from None

        model = model or model_path
        if not model:
            raise JudgeError("no served model name given: pass the name the server serves (vLLM --served-model-name)")
        if concurrency < 1:
            raise JudgeError("concurrency must be at least 1")
        if retries < 0:
            raise JudgeError("retries must be 0 or more")
        if timeout <= 0:
            raise JudgeError("timeout must be positive")
        self.base_url = normalize_endpoint(endpoint or "")
        self.model = str(model)
        self.api_key_env = api_key_env or None
        self.concurrency = concurrency
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.top_logprobs = top_logprobs
        self._dropped: set[str] = set() if logprobs else {"logprobs", "top_logprobs"}
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._encoded: OrderedDict[int, tuple[weakref.ref, str]] = OrderedDict()
        self.system_fingerprint: str | None = None
        self.reported_model: str | None = None
        headers = {"Accept": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env, "")
            if not key.strip():
                raise JudgeError(
                    f"the environment variable {self.api_key_env} that should hold the API key is not set"
                    f" (export {self.api_key_env}=… before starting PairScope)"
                )
            headers["Authorization"] = f"Bearer {key.strip()}"
        self._httpx = httpx
        self._client: Any = httpx.Client(
            base_url=self.base_url + "/",
            headers=headers,
            timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
            follow_redirects=False,
        )
        try:
            self.server_model = self._probe()
        except BaseException:
            self._client.close()
            raise
        served = self.server_model or {}
        identity = {"model": self.model, **{k: served[k] for k in IDENTITY_FIELDS if k in served}}
        self.weights_hash = "sha256:" + hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()

    # -- the server ---------------------------------------------------------------------------

    def _probe(self) -> dict[str, Any] | None:
        """``GET /models``: checks the endpoint answers and the key is accepted, and returns
        the stable fields of the entry for our model (None where the server lists none)."""
        httpx = self._httpx
        last = ""
        for attempt in range(min(self.retries, 2) + 1):
            try:
                response = self._client.get("models")
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
                if attempt < min(self.retries, 2):
                    time.sleep(self._backoff(attempt, None))
                continue
            if response.status_code in (401, 403):
                hint = f"check ${self.api_key_env}" if self.api_key_env else "pass --api-key-env VAR"
                raise JudgeError(
                    f"{public_endpoint(self.base_url)} refused the API key (HTTP {response.status_code}:"
                    f" {_error_message(response.content)}): {hint}"
                )
            if response.status_code in RETRY_STATUS and attempt < min(self.retries, 2):
                last = f"HTTP {response.status_code}"
                time.sleep(self._backoff(attempt, _retry_after(response.headers)))
                continue
            if response.status_code != 200:
                return None  # no model list here: the identity is the served name alone
            try:
                data = response.json().get("data") or []
            except (ValueError, AttributeError):
                return None
            for entry in data:
                if isinstance(entry, dict) and entry.get("id") == self.model:
                    return {k: entry[k] for k in SERVER_FIELDS if entry.get(k) is not None}
            return None
        raise JudgeError(f"cannot reach the judge endpoint {public_endpoint(self.base_url)}: {last}")

    def _backoff(self, attempt: int, server_wait: float | None) -> float:
        """Exponential backoff with jitter: half the step fixed, half random."""
        if server_wait is not None:
            return min(server_wait, self.max_backoff_s)
        step = min(self.max_backoff_s, self.backoff_s * (2**attempt))
        return step / 2 + random.uniform(0, step / 2)

    # -- requests -----------------------------------------------------------------------------

    def _data_url(self, image: Any) -> str:
        """A PNG data URL of the image's exact pixels (cached per image object: the K samples
        and both orders of an item send the same images)."""
        key = id(image)
        with self._lock:
            hit = self._encoded.get(key)
            if hit is not None and hit[0]() is image:
                self._encoded.move_to_end(key)
                return hit[1]
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="PNG")
        url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
        with self._lock:
            self._encoded[key] = (weakref.ref(image), url)
            while len(self._encoded) > ENCODE_CACHE:
                self._encoded.popitem(last=False)
        return url

    def _body(self, request: JudgeRequest) -> dict[str, Any]:
        content: list[dict[str, Any]] = [
            {"type": "image_url", "image_url": {"url": self._data_url(image)}}
            for image in (*request.images, *request.video_frames)
        ]
        content.append({"type": "text", "text": request.prompt})
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": request.max_new_tokens,
            "temperature": max(request.temperature, 0.0),
            "stream": True,
            "stream_options": {"include_usage": True},
            "logprobs": True,
            "top_logprobs": self.top_logprobs,
        }
        if request.min_new_tokens:
            body["min_tokens"] = request.min_new_tokens
        if request.temperature > 0 and request.seed is not None:
            body["seed"] = request.seed
        if not self.top_logprobs:
            body.pop("top_logprobs")
        with self._lock:
            for name in self._dropped:
                body.pop(name, None)
        return body

    @staticmethod
    def _media(request: JudgeRequest) -> dict[str, Any]:
        media: dict[str, Any] = {}
        if request.images:
            media["images"] = [list(image.size) for image in request.images]
        if request.video_frames:
            media["video_frames"] = [list(frame.size) for frame in request.video_frames]
        return media

    def _drop_rejected_field(self, body: dict[str, Any], rejected: _Rejected) -> bool:
        """Whether the rejection names an optional field we sent; if so drop it for good."""
        if rejected.status not in (400, 404, 422):
            return False
        text = rejected.message.lower()
        named = [f for f in OPTIONAL_FIELDS if f in body and f in text]
        if not named:
            return False
        if "logprobs" in named or "top_logprobs" in named:
            named = sorted(set(named) | {"logprobs", "top_logprobs"})
        with self._lock:
            self._dropped.update(named)
        for name in named:
            body.pop(name, None)
        return True

    def _run(
        self,
        request: JudgeRequest,
        stops: Sequence[threading.Event],
        on_text: Callable[[str], None] | None = None,
    ) -> Generation:
        """One request with its retries; every failure becomes ``Generation.error``."""
        started = time.perf_counter()
        media = self._media(request)
        seed = request.seed if request.temperature > 0 else None
        try:
            body = self._body(request)
        except Exception as exc:  # noqa: BLE001 - an unencodable image is this sample's error
            return Generation(text="", error=f"media: cannot encode an image: {exc}", media_sent=media)
        attempt = 0
        delivered = [False]

        def emit(chunk: str) -> None:
            delivered[0] = True
            if on_text is not None:
                on_text(chunk)

        while True:
            if any(e.is_set() for e in stops):
                return Generation(text="", cancelled=True, media_sent=media, latency_s=time.perf_counter() - started)
            try:
                with self._slots:
                    result = self._stream(body, stops, emit)
            except _Rejected as exc:
                if self._drop_rejected_field(body, exc):
                    continue  # the same attempt, without the field the server refused
                return self._failed(str(exc), media, started)
            except _Retryable as exc:
                if attempt >= self.retries or (delivered[0] and on_text is not None):
                    why = f"{exc} (after {attempt + 1} attempt{'s' if attempt else ''})"
                    if delivered[0] and on_text is not None:
                        why = f"{exc} mid-stream (not retried: its text was already shown)"
                    return self._failed(why, media, started)
                wait = self._backoff(attempt, exc.wait_s)
                attempt += 1
                if _wait_any(stops, wait):
                    return Generation(
                        text="", cancelled=True, media_sent=media, latency_s=time.perf_counter() - started
                    )
                continue
            text, tokens_in, tokens_out, cancelled, logprobs, served = result
            sent = dict(media)
            if served:
                sent["served_by"] = served
            if attempt:
                sent["attempts"] = attempt + 1
            return Generation(
                text=text,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                latency_s=time.perf_counter() - started,
                cancelled=cancelled,
                media_sent=sent,
                seed=seed if "seed" in body else None,
                logprobs=logprobs or None,
            )

    @staticmethod
    def _failed(reason: str, media: dict[str, Any], started: float) -> Generation:
        return Generation(text="", error=reason, media_sent=dict(media), latency_s=time.perf_counter() - started)

    def _stream(
        self, body: dict[str, Any], stops: Sequence[threading.Event], emit: Callable[[str], None]
    ) -> tuple[str, int, int, bool, list[dict[str, Any]], dict[str, Any]]:
        """One streamed attempt: (text, tokens in, tokens out, cancelled, logprobs, served_by)."""
        httpx = self._httpx
        deadline = time.monotonic() + self.timeout
        parts: list[str] = []
        logprobs: list[dict[str, Any]] = []
        usage: dict[str, Any] = {}
        served: dict[str, Any] = {}
        finished = False
        deltas = 0
        try:
            with self._client.stream("POST", "chat/completions", json=body) as response:
                if response.status_code != 200:
                    response.read()
                    message = _error_message(response.content)
                    if response.status_code in RETRY_STATUS or response.status_code >= 500:
                        raise _Retryable(f"HTTP {response.status_code}: {message}", _retry_after(response.headers))
                    raise _Rejected(response.status_code, message)
                for line in response.iter_lines():
                    if any(e.is_set() for e in stops):
                        return "".join(parts), usage.get("prompt_tokens", 0) or 0, deltas, True, logprobs, served
                    if time.monotonic() > deadline:
                        raise _Retryable(f"timed out after {self.timeout:g} s")
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        finished = True
                        break
                    try:
                        chunk = json.loads(payload)
                    except ValueError:
                        raise _Retryable(f"unreadable stream chunk: {payload[:80]!r}") from None
                    if not isinstance(chunk, dict):
                        continue
                    if chunk.get("error"):
                        error = chunk["error"]
                        message = error.get("message", error) if isinstance(error, dict) else error
                        raise _Retryable(f"server error mid-stream: {str(message)[:200]}")
                    if chunk.get("usage"):
                        usage = chunk["usage"]
                    for key in ("model", "system_fingerprint"):
                        if chunk.get(key):
                            served[key] = chunk[key]
                    for choice in chunk.get("choices") or ():
                        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                            continue
                        delta = choice.get("delta") or {}
                        text = delta.get("content") if isinstance(delta, dict) else None
                        if text:
                            parts.append(text)
                            deltas += 1
                            emit(text)
                        if isinstance(choice.get("logprobs"), dict):
                            logprobs += token_logprobs(choice["logprobs"].get("content"))
                        if choice.get("finish_reason"):
                            finished = True
        except httpx.TimeoutException as exc:
            raise _Retryable(f"timed out ({type(exc).__name__}) after {self.timeout:g} s") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"connection failed: {type(exc).__name__}: {exc}") from None
        if not finished:
            raise _Retryable("the connection closed before the answer ended")
        if served:
            with self._lock:
                self.system_fingerprint = served.get("system_fingerprint") or self.system_fingerprint
                self.reported_model = served.get("model") or self.reported_model
        tokens_out = int(usage.get("completion_tokens") or 0) or len(logprobs) or deltas
        return "".join(parts), int(usage.get("prompt_tokens") or 0), tokens_out, False, logprobs, served

    # -- the JudgeBackend protocol ------------------------------------------------------------

    def generate(self, requests: Sequence[JudgeRequest], cancel: threading.Event | None = None) -> list[Generation]:
        """One Generation per request, in order, ``concurrency`` in flight. Once ``cancel``
        is set, open streams close and the requests not yet answered come back cancelled.
        An exception in the calling thread (Ctrl-C) closes every open stream before it
        propagates."""
        self._check_open()
        if not requests:
            return []
        cancel = cancel or threading.Event()
        abort = threading.Event()
        stops = (cancel, abort)
        if len(requests) == 1:
            return [self._run(requests[0], stops)]
        workers = min(self.concurrency, len(requests))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pairscope-openai")
        try:
            futures = [pool.submit(self._run, request, stops) for request in requests]
            return [future.result() for future in futures]
        except BaseException:
            abort.set()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def generate_stream(
        self, request: JudgeRequest, on_text: Callable[[str], None], cancel: threading.Event | None = None
    ) -> Generation:
        """Run one request on the calling thread, calling ``on_text(chunk)`` as text arrives;
        a set ``cancel`` closes the stream. A failure before any text is retried; after text
        was shown it becomes the sample's error (a rerun retries it). An exception raised by
        ``on_text`` closes the stream and propagates."""
        self._check_open()
        return self._run(request, (cancel or threading.Event(),), on_text)

    def describe(self) -> dict[str, Any]:
        """What a run records: never the API key, only the name of its variable."""
        return {
            "backend": self.name,
            "model_path": self.model,
            "weights_hash": self.weights_hash,
            "endpoint": public_endpoint(self.base_url),
            "served_model": self.model,
            "server_model": self.server_model,
            "reported_model": self.reported_model,
            "system_fingerprint": self.system_fingerprint,
            "api_key_env": self.api_key_env,
            "concurrency": self.concurrency,
            "timeout_s": self.timeout,
            "retries": self.retries,
            "logprobs": "logprobs" not in self._dropped,
            "device": "endpoint",
            "dtype": None,
        }

    def _check_open(self) -> None:
        if self._client is None:
            raise JudgeError("the judge endpoint was closed; connect again")

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()
        with self._lock:
            self._encoded.clear()


def _wait_any(events: Sequence[threading.Event], seconds: float) -> bool:
    """Sleep up to ``seconds``; True as soon as any event is set."""
    deadline = time.monotonic() + seconds
    while True:
        if any(e.is_set() for e in events):
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        events[0].wait(min(left, 0.05))
