"""Bounds on every exchange with a judge server, and the redaction of secrets from what it says.

A server is untrusted (DESIGN.md, "Trust at the edges"). httpx alone bounds neither time nor
memory: its read timeout restarts with every byte (a server trickling one byte every 2 s
never times out) and it undoes ``Content-Encoding: gzip`` without a limit (a 4 MB body became
~4 GB). This module gives the endpoint backend:

- :func:`guarded`: a **wall-clock deadline** and **cancel events** for whatever the calling
  thread sends or reads while inside it. :func:`bound_client` wraps the network streams of an
  ``httpx.Client`` so that every socket read waits in slices of :data:`POLL_S` seconds and
  checks the deadline and the events between them, and every write waits for the socket to
  take data the same way. A set event or a passed deadline raises :class:`Interrupted` in the
  reading thread, whatever the server does (silent, trickling, mid-headers, mid-body); httpcore
  then closes that connection. A connection is never shared by two requests at once, so the
  thread's guard is the request's.
- :func:`body_chunks` / :func:`read_prefix` / :func:`lines`: the body read raw and decoded
  here (``identity``, ``gzip``, ``deflate``; anything else refused), in pieces of at most
  :data:`PIECE` bytes, with a **cap on the decoded bytes** (:class:`TooLarge` past it) and a cap
  on one line's length, so memory stays bounded by the caps whatever the server sends.
- :class:`Redactor`: the API key (the whole ``Authorization`` value and the token in it, as
  sent, JSON-escaped (``\\/`` too) and URL-encoded) and any credential in the endpoint URL, replaced by
  ``[redacted]`` in text a server sent, including text streamed in pieces.
- :func:`loads`: JSON from a server, where nesting too deep is an error like any other
  (:class:`Malformed`), and :func:`short` for showing a value in a message without recursion.

Nothing here imports httpx or httpcore: the wrappers only call the methods httpcore's network
backend and streams have, so labeling never pays for them.
"""

from __future__ import annotations

import json
import re
import reprlib
import select
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from .base import JudgeError

#: The longest a guarded read or write waits before it looks at the deadline and the events again.
POLL_S = 0.1
#: The largest piece a body is decoded into (a compressed chunk never expands past it at once).
PIECE = 64 * 1024
#: Bytes handed to a socket at a time once it says it can take data.
WRITE_SLICE = 16 * 1024
REDACTED = "[redacted]"
#: Query parameters of an endpoint URL whose values are credentials.
SECRET_PARAMS = re.compile(r"key|token|secret|auth|pass|sig|credential", re.IGNORECASE)


class Interrupted(Exception):
    """The request's cancel event was set (``reason == "cancelled"``) or its wall-clock
    deadline passed (``"deadline"``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TooLarge(Exception):
    """The server sent more than the cap allows."""


class Malformed(Exception):
    """What the server sent cannot be read (not JSON, nested too deeply, an unknown encoding,
    an answer of the wrong shape): the sample's error, not worth a retry."""


# -- the wall-clock guard ---------------------------------------------------------------------

_local = threading.local()


class Guard:
    def __init__(self, deadline: float, stops: Sequence[threading.Event]) -> None:
        self.deadline = deadline
        self.stops = tuple(stops)

    def check(self) -> None:
        if any(event.is_set() for event in self.stops):
            raise Interrupted("cancelled")
        if time.monotonic() >= self.deadline:
            raise Interrupted("deadline")

    def slice_s(self, limit: float) -> float:
        """How long the next wait may last: a poll step, never past the deadline or ``limit``."""
        now = time.monotonic()
        return max(0.001, min(POLL_S, self.deadline - now, limit - now))


@contextmanager
def guarded(deadline: float, stops: Sequence[threading.Event] = ()) -> Iterator[Guard]:
    """Bound what this thread sends and reads through a :func:`bound_client` client until the
    block ends: nothing past ``deadline`` (``time.monotonic()``), nothing once a stop is set."""
    previous = getattr(_local, "guard", None)
    guard = _local.guard = Guard(deadline, stops)
    try:
        guard.check()
        yield guard
    finally:
        _local.guard = previous


