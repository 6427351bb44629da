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

``Generation.logprobs`` (``top_logprobs`` > 0, default 5) holds, per generated token, its
log-probability and the top alternatives, in the shape the OpenAI-compatible backend stores
(``{"token", "logprob", "top": [{"token", "logprob"}, ...]}``), from the model's *raw* logits
(log-softmax at temperature 1, before repetition penalty, temperature or top-p): the model's own
distribution, which ``models.confidence`` reads a verdict's confidence from. They are recorded
per step by a forward hook (top-k and the chosen token only), never by keeping every step's
logits (``output_logits`` would hold steps × batch × vocabulary floats on the device: 2.5 GB for
a 512-token batch of 8 with a 150k vocabulary). Token strings are decoded so that they join to
the generated text.

Batching by length (``group_by_length``, on by default): within each set of requests that can
share a batch (same token limits and temperature), requests are ordered by a cheap length key
(media count, then the prompt's token count, a stable sort) before being cut into batches of
``batch_size``, so a batch pads less; answers come back in the caller's order. Greedy outputs
do not depend on which requests share a batch. A *sampled* batch is seeded once, with its first
seeded request's seed, so regrouping changes which requests share a batch and therefore which
seed (and random stream) a sampled request is generated with: the same request list always
batches the same way, and each ``Generation.seed`` is the seed its batch really used, but a
sampled answer can differ from one produced with ``group_by_length=False``.
``padding_tokens`` counts the pad tokens of every batch generated (a cumulative count).

Preprocessing ahead (``encode_ahead``, on by default): while batch *i* generates, one worker
thread (``pairscope-judge-encode``, joined before ``generate`` returns) chat-templates and
processes batch *i + 1* (``_encode``), never more than one batch ahead. A batch whose
preprocessing fails gets its own requests' errors, as before; once ``cancel`` is set the batch
prepared ahead is dropped. The tokenizer is used under a lock (a fast tokenizer refuses to
encode on one thread while it decodes on another), so only the model's work overlaps.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from . import _hf_utils as hf
from .base import Generation, JudgeError, JudgeRequest, register_backend
from .options import TransformersOptions

#: Tokens of context decoded before each token, so its string keeps its leading space.
_DECODE_CONTEXT = 4
OOM_ADVICE = "the judge ran out of memory: lower the batch size, use dtype bfloat16/float16, or send fewer frames"


def _is_oom(exc: BaseException) -> bool:
    return "out of memory" in str(exc).lower() or type(exc).__name__ == "OutOfMemoryError"


def _batch_seed(batch: Sequence[JudgeRequest]) -> int | None:
    """The one seed a batch is sampled with: its first seeded request's; None when greedy."""
    if batch[0].temperature <= 0:
        return None
    return next((r.seed for r in batch if r.seed is not None), None)


class _LogprobRecorder:
    """Per generation step of one batch: the raw log-probabilities' top ``k`` (from a forward
    hook on the model: the logits ``generate`` itself reads) and, once the step's token is
    chosen (from a stopping criterion, which sees it appended), that token's own."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.top_values: list[Any] = []
        self.top_ids: list[Any] = []
        self.chosen: list[Any] = []
        self.chosen_values: list[Any] = []
        self._last: Any = None

    def on_forward(self, module: Any, args: Any, output: Any) -> None:
        import torch

        logits = getattr(output, "logits", None)
        if logits is None:
            return
        row = torch.log_softmax(logits[:, -1].float(), dim=-1)
        values, ids = row.topk(min(self.k, row.shape[-1]), dim=-1)
        self.top_values.append(values)
        self.top_ids.append(ids)
        self._last = row

    def on_token(self, input_ids: Any) -> None:
        if self._last is None:
            return
        chosen = input_ids[:, -1:].to(self._last.device)
        self.chosen.append(chosen[:, 0])
        self.chosen_values.append(self._last.gather(1, chosen)[:, 0])
        self._last = None

    def steps(self) -> tuple[list, list, list, list] | None:
        """Per step, on the CPU as lists (batch rows): top values, top ids, chosen ids, chosen
        log-probabilities; ``None`` when the hook saw nothing or steps do not pair up."""
        import torch

        n = len(self.chosen)
        if not n or len(self.top_values) < n:
            return None
        stack = lambda xs: torch.stack(xs[:n], dim=1).cpu()  # noqa: E731 - batch × steps (× k)
        return (
            stack(self.top_values).tolist(),
            stack(self.top_ids).tolist(),
            stack(self.chosen).tolist(),
            stack(self.chosen_values).tolist(),
        )


@register_backend(TransformersOptions)
class TransformersBackend:
    """A judge model from a local folder, built from its
    :class:`~pairscope.models.options.TransformersOptions`. ``latency_s`` of a batched
    generation is the batch's time."""

    name = "transformers"

    def __init__(self, options: TransformersOptions) -> None:
        self.options = options
        self.folder, config = hf.check_model_folder(options.model)
        self.model_type = str(config.get("model_type", ""))
        self.batch_size = options.batch_size
        self.top_logprobs = max(0, int(options.top_logprobs))
        self._token_text: dict[int, str] = {}
        self.group_by_length = bool(options.group_by_length)
        self.padding_tokens = 0  # pad tokens over every batch generated (counted, for the bench)
        self.encode_ahead = bool(options.encode_ahead)
        self._tokenizer_lock = threading.Lock()
        self.weights_hash = hf.weights_hash(self.folder)
        self.model: Any = None
        self.processor: Any = None
        os.environ["HF_HUB_OFFLINE"] = "1"
        self._load(options.device, options.dtype, options.trust_remote_code, options.video_mode)

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
        with self._tokenizer_lock:
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
        self,
        request: JudgeRequest,
        stop: Sequence[threading.Event],
        seed: int | None,
        recorder: _LogprobRecorder | None = None,
    ) -> dict[str, Any]:
        """``model.generate`` options; seeds torch's global generator when ``seed`` is set.
        ``recorder`` is told each chosen token (the stop check sees it appended)."""
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        class StopOnEvent(StoppingCriteria):
            """Stops every sequence as soon as any of the events is set (checked per token)."""

            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                if recorder is not None:
                    recorder.on_token(input_ids)
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
        temperature are batched (up to ``batch_size``, left padding) whatever their seeds, by
        prompt length when ``group_by_length`` (see the module docstring): a sampled batch is
        seeded once, with its first seeded request's seed, and every result carries the seed
        its batch used. With ``encode_ahead`` the next batch is preprocessed on a worker
        thread meanwhile. A failing batch gives its requests ``error`` instead of ending the
        run; once ``cancel`` is set the rest come back cancelled."""
        self._check_open()
        cancel = cancel or threading.Event()
        results: list[Generation | None] = [None] * len(requests)
        groups: dict[tuple, list[int]] = defaultdict(list)
        for i, r in enumerate(requests):
            groups[(r.max_new_tokens, r.min_new_tokens, max(r.temperature, 0.0))].append(i)
        batches: list[list[int]] = []
        for indices in groups.values():
            if self.group_by_length and len(indices) > self.batch_size:
                indices = self._by_length(requests, indices)
            batches += [indices[start : start + self.batch_size] for start in range(0, len(indices), self.batch_size)]
        ahead = self.encode_ahead and len(batches) > 1
        worker: Any = ThreadPoolExecutor(1, "pairscope-judge-encode") if ahead else contextlib.nullcontext()
        with worker as pool:  # one thread, one batch ahead; joined here
            pending: Future | None = None
            for k, batch in enumerate(batches):
                if cancel.is_set():
                    for i in batch:
                        results[i] = Generation(text="", cancelled=True)
                    continue
                chunk = [requests[i] for i in batch]
                encoded = pending.result() if pending is not None else self._timed_encode(chunk)
                pending = None
                if pool is not None and k + 1 < len(batches):
                    pending = pool.submit(self._timed_encode, [requests[i] for i in batches[k + 1]])
                for i, generation in zip(batch, self._run_batch(chunk, cancel, encoded)):
                    results[i] = generation
        return [g for g in results if g is not None]

    def _timed_encode(self, batch: list[JudgeRequest]) -> tuple[Any, float]:
        """``_encode(batch)`` (or the exception it raised) and the seconds it took."""
        started = time.perf_counter()
        try:
            encoded: Any = self._encode(batch)
        except Exception as exc:  # noqa: BLE001 - reported as the batch's error
            encoded = exc
        return encoded, time.perf_counter() - started

    def _by_length(self, requests: Sequence[JudgeRequest], indices: list[int]) -> list[int]:
        """``indices`` ordered by (media count, prompt tokens), ties in the order given."""
        prompts = [requests[i].prompt for i in indices]
        lengths = [len(ids) for ids in self.tokenizer(prompts, add_special_tokens=False)["input_ids"]]
        media = [len(requests[i].images) + len(requests[i].video_frames) for i in indices]
        order = sorted(range(len(indices)), key=lambda k: (media[k], lengths[k]))
        return [indices[k] for k in order]

    def _run_batch(
        self, batch: list[JudgeRequest], cancel: threading.Event, encoded: tuple[Any, float]
    ) -> list[Generation]:
        """Generate one batch from its preprocessed inputs (``_timed_encode``); ``latency_s``
        counts its preprocessing too, wherever that ran."""
        import torch

        started = time.perf_counter() - encoded[1]
        seed = _batch_seed(batch)
        recorder = self._recorder()
        try:
            if isinstance(encoded[0], BaseException):
                raise encoded[0]
            inputs, media = encoded[0]
            self.padding_tokens += int((inputs["attention_mask"] == 0).sum())
            kwargs = self._generate_kwargs(batch[0], [cancel], seed, recorder)
            with torch.inference_mode(), self._hooked(recorder):
                output = self.model.generate(**inputs, **kwargs)
        except Exception as exc:  # noqa: BLE001 - one bad batch must not end the run
            return [Generation(text="", error=self._error_text(exc)) for _ in batch]
        with self._tokenizer_lock:
            return self._results(batch, inputs, output, media, time.perf_counter() - started, cancel, seed, recorder)

    def _recorder(self) -> _LogprobRecorder | None:
        return _LogprobRecorder(self.top_logprobs) if self.top_logprobs else None

    @contextlib.contextmanager
    def _hooked(self, recorder: _LogprobRecorder | None):
        """The model's forward hooked to ``recorder`` for the duration (removed after)."""
        handle = self.model.register_forward_hook(recorder.on_forward) if recorder is not None else None
        try:
            yield
        finally:
            if handle is not None:
                handle.remove()

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
            recorder = self._recorder()
            kwargs = self._generate_kwargs(request, [cancel, abort], seed, recorder)
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
        with self._hooked(recorder):
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
        elapsed = time.perf_counter() - started
        return self._results([request], inputs, outcome["output"], media, elapsed, cancel, seed, recorder)[0]

    def _results(
        self,
        batch: Sequence[JudgeRequest],
        inputs: Any,
        output: Any,
        media: list,
        latency: float,
        cancel: Any,
        seed: int | None,
        recorder: _LogprobRecorder | None = None,
    ) -> list[Generation]:
        """Decode only the new tokens; count them up to the first end-of-sequence token. A row
        is ``cancelled`` when the event stopped it before its end token or its token limit."""
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        steps = recorder.steps() if recorder is not None else None
        eos = self.model.generation_config.eos_token_id
        stops = set(eos if isinstance(eos, list) else [eos]) | {self.tokenizer.eos_token_id}
        texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        stopped = cancel.is_set()
        results = []
        for b, (request, row, text, mask, sent) in enumerate(
            zip(batch, new_tokens.tolist(), texts, inputs["attention_mask"], media)
        ):
            ended = next((n + 1 for n, token in enumerate(row) if token in stops), None)
            count = ended or len(row)
            cancelled = stopped and ended is None and count < request.max_new_tokens
            logprobs = None if cancelled or steps is None else self._token_logprobs(row[:count], steps, b)
            results.append(
                Generation(
                    text=text,
                    tokens_in=int(mask.sum()),
                    tokens_out=count,
                    latency_s=latency,
                    cancelled=cancelled,
                    media_sent=sent,
                    seed=seed,
                    logprobs=logprobs,
                )
            )
        return results

    def _token_logprobs(self, ids: list[int], steps: tuple[list, list, list, list], b: int) -> list | None:
        """Row ``b``'s generated tokens as ``{"token", "logprob", "top"}`` (the stored shape);
        ``None`` if the recorded steps do not match the generated tokens."""
        top_values, top_ids, chosen, chosen_values = (s[b] for s in steps)
        if len(chosen) < len(ids) or chosen[: len(ids)] != ids:
            return None
        pieces = self._pieces(ids)
        self._names({i for row in top_ids[: len(ids)] for i in row})
        return [
            {
                "token": piece,
                "logprob": float(chosen_values[t]),
                "top": [{"token": self._token_text[i], "logprob": float(v)} for i, v in zip(top_ids[t], top_values[t])],
            }
            for t, piece in enumerate(pieces)
        ]

    def _pieces(self, ids: list[int]) -> list[str]:
        """Each token's text such that they join to the decoded text: token t is the text that
        decoding ``ids[t - c : t + 1]`` adds to ``ids[t - c : t]`` (c tokens of context keep a
        word's leading space, which a token decoded alone can lose)."""
        windows = [ids[max(0, t - _DECODE_CONTEXT) : t] for t in range(len(ids))]
        texts = self.tokenizer.batch_decode(windows + [w + [i] for w, i in zip(windows, ids)], skip_special_tokens=True)
        before, after = texts[: len(ids)], texts[len(ids) :]
        return [a[len(p) :] for p, a in zip(before, after)]

    def _names(self, ids: set[int]) -> None:
        """Decode (once per backend) the alternatives' token strings."""
        new = sorted(i for i in ids if i not in self._token_text)
        if new:
            for i, name in zip(new, self.tokenizer.batch_decode([[i] for i in new], skip_special_tokens=False)):
                self._token_text[i] = name

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
            "logprobs": bool(self.top_logprobs),
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
