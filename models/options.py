"""Each judge backend's options: one typed record per backend, its defaults written here only.

The command line (``pairscope judge``) and the window's judge panel both build these records
with :func:`pairscope.models.base.backend_options`, which refuses an option the backend does
not know; a backend is created from its record (``open_backend``). The option names are the
command line's flags (``api_key_env`` is ``--api-key-env``); ``model`` is in every record: a
model folder (transformers) or the served model's name (openai), the run's ``model_path``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import JudgeError

VIDEO_MODES = ("auto", "native", "frames")


@dataclass(frozen=True)
class TransformersOptions:
    """A judge model from a local folder (``model``). ``device``: ``auto`` (CUDA when
    available, else CPU), ``cpu``, ``cuda``, ``cuda:N``; ``dtype``: ``auto`` (bfloat16 on CUDA,
    float32 on CPU), ``bfloat16``, ``float16``, ``float32``; ``video_mode``: ``native`` sends
    video frames as a video (needs a processor with a video processor), ``frames`` as separate
    images, ``auto`` picks native where possible; ``batch_size``: prompts generated together;
    ``top_logprobs``: alternatives recorded per token (0: none); ``group_by_length``: batch
    prompts of similar length together (less padding; answers still come back in order);
    ``encode_ahead``: preprocess the next batch on a worker thread while one generates."""

    backend: ClassVar[str] = "transformers"

    model: str
    device: str = "auto"
    dtype: str = "auto"
    trust_remote_code: bool = False
    batch_size: int = 8
    video_mode: str = "auto"
    top_logprobs: int = 5
    group_by_length: bool = True
    encode_ahead: bool = True

    def __post_init__(self) -> None:
        if self.video_mode not in VIDEO_MODES:
            raise JudgeError(f"unknown video_mode {self.video_mode!r}; use one of {', '.join(VIDEO_MODES)}")
        if self.batch_size < 1:
            raise JudgeError("batch_size must be at least 1")


@dataclass(frozen=True)
class OpenAIOptions:
    """A judge served over HTTP. ``endpoint``: the server's base URL; ``model``: the served
    model name; ``api_key_env``: the *name* of the environment variable holding the key (None:
    no key); ``concurrency``: requests in flight; ``timeout``: seconds per request (connect, each
    read, and the whole streamed answer); ``retries``: extra attempts after a retryable failure;
    ``backoff_s``/``max_backoff_s``: the first and the largest wait; ``logprobs``/``top_logprobs``:
    ask for log-probabilities and that many alternatives per token."""

    backend: ClassVar[str] = "openai"

    model: str
    endpoint: str
    api_key_env: str | None = None
    concurrency: int = 8
    timeout: float = 120.0
    retries: int = 4
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    logprobs: bool = True
    top_logprobs: int = 5

    def __post_init__(self) -> None:
        if not self.model:
            raise JudgeError("no served model name given: pass the name the server serves (vLLM --served-model-name)")
        if self.concurrency < 1:
            raise JudgeError("concurrency must be at least 1")
        if self.retries < 0:
            raise JudgeError("retries must be 0 or more")
        if self.timeout <= 0:
            raise JudgeError("timeout must be positive")
