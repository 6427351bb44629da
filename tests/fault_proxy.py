"""A fault-injecting HTTP proxy for tests of the endpoint judge (helpers, not a test module).

It sits in front of a *real* OpenAI-compatible server (``transformers serve``) on 127.0.0.1
and passes every request through, except that ``/chat/completions`` requests first take the
next scripted fault from :attr:`FaultProxy.faults`:

- ``"429"`` / ``"500"`` / ``"503"``: answer that status with an OpenAI-style error body (429
  carries ``Retry-After`` when :attr:`retry_after` is set);
- ``"drop"``: close the connection without answering;
- ``"drop_mid_stream"``: forward the server's answer, then cut the connection after its first
  chunk (an incomplete chunked body, as when a server dies mid-answer);
- ``"pass"`` (or an empty script): forward untouched.

:attr:`reject_fields` makes every chat request that carries one of those JSON fields fail
with 400 naming the field (as OpenAI does for an unsupported argument). :attr:`hold_s`
delays every chat request before it is forwarded, so concurrent requests overlap and
:attr:`max_held` measures how many the client really had open at once: a request counts while
it is held, which ends before its answer starts, so a client that sends its next request the
moment it has read an answer's last token is never counted twice (:attr:`max_in_flight`, which
counts until the proxy's handler has finished, can be). A refused upstream
answers 502, like a load balancer in front of a dead server.

Every answer closes its connection, so no handler thread outlives its request; ``stop()``
joins them all (the test suite fails a test that leaks a thread).
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOP_HEADERS = {"connection", "transfer-encoding", "content-length", "keep-alive"}


def start_loopback(
    handle: Callable[[BaseHTTPRequestHandler, bytes | None], None], name: str
) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """A threaded HTTP/1.1 server on 127.0.0.1 (a free port) handing every GET and POST (with
    its body) to ``handle``; :func:`stop_loopback` joins its handler threads."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            handle(self, None)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            handle(self, self.rfile.read(length))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = False
    server.block_on_close = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True)
    thread.start()
    return server, thread


def stop_loopback(server: ThreadingHTTPServer, thread: threading.Thread) -> None:
    """Stop a :func:`start_loopback` server and join its threads."""
    server.shutdown()
    server.server_close()  # joins the handler threads
    thread.join()


@dataclass
class Seen:
    """One request as the proxy saw it."""

    at: float
    method: str
    path: str
    body: dict[str, Any] | None
    authorization: str | None
    fault: str


