"""What the review and adjudication view shows for one item: every annotator's label and
every judge verdict, in the reviewer's screen terms (Response 1/2 as the reviewer sees them).

Reviewing is not blind: it exists to compare the labels with each other, with the judge and
with the dataset's reference.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..labeling.session import describe, label_to_draft
from ..records import Item
from ..store import Store, VerdictRecord

if TYPE_CHECKING:
    from .modes import JudgingMode


@dataclass(frozen=True)
class LabelLine:
    annotator: str
    kind: str  # "label" or "adjudication"
    summary: str  # screen terms, e.g. "R2 clearly · counting"
    note: str
    created_at: str


@dataclass(frozen=True)
class VerdictLine:
    run_id: int
    sample: int
    order: str  # the order the judge saw, in screen terms, e.g. "R2, R1"
    choice: str  # "R1", "undecided", "unparsed", "error: …"
    text: str  # the raw output
    decisive: tuple[int, int] | None  # character span of the sentence that decided


@dataclass(frozen=True)
class RunVerdictLine:
    """One judge's item verdict (the one vote, official convention), for the side-by-side table."""

    run_id: int
    label: str  # "run 3 · qwen2-vl-2b"
    verdict: str  # "R2", "no majority", "no preference verdict"
    votes: str  # "3 of 5"
    outcome: str  # right / wrong / undecided / unscored / "—"


@dataclass(frozen=True)
class ReviewData:
    item_id: int
    reference: str  # the dataset's preference in screen terms
    labels: tuple[LabelLine, ...]
    verdicts: tuple[VerdictLine, ...]
    runs: tuple[RunVerdictLine, ...] = ()  # one row per run that judged the item
    rationale: tuple[tuple[str, str], ...] = ()  # the reference's reasons: ("R2 (chosen)", text)


#: The fields of ``Item.extra`` that give the reference's reasons (MM-RLHF-RewardBench's):
#: about its chosen response (ranked first) and its rejected one (ranked last).
RATIONALE_FIELDS = {"chosen_reason": "chosen", "rejected_reason": "rejected"}


def reference_rationale(item: Item, screen: Callable[[int | None], str]) -> tuple[tuple[str, str], ...]:
    """The dataset's reasons for its reference, by response in screen terms (``("R2 (chosen)",
    text)``); only the fields an item has, with text."""
    ranking = item.reference.ranking or ()
    about = {"chosen": ranking[0] if ranking else None, "rejected": ranking[-1] if len(ranking) > 1 else None}
    out = []
    for key, role in RATIONALE_FIELDS.items():
        text = item.extra.get(key)
        if isinstance(text, str) and text.strip():
            out.append((f"{screen(about[role])} ({role})", text.strip()))
    return tuple(out)


def review_data(store: Store, item: Item, order: tuple[int, ...], run_ids: Collection[int] | None = None) -> ReviewData:
    """Every current label (one per annotator and kind) and every judge sample of an item (of
    the runs ``run_ids``; None: of every run); each sample reads as its run's mode says (a
    pairwise pick, a pointwise score, step scores)."""
    position = {index: pos for pos, index in enumerate(order, start=1)}

    def screen(index: int | None) -> str:
        return "—" if index is None else f"R{position.get(index, index + 1)}"

    current = sorted(
        store.item_current_labels(item.stored_id), key=lambda lab: (lab.kind != "adjudication", lab.annotator)
    )
    lines = [
        LabelLine(
            label.annotator,
            label.kind,
            describe(label_to_draft(label, order), len(order)),
            label.note,
            label.created_at or "",
        )
        for label in current
    ]
    verdicts = []
    from .modes import get_mode  # numpy and the verdict parsers load when a review is shown

    modes: dict[int, tuple[JudgingMode, str]] = {}
    samples = store.verdicts(item_id=item.id)
    for v in samples:
        if run_ids is not None and v.run_id not in run_ids:
            continue
        if v.run_id not in modes:
            run = store.run(v.run_id)
            modes[v.run_id] = (get_mode(run.mode), run.parser)
        mode, parser = modes[v.run_id]
        choice = mode.sample_reading(v, screen)
        span = mode.decisive_span(v, item, parser)
        verdicts.append(
            VerdictLine(
                v.run_id, v.sample_idx, ", ".join(screen(i) for i in v.order_shown), choice, v.raw_output or "", span
            )
        )
    runs = run_lines(store, item, samples, screen, run_ids)
    rationale = reference_rationale(item, screen)
    return ReviewData(item.stored_id, screen(item.reference.chosen), tuple(lines), tuple(verdicts), runs, rationale)