def _active() -> Guard | None:
    return getattr(_local, "guard", None)


def _is_timeout(exc: BaseException) -> bool:
    """httpcore's ReadTimeout/WriteTimeout (raised ``from`` the socket's TimeoutError)."""
    return isinstance(exc.__cause__, TimeoutError) or type(exc).__name__.endswith("Timeout")


def _writable(sock: Any, wait_s: float) -> bool:
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLOUT)
        return bool(poller.poll(wait_s * 1000))
    return bool(select.select([], [sock], [], wait_s)[1])


class _Stream:
    """An httpcore network stream whose reads and writes honour the thread's :class:`Guard`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        guard = _active()
        if guard is None:
            return self._inner.read(max_bytes, timeout)
        limit = float("inf") if timeout is None else time.monotonic() + timeout
        while True:
            guard.check()
            try:
                return self._inner.read(max_bytes, guard.slice_s(limit))
            except Exception as exc:
                # A slice ran out with nothing read: nothing was consumed, so reading again
                # is safe (TLS included: the record layer keeps a partial record).
                if not _is_timeout(exc) or time.monotonic() >= limit:
                    raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        guard = _active()
        sock = self._inner.get_extra_info("socket") if guard is not None and buffer else None
        if guard is None or sock is None:
            return self._inner.write(buffer, timeout)
        limit = float("inf") if timeout is None else time.monotonic() + timeout
        view = memoryview(buffer)
        for start in range(0, len(view), WRITE_SLICE):
            while True:
                guard.check()
                if time.monotonic() >= limit:
                    raise Interrupted("deadline")
                if _writable(sock, guard.slice_s(limit)):
                    break
            left = min(limit, guard.deadline) - time.monotonic()
            self._inner.write(bytes(view[start : start + WRITE_SLICE]), max(0.001, left))
        return None

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _connect_timeout(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def _connect_timeout(timeout: float | None) -> float | None:
    guard = _active()
    if guard is None:
        return timeout
    guard.check()
    left = max(0.001, guard.deadline - time.monotonic())
    return left if timeout is None else min(timeout, left)


class _Backend:
    """An httpcore network backend whose connections are :class:`_Stream`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, *args: Any, **kwargs: Any) -> Any:
        return _Stream(self._inner.connect_tcp(host, port, _connect_timeout(timeout), *args, **kwargs))

    def connect_unix_socket(self, path: str, timeout: float | None = None, *args: Any, **kwargs: Any) -> Any:
        return _Stream(self._inner.connect_unix_socket(path, _connect_timeout(timeout), *args, **kwargs))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bound_client(client: Any) -> Any:
    """Make every connection ``client`` (an ``httpx.Client``) opens honour :func:`guarded`.
    httpx has no public hook for its network backend: this reaches the pool of each of the
    client's transports (its own and any proxy's) and raises JudgeError where the layout
    differs, so an httpx that changed it fails loudly instead of running unbounded."""
    own = getattr(client, "_transport", None)
    transports = [own, *(t for t in getattr(client, "_mounts", {}).values() if t is not None)]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None:
            client.close()
            raise JudgeError(
                f"this httpx ({type(transport).__module__}.{type(transport).__name__}) cannot be bounded in time:"
                " install a supported version (pip install 'pairscope[endpoint]')"
            )
        if not isinstance(backend, _Backend):
            setattr(pool, "_network_backend", _Backend(backend))  # noqa: B010 - a private attribute, on purpose
    return client


# -- bodies ----------------------------------------------------------------------------------


