"""An OpenAI-compatible chat answer read shape by shape: every streamed chunk (or a whole
``chat.completion`` from a server that does not stream) is checked before anything is taken
from it, so a malformed answer is that sample's error (:class:`~.http_bounds.Malformed`),
never an exception that ends the run.

What carries the answer is checked strictly — a chunk must be an object; ``choices`` a list
of objects; ``delta`` (``message``) an object; ``content`` text or null; an answer with no
choice at all is an error. Bookkeeping is read leniently: ``usage`` that is not an object, a
token count that is not a whole number, a ``model``/``system_fingerprint`` that is not text and
malformed ``logprobs`` are ignored (the answer itself is intact). Everything taken from the
server's text is redacted (the API key) and bounded.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from . import http_bounds as bounds
from .http_bounds import LiveRedactor, Malformed, Redactor, kind, short, storable

#: The longest ``model`` / ``system_fingerprint`` a sample records.
SERVED_CHARS = 200
MAX_COUNT = 10**9


class ServerError(Exception):
    """The server said, inside a 200 answer, that it failed (worth a retry)."""


class CutOff(Exception):
    """The stream ended mid-line: the connection was lost (worth a retry)."""


def error_message(body: bytes, redact: Redactor) -> str:
    """The server's own words from an error body (OpenAI ``{"error": {"message"}}``,
    FastAPI ``{"detail"}``), redacted, then shortened (so no cut leaves part of a secret)."""
    text = redact(body.decode("utf-8", "replace")).strip()
    try:
        data = bounds.loads(text, "the error")
    except Malformed:
        return short(text) or "(empty answer)"
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            return short(error) or "(empty answer)"
    return short(text)


def read_answer(
    response: Any,
    answer: Answer,
    live: LiveRedactor,
    stops: Sequence[threading.Event],
    max_bytes: int,
    max_line: int,
) -> None:
    """Read a 200 answer (a streamed httpx response) into ``answer``: an event stream line by
    line (at most ``max_bytes`` in all, a line at most ``max_line``), or a whole
    ``chat.completion`` from a server that does not stream; any other content type is the
    sample's error. Each line is redacted before it is parsed, so no message cut from it
    can hold part of a secret; text goes to ``live`` as it comes."""
    redact = answer.redact
    content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if content_type == "application/json":
        data = bounds.read_all(response, max_bytes, "the answer")
        answer.completion(bounds.loads(redact(data.decode("utf-8", "replace"))))
        live.feed(answer.text())
        return
    if content_type not in ("text/event-stream", ""):
        start = short(redact(bounds.read_prefix(response, 200).decode("utf-8", "replace")), 80)
        where = f"{short(content_type, 80)}, not an event stream" + (f": {start}" if start else "")
        raise Malformed(f"the server answered {where}")
    for line, complete in bounds.lines(bounds.body_chunks(response, max_bytes, "the answer"), max_line):
        if any(e.is_set() for e in stops):
            raise bounds.Interrupted("cancelled")
        if not line.startswith(b"data:"):
            continue  # comments, event names, blank lines
        payload = redact(line[5:].decode("utf-8", "replace").strip())
        if payload == "[DONE]":
            answer.finished = True
            return
        try:
            chunk = bounds.loads(payload, "a stream chunk")
        except Malformed:
            if not complete:  # the last line, cut off
                raise CutOff("the connection closed before the answer ended") from None
            raise
        text = answer.chunk(chunk)
        if text:
            live.feed(text)


def _count(value: Any) -> int:
    """A token count as a whole number; anything else is 0."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        return 0
    return value


def token_logprobs(entries: Any) -> list[dict[str, Any]]:
    """OpenAI's ``choices[i].logprobs.content`` (a list of ``{token, logprob, top_logprobs}``)
    as stored: ``[{"token", "logprob", "top": [{"token", "logprob"}, ...]}, ...]``; entries
    that are not of that shape are left out."""
    out = []
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            continue
        tops = entry.get("top_logprobs")
        top = [
            {"token": t["token"], "logprob": _logprob(t.get("logprob", 0.0))}
            for t in (tops if isinstance(tops, list) else ())
            if isinstance(t, dict) and isinstance(t.get("token"), str)
        ]
        out.append({"token": entry["token"], "logprob": _logprob(entry.get("logprob", 0.0)), "top": top})
    return out