@dataclass
class FaultProxy:
    upstream_port: int
    hold_s: float = 0.0
    retry_after: float | None = None
    faults: deque = field(default_factory=deque)
    reject_fields: set[str] = field(default_factory=set)
    seen: list[Seen] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    held: int = 0
    max_held: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        proxy = self
        self._server, self._thread = start_loopback(proxy._handle, "fault-proxy")
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        stop_loopback(self._server, self._thread)

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- what the tests read ------------------------------------------------------------------

    def chat_requests(self) -> list[Seen]:
        return [s for s in self.seen if s.path.endswith("/chat/completions")]

    def reset(self) -> None:
        with self._lock:
            self.seen.clear()
            self.faults.clear()
            self.reject_fields.clear()
            self.max_in_flight = 0
            self.max_held = 0

    # -- handling -----------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, raw: bytes | None) -> None:
        handler.close_connection = True
        chat = handler.path.endswith("/chat/completions")
        body = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        with self._lock:
            fault = (self.faults.popleft() if self.faults else "pass") if chat else "pass"
            if chat and body is not None and self.reject_fields & set(body):
                fault = "reject:" + sorted(self.reject_fields & set(body))[0]
            self.seen.append(
                Seen(time.monotonic(), handler.command, handler.path, body, handler.headers.get("Authorization"), fault)
            )
            if chat:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if chat and self.hold_s:
                with self._lock:
                    self.held += 1
                    self.max_held = max(self.max_held, self.held)
                time.sleep(self.hold_s)
                with self._lock:
                    self.held -= 1
            if fault in ("429", "500", "503"):
                headers = {"Retry-After": f"{self.retry_after:g}"} if fault == "429" and self.retry_after else {}
                self._answer(handler, int(fault), {"error": {"message": f"injected {fault}", "type": "test"}}, headers)
            elif fault.startswith("reject:"):
                name = fault.partition(":")[2]
                message = f"Unrecognized request argument supplied: {name}"
                self._answer(handler, 400, {"error": {"message": message, "type": "invalid_request_error"}})
            elif fault == "drop":
                _cut(handler)
            else:
                self._forward(handler, raw, cut_after_first=fault == "drop_mid_stream")
        finally:
            if chat:
                with self._lock:
                    self.in_flight -= 1

    @staticmethod
    def _answer(handler: BaseHTTPRequestHandler, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _forward(self, handler: BaseHTTPRequestHandler, raw: bytes | None, cut_after_first: bool) -> None:
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=120)
        try:
            headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_HEADERS | {"host"}}
            try:
                upstream.request(handler.command, handler.path, body=raw, headers=headers)
                response = upstream.getresponse()
            except (OSError, http.client.HTTPException) as exc:
                self._answer(handler, 502, {"error": {"message": f"upstream unreachable: {exc}"}})
                return
            handler.send_response(response.status)
            for name, value in response.getheaders():
                if name.lower() not in HOP_HEADERS:
                    handler.send_header(name, value)
            handler.send_header("Transfer-Encoding", "chunked")
            handler.send_header("Connection", "close")
            handler.end_headers()
            while True:
                try:
                    data = response.read1(65536)
                except (OSError, http.client.HTTPException):
                    _cut(handler)  # the server died mid-answer: so does this answer
                    return
                if not data:
                    break
                try:
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    handler.wfile.flush()
                except OSError:
                    return  # the client closed the stream (a cancel): stop reading the server
                if cut_after_first:
                    _cut(handler)
                    return
            handler.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client went away before the answer was complete
        finally:
            upstream.close()


def _cut(handler: BaseHTTPRequestHandler) -> None:
    """Close the client's connection abruptly, mid-answer or before one."""
    try:
        handler.wfile.flush()
        handler.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serving_missing() -> str | None:
    """Why ``transformers serve`` cannot run here (None: it can)."""
    import importlib.util

    missing = [m for m in ("fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        return f"transformers serve needs {', '.join(missing)}: pip install 'transformers[serving]'"
    if _serve_command() is None:
        return "the transformers command line is not installed"
    return None


def _serve_command() -> list[str] | None:
    import shutil
    import sys
    from pathlib import Path

    beside = Path(sys.executable).with_name("transformers")
    found = str(beside) if beside.exists() else shutil.which("transformers")
    return [found, "serve"] if found else None


class ServedModel:
    """``transformers serve`` on a free 127.0.0.1 port (a real OpenAI-compatible server),
    started by :meth:`start` and stopped by :meth:`stop`. ``pinned``: a model folder to
    preload and serve alone; without it the server loads any local folder on demand, so one
    URL serves several model names."""

    def __init__(self, log_path, pinned: str | None = None) -> None:
        self.log_path = log_path
        self.pinned = pinned
        self.process: Any = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 120.0) -> ServedModel:
        import os
        import subprocess

        command = _serve_command()
        assert command is not None, serving_missing()
        self.port = free_port()
        args = [*command, *([self.pinned] if self.pinned else []), "--host", "127.0.0.1"]
        args += ["--port", str(self.port), "--device", "cpu", "--log-level", "warning"]
        env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._log = log
        self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"transformers serve exited: {self.log_tail()}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/health")
                if connection.getresponse().status == 200:
                    connection.close()
                    return self
                connection.close()
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"transformers serve did not answer /health within {timeout_s:g} s: {self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL: the server dies mid-answer, as on an out-of-memory kill."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except Exception:  # noqa: BLE001 - a server that ignores SIGTERM is killed
                self.process.kill()
                self.process.wait(timeout=30)
        if getattr(self, "_log", None) is not None:
            self._log.close()
            self._log = None

    def log_tail(self, chars: int = 2000) -> str:
        try:
            with open(self.log_path, "rb") as fh:
                return fh.read().decode("utf-8", "replace")[-chars:]
        except OSError:
            return ""