class _Inflate:
    """gzip or deflate, undone in pieces of at most :data:`PIECE` bytes."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._raw_tried = kind != "deflate"
        self._d = zlib.decompressobj(zlib.MAX_WBITS | 16 if kind == "gzip" else zlib.MAX_WBITS)

    def feed(self, data: bytes) -> Iterator[bytes]:
        while True:
            try:
                out = self._d.decompress(data, PIECE)
            except zlib.error:
                if self._raw_tried:
                    raise Malformed(f"the server's {self.kind} data is corrupt") from None
                self._raw_tried = True  # "deflate" sent as raw deflate, as some servers do
                self._d = zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            self._raw_tried = True
            if out:
                yield out
            data = self._d.unconsumed_tail
            if self._d.eof and self._d.unused_data and self.kind == "gzip":
                data, self._d = self._d.unused_data, zlib.decompressobj(zlib.MAX_WBITS | 16)  # another member
                continue
            if not data and len(out) < PIECE:
                return


def _decoders(content_encoding: str) -> list[_Inflate]:
    decoders = []
    for name in (part.strip().lower() for part in content_encoding.split(",")):
        if name in ("", "identity"):
            continue
        if name in ("gzip", "x-gzip", "deflate"):
            decoders.append(_Inflate("deflate" if name == "deflate" else "gzip"))
        else:
            raise Malformed(f"the server sent its answer as {short(name)!s} (Content-Encoding), which is not read")
    return decoders


def body_chunks(response: Any, cap: int, what: str) -> Iterator[bytes]:
    """The body of ``response`` (a streamed httpx response), decoded here, in pieces of at
    most :data:`PIECE` bytes; :class:`TooLarge` once the decoded bytes pass ``cap``."""
    decoders = _decoders(response.headers.get("content-encoding", ""))
    total = 0

    def decoded(data: bytes, rest: list[_Inflate]) -> Iterator[bytes]:
        if not rest:
            yield data
            return
        for piece in rest[0].feed(data):
            yield from decoded(piece, rest[1:])

    for raw in response.iter_raw():
        for piece in decoded(raw, decoders):
            total += len(piece)
            if total > cap:
                raise TooLarge(f"{what} is larger than {size(cap)}: PairScope reads at most that much")
            yield piece


def read_all(response: Any, cap: int, what: str) -> bytes:
    return b"".join(body_chunks(response, cap, what))


def read_prefix(response: Any, cap: int) -> bytes:
    """At most ``cap`` decoded bytes of the body (an error body: the start says enough)."""
    kept = bytearray()
    try:
        for piece in body_chunks(response, 1 << 62, "the body"):
            kept += piece[: cap - len(kept)]
            if len(kept) >= cap:
                break
    except Malformed:
        pass  # undecodable: what was read is all there is to show
    return bytes(kept)


_NEWLINE = re.compile(rb"\r\n|\r|\n")


def lines(chunks: Iterable[bytes], max_line: int, what: str = "the answer") -> Iterator[tuple[bytes, bool]]:
    """``(line, complete)`` for each line of the body (``\\n``, ``\\r\\n`` or ``\\r`` ends
    one); the last, unterminated line comes with ``complete=False``. :class:`TooLarge` for a
    line longer than ``max_line`` bytes, before more of it is kept."""
    buffer = bytearray()
    scanned = 0  # everything before this has no line end (a "\r" at the very end excepted)
    for data in chunks:
        buffer += data
        start = 0
        while True:
            match = _NEWLINE.search(buffer, max(start, scanned))
            if match is None:
                break
            if match.group() == b"\r" and match.end() == len(buffer):
                break  # maybe the first half of "\r\n": wait for the next chunk
            yield bytes(buffer[start : match.start()]), True
            start = match.end()
        del buffer[:start]
        scanned = max(0, len(buffer) - 1)
        if len(buffer) > max_line:
            raise TooLarge(f"a line of {what} is longer than {size(max_line)}: PairScope reads at most that much")
    if buffer:
        yield bytes(buffer), False


def size(n: int) -> str:
    for unit, step in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= step:
            return f"{n / step:g} {unit}"
    return f"{n} bytes"


# -- JSON and messages ------------------------------------------------------------------------


def loads(data: bytes | str, what: str = "the answer") -> Any:
    """JSON a server sent; :class:`Malformed` for anything unreadable, nesting included."""
    try:
        return json.loads(data)
    except RecursionError:
        raise Malformed(f"{what} is nested too deeply to read") from None
    except ValueError:
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        raise Malformed(f"{what} is not JSON: {short(text, 80)}") from None


_repr = reprlib.Repr()
_repr.maxlevel = 3
_repr.maxstring = 300
_repr.maxother = 300
_repr.maxlist = _repr.maxdict = _repr.maxtuple = 6


def short(value: Any, limit: int = 300) -> str:
    """A value in a message: strings as they are, anything else through a depth-limited repr;
    cut to ``limit`` characters."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    text = value if isinstance(value, str) else _repr.repr(value)
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "…"


