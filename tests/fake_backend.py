"""A controllable judge backend for tests that need exact outputs (parsing, voting,
accuracy arithmetic). Real loading and generation are tested with tiny models."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from pairscope.models.base import BACKENDS, Generation, JudgeRequest, register_backend

Script = Callable[[JudgeRequest], str]


def prefer_marker(good: str = "GOOD", bad: str = "BAD") -> Script:
    """A judge that prefers whichever answer contains ``good`` (by its place in the prompt)."""

    def judge(request: JudgeRequest) -> str:
        g, b = request.prompt.find(good), request.prompt.find(bad)
        position = 1 if g < b else 2
        return f"The answer with the right details is better.\nOverall Judgment: Answer {position} is better"

    return judge


class FakeBackend:
    name = "fake"
    calls: list[list[JudgeRequest]]

    def __init__(self, model_path: str = "fake-model", script: Script | None = None, **_options):
        self.model_path = model_path
        self.script = script or prefer_marker()
        self.calls = []
        self.closed = False

    def generate(self, requests: Sequence[JudgeRequest], cancel: threading.Event | None = None) -> list[Generation]:
        self.calls.append(list(requests))
        out = []
        for r in requests:
            if cancel is not None and cancel.is_set():
                out.append(Generation("", cancelled=True))
                continue
            text = self.script(r)
            out.append(Generation(text, tokens_in=len(r.prompt.split()), tokens_out=len(text.split()), latency_s=0.001))
        return out

    def generate_stream(self, request, on_text, cancel=None) -> Generation:
        self.calls.append([request])
        text = self.script(request)
        sent = []
        for word in text.split(" "):
            if cancel is not None and cancel.is_set():
                return Generation(" ".join(sent), cancelled=True)
            chunk = word if not sent else " " + word
            sent.append(word)
            on_text(chunk)
        return Generation(text, tokens_out=len(sent))

    def describe(self) -> dict:
        return {
            "backend": "fake",
            "model_path": self.model_path,
            "weights_hash": "fake-hash",
            "device": "cpu",
            "dtype": "float32",
        }

    def close(self) -> None:
        self.closed = True


@dataclass(frozen=True)
class FakeOptions:
    """The fake backend's options record (``--backend fake`` on the command line)."""

    backend: ClassVar[str] = "fake"
    model: str = "fake-model"


if "fake" not in BACKENDS:
    register_backend(FakeOptions)(lambda options: FakeBackend(options.model))
