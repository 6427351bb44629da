"""The judging protocol: answer orders from a recorded seed, K samples, both-orders runs,
resumable runs (the vote itself is ``votes``; what each mode asks and parses is ``modes``).
Backends and verdict parsing live in ``pairscope.models``; this module decides *what* to ask
and stores what came back.

Every sample draws its own answer order from ``(seed, item id, sample)``, so a run is
reproducible; verdicts are stored by response index together with the order shown.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial

from pairscope.models.base import Generation, JudgeBackend, JudgeRequest
from pairscope.models.parsing import PARSERS, rationale
from pairscope.models.prompts import PromptTemplate, load_template

from ..media import MediaError, open_image, sample_frames
from ..records import Item
from ..store import RunRecord, Store, VerdictRecord
from .confidence import sample_confidence
from .modes import MODES, get_mode, k_problem
from .results import clear_failed, record_verdicts

IMAGE_MAX_SIZE = (2048, 2048)
FRAME_MAX_SIZE = (768, 768)
#: What an endpoint backend's ``describe()`` adds to a new run's generation record.
ENDPOINT_INFO = ("endpoint", "served_model", "server_model", "api_key_env", "concurrency", "timeout_s", "retries")


@dataclass(frozen=True)
class JudgeConfig:
    """How to judge; recorded with the run."""

    mode: str = "pairwise"
    k: int = 1
    both_orders: bool = False
    frames: int = 8
    seed: int = 0
    template: str | None = None  # bundled name or a file; default: the mode's bundled one
    max_new_tokens: int = 512
    temperature: float = 0.0
    batch_size: int = 8
    parser: str = "lenient"  # verdict parser profile: lenient or strict (models.parsing.PARSERS)

    def __post_init__(self) -> None:
        get_mode(self.mode)
        if self.parser not in PARSERS:
            raise ValueError(f"parser must be one of {', '.join(PARSERS)}, got {self.parser!r}")
        if why := k_problem(self.k):
            raise ValueError(f"k {why}")
        if self.frames < 1 or self.batch_size < 1:
            raise ValueError("frames and batch size must be at least 1")


def sample_orders(ext_id: str, n: int, k: int, both_orders: bool, seed: int) -> list[tuple[int, tuple[int, ...]]]:
    """``(sample index, order shown)`` for every pairwise sample of an item (see ``modes``)."""
    return MODES["pairwise"].plan(ext_id, n, k, both_orders, seed)


@dataclass(frozen=True)
class WorkUnit:
    """One generation to run: an item, a sample, the order shown (pointwise/step: the one
    response scored)."""

    item: Item
    sample_idx: int
    order: tuple[int, ...]


@dataclass
class RunProgress:
    done: int = 0
    total: int = 0
    started: float = field(default_factory=time.monotonic)
    failed: int = 0  # stored samples whose generation failed (a rerun retries them)

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        return (self.total - self.done) / self.rate if self.rate > 0 else None


class JudgeSession:
    """Runs a judge over items of one project, persisting every verdict as it comes.

    At temperature 0 a prompt gives one answer however often it is asked, so each distinct
    prompt of an item (at most two orders in a K-sample pairwise run) is generated once and
    stored for every sample it stands for. Sampled runs batch their samples; the backend seeds
    each batch and the seed is recorded with the verdict (``media_sent["seed"]``).
    """

    MEDIA_CACHE = 16  # items whose decoded media are kept while their samples run

    def __init__(self, store: Store, backend: JudgeBackend, config: JudgeConfig):
        self.store = store
        self.backend = backend
        self.config = config
        self.mode = get_mode(config.mode)
        self.template: PromptTemplate = load_template(config.template or config.mode, config.mode)
        self.run: RunRecord | None = None
        self._done: set[tuple[int, int]] = set()
        self._frame_indices: dict[int, list[int]] = {}
        self._media_cache: OrderedDict[int, tuple[list, list] | MediaError] = OrderedDict()
        self.media_decodes = 0  # how many times an item's media were decoded (one per item per run)

    # -- runs ----------------------------------------------------------------------------------

    def _key(self) -> dict:
        info = self.backend.describe()
        return dict(
            backend=info.get("backend", self.backend.name),
            model_path=str(info.get("model_path", "")),
            weights_hash=info.get("weights_hash"),
            template_hash=self.template.sha256,
            mode=self.config.mode,
            k=self.config.k,
            both_orders=self.config.both_orders,
            frames=self.config.frames,
            seed=self.config.seed,
            parser=self.config.parser,
        )

    def matching_run(self) -> RunRecord | None:
        """The latest run with this model (weights fingerprint included), template and protocol."""
        key = self._key()
        for run in reversed(self.store.runs()):
            same = all(getattr(run, name) == value for name, value in key.items())
            same = same and run.generation.get("max_new_tokens") == self.config.max_new_tokens
            same = same and run.generation.get("temperature") == self.config.temperature
            if same:
                return run
        return None

    def start(self, resume: bool = True) -> RunRecord:
        """Open a run: the latest run with the same model, template and protocol (so rerunning
        continues where it stopped, or finds it complete), else — or with ``resume=False`` — a
        new one."""
        previous = self.matching_run() if resume else None
        if previous is not None:
            clear_failed(self.store, previous)
            self.store.set_run_status(previous.id, "running")
            self.run = self.store.run(previous.id)
            return self.run
        info = self.backend.describe()
        generation = {
            "max_new_tokens": self.config.max_new_tokens,
            "temperature": self.config.temperature,
            "batch_size": self.batch_size(),
            "device": info.get("device"),
            "dtype": info.get("dtype"),
        }
        # A judge behind an endpoint: where it was and what the server said it serves (never a key).
        generation.update({k: info[k] for k in ENDPOINT_INFO if info.get(k) is not None})
        self.run = self.store.create_run(
            template_name=self.template.name, template_text=self.template.text, generation=generation, **self._key()
        )
        return self.run

    def units(self, item: Item) -> list[WorkUnit]:
        """The generations an item still needs in the current run."""
        assert self.run is not None, "call start() first"
        cfg = self.config
        plan = self.mode.plan(item.ext_id, len(item.responses), cfg.k, cfg.both_orders, cfg.seed)
        return [WorkUnit(item, s, order) for s, order in plan if (item.stored_id, s) not in self._done]

    def remaining(self, item_ids: Iterable[int]) -> int:
        """How many samples of these items the current run still lacks (0: complete)."""
        run = self.run or self.start()
        self._done = self.store.done_samples(run.id)
        return sum(len(self.units(self.store.get_item(i))) for i in item_ids)

    def judge(
        self,
        item_ids: Iterable[int],
        progress: Callable[[RunProgress], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> RunProgress:
        """Judge items in batches; every finished batch is stored before the next starts.

        Stops cleanly when ``cancel`` is set (the run stays resumable).
        """
        run = self.run or self.start()
        self._done = self.store.done_samples(run.id)
        units = [u for item_id in item_ids for u in self.units(self.store.get_item(item_id))]
        jobs = self._distinct_prompts(units)
        state = RunProgress(total=len(units))
        if progress:
            progress(state)
        for batch in _chunks(jobs, self.batch_size()):
            if cancel is not None and cancel.is_set():
                break
            prepared = [(units_, self.request(units_[0])) for units_ in batch]
            ready = [r for _, r in prepared if isinstance(r, JudgeRequest)]
            results = iter(self.backend.generate(ready, cancel) if ready else [])
            verdicts = []
            for units_, request in prepared:
                gen = next(results) if isinstance(request, JudgeRequest) else Generation("", error=request)
                if gen.cancelled:
                    continue  # not stored: a resume redoes it
                sent = request if isinstance(request, JudgeRequest) else None
                verdicts += [self.verdict(u, gen, sent) for u in units_]
            record_verdicts(self.store, run, verdicts)
            state.done += len(verdicts)
            state.failed += sum(1 for v in verdicts if v.error is not None)
            if progress:
                progress(state)
        cancelled = cancel is not None and cancel.is_set()
        self.store.set_run_status(run.id, "cancelled" if cancelled else "done")
        return state

    def batch_size(self) -> int:
        """Prompts per backend call (and per stored batch): the configured batch size, and at
        least the backend's ``concurrency`` where it serves requests in parallel (an endpoint),
        so every connection has work."""
        return max(self.config.batch_size, int(getattr(self.backend, "concurrency", 0) or 0))

    def _distinct_prompts(self, units: list[WorkUnit]) -> list[list[WorkUnit]]:
        """Units grouped by the prompt they send: one group per unit when sampling, one per
        (item, order) at temperature 0, where the same prompt always gives the same answer."""
        if self.config.temperature > 0:
            return [[u] for u in units]
        groups: dict[tuple[int, tuple[int, ...]], list[WorkUnit]] = {}
        for u in units:
            groups.setdefault((u.item.stored_id, u.order), []).append(u)
        return list(groups.values())

    def judge_stream(
        self, item_id: int, on_text: Callable[[int, str], None], cancel: threading.Event | None = None
    ) -> list[VerdictRecord]:
        """Judge one item sample by sample, streaming text as ``on_text(sample_idx, chunk)``."""
        run = self.run or self.start()
        self._done = self.store.done_samples(run.id)
        stored = []
        for units_ in self._distinct_prompts(self.units(self.store.get_item(item_id))):
            if cancel is not None and cancel.is_set():
                break
            unit = units_[0]
            request = self.request(unit)
            if isinstance(request, JudgeRequest):
                gen = self.backend.generate_stream(request, partial(on_text, unit.sample_idx), cancel)
            else:
                gen = Generation("", error=request)
            if gen.cancelled:
                break
            sent = request if isinstance(request, JudgeRequest) else None
            verdicts = [self.verdict(u, gen, sent) for u in units_]
            record_verdicts(self.store, run, verdicts)
            stored += verdicts
        return stored

    # -- one sample ------------------------------------------------------------------------------

    def request(self, unit: WorkUnit) -> JudgeRequest | str:
        """The request for a unit, or an error message (e.g. missing media)."""
        item, cfg = unit.item, self.config
        media = self._media(item)
        if isinstance(media, MediaError):
            return f"media: {media}"
        images, frames = media
        try:
            prompt = self.mode.render(self.template, item, unit.order)
        except ValueError as exc:
            return f"prompt: {exc}"
        seed = None if cfg.temperature == 0 else (cfg.seed * 1_000_003 + item.stored_id * 101 + unit.sample_idx)
        return JudgeRequest(
            prompt=prompt,
            images=tuple(images),
            video_frames=tuple(f.image for f in frames),
            max_new_tokens=cfg.max_new_tokens,
            temperature=cfg.temperature,
            seed=seed,
        )

    def _media(self, item: Item) -> tuple[list, list] | MediaError:
        """An item's decoded images and video frames, decoded once per item per run."""
        if item.stored_id in self._media_cache:
            self._media_cache.move_to_end(item.stored_id)
            return self._media_cache[item.stored_id]
        self.media_decodes += 1
        try:
            images, frames = [], []
            for m in item.media:
                if m.path is None:
                    raise MediaError(m.ref, m.problem or "missing")
                if m.kind == "video":
                    frames = sample_frames(m.path, self.config.frames, max_size=FRAME_MAX_SIZE)
                    self._frame_indices[item.stored_id] = [f.index for f in frames]
                else:
                    images.append(open_image(m.path, max_size=IMAGE_MAX_SIZE))
            result: tuple[list, list] | MediaError = (images, frames)
        except MediaError as exc:
            result = exc
        self._media_cache[item.stored_id] = result
        while len(self._media_cache) > self.MEDIA_CACHE:
            self._media_cache.popitem(last=False)
        return result

    def verdict(self, unit: WorkUnit, gen: Generation, request: JudgeRequest | None) -> VerdictRecord:
        """Parse a generation into a stored verdict (choice as a response index) with its
        confidence (``confidence.sample_confidence``: None without log-probabilities)."""
        assert self.run is not None
        text, cfg = gen.text, self.config
        parsed = self.mode.parse(text, unit.item, unit.order, cfg.parser) if gen.error is None else None
        media = dict(gen.media_sent)
        if getattr(gen, "seed", None) is not None:
            media["seed"] = gen.seed
        if request is not None:
            media.setdefault("images", [list(img.size) for img in request.images])
            if request.video_frames:
                media["frames"] = [list(img.size) for img in request.video_frames]
                media["frame_count_requested"] = cfg.frames
                media["frame_indices"] = self._frame_indices.get(unit.item.stored_id, [])
        return VerdictRecord(
            run_id=self.run.id,
            item_id=unit.item.stored_id,
            sample_idx=unit.sample_idx,
            order_shown=unit.order,
            raw_output=text,
            choice=parsed.choice if parsed else None,
            scores=parsed.scores if parsed else None,
            parsed=bool(parsed and parsed.parsed),
            rationale=rationale(text, parsed.span if parsed else None) if text else None,
            tokens_in=gen.tokens_in,
            tokens_out=gen.tokens_out,
            latency_s=gen.latency_s,
            error=gen.error,
            media_sent=media,
            logprobs=getattr(gen, "logprobs", None),
            confidence=sample_confidence(self.mode, parsed, gen, unit.order),
        )


def _chunks(items: Sequence, size: int) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