def run_lines(
    store: Store,
    item: Item,
    samples: Sequence[VerdictRecord],
    screen: Callable[[int], str],
    run_ids: Collection[int] | None,
) -> tuple[RunVerdictLine, ...]:
    """Every run's item verdict on ``item`` (of ``run_ids``, in that order; None: every run that
    judged it, by id), decided by the one vote (``results.item_verdict``)."""
    from .results import item_verdict
    from .runs import run_choices

    by_run: dict[int, list[VerdictRecord]] = {}
    for v in samples:
        by_run.setdefault(v.run_id, []).append(v)
    order = list(run_ids) if run_ids is not None else sorted(by_run)
    choices = {c.id: c for c in run_choices(store)} if order else {}
    out = []
    for run_id in order:
        if run_id not in choices:
            continue
        label = f"run {run_id} · {choices[run_id].model}"  # K: the votes column's "of K"
        if run_id not in by_run:
            out.append(RunVerdictLine(run_id, label, "not judged", "—", "—"))
            continue
        verdict = item_verdict(store.run(run_id), by_run[run_id], len(item.responses))
        if verdict is None:
            out.append(RunVerdictLine(run_id, label, "no preference verdict", "—", "—"))
            continue
        choice = verdict.official
        top = verdict.counts.get(choice, 0) if choice is not None else max(verdict.counts.values(), default=0)
        out.append(
            RunVerdictLine(
                run_id,
                label,
                screen(choice) if choice is not None else "no majority",
                f"{top} of {verdict.planned}",
                verdict.outcome(item.reference.chosen),
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class JudgeItemView:
    """What the judge panel shows for the current item and the chosen run."""

    summary: str  # "Judge: Response 2 (3 of 5 samples) · You: Response 2 · Dataset: …"
    rationale: str  # every sample's stored output, as the live stream showed it
    seen: str  # what the judge saw (image sizes, frames) and the first error
    frames: tuple[int, ...] = ()  # video frames the judge saw (0-based)


def judge_item_view(
    store: Store, item: Item, order: tuple[int, ...], annotator: str, run_id: int | None
) -> JudgeItemView:
    """The chosen run's verdict on ``item`` beside this annotator's label and the dataset's
    reference, in screen terms; the rationale is read back from the stored samples."""
    from .confidence import item_confidence_of
    from .results import judge_item, verdict_phrases  # numpy and the vote: when a verdict is shown

    position = {idx: pos for pos, idx in enumerate(order, start=1)}

    def name(index: int | None) -> str:
        return "undecided" if index is None else f"Response {position.get(index, index + 1)}"

    mine = store.current_label(item.stored_id, annotator)
    you = name(mine.preferred) if mine and mine.preferred is not None else (mine.outcome if mine else "—")
    reference = item.reference.chosen
    people = [f"You: {you}", f"Dataset: {name(reference) if reference is not None else '—'}"]
    if run_id is None:
        return JudgeItemView("  ·  ".join(["Not judged yet (no judge run)", *people]), "", "")
    verdicts = store.verdicts(run_id, item.stored_id)
    if not verdicts:
        return JudgeItemView("  ·  ".join([f"Not judged in run {run_id}", *people]), "", "")
    judgement = judge_item(store.run(run_id), verdicts, len(item.responses))
    parts = verdict_phrases(judgement, name, reference)
    head = parts[:1]
    confidence = item_confidence_of(judgement, verdicts, len(item.responses))
    if confidence is not None:  # the mean probability the samples gave the decision (STATISTICS.md)
        head.append(f"confidence {confidence:.2f}")
    parts = head + people + parts[1:]
    rationale = "\n\n".join(
        f"— sample {v.sample_idx + 1} —\n" + (v.raw_output or (f"(failed: {v.error})" if v.error else "(no output)"))
        for v in verdicts
    )
    frames = next((v.media_sent.get("frame_indices") for v in verdicts if v.media_sent), None) or ()
    return JudgeItemView("  ·  ".join(parts), rationale, what_the_judge_saw(verdicts), tuple(frames))


def what_the_judge_saw(verdicts: Sequence[VerdictRecord]) -> str:
    """Image sizes and video frames as the processor fed them, and the first error."""
    media = next((v.media_sent for v in verdicts if v.media_sent), None) or {}
    parts = []
    if media.get("images"):
        parts.append("images sent: " + ", ".join(f"{w}×{h}" for w, h in media["images"]))
    frames = media.get("video_frames") or media.get("frames")
    if frames:
        w, h = frames[0]
        fed = " as fed to the model" if media.get("video_frames") else ""
        indices = media.get("frame_indices")
        listed = f" (video frames {', '.join(str(i + 1) for i in indices)})" if indices else ""
        parts.append(f"{len(frames)} frames at {w}×{h}{fed}{listed}")
    if media.get("processor"):
        parts.append(f"processor input: {media['processor']}")
    errors = [v.error for v in verdicts if v.error]
    if errors:
        parts.append(f"errors: {errors[0]}")
    return "   ".join(parts)
