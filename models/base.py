"""The judge interface: a request in, a generation out; and the registry of backends.

A backend turns fully rendered prompts plus images (or sampled video frames) into text.
Everything about *judging* — answer order, K samples, voting, persistence — lives in the
app core; everything about *parsing* a verdict lives in :mod:`pairscope.models.parsing`.
Nothing here imports torch: backends import it lazily when they load a model.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:  # the command line builds options records without loading Pillow
    from PIL import Image


class JudgeError(Exception):
    """A judge could not be loaded or run; the message says what to do."""


@dataclass(frozen=True)
class JudgeRequest:
    """One prompt for the judge. ``prompt`` is the rendered template text (no image tokens:
    the backend places the media); ``images`` are still images, ``video_frames`` the frames
    sampled from a video (sent as a video where the processor supports it)."""

    prompt: str
    images: tuple[Image.Image, ...] = ()
    video_frames: tuple[Image.Image, ...] = ()
    max_new_tokens: int = 512
    min_new_tokens: int = 0
    temperature: float = 0.0
    seed: int | None = None


@dataclass(frozen=True)
class Generation:
    """What the judge produced for one request."""

    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    error: str | None = None
    cancelled: bool = False
    #: The media exactly as the processor fed them: e.g. ``{"images": [[w, h], ...]}``.
    media_sent: dict[str, Any] = field(default_factory=dict)
    #: The torch seed the generation was sampled with (shared by its batch); None when greedy or unseeded.
    seed: int | None = None
    #: Per generated token ``{"token": str, "logprob": float, "top": [{"token", "logprob"}, ...]}``
    #: where the backend returns log-probabilities (an OpenAI-compatible server that supports
    #: them); None otherwise.
    logprobs: list[dict[str, Any]] | None = None


class JudgeBackend(Protocol):
    """What every backend provides."""

    name: str

    def generate(self, requests: Sequence[JudgeRequest], cancel: threading.Event | None = None) -> list[Generation]:
        """Run a batch; one Generation per request, in order. A set ``cancel`` event stops
        generation between tokens (results then carry ``cancelled=True``)."""

    def generate_stream(
        self, request: JudgeRequest, on_text: Callable[[str], None], cancel: threading.Event | None = None
    ) -> Generation:
        """Run one request, calling ``on_text(chunk)`` as tokens arrive."""

    def describe(self) -> dict[str, Any]:
        """Backend, model path, weights hash, device, dtype: recorded with every run."""

    def close(self) -> None:
        """Free the model (GPU memory)."""


class BackendOptions(Protocol):
    """A backend's options record (models/options.py): a frozen dataclass naming its backend."""

    backend: ClassVar[str]
    __dataclass_fields__: ClassVar[dict[str, Any]]


#: A backend's options record in, the backend out: what the registry holds (each backend's
#: constructor) and what :func:`open_backend` is.
BackendFactory = Callable[[Any], JudgeBackend]
BACKENDS: dict[str, BackendFactory] = {}
OPTIONS: dict[str, type[BackendOptions]] = {}  # backend name → its options record type


class OptionError(JudgeError):
    """An option a backend does not know, or a required one not given (``missing``)."""

    def __init__(self, backend: str, option: str, known: tuple[str, ...], missing: bool = False) -> None:
        self.backend, self.option, self.known, self.missing = backend, option, known, missing
        what = "needs the option" if missing else "has no option"
        super().__init__(f"the {backend} judge backend {what} {option!r} (its options: {', '.join(known)})")


def register_backend(options: type[BackendOptions]):
    """Decorator: make a backend, built from an ``options`` record, available under ``options.backend``."""
    name = options.backend

    def wrap(factory: BackendFactory) -> BackendFactory:
        if name in BACKENDS:
            raise ValueError(f"judge backend {name!r} registered twice")
        BACKENDS[name], OPTIONS[name] = factory, options
        return factory

    return wrap


def option_names(record: type[BackendOptions]) -> tuple[str, ...]:
    """The options of a record type, in its order."""
    return tuple(f.name for f in dataclasses.fields(record))


def option_defaults(record: type[BackendOptions]) -> dict[str, Any]:
    """The options of a record type that have a default, with it."""
    return {f.name: f.default for f in dataclasses.fields(record) if f.default is not dataclasses.MISSING}


def options_type(name: str) -> type[BackendOptions]:
    """The options record type of backend ``name``; ``JudgeError`` for unknown names."""
    if name not in OPTIONS:
        _load_builtin_backends()
    try:
        return OPTIONS[name]
    except KeyError:
        raise JudgeError(f"unknown judge backend {name!r}; known: {', '.join(sorted(OPTIONS))}") from None


def backend_options(name: str, **choices: Any) -> Any:
    """Backend ``name``'s options record from ``choices``, its defaults for the rest;
    :class:`OptionError` for an option it does not know or a required one missing."""
    record = options_type(name)
    known = option_names(record)
    for option in choices:
        if option not in known:
            raise OptionError(name, option, known)
    for f in dataclasses.fields(record):
        if f.name not in choices and f.default is dataclasses.MISSING:
            raise OptionError(name, f.name, known, missing=True)
    return record(**choices)


def open_backend(options: BackendOptions) -> JudgeBackend:
    """The backend an options record describes (``JudgeError`` when its extra is not installed)."""
    missing = missing_extra(options.backend)
    if missing:
        raise JudgeError(missing)
    options_type(options.backend)
    return BACKENDS[options.backend](options)


def create_backend(name: str, **choices: Any) -> JudgeBackend:
    """Build a registered backend (``transformers``, ``openai``, …) from keyword options."""
    missing = missing_extra(name)
    if missing:
        raise JudgeError(missing)
    return open_backend(backend_options(name, **choices))


#: What each built-in backend needs beyond the base (annotator) install, and the extra that
#: installs it: the base install labels, computes stats and exports without any of these.
BACKEND_EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "transformers": (("torch", "transformers"), "judge"),
    "openai": (("httpx",), "endpoint"),
}


def missing_extra(name: str) -> str | None:
    """Why backend ``name`` cannot run in this install, with the command that fixes it; ``None``
    when everything it needs is importable (checked without importing it)."""
    import importlib.util

    needs, extra = BACKEND_EXTRAS.get(name, ((), ""))

    def installed(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken or blocked install counts as absent
            return False

    absent = [module for module in needs if not installed(module)]
    if not absent:
        return None
    return (
        f"the {name} judge backend needs {' and '.join(absent)}, which this install lacks"
        f" (the annotator install labels without them): pip install 'pairscope[{extra}]'"
        + (" (docs/INSTALL.md: torch for your GPU first)" if extra == "judge" else "")
    )


def _load_builtin_backends() -> None:
    # Importing a backend module registers it; the module itself defers torch until load.
    from . import openai_backend, transformers_backend  # noqa: F401
