"""A misbehaving OpenAI-compatible server for tests of the endpoint judge (helpers, not a
test module): a real ``http.server`` on 127.0.0.1 that answers ``/v1/models`` and
``/v1/chat/completions`` with whatever a test scripts — trickles, silence, endless streams,
huge lines, gzip bombs, malformed JSON, echoed credentials.

``server.chat`` is a queue of behaviours, one per chat request (empty: a good answer);
``server.models`` is the behaviour for every ``GET /v1/models``. A behaviour is a function of
the :class:`Reply` it writes to. Every loop that writes stops when the client goes away, when
:meth:`HostileServer.stop` is called, or after ``for_s`` seconds, so no handler outlives a
test; every answer closes its connection and ``stop()`` joins the handler threads.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from fault_proxy import start_loopback, stop_loopback

MODEL = "hostile-model"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    at: float


class Reply:
    """What a behaviour writes with: status and headers, then chunked body pieces."""

    def __init__(self, handler: BaseHTTPRequestHandler, server: HostileServer) -> None:
        self.handler = handler
        self.server = server
        self.headers = handler.headers
        self._chunked = False

    @property
    def stopping(self) -> threading.Event:
        return self.server.stopping

    def start(self, status: int = 200, content_type: str | None = "text/event-stream", **headers: str) -> None:
        self.handler.send_response(status)
        if content_type:
            self.handler.send_header("Content-Type", content_type)
        for name, value in headers.items():
            self.handler.send_header(name.replace("_", "-"), value)
        if "Content_Length" not in headers:
            self.handler.send_header("Transfer-Encoding", "chunked")
            self._chunked = True
        self.handler.send_header("Connection", "close")
        self.handler.end_headers()

    def send(self, data: bytes) -> None:
        """One body piece (raises OSError once the client has gone)."""
        if self._chunked:
            data = b"%x\r\n%s\r\n" % (len(data), data) if data else b""
        self.handler.wfile.write(data)
        self.handler.wfile.flush()

    def raw(self, data: bytes) -> None:
        """Bytes as they are, no chunk framing (for trickling inside one chunk)."""
        self.handler.wfile.write(data)
        self.handler.wfile.flush()

    def end(self) -> None:
        if self._chunked:
            self.handler.wfile.write(b"0\r\n\r\n")
            self.handler.wfile.flush()

    def body(self, status: int, data: bytes, content_type: str = "application/json", **headers: str) -> None:
        """A whole body with its length."""
        self.start(status, content_type, Content_Length=str(len(data)), **headers)
        self.raw(data)

    def wait(self, seconds: float) -> bool:
        """Sleep; True when the server is stopping."""
        return self.server.stopping.wait(seconds)


class HostileServer:
    def __init__(self) -> None:
        self.chat: deque[Callable[[Reply], None]] = deque()
        self.models: Callable[[Reply], None] = model_list()
        self.seen: list[Seen] = []
        self.stopping = threading.Event()
        self.handler_errors: list[str] = []
        self._server, self._thread = start_loopback(self._handle, "hostile-server")
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.stopping.set()
        stop_loopback(self._server, self._thread)

    def __enter__(self) -> HostileServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def chat_requests(self) -> list[Seen]:
        return [s for s in self.seen if s.path.endswith("/chat/completions")]

    def _handle(self, handler: BaseHTTPRequestHandler, raw: bytes | None) -> None:
        handler.close_connection = True
        body = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                pass
        self.seen.append(Seen(handler.command, handler.path, dict(handler.headers.items()), body, time.monotonic()))
        if handler.path.endswith("/models"):
            behaviour = self.models
        elif handler.path.endswith("/chat/completions"):
            behaviour = self.chat.popleft() if self.chat else answer()
        else:
            behaviour = status_only(404)
        try:
            behaviour(Reply(handler, self))
        except OSError:
            pass  # the client hung up: what the bounded client does
        except Exception as exc:  # noqa: BLE001 - a broken behaviour shows up in the test, not as a hang
            self.handler_errors.append(f"{type(exc).__name__}: {exc}")


# -- behaviours --------------------------------------------------------------------------------


def event(payload: Any) -> bytes:
    return b"data: " + (payload if isinstance(payload, bytes) else json.dumps(payload).encode()) + b"\n\n"


def delta(text: Any, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": finish}
    return {"id": "c", "object": "chat.completion.chunk", "model": MODEL, "choices": [choice], **extra}


def model_list(*ids: str) -> Callable[[Reply], None]:
    data = json.dumps({"object": "list", "data": [{"id": i, "object": "model"} for i in ids or (MODEL,)]}).encode()
    return lambda r: r.body(200, data)


def status_only(status: int, payload: Any = None) -> Callable[[Reply], None]:
    data = json.dumps(payload if payload is not None else {"error": {"message": f"HTTP {status}"}}).encode()
    return lambda r: r.body(status, data)


def sse(*payloads: Any, done: bool = True, content_type: str | None = "text/event-stream") -> Callable[[Reply], None]:
    """A stream of ``data:`` events (objects, or bytes sent as they are after ``data: ``)."""

    def behaviour(r: Reply) -> None:
        r.start(200, content_type)
        for payload in payloads:
            r.send(event(payload))
        if done:
            r.send(b"data: [DONE]\n\n")
        r.end()

    return behaviour


def answer(text: str = "Answer: [[A]]") -> Callable[[Reply], None]:
    """A good streamed answer in three pieces, with usage."""
    third = max(1, len(text) // 3)
    pieces = [text[:third], text[third : 2 * third], text[2 * third :]]
    usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    return sse(
        *[delta(p) for p in pieces[:-1]], delta(pieces[-1], "stop"), {"choices": [], "usage": usage, "model": MODEL}
    )


def trickle(
    prefix: bytes = b"", every: float = 0.5, for_s: float = 60.0, status: int = 200, headers: bool = True
) -> Callable[[Reply], None]:
    """Headers (unless ``headers=False``: then the status line itself trickles), ``prefix``,
    then one byte every ``every`` seconds, never a newline."""

    def behaviour(r: Reply) -> None:
        ends = time.monotonic() + for_s
        if headers:
            r.start(status, "text/event-stream")
            r.raw(b"fffff\r\n" + prefix)  # one chunk, far longer than what follows
            source: Iterable[bytes] = itertools.repeat(b"x")
        else:
            source = (bytes([c]) for c in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"x" * 10_000)
        for byte in source:
            if time.monotonic() > ends or r.wait(every):
                return
            r.raw(byte)

    return behaviour


def silent(for_s: float = 60.0) -> Callable[[Reply], None]:
    """Read the request, then never answer (until ``for_s`` or the server stops)."""
    return lambda r: r.wait(for_s)


def endless(payload: Any = None, for_s: float = 60.0, max_bytes: int = 256 << 20) -> Callable[[Reply], None]:
    """Events forever (as fast as the client reads), never a finish."""
    line = event(payload if payload is not None else delta("more "))

    def behaviour(r: Reply) -> None:
        r.start(200, "text/event-stream")
        ends, sent = time.monotonic() + for_s, 0
        block = line * max(1, 16384 // len(line))
        while time.monotonic() < ends and sent < max_bytes and not r.stopping.is_set():
            r.send(block)
            sent += len(block)

    return behaviour


def long_line(
    total: int,
    prefix: bytes = b"data: ",
    status: int = 200,
    content_type: str = "text/event-stream",
    suffix: bytes = b"",
    **headers: str,
) -> Callable[[Reply], None]:
    """``prefix`` then ``total`` bytes of one line (``x``), then ``suffix``, no newline."""

    def behaviour(r: Reply) -> None:
        r.start(status, content_type, **headers)
        r.send(prefix)
        block = b"x" * 65536
        for _ in range(total // len(block)):
            if r.stopping.is_set():
                return
            r.send(block)
        r.send(suffix)
        r.end()

    return behaviour


def gzip_bomb(
    decoded: int, unit: bytes = b"x", status: int = 200, content_type: str = "text/event-stream", prefix: bytes = b""
) -> Callable[[Reply], None]:
    """``Content-Encoding: gzip`` (whatever the client asked for): ``prefix`` then ``decoded``
    bytes of ``unit`` once inflated, a few KB on the wire."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = unit * max(1, (1 << 20) // len(unit))
    parts = [packer.compress(prefix)] + [packer.compress(block) for _ in range(decoded // len(block))]
    data = b"".join(parts) + packer.flush()

    def behaviour(r: Reply) -> None:
        r.body(status, data, content_type, Content_Encoding="gzip")

    return behaviour


def gzipped(data: bytes, status: int = 200, content_type: str = "text/event-stream") -> Callable[[Reply], None]:
    packer = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    packed = packer.compress(data) + packer.flush()
    return lambda r: r.body(status, packed, content_type, Content_Encoding="gzip")


def raw_body(data: bytes, status: int = 200, content_type: str | None = "text/event-stream") -> Callable[[Reply], None]:
    def behaviour(r: Reply) -> None:
        r.start(status, content_type)
        r.send(data)
        r.end()

    return behaviour


def echo(where: str) -> Callable[[Reply], None]:
    """The request's ``Authorization`` value sent back: in an error body (``"400"``,
    ``"401"``, ``"500"``), in the streamed text (``"text"``, split across two deltas), in a
    mid-stream error (``"mid"``), as the model name (``"model"``) or as a plain-text 403
    (``"plain"``)."""

    def behaviour(r: Reply) -> None:
        auth = r.headers.get("Authorization", "")
        token = auth.partition(" ")[2]
        if where in ("400", "401", "500"):
            message = f"bad credentials: {auth!r} (token {token})"
            r.body(int(where), json.dumps({"error": {"message": message, "type": "test"}}).encode())
        elif where == "plain":
            r.body(403, f"Forbidden for {auth}".encode(), "text/plain")
        elif where == "text":
            half = len(token) // 2
            sse(delta("You sent " + token[:half]), delta(token[half:] + " ok"), delta(" [[A]]", "stop"))(r)
        elif where == "mid":
            sse(delta("partial"), {"error": {"message": f"key {token} exhausted"}}, done=False)(r)
        elif where == "model":
            sse(delta("[[A]]", "stop", system_fingerprint=f"fp-{token}") | {"model": token})(r)
        else:
            raise ValueError(where)

    return behaviour


def many(behaviours: Iterable[Callable[[Reply], None]]) -> deque:
    return deque(behaviours)
