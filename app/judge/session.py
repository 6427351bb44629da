"""The judging protocol: answer orders from a recorded seed, K samples, majority vote,
both-orders consistency, resumable runs. Backends and verdict parsing live in
``pairscope.models``; this module decides *what* to ask and stores what came back.

Every sample draws its own answer order from ``(seed, item id, sample)``, so a run is
reproducible; verdicts are stored by response index together with the order shown.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Iterator, Sequence

from pairscope.models.base import Generation, JudgeBackend, JudgeRequest
from pairscope.models.parsing import (
    parse_pairwise,
    parse_score,
    parse_step_scores,
    rationale,
)
from pairscope.models.prompts import (
    PromptTemplate,
    load_template,
    render_pairwise,
    render_pointwise,
    render_steps,
)

from ..media import MediaError, open_image, sample_frames
from ..records import Item
from ..store import RunRecord, Store, VerdictRecord

MODES = ("pairwise", "pointwise", "step")
IMAGE_MAX_SIZE = (2048, 2048)
FRAME_MAX_SIZE = (768, 768)


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

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.k < 1 or self.frames < 1 or self.batch_size < 1:
            raise ValueError("k, frames and batch size must be at least 1")


def sample_orders(ext_id: str, n: int, k: int, both_orders: bool, seed: int) -> list[tuple[int, tuple[int, ...]]]:
    """``(sample index, order shown)`` for every sample of an item.

    Sample ``j`` shuffles the responses with ``Random(f"{seed}:{ext_id}:{j}")``; with
    ``both_orders`` it is judged twice, as samples ``2j`` (that order) and ``2j+1`` (reversed).
    """
    plan = []
    for j in range(k):
        order = list(range(n))
        random.Random(f"{seed}:{ext_id}:{j}").shuffle(order)
        if both_orders:
            plan += [(2 * j, tuple(order)), (2 * j + 1, tuple(reversed(order)))]
        else:
            plan.append((j, tuple(order)))
    return plan


@dataclass(frozen=True)
class WorkUnit:
    """One generation to run: an item, a sample, the order shown (pointwise/step: the one
    response scored)."""

    item: Item
    sample_idx: int
    order: tuple[int, ...]


@dataclass(frozen=True)
class ItemJudgement:
    """The K-vote for one item: ``choice`` is a response index, ``None`` when undecided
    (a tie in votes, a judged tie, or nothing parsed)."""

    item_id: int
    choice: int | None
    votes: dict[int, int]
    samples: int
    unparsed: int
    errors: int
    consistent: bool | None = None  # both-orders runs: did the two orders agree?


def vote(verdicts: Sequence[VerdictRecord], both_orders: bool = False, first_k: int | None = None) -> ItemJudgement:
    """Majority over parsed samples (optionally only the first ``first_k`` samples)."""
    if first_k is not None:
        verdicts = [v for v in verdicts if v.sample_idx < (2 * first_k if both_orders else first_k)]
    votes = Counter(v.choice for v in verdicts if v.parsed and v.choice is not None)
    ranked = votes.most_common()
    choice = ranked[0][0] if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]) else None
    consistent = None
    if both_orders:
        pairs: dict[int, list[VerdictRecord]] = {}
        for v in verdicts:
            pairs.setdefault(v.sample_idx // 2, []).append(v)
        judged = [p for p in pairs.values() if len(p) == 2 and all(v.parsed for v in p)]
        if judged:
            consistent = all(p[0].choice == p[1].choice for p in judged)
    return ItemJudgement(
        item_id=verdicts[0].item_id if verdicts else -1, choice=choice, votes=dict(votes), samples=len(verdicts),
        unparsed=sum(1 for v in verdicts if not v.parsed and v.error is None),
        errors=sum(1 for v in verdicts if v.error is not None), consistent=consistent,
    )


@dataclass
class RunProgress:
    done: int = 0
    total: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        return (self.total - self.done) / self.rate if self.rate > 0 else None


class JudgeSession:
    """Runs a judge over items of one project, persisting every verdict as it comes."""

    def __init__(self, store: Store, backend: JudgeBackend, config: JudgeConfig):
        self.store = store
        self.backend = backend
        self.config = config
        self.template: PromptTemplate = load_template(config.template or config.mode, config.mode)
        self.run: RunRecord | None = None
        self._done: set[tuple[int, int]] = set()
        self._frame_indices: dict[int, list[int]] = {}

    # -- runs ----------------------------------------------------------------------------------

    def start(self, resume: bool = True) -> RunRecord:
        """Open a run: the latest unfinished run with the same model, template and protocol
        (so rerunning continues where it stopped), else a new one."""
        info = self.backend.describe()
        generation = {"max_new_tokens": self.config.max_new_tokens, "temperature": self.config.temperature,
                      "batch_size": self.config.batch_size, "device": info.get("device"), "dtype": info.get("dtype")}
        key = dict(backend=info.get("backend", self.backend.name), model_path=str(info.get("model_path", "")),
                   weights_hash=info.get("weights_hash"), template_hash=self.template.sha256, mode=self.config.mode,
                   k=self.config.k, both_orders=self.config.both_orders,
                   frames=self.config.frames, seed=self.config.seed)
        if resume:
            for run in reversed(self.store.runs()):
                same = all(getattr(run, name) == value for name, value in key.items())
                same = same and run.generation.get("max_new_tokens") == self.config.max_new_tokens
                same = same and run.generation.get("temperature") == self.config.temperature
                if same and run.status != "done":
                    self.store.clear_failed(run.id)
                    self.store.set_run_status(run.id, "running")
                    self.run = self.store.run(run.id)
                    return self.run
        self.run = self.store.create_run(template_name=self.template.name, template_text=self.template.text,
                                         generation=generation, **key)
        return self.run

    def units(self, item: Item) -> list[WorkUnit]:
        """The generations an item still needs in the current run."""
        assert self.run is not None, "call start() first"
        done = self._done
        n = len(item.responses)
        cfg = self.config
        if cfg.mode == "pairwise":
            if n < 2:
                return []  # a single (step-wise) response has nothing to compare with
            plan = sample_orders(item.ext_id, n, cfg.k, cfg.both_orders, cfg.seed)
        else:  # one generation per response per sample
            plan = [(j * n + r, (r,)) for j in range(cfg.k) for r in range(n)]
        return [WorkUnit(item, s, order) for s, order in plan if (item.id, s) not in done]

    def judge(self, item_ids: Iterable[int], progress: Callable[[RunProgress], None] | None = None,
              cancel: threading.Event | None = None) -> RunProgress:
        """Judge items in batches; every finished batch is stored before the next starts.

        Stops cleanly when ``cancel`` is set (the run stays resumable).
        """
        run = self.run or self.start()
        self._done = self.store.done_samples(run.id)
        units = [u for item_id in item_ids for u in self.units(self.store.get_item(item_id))]
        state = RunProgress(total=len(units))
        if progress:
            progress(state)
        for batch in _chunks(units, self.config.batch_size):
            if cancel is not None and cancel.is_set():
                break
            prepared = [(u, self.request(u)) for u in batch]
            ready = [(u, r) for u, r in prepared if isinstance(r, JudgeRequest)]
            results = self.backend.generate([r for _, r in ready], cancel) if ready else []
            generations = iter(results)
            verdicts = []
            for unit, request in prepared:
                gen = next(generations) if isinstance(request, JudgeRequest) else Generation("", error=request)
                if gen.cancelled:
                    continue  # not stored: a resume redoes it
                verdicts.append(self.verdict(unit, gen, request if isinstance(request, JudgeRequest) else None))
            self.store.add_verdicts(verdicts)
            state.done += len(verdicts)
            if progress:
                progress(state)
        cancelled = cancel is not None and cancel.is_set()
        self.store.set_run_status(run.id, "cancelled" if cancelled else "done")
        return state

    def judge_stream(self, item_id: int, on_text: Callable[[int, str], None],
                     cancel: threading.Event | None = None) -> list[VerdictRecord]:
        """Judge one item sample by sample, streaming text as ``on_text(sample_idx, chunk)``."""
        run = self.run or self.start()
        self._done = self.store.done_samples(run.id)
        stored = []
        for unit in self.units(self.store.get_item(item_id)):
            if cancel is not None and cancel.is_set():
                break
            request = self.request(unit)
            if isinstance(request, JudgeRequest):
                gen = self.backend.generate_stream(request, lambda chunk, s=unit.sample_idx: on_text(s, chunk), cancel)
            else:
                gen = Generation("", error=request)
            if gen.cancelled:
                break
            verdict = self.verdict(unit, gen, request if isinstance(request, JudgeRequest) else None)
            self.store.add_verdicts([verdict])
            stored.append(verdict)
        return stored

    # -- one sample ------------------------------------------------------------------------------

    def request(self, unit: WorkUnit) -> JudgeRequest | str:
        """The request for a unit, or an error message (e.g. missing media)."""
        item, cfg = unit.item, self.config
        try:
            images, frames = self._media(item)
        except MediaError as exc:
            return f"media: {exc}"
        try:
            if cfg.mode == "pairwise":
                prompt = render_pairwise(self.template, item.prompt, [item.responses[i].text for i in unit.order])
            elif cfg.mode == "pointwise":
                prompt = render_pointwise(self.template, item.prompt, item.responses[unit.order[0]].text)
            else:
                response = item.responses[unit.order[0]]
                steps = [s.text for s in response.steps] or [response.text]
                prompt = render_steps(self.template, item.prompt, steps)
        except ValueError as exc:
            return f"prompt: {exc}"
        seed = None if cfg.temperature == 0 else (cfg.seed * 1_000_003 + item.id * 101 + unit.sample_idx)
        return JudgeRequest(prompt=prompt, images=tuple(images), video_frames=tuple(f.image for f in frames),
                            max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, seed=seed)

    def _media(self, item: Item):
        images, frames = [], []
        for m in item.media:
            if m.path is None:
                raise MediaError(m.ref, m.problem or "missing")
            if m.kind == "video":
                frames = sample_frames(m.path, self.config.frames, max_size=FRAME_MAX_SIZE)
                self._frame_indices[item.id] = [f.index for f in frames]
            else:
                images.append(open_image(m.path, max_size=IMAGE_MAX_SIZE))
        return images, frames

    def verdict(self, unit: WorkUnit, gen: Generation, request: JudgeRequest | None) -> VerdictRecord:
        """Parse a generation into a stored verdict (choice as a response index)."""
        assert self.run is not None
        text, cfg = gen.text, self.config
        choice, scores, parsed, span = None, None, False, None
        if gen.error is None:
            if cfg.mode == "pairwise":
                v = parse_pairwise(text, len(unit.order))
                parsed, span = v.parsed, v.span
                choice = unit.order[v.choice] if v.parsed and v.choice is not None else None
            elif cfg.mode == "pointwise":
                s = parse_score(text)
                parsed, scores, span = s.parsed, (s.score,), s.span
                choice = unit.order[0] if s.parsed else None
            else:
                n_steps = len(unit.item.responses[unit.order[0]].steps) or 1
                st = parse_step_scores(text, n_steps)
                parsed, scores, choice, span = st.parsed, tuple(st.scores), unit.order[0], st.span
        media = dict(gen.media_sent)
        if request is not None:
            media.setdefault("images", [list(img.size) for img in request.images])
            if request.video_frames:
                media["frames"] = [list(img.size) for img in request.video_frames]
                media["frame_count_requested"] = cfg.frames
                media["frame_indices"] = self._frame_indices.get(unit.item.id, [])
        return VerdictRecord(
            run_id=self.run.id, item_id=unit.item.id, sample_idx=unit.sample_idx, order_shown=unit.order,
            raw_output=text, choice=choice, scores=scores, parsed=parsed,
            rationale=rationale(text, span) if text else None, tokens_in=gen.tokens_in, tokens_out=gen.tokens_out,
            latency_s=gen.latency_s, error=gen.error, media_sent=media,
        )


def pointwise_choice(verdicts: Sequence[VerdictRecord], n: int, k: int) -> list[VerdictRecord]:
    """Turn pointwise samples (one per response) into pairwise-like votes per sample:
    the response with the higher score wins; equal scores give no vote."""
    out = []
    for j in range(k):
        scored = {v.order_shown[0]: v.scores[0] for v in verdicts
                  if v.sample_idx // n == j and v.parsed and v.scores and v.scores[0] is not None}
        if len(scored) < n:
            out.append(replace(verdicts[0], sample_idx=j, choice=None, parsed=False) if verdicts else None)
            continue
        best = max(scored.values())
        winners = [r for r, s in scored.items() if s == best]
        out.append(replace(verdicts[0], sample_idx=j, choice=winners[0] if len(winners) == 1 else None, parsed=True))
    return [v for v in out if v is not None]


def _chunks(items: Sequence, size: int) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
