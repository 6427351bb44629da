"""The local judge: a vision-language model loaded with transformers.

``AutoProcessor`` + ``AutoModelForImageTextToText`` from a local folder (never the hub), the
processor's own chat template, left-padded batches, cooperative cancellation between tokens
and streaming through ``TextIteratorStreamer``. torch and transformers are imported when a
model is loaded, never when this module is imported.

``Generation.media_sent`` records, best effort, the sizes the processor actually fed the model:
``{"images": [[w, h], ...], "video_frames": [[w, h], ...]}`` — from ``image_grid_thw`` /
``video_grid_thw`` × patch size (Qwen2-VL family; padded frames included), or from the
``pixel_values`` shape when there is one tensor per image (LLaVA). Tiled layouts (Idefics3,
LLaVA-Next crops) are left out rather than guessed. Frames sent as images count as frames.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from . import _hf_utils as hf
from .base import Generation, JudgeError, JudgeRequest, register_backend

VIDEO_MODES = ("auto", "native", "frames")
OOM_ADVICE = "the judge ran out of memory: lower the batch size, use dtype bfloat16/float16, or send fewer frames"


def _is_oom(exc: BaseException) -> bool:
    return "out of memory" in str(exc).lower() or type(exc).__name__ == "OutOfMemoryError"


def _batch_seed(batch: Sequence[JudgeRequest]) -> int | None:
    """The one seed a batch is sampled with: its first seeded request's; None when greedy."""
    if batch[0].temperature <= 0:
        return None
    return next((r.seed for r in batch if r.seed is not None), None)