def _logprob(value: Any) -> float:
    """A server's log-probability as a float; ``null`` or garbage (some servers send them for
    probabilities that underflow) is −∞, i.e. probability 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return float("-inf")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return float("-inf")


class Answer:
    """One answer being read: feed it chunks (:meth:`chunk`) or a whole completion
    (:meth:`completion`), then read :meth:`result`."""

    def __init__(self, redact: Redactor) -> None:
        self.redact = redact
        self.parts: list[str] = []
        self.logprobs: list[dict[str, Any]] = []
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.served: dict[str, str] = {}
        self.finished = False
        self.deltas = 0
        self.had_choice = False

    def text(self) -> str:
        return storable(self.redact("".join(self.parts)))

    def _common(self, data: Any, what: str) -> None:
        if not isinstance(data, dict):
            raise Malformed(f"{what} is {kind(data)}, not a JSON object")
        if data.get("error"):
            error = data["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise ServerError(f"server error mid-stream: {self.redact(short(message, 200))}")
        usage = data.get("usage")
        if isinstance(usage, dict):
            self.prompt_tokens = _count(usage.get("prompt_tokens")) or self.prompt_tokens
            self.completion_tokens = _count(usage.get("completion_tokens")) or self.completion_tokens
        for key in ("model", "system_fingerprint"):
            value = data.get(key)
            if isinstance(value, str) and value:
                self.served[key] = storable(self.redact(value))[:SERVED_CHARS]

    def _choices(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        """The choices at index 0 (the only one asked for), checked."""
        choices = data.get("choices")
        if choices is None:
            return []
        if not isinstance(choices, list):
            raise Malformed(f"`choices` is {kind(choices)}, not a list")
        picked = []
        for choice in choices:
            if not isinstance(choice, dict):
                raise Malformed(f"a choice is {kind(choice)}, not an object")
            index = choice.get("index", 0)
            if index is None:
                index = 0
            if isinstance(index, bool) or not isinstance(index, int):
                raise Malformed(f"a choice's `index` is {kind(index)}, not a whole number")
            if index == 0:
                self.had_choice = True
                picked.append(choice)
        return picked

    def _take(self, choice: dict[str, Any], field: str) -> str | None:
        message = choice.get(field)
        if message is None:
            message = {}
        if not isinstance(message, dict):
            raise Malformed(f"`{field}` is {kind(message)}, not an object")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise Malformed(f"`{field}.content` is {kind(content)}, not text")
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict):
            self.logprobs += token_logprobs(logprobs.get("content"))
        if choice.get("finish_reason"):
            self.finished = True
        if content:
            self.parts.append(content)
            self.deltas += 1
        return content or None

    def chunk(self, data: Any) -> str:
        """One streamed chunk; returns the text it adds (not yet redacted: see LiveRedactor)."""
        self._common(data, "a stream chunk")
        added = [self._take(choice, "delta") for choice in self._choices(data)]
        return "".join(text for text in added if text)

    def completion(self, data: Any) -> None:
        """A whole ``chat.completion`` (a server that answered without streaming)."""
        self._common(data, "the answer")
        choices = self._choices(data)
        if not choices:
            raise Malformed("the answer holds no choices")
        self._take(choices[0], "message")
        self.finished = True

    def result(self, require_choice: bool = True) -> tuple[str, int, int, list[dict[str, Any]], dict[str, str]]:
        """(text, tokens in, tokens out, logprobs, served_by), redacted; :class:`Malformed`
        when no choice ever came (unless ``require_choice`` is off: a cancelled answer)."""
        if require_choice and not self.had_choice:
            raise Malformed("the answer holds no choices")
        logprobs = self.logprobs
        if self.redact.forms:
            if self.redact.holds("".join(entry["token"] for entry in logprobs)):
                logprobs = []  # the key is spelled out across tokens: no way to keep them and not it
            else:
                for entry in logprobs:
                    entry["token"] = self.redact(entry["token"])
                    for top in entry["top"]:
                        top["token"] = self.redact(top["token"])
        for entry in logprobs:
            entry["token"] = storable(entry["token"])
            for top in entry["top"]:
                top["token"] = storable(top["token"])
        tokens_out = self.completion_tokens or len(logprobs) or self.deltas
        return self.text(), self.prompt_tokens, tokens_out, logprobs, dict(self.served)
