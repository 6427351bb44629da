"""A judge behind any OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM, SGLang,
``transformers serve``, a hosted API).

The app core renders the prompt exactly as for the local judge; this backend only places the
media: every still image, then every sampled video frame, each as a PNG ``data:`` URL of the
very pixels the session prepared (its ``IMAGE_MAX_SIZE`` / ``FRAME_MAX_SIZE`` rule, applied
before any backend sees an image), then the prompt text. ``media_sent`` records those sizes.
The server may resize further inside its own processor; PairScope cannot see that.

Every request streams (``stream: true``) and is bounded (``models/http_bounds.py``): the
whole attempt, connect to last byte, within ``timeout`` seconds of wall clock however slowly
the server trickles; a set ``cancel`` event (or ``close()``) ends it within a tenth of a second
whatever the server does; at most :attr:`OpenAIBackend.max_answer_bytes` of answer (one line at
most ``max_line_bytes``), ``max_error_bytes`` of an error body and ``max_models_bytes`` of the
model list are read, counted after any ``Content-Encoding`` is undone (``identity`` is asked
for). ``concurrency`` requests are in flight at once (one semaphore per backend, shared by
every call). A 408/409/425/429/5xx answer, a timeout, a refused or dropped connection and a
stream that ends without a finish reason are retried with exponential backoff and jitter
(``Retry-After`` honoured, up to ``max_backoff_s``), at most ``retries`` times, each attempt
with its own deadline; a malformed or oversized answer (``models/openai_answer.py``) is not
retried. Any failure left becomes ``Generation.error``, never an exception, so the session
stores it per sample and a rerun retries it.

Log-probabilities (``logprobs`` + ``top_logprobs``) are asked for; a server that rejects a
field this backend can do without (``logprobs``, ``top_logprobs``, ``stream_options``,
``min_tokens``, ``seed``) is asked once more without it, and the field stays off for the
rest of the session. The stored log-probabilities are what ``models.confidence`` reads a
verdict's confidence from (none returned: no confidence, shown as n/a).

The API key is read from the environment variable named by ``api_key_env`` when the backend
is created and is only ever placed in the ``Authorization`` header: never in ``describe()``,
an error message, or anything the project stores. A server that echoes it (in an error body,
the answer's text, a model name) has it replaced by ``[redacted]`` before anything it said
is returned, raised or shown, as has any credential in the endpoint URL.

The run's model identity (``weights_hash``) covers the served model name and what the
server's own ``/v1/models`` entry says stands behind it (``root``, ``parent``: vLLM and SGLang
report the model path there), so a different checkpoint served under the same name opens a
new run, and so does a different name at the same URL. ``system_fingerprint`` and the model
name each response reports are recorded per sample (``media_sent["served_by"]``), not in the
identity: hosted APIs rotate fingerprints, and a run must still resume.
"""

from __future__ import annotations

import base64
import functools
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

from . import http_bounds as bounds
from .base import Generation, JudgeError, JudgeRequest, register_backend
from .http_bounds import Redactor
from .openai_answer import Answer, CutOff, ServerError, error_message, read_answer
from .openai_answer import token_logprobs as token_logprobs  # re-exported: its home was here
from .options import OpenAIOptions

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


def _plain(value: Any, redact: Redactor) -> Any:
    """A ``/v1/models`` field as recorded: text (redacted; past 300 characters its start and
    a hash of the whole), a number or a boolean; anything else (objects, lists) None."""
    if isinstance(value, str):
        value = bounds.storable(redact(value))
        if len(value) > 300:
            digest = hashlib.sha256(value.encode()).hexdigest()
            value = f"{value[:200]}… ({len(value)} characters, sha256:{digest})"
        return value
    if isinstance(value, (bool, int, float)):
        return value
    return None