@register_backend("transformers")
class TransformersBackend:
    """A judge model from a local folder. ``device``: ``auto`` (CUDA when available, else CPU),
    ``cpu``, ``cuda``, ``cuda:N``; ``dtype``: ``auto`` (bfloat16 on CUDA, float32 on CPU),
    ``bfloat16``, ``float16``, ``float32``; ``video_mode``: ``native`` sends video frames as a
    video (needs a processor with a video processor), ``frames`` as separate images, ``auto``
    picks native where possible. ``latency_s`` of a batched generation is the batch's time."""

    name = "transformers"

    def __init__(
        self,
        model_path: str,
        device: str = "auto",
        dtype: str = "auto",
        trust_remote_code: bool = False,
        batch_size: int = 8,
        video_mode: str = "auto",
    ) -> None:
        if video_mode not in VIDEO_MODES:
            raise JudgeError(f"unknown video_mode {video_mode!r}; use one of {', '.join(VIDEO_MODES)}")
        if batch_size < 1:
            raise JudgeError("batch_size must be at least 1")
        self.folder, config = hf.check_model_folder(model_path)
        self.model_type = str(config.get("model_type", ""))
        self.batch_size = batch_size
        self.weights_hash = hf.weights_hash(self.folder)
        self.model: Any = None
        self.processor: Any = None
        os.environ["HF_HUB_OFFLINE"] = "1"
        self._load(device, dtype, trust_remote_code, video_mode)

    # -- loading ---------------------------------------------------------------------------

    def _load(self, device: str, dtype: str, trust_remote_code: bool, video_mode: str) -> None:
        import torch
        import transformers
        from transformers.models.auto.modeling_auto import (
            MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
        )

        self.device = self._resolve_device(torch, device)
        self.dtype = hf.dtype_name(dtype, self.device)
        options = dict(trust_remote_code=trust_remote_code, local_files_only=True)
        try:
            config = transformers.AutoConfig.from_pretrained(self.folder, **options)
        except (ValueError, KeyError, OSError) as exc:
            raise JudgeError(f"cannot read the model configuration in {self.folder}: {exc}") from None
        remote = "AutoModelForImageTextToText" in (getattr(config, "auto_map", None) or {})
        if config.model_type not in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES and not remote:
            raise JudgeError(hf.not_a_vlm_message(self.folder, config.model_type))
        try:
            self.processor = transformers.AutoProcessor.from_pretrained(self.folder, **options)
        except Exception as exc:  # noqa: BLE001 - every loading failure becomes a readable message
            raise JudgeError(f"cannot load the processor from {self.folder}: {type(exc).__name__}: {exc}") from None
        self._check_processor(video_mode)
        try:
            self.model = transformers.AutoModelForImageTextToText.from_pretrained(
                self.folder, dtype=getattr(torch, self.dtype), use_safetensors=True, **options
            )
            self.model.to(self.device).eval()
        except Exception as exc:  # noqa: BLE001
            self.close()
            if _is_oom(exc):
                raise JudgeError(f"{OOM_ADVICE} (while loading {self.folder.name} on {self.device})") from None
            raise JudgeError(f"cannot load the judge model from {self.folder}: {type(exc).__name__}: {exc}") from None

    def _check_processor(self, video_mode: str) -> None:
        """Checked before the weights load: a tokenizer, a chat template, a video processor if asked."""
        tokenizer = getattr(self.processor, "tokenizer", None)
        if tokenizer is None or not hasattr(self.processor, "apply_chat_template"):
            raise JudgeError(f"{self.folder} has no multimodal processor with a tokenizer (processor_config.json)")
        self.tokenizer: Any = tokenizer
        if not getattr(self.processor, "chat_template", None):
            raise JudgeError(f"{self.folder} has no chat template: add chat_template.jinja from the model's release")
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        has_video = getattr(self.processor, "video_processor", None) is not None
        if video_mode == "native" and not has_video:
            raise JudgeError(f"{self.model_type} has no video processor: use video_mode 'frames' or 'auto'")
        self.native_video = has_video and video_mode != "frames"

    @staticmethod
    def _resolve_device(torch: Any, device: str) -> str:
        if device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        if device.startswith("cuda"):
            if not torch.cuda.is_available():
                raise JudgeError(
                    f"device {device!r} was requested but CUDA is not available here "
                    "(no NVIDIA GPU, or torch was installed without CUDA): use device 'cpu' or 'auto'"
                )
            index = device.partition(":")[2]
            if index and (not index.isdigit() or int(index) >= torch.cuda.device_count()):
                raise JudgeError(f"no GPU {device!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
        return device

    # -- prompting -------------------------------------------------------------------------

    def _encode(self, requests: Sequence[JudgeRequest]) -> tuple[Any, list[dict[str, Any]]]:
        """Chat-template and process a batch: the model inputs and the media each request sent."""
        import numpy as np

        texts, images, videos, n_images, n_videos, n_frames = [], [], [], [], [], []
        for request in requests:
            content: list[dict[str, Any]] = [{"type": "image"} for _ in request.images]
            frames = [f.convert("RGB") for f in request.video_frames]
            request_images = [image.convert("RGB") for image in request.images]
            if frames and self.native_video:
                content.append({"type": "video"})
                videos.append(np.stack([np.asarray(f) for f in frames]))
                n_videos.append(1)
            else:
                content += [{"type": "image"} for _ in frames]
                request_images += frames
                n_videos.append(0)
            n_frames.append(0 if self.native_video else len(frames))
            content.append({"type": "text", "text": request.prompt})
            messages = [{"role": "user", "content": content}]
            texts.append(self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))
            images += request_images
            n_images.append(len(request_images))
        kwargs: dict[str, Any] = {"text": texts, "padding": True, "return_tensors": "pt"}
        if images:
            kwargs["images"] = images
        if videos:
            kwargs["videos"] = videos
        inputs = self.processor(**kwargs)
        media = hf.media_sizes(inputs, self.processor, n_images, n_videos)
        for sent, count in zip(media, n_frames):  # frames sent as images are still video frames
            if count and len(sent.get("images", ())) >= count:
                sent["video_frames"] = sent["images"][-count:]
                del sent["images"][-count:]
                if not sent["images"]:
                    del sent["images"]
        return inputs.to(self.model.device, dtype=self.model.dtype), media  # pixels in the model dtype

    def _generate_kwargs(
        self, request: JudgeRequest, stop: Sequence[threading.Event], seed: int | None
    ) -> dict[str, Any]:
        """``model.generate`` options; seeds torch's global generator when ``seed`` is set."""
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        class StopOnEvent(StoppingCriteria):
            """Stops every sequence as soon as any of the events is set (checked per token)."""

            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                flag = any(event.is_set() for event in stop)
                return torch.full((input_ids.shape[0],), flag, dtype=torch.bool, device=input_ids.device)

        kwargs: dict[str, Any] = dict(
            max_new_tokens=request.max_new_tokens,
            min_new_tokens=request.min_new_tokens or None,
            stopping_criteria=StoppingCriteriaList([StopOnEvent()]),
            pad_token_id=self.tokenizer.pad_token_id,
        )
        if request.temperature > 0:
            kwargs.update(do_sample=True, temperature=request.temperature)
            if seed is not None:
                torch.manual_seed(seed)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        return kwargs

    # -- generation ------------------------------------------------------------------------

    def generate(self, requests: Sequence[JudgeRequest], cancel: threading.Event | None = None) -> list[Generation]:
        """One Generation per request, in order. Requests with the same token limits and
        temperature are batched (up to ``batch_size``, left padding) whatever their seeds: a
        sampled batch is seeded once, with its first seeded request's seed, and every result
        carries the seed its batch used. A failing batch gives its requests ``error`` instead
        of ending the run; once ``cancel`` is set the rest come back cancelled."""
        self._check_open()
        cancel = cancel or threading.Event()
        results: list[Generation | None] = [None] * len(requests)
        groups: dict[tuple, list[int]] = defaultdict(list)
        for i, r in enumerate(requests):
            groups[(r.max_new_tokens, r.min_new_tokens, max(r.temperature, 0.0))].append(i)
        for indices in groups.values():
            for start in range(0, len(indices), self.batch_size):
                batch = indices[start : start + self.batch_size]
                if cancel.is_set():
                    for i in batch:
                        results[i] = Generation(text="", cancelled=True)
                    continue
                for i, generation in zip(batch, self._run_batch([requests[i] for i in batch], cancel)):
                    results[i] = generation
        return [g for g in results if g is not None]

    def _run_batch(self, batch: list[JudgeRequest], cancel: threading.Event) -> list[Generation]:
        import torch

        started = time.perf_counter()
        seed = _batch_seed(batch)
        try:
            inputs, media = self._encode(batch)
            with torch.inference_mode():
                output = self.model.generate(**inputs, **self._generate_kwargs(batch[0], [cancel], seed))
        except Exception as exc:  # noqa: BLE001 - one bad batch must not end the run
            return [Generation(text="", error=self._error_text(exc)) for _ in batch]
        return self._results(batch, inputs, output, media, time.perf_counter() - started, cancel, seed)

    def generate_stream(
        self, request: JudgeRequest, on_text: Callable[[str], None], cancel: threading.Event | None = None
    ) -> Generation:
        """Run one request on a background thread, calling ``on_text(chunk)`` on the calling
        thread as text arrives. The thread is always joined before this returns; if
        ``on_text`` raises, generation is stopped and the exception propagates."""
        import torch
        from transformers import TextIteratorStreamer

        self._check_open()
        cancel = cancel or threading.Event()
        started = time.perf_counter()
        try:
            abort = threading.Event()  # set when on_text raises: stop generating, then re-raise
            inputs, media = self._encode([request])
            seed = _batch_seed([request])
            kwargs = self._generate_kwargs(request, [cancel, abort], seed)
        except Exception as exc:  # noqa: BLE001
            return Generation(text="", error=self._error_text(exc))
        streamer = TextIteratorStreamer(self.tokenizer, skip_prompt=True, skip_special_tokens=True)
        outcome: dict[str, Any] = {}

        def work() -> None:
            try:
                with torch.inference_mode():
                    outcome["output"] = self.model.generate(**inputs, **kwargs, streamer=streamer)
            except BaseException as exc:  # noqa: BLE001 - reported on the calling thread
                outcome["error"] = exc
                streamer.end()  # unblock the reader

        thread = threading.Thread(target=work, name="pairscope-judge-stream", daemon=True)
        thread.start()
        try:
            for chunk in streamer:
                if chunk:
                    on_text(chunk)
        finally:
            abort.set()  # harmless once generate is done; stops it within a token otherwise
            thread.join()
        if "error" in outcome:
            return Generation(text="", error=self._error_text(outcome["error"]))
        return self._results([request], inputs, outcome["output"], media, time.perf_counter() - started, cancel, seed)[
            0
        ]

    def _results(
        self,
        batch: Sequence[JudgeRequest],
        inputs: Any,
        output: Any,
        media: list,
        latency: float,
        cancel: Any,
        seed: int | None,
    ) -> list[Generation]:
        """Decode only the new tokens; count them up to the first end-of-sequence token. A row
        is ``cancelled`` when the event stopped it before its end token or its token limit."""
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        eos = self.model.generation_config.eos_token_id
        stops = set(eos if isinstance(eos, list) else [eos]) | {self.tokenizer.eos_token_id}
        texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        stopped = cancel.is_set()
        results = []
        for request, row, text, mask, sent in zip(batch, new_tokens.tolist(), texts, inputs["attention_mask"], media):
            ended = next((n + 1 for n, token in enumerate(row) if token in stops), None)
            count = ended or len(row)
            cancelled = stopped and ended is None and count < request.max_new_tokens
            results.append(
                Generation(
                    text=text,
                    tokens_in=int(mask.sum()),
                    tokens_out=count,
                    latency_s=latency,
                    cancelled=cancelled,
                    media_sent=sent,
                    seed=seed,
                )
            )
        return results

    def _error_text(self, exc: BaseException) -> str:
        if _is_oom(exc):
            self._empty_cache()
            return OOM_ADVICE
        return f"{type(exc).__name__}: {exc}"

    # -- bookkeeping -----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.model is None:
            raise JudgeError("the judge model was closed; load it again")

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model_path": str(self.folder),
            "weights_hash": self.weights_hash,
            "model_type": self.model_type,
            "device": self.device,
            "dtype": self.dtype,
        }

    def close(self) -> None:
        self.model = None
        self.processor = None
        gc.collect()
        self._empty_cache()

    def _empty_cache(self) -> None:
        if getattr(self, "device", "cpu").startswith("cuda"):
            import torch

            torch.cuda.empty_cache()