def kind(value: Any) -> str:
    """A JSON value's kind, for a message: "a number", "a string", "a list", "null", …"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# -- secrets ----------------------------------------------------------------------------------


class Redactor:
    """Replaces each secret, in every form a server might echo it, by ``[redacted]``."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if not secret:
                continue
            for plain in {secret, unquote(secret)}:  # a URL's password comes %-encoded
                forms.add(plain)
                forms.add(json.dumps(plain)[1:-1])
                forms.add(json.dumps(plain)[1:-1].replace("/", "\\/"))  # JSON as PHP writes it
                forms.add(quote(plain, safe=""))
        self.forms = sorted(forms, key=len, reverse=True)  # "Bearer k" before "k"
        self.hold = max((len(f) for f in self.forms), default=1) - 1

    @classmethod
    def for_request(cls, authorization: str | None, url: str) -> Redactor:
        """The secrets of a client: its ``Authorization`` value and the token in it, and the
        password and credential-named query values of its endpoint URL."""
        secrets = []
        if authorization:
            secrets.append(authorization.strip())
            _, _, token = authorization.strip().partition(" ")
            secrets.append(token.strip())
        parts = urlsplit(url)
        secrets.append(parts.password or "")
        secrets += [value for name, value in parse_qsl(parts.query) if SECRET_PARAMS.search(name)]
        return cls(secrets)

    def __call__(self, text: str) -> str:
        for form in self.forms:
            if form in text:
                text = text.replace(form, REDACTED)
        return text

    def holds(self, text: str) -> bool:
        return any(form in text for form in self.forms)

    def live(self, emit: Callable[[str], None]) -> LiveRedactor:
        return LiveRedactor(self, emit)


class LiveRedactor:
    """Text shown as it streams in, redacted: the last ``hold`` characters wait for the next
    piece (or :meth:`flush`), so a secret split across pieces is still caught whole."""

    def __init__(self, redactor: Redactor, emit: Callable[[str], None]) -> None:
        self._redact = redactor
        self._emit = emit
        self._pending = ""
        self._shown: list[str] = []

    def feed(self, text: str) -> None:
        if not self._redact.forms:
            self._show(text)
            return
        pending = self._redact(self._pending + text)
        cut = max(0, len(pending) - self._redact.hold)
        # A secret starting before ``cut`` would end inside ``pending``: it is already redacted.
        ready, self._pending = pending[:cut], pending[cut:]
        if ready:
            self._show(ready)

    def flush(self) -> None:
        pending, self._pending = self._redact(self._pending), ""
        if pending:
            self._show(pending)

    def shown(self) -> str:
        """What was shown so far: all of a cancelled answer that is kept (the held-back end
        may be the start of a secret)."""
        return "".join(self._shown)

    def _show(self, text: str) -> None:
        self._shown.append(text)
        self._emit(text)


def storable(text: str) -> str:
    """Text that encodes as UTF-8 (a lone surrogate a server escaped, ``\\ud800``, becomes "?"),
    so storing it cannot fail."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