@register_backend(OpenAIOptions)
class OpenAIBackend:
    """A judge served over HTTP, built from its :class:`~pairscope.models.options.OpenAIOptions`."""

    name = "openai"
    #: What one request may read, counted after any Content-Encoding is undone (tests lower
    #: them): a streamed answer (a legitimate one is ~1 KB per token with 5 top log-probs),
    #: one line of it, an error body (its first 300 characters are shown), the model list.
    max_answer_bytes = 16 << 20
    max_line_bytes = 1 << 20
    max_error_bytes = 64 << 10
    max_models_bytes = 8 << 20

    def __init__(self, options: OpenAIOptions) -> None:
        try:
            import httpx  # imported here: labeling never pays for it
        except ImportError:
            raise JudgeError("the openai judge backend needs httpx: pip install 'pairscope[endpoint]'") from None

        self.options = options
        concurrency = options.concurrency  # checked by the record, as every option is
        self.base_url = normalize_endpoint(options.endpoint)
        self.model = str(options.model)
        self.api_key_env = options.api_key_env or None
        self.concurrency = concurrency
        self.timeout = float(options.timeout)
        self.retries = options.retries
        self.backoff_s = options.backoff_s
        self.max_backoff_s = options.max_backoff_s
        self.top_logprobs = options.top_logprobs
        self._dropped: set[str] = set() if options.logprobs else {"logprobs", "top_logprobs"}
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._closing = threading.Event()  # set by close(): every request in flight ends
        self._encoded: OrderedDict[int, tuple[weakref.ref, str]] = OrderedDict()
        self.system_fingerprint: str | None = None
        self.reported_model: str | None = None
        headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env, "")
            if not key.strip():
                raise JudgeError(
                    f"the environment variable {self.api_key_env} that should hold the API key is not set"
                    f" (export {self.api_key_env}=… before starting PairScope)"
                )
            headers["Authorization"] = f"Bearer {key.strip()}"
        self._httpx = httpx
        self._client: Any = bounds.bound_client(  # wall-clock deadlines and cancel, per read
            httpx.Client(
                base_url=self.base_url + "/",
                headers=headers,
                timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
                limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
                follow_redirects=False,
            )
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

    @functools.cached_property
    def _redact(self) -> Redactor:
        """Removes this client's secrets (the key, credentials in the URL) from server text."""
        return Redactor.for_request(self._client.headers.get("authorization"), self.base_url)

    def _probe(self) -> dict[str, Any] | None:
        """``GET /models``: checks the endpoint answers and the key is accepted, and returns
        the stable fields of the entry for our model (None where the server lists none).
        Bounded like a chat request: ``timeout`` seconds of wall clock an attempt, at most
        ``max_models_bytes`` read (a longer list is an error: its fields enter the run's
        identity), ``max_error_bytes`` of an error."""
        httpx = self._httpx
        redact = self._redact
        tries = min(self.retries, 2) + 1
        last, answered = "", False
        for attempt in range(tries):
            wait: float | None = None
            answered = False
            try:
                with bounds.guarded(time.monotonic() + self.timeout, (self._closing,)):
                    with self._client.stream("GET", "models") as response:
                        status, headers = response.status_code, response.headers
                        if status == 200:
                            body = bounds.read_all(response, self.max_models_bytes, "the server's model list")
                        else:
                            body = bounds.read_prefix(response, self.max_error_bytes)
            except bounds.TooLarge as exc:
                raise JudgeError(f"{public_endpoint(self.base_url)}: {exc}") from None
            except bounds.Malformed:
                return None  # a list in an encoding we do not read: as good as none
            except bounds.Interrupted as exc:
                if exc.reason == "cancelled":
                    raise JudgeError("the judge endpoint was closed while connecting") from None
                last = f"no complete answer within {self.timeout:g} s"
            except httpx.TransportError as exc:
                last = redact(f"{type(exc).__name__}: {exc}")
            else:
                if status in (401, 403):
                    hint = f"check ${self.api_key_env}" if self.api_key_env else "pass --api-key-env VAR"
                    raise JudgeError(
                        f"{public_endpoint(self.base_url)} refused the API key (HTTP {status}:"
                        f" {error_message(body, redact)}): {hint}"
                    )
                if status not in RETRY_STATUS:
                    return self._model_entry(body) if status == 200 else None  # no list: the name alone
                last, wait, answered = f"HTTP {status}", _retry_after(headers), True
            if attempt + 1 < tries:
                time.sleep(self._backoff(attempt, wait))
        if answered:
            return None  # a model list that keeps failing is no list (as before); chat requests retry
        raise JudgeError(f"cannot reach the judge endpoint {public_endpoint(self.base_url)}: {last}")

    def _model_entry(self, body: bytes) -> dict[str, Any] | None:
        """The stable fields of our model's entry in a ``/v1/models`` body, bounded."""
        try:
            data = bounds.loads(self._redact(body.decode("utf-8", "replace")), "the model list")
        except bounds.Malformed:
            return None
        entries = data.get("data") if isinstance(data, dict) else None
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, dict) and entry.get("id") == self.model:
                fields = {k: _plain(entry.get(k), self._redact) for k in SERVER_FIELDS}
                return {k: v for k, v in fields.items() if v is not None}
        return None

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
        """One request with its retries; every failure becomes ``Generation.error`` (an
        exception raised by ``on_text`` excepted: it propagates)."""
        started = time.perf_counter()
        stops = (*stops, self._closing)
        media = self._media(request)
        seed = request.seed if request.temperature > 0 else None
        try:
            body = self._body(request)
        except Exception as exc:  # noqa: BLE001 - an unencodable image is this sample's error
            return Generation(text="", error=f"media: cannot encode an image: {exc}", media_sent=media)
        attempt = 0
        delivered = [False]
        raised: list[BaseException] = []  # by on_text: not the server's doing, so not a sample error

        def emit(chunk: str) -> None:
            delivered[0] = True
            if on_text is not None:
                try:
                    on_text(chunk)
                except BaseException as exc:
                    raised.append(exc)
                    raise

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
            except (bounds.Malformed, bounds.TooLarge) as exc:
                return self._failed(str(exc), media, started)  # the same answer again: not retried
            except Exception as exc:
                if raised and exc is raised[0]:
                    raise
                # Whatever else a server's answer provoked is still that sample's error.
                return self._failed(f"unreadable answer ({type(exc).__name__}: {exc})", media, started)
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

    def _failed(self, reason: str, media: dict[str, Any], started: float) -> Generation:
        error = bounds.storable(bounds.short(self._redact(reason), 1000))
        return Generation(text="", error=error, media_sent=dict(media), latency_s=time.perf_counter() - started)

    def _stream(
        self, body: dict[str, Any], stops: Sequence[threading.Event], emit: Callable[[str], None]
    ) -> tuple[str, int, int, bool, list[dict[str, Any]], dict[str, Any]]:
        """One streamed attempt: (text, tokens in, tokens out, cancelled, logprobs, served_by).
        Connect to last byte within ``timeout`` seconds of wall clock, the stops looked at
        every ``bounds.POLL_S`` while waiting on the server; at most ``max_error_bytes`` of an
        error body read."""
        httpx = self._httpx
        client = self._client
        answer = Answer(self._redact)
        live = self._redact.live(emit)  # text shown as it comes, a possible secret held back
        try:
            with bounds.guarded(time.monotonic() + self.timeout, stops):
                if client is None:
                    raise bounds.Interrupted("cancelled")  # closed between attempts
                with client.stream("POST", "chat/completions", json=body) as response:
                    status = response.status_code
                    if status != 200:
                        message = error_message(bounds.read_prefix(response, self.max_error_bytes), self._redact)
                        if status in RETRY_STATUS or status >= 500:
                            raise _Retryable(f"HTTP {status}: {message}", _retry_after(response.headers))
                        raise _Rejected(status, message)
                    read_answer(response, answer, live, stops, self.max_answer_bytes, self.max_line_bytes)
        except bounds.Interrupted as exc:
            if exc.reason != "cancelled":
                raise _Retryable(f"timed out after {self.timeout:g} s") from None
            _, tokens_in, tokens_out, logprobs, served = answer.result(require_choice=False)
            return bounds.storable(live.shown()), tokens_in, tokens_out, True, logprobs, served
        except (ServerError, CutOff) as exc:
            raise _Retryable(str(exc)) from None
        except httpx.TimeoutException as exc:
            raise _Retryable(f"timed out ({type(exc).__name__}) after {self.timeout:g} s") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"connection failed: {type(exc).__name__}: {exc}") from None
        if not answer.finished:
            raise _Retryable("the connection closed before the answer ended")
        text, tokens_in, tokens_out, logprobs, served = answer.result()
        live.flush()
        if served:
            with self._lock:
                self.system_fingerprint = served.get("system_fingerprint") or self.system_fingerprint
                self.reported_model = served.get("model") or self.reported_model
        return text, tokens_in, tokens_out, False, logprobs, served

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
        """End every request in flight (within ``bounds.POLL_S``, whatever the server does),
        give them up to 2 s to let go of their connections, then close them all."""
        self._closing.set()
        held, until = 0, time.monotonic() + 2.0
        while held < self.concurrency and self._slots.acquire(timeout=max(0.0, until - time.monotonic())):
            held += 1
        client, self._client = self._client, None
        try:
            if client is not None:
                client.close()
        finally:
            for _ in range(held):
                self._slots.release()
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
