"""Plain records shared by the store, the formats, the CLI and the widgets.

Records are immutable dataclasses with no behaviour beyond small derived views; they
never touch SQLite or Qt, so widgets may import this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

MediaKind = Literal["image", "video"]
#: ``unrated``: a label with no preference (only step marks, error types or a note);
#: ``cleared``: the annotator removed their label.
Outcome = Literal["prefer", "tie", "both_bad", "discard", "unrated", "cleared"]

#: Category names used across VL-RewardBench and VideoRewardBench.
VLREWARDBENCH_CATEGORIES = ("general", "hallucination", "reasoning")
VIDEOREWARDBENCH_DIMENSIONS = (
    "long-form perception",
    "short-form perception",
    "knowledge",
    "reasoning",
    "safety",
)

#: Error-type taxonomy (DESIGN.md): the kind of error the worse response makes.
ERROR_KINDS = ("existence", "recognition", "attribute", "counting", "reasoning", "other")

#: Sub-kinds offered for a recognition error.
RECOGNITION_SUBKINDS = ("object", "text", "scene", "person", "action")

#: Why an annotator may discard a pair (VL-RewardBench's verification rules).
DISCARD_REASONS = ("both_wrong", "style_or_length_only", "media_unusable", "needs_expert", "other")

#: How much better the preferred response is.
STRENGTHS = ("slightly", "clearly", "much")

#: Error kinds whose box has a free-text field in the built-in schema.
FREE_TEXT_ERROR_KINDS = ("other",)

#: The built-in label schema (version 1; ``app/labeling/schema.py``): the seed taxonomies above
#: with, per entry, ``(name, button label, key, description)``. Labels store the name.
DEFAULT_STRENGTH_CHOICES = (
    ("slightly", "Slightly", "A", "Slightly better"),
    ("clearly", "Clearly", "S", "Clearly better"),
    ("much", "Much better", "D", "Much better"),
)
DEFAULT_ERROR_CHOICES = (
    ("existence", "Existence", "Ctrl+1", "existence (hallucinated object)"),
    ("recognition", "Recognition", "Ctrl+2", "recognition"),
    ("attribute", "Attribute", "Ctrl+3", "attribute"),
    ("counting", "Counting", "Ctrl+4", "counting"),
    ("reasoning", "Reasoning", "Ctrl+5", "reasoning"),
    ("other", "Other", "Ctrl+6", "other"),
)
DEFAULT_DISCARD_CHOICES = (
    ("both_wrong", "Both wrong", "Alt+1", "both wrong"),
    ("style_or_length_only", "Only style or length differs", "Alt+2", "only style or length differs"),
    ("media_unusable", "Media unusable", "Alt+3", "media unusable"),
    ("needs_expert", "Needs expert knowledge", "Alt+4", "needs expert knowledge"),
    ("other", "Other", "Alt+5", "other"),
)


@dataclass(frozen=True)
class Choice:
    """One entry of a label schema section. ``name`` is what labels store; the rest is display."""

    name: str
    label: str
    key: str | None = None
    description: str = ""
    subkinds: tuple[str, ...] = ()
    free_text: bool = False


def _seeded(rows: tuple[tuple[str, str, str, str], ...], section: str) -> tuple[Choice, ...]:
    return tuple(
        Choice(
            name,
            label,
            key,
            description,
            RECOGNITION_SUBKINDS if section == "error_types" and name == "recognition" else (),
            section == "error_types" and name in FREE_TEXT_ERROR_KINDS,
        )
        for name, label, key, description in rows
    )


#: The built-in schema's entries per section (``app.labeling.schema.DEFAULT_SCHEMA`` holds them).
DEFAULT_CHOICES: dict[str, tuple[Choice, ...]] = {
    "strengths": _seeded(DEFAULT_STRENGTH_CHOICES, "strengths"),
    "error_types": _seeded(DEFAULT_ERROR_CHOICES, "error_types"),
    "discard_reasons": _seeded(DEFAULT_DISCARD_CHOICES, "discard_reasons"),
}


@dataclass(frozen=True)
class Step:
    """One reasoning step of a response; ``correct`` is the dataset's reference mark."""

    text: str
    correct: bool | None = None


@dataclass(frozen=True)
class Response:
    """A candidate response; ``index`` is its position in the dataset, never a screen side."""

    index: int
    text: str
    model: str | None = None
    steps: tuple[Step, ...] = ()

    @property
    def word_count(self) -> int:
        return len(self.text.split())


@dataclass(frozen=True)
class MediaRef:
    """A reference to an image or video.

    ``ref`` is the path exactly as the dataset wrote it; ``path`` is where PairScope found
    the file (absolute, or relative to the project's folder), ``None`` when it is missing.
    ``problem`` says why the file cannot be used.
    """

    kind: MediaKind
    ref: str
    path: str | None = None
    problem: str | None = None

    @property
    def missing(self) -> bool:
        return self.path is None


@dataclass(frozen=True)
class ErrorTag:
    """An error type in PairScope's taxonomy, with the dataset's raw tag kept verbatim."""

    kind: str
    subkind: str | None = None
    note: str | None = None
    raw: str | None = None

    def label(self) -> str:
        """Human-readable form, e.g. ``recognition(text)`` or ``other: wrong colour``."""
        text = f"{self.kind}({self.subkind})" if self.subkind else self.kind
        return f"{text}: {self.note}" if self.note else text


@dataclass(frozen=True)
class Reference:
    """What the dataset itself says about an item (hidden from annotators while labeling).

    ``ranking`` lists response indices best first (``(0, 1)``: response 0 is preferred);
    ``chosen`` is ``ranking[0]`` when a ranking exists. ``ranks``: a full reference ranking
    with ties (one dense rank per response, 1 = best; ``app.rankings``), empty when the dataset
    gives none beyond ``ranking``; with ranks, ``ranking`` is their order, its start (RewardBench 2:
    the chosen response), or ``None`` where the dataset's own rule names no preferred response.
    """

    ranking: tuple[int, ...] | None = None
    strength: str | None = None
    error_tags: tuple[ErrorTag, ...] = ()
    ground_truth: str | None = None
    ranks: tuple[int, ...] = ()

    @property
    def chosen(self) -> int | None:
        return self.ranking[0] if self.ranking else None


@dataclass(frozen=True)
class Item:
    """A prompt, its media and two or more responses, plus the dataset's reference.

    ``ext_id`` is the item's display id, unique in a project: the dataset's own id, or, when
    the dataset repeats an id with different content, that id plus ``#2``, ``#3``… in file
    order; ``source_id`` then holds the dataset's id verbatim (``None`` when it equals
    ``ext_id``). ``id`` is the store's key, ``None`` before the item is stored. ``extra`` holds
    every field of the source row that PairScope does not interpret, verbatim, so exports lose
    nothing.
    """

    ext_id: str
    prompt: str
    responses: tuple[Response, ...]
    media: tuple[MediaRef, ...] = ()
    category: str = "general"
    subset: str | None = None
    source_format: str = "jsonl"
    prompt_raw: str | None = None
    reference: Reference = field(default_factory=Reference)
    extra: dict[str, Any] = field(default_factory=dict)
    id: int | None = None
    source_id: str | None = None

    @property
    def stored_id(self) -> int:
        """The project's id of an item read from a store (``ValueError`` before it is stored)."""
        if self.id is None:
            raise ValueError(f"item {self.ext_id!r} is not stored in a project yet")
        return self.id

    @property
    def dataset_id(self) -> str:
        """The id exactly as the dataset wrote it (what exports write back)."""
        return self.ext_id if self.source_id is None else self.source_id

    @property
    def media_kind(self) -> str:
        kinds = {m.kind for m in self.media}
        if not kinds:
            return "none"
        return "video" if "video" in kinds else "image"

    @property
    def is_stepwise(self) -> bool:
        return any(r.steps for r in self.responses)


@dataclass(frozen=True)
class ItemSummary:
    """One row of the item table: enough to list and filter without loading the item."""

    id: int
    ext_id: str
    category: str
    subset: str | None
    media_kind: str
    n_responses: int
    prompt_preview: str
    missing_media: int


@dataclass(frozen=True)
class TableRow:
    """An item-table row for one annotator: the item plus their own label, blind
    (``own_label`` is in screen terms, e.g. ``R2 clearly``)."""

    summary: ItemSummary
    status: str
    own_label: str


FILTER_STATUSES = ("labeled", "unlabeled", "adjudicated", "not_adjudicated")
LABEL_KINDS = ("label", "adjudication")

#: The item-verdict conventions, by name (the rules are ``app.judge.votes``): the one list the
#: CLI, the statistics and the window offer.
CONVENTIONS = ("official", "plurality")
DEFAULT_CONVENTION = "official"
#: The version of the vote rule the stored item verdicts (``judge_items``) were decided under:
#: 2 = VL-RewardBench's cal.py, a majority of the samples present (failed and missing samples
#: are out of K). A project decided under an older rule has them decided again when opened for
#: writing (``app.project.open_project``).
ITEM_VERDICT_RULE = 2
#: The scoring conventions of ``app.stats.conventions`` (one per toolkit), by name: what
#: ``pairscope stats --convention`` offers and the "score as" table lists, in that order. The vote
#: names above stay aliases: ``official`` is ``vlrewardbench`` (cal.py's majority of the samples present).
SCORING_CONVENTIONS = (
    "vlrewardbench",
    "vlmevalkit",
    "lmms-eval",
    "mmrb",
    "mm-rlhf",
    "rewardbench2",
    "videoalign",
    "plurality",
)
CONVENTION_ALIASES = {"official": "vlrewardbench"}
FILTER_JUDGE = ("wrong", "right", "undecided", "unparsed", "failed", "inconsistent", "confident_wrong")
FILTER_DISAGREEMENTS = ("annotators", "reference")
FILTER_ERROR_SOURCES = ("any", "reference", "labels")


@dataclass(frozen=True)
class ItemFilter:
    """Which items the item table shows: every field that is set must hold (AND); a field
    at its default is off. A *current label* is the newest ``kind='label'`` row per (item,
    annotator), none when that row is ``cleared``; a *current adjudication* likewise among
    ``kind='adjudication'`` rows.

    - ``text``: every word occurs in the prompt or a response (full-text; case and
      accents ignored; a word of 3+ characters matches as a prefix: ``circ`` finds
      "circles", shorter ones as whole words; ``"two circles"`` in quotes is an exact
      phrase; operators and punctuation are plain text), **or** the whole text occurs in
      the item's ``ext_id`` (a substring, as typed).
    - ``category``: the item's category.
    - ``status``: ``labeled``/``unlabeled``: has / lacks a current label of ``annotator``
      (of anyone when ``annotator`` is ``None``), or with ``label_kind="adjudication"`` a
      current adjudication of ``annotator`` (an adjudicator's own progress);
      ``adjudicated``/``not_adjudicated``: has / lacks a current adjudication (by anyone).
    - ``judge_run``: items with a stored verdict in that run; with ``judge`` (runs whose
      mode votes on preferences — pairwise, pointwise; step runs select nothing):
      ``right``/``wrong``: the run's item verdict under the official vote (a response named
      by more than half of the K samples, ``app.judge.votes``) equals / differs from the
      dataset's ``ref_chosen`` (items without a reference are neither); ``undecided`` (alias
      ``unparsed``): judged, but no majority; ``failed``: some sample of the item failed
      (missing media, out of memory, endpoint error); ``inconsistent``: a both-orders run
      where some sample's two orders (samples 2j and 2j+1) gave different verdicts (a
      judged tie counts as a verdict); ``confident_wrong``: ``wrong`` items that have an item
      confidence (``app.judge.confidence``), listed most confident first (not in store order),
      so the worst failures come first.
    - ``disagreement``: ``annotators``: at least two current labels that state a
      preference (a response, tie or both bad; discard and unrated labels do not count)
      and they differ; ``reference``: a current ``prefer`` label of ``annotator`` (of
      anyone when ``None``) names another response than ``ref_chosen``.
    - ``error_type``: an error kind (``ErrorTag.kind``, e.g. ``counting``), found per
      ``error_source``: ``reference`` (the dataset's error tags), ``labels`` (any
      annotator's current label) or ``any`` (either; the default).
    - ``discard_reason``: some current label lists it among its discard reasons.
    - ``collection``: the item is in the collection of that name.
    """

    category: str | None = None
    text: str = ""
    status: str | None = None
    annotator: str | None = None
    judge_run: int | None = None
    judge: str | None = None
    disagreement: str | None = None
    error_type: str | None = None
    error_source: str = "any"
    discard_reason: str | None = None
    collection: str | None = None
    label_kind: str = "label"
    #: ``item_ids``: only these items (the window's "Suspect reference" filter: the suspect
    #: queue of ``app.stats.suspects``, computed off the GUI thread); ``None``: off.
    item_ids: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        for name, allowed in (
            ("status", FILTER_STATUSES),
            ("judge", FILTER_JUDGE),
            ("disagreement", FILTER_DISAGREEMENTS),
            ("error_source", FILTER_ERROR_SOURCES),
            ("label_kind", LABEL_KINDS),
        ):
            value = getattr(self, name)
            if value is not None and value not in allowed:
                raise ValueError(f"ItemFilter.{name} must be one of {', '.join(allowed)} or None, got {value!r}")
        if self.judge is not None and self.judge_run is None:
            raise ValueError("ItemFilter.judge needs judge_run (the run whose verdicts to use)")


@dataclass(frozen=True)
class Label:
    """An annotator's judgement of one item. Append-only: a change is a new Label.

    ``ranking`` holds response indices best first (never screen sides); ``display_order``
    is the response order the annotator saw. ``kind`` is ``"label"`` or
    ``"adjudication"``. ``ranks`` is a full ranking of an N-response item with ties (one dense
    rank per response index, 1 = best; ``app.rankings``), empty for a label that ranks
    nothing; with ranks, ``ranking`` is their order and the outcome ``prefer`` (one best) or
    ``tie`` (the best shared) — :func:`app.rankings.ranked_fields`.
    """

    item_id: int
    annotator: str
    outcome: Outcome
    ranking: tuple[int, ...] = ()
    strength: str | None = None
    error_types: tuple[ErrorTag, ...] = ()
    discard_reasons: tuple[str, ...] = ()
    note: str = ""
    display_order: tuple[int, ...] = ()
    step_marks: tuple[tuple[int, int, bool], ...] = ()
    kind: str = "label"
    uuid: str | None = None
    created_at: str | None = None
    #: milliseconds the item was on screen, focused, with the annotator active, before this
    #: label was saved (``labeling.active_time``); ``None``: not measured
    active_ms: int | None = None
    ranks: tuple[int, ...] = ()

    @property
    def preferred(self) -> int | None:
        return self.ranking[0] if self.outcome == "prefer" and self.ranking else None

    @property
    def is_labeled(self) -> bool:
        """Whether this label, as an item's current one, makes the item labeled: it states a
        preference, a tie, both bad or a discard, or marks steps; error types or a note alone
        do not. Its twin in the store is ``label_current.labeled`` (schema 5's trigger; a test
        holds them equal)."""
        return self.outcome in LABELED_OUTCOMES or (self.outcome == "unrated" and bool(self.step_marks))


#: Outcomes that make a label count: the item is labeled by them alone (``unrated`` only with
#: step marks; ``cleared`` never). The one definition: exports, the queue and the store's SQL
#: read it (the trigger of migration 5 states it frozen, tests/test_migrations.py holds it equal).
LABELED_OUTCOMES = ("prefer", "tie", "both_bad", "discard")
#: Outcomes that state a preference (a response, a tie or both bad): the labeled ones but discard.
STATED_OUTCOMES = tuple(o for o in LABELED_OUTCOMES if o != "discard")


@dataclass(frozen=True)
class LabelDraft:
    """What the label panel shows and edits, in *screen* terms: ``preferred_position`` and
    the first element of each step mark are 1-based positions as displayed, never
    response indices (the labeling session maps them through the display order).

    ``step_marks`` holds ``(screen position, step index, correct)``. ``rank_groups`` is a
    ranking being built or shown: tied groups of screen positions, best first (``((3,), (1, 4))``:
    response 3 as shown is best, 1 and 4 tie next); responses no group names share the next rank.
    """

    outcome: Outcome | None = None
    preferred_position: int | None = None
    strength: str | None = None
    error_types: tuple[ErrorTag, ...] = ()
    discard_reasons: tuple[str, ...] = ()
    note: str = ""
    step_marks: tuple[tuple[int, int, bool], ...] = ()
    rank_groups: tuple[tuple[int, ...], ...] = ()

    @property
    def is_empty(self) -> bool:
        return self == LabelDraft()


@dataclass(frozen=True)
class ImportProblem:
    """Something wrong in a source file: where (file:line, item id) and what."""

    file: str
    line: int | None
    message: str
    item_id: str | None = None
    fatal: bool = True

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        item = f" [item {self.item_id}]" if self.item_id else ""
        return f"{where}{item}: {self.message}"


@dataclass
class ImportReport:
    """What one import did: counts per category and every non-fatal problem."""

    source: str
    format: str
    added: int = 0
    unchanged: int = 0
    conflicts: int = 0
    per_category: dict[str, int] = field(default_factory=dict)
    problems: list[ImportProblem] = field(default_factory=list)
    missing_media: int = 0
    #: Rows that repeat an earlier row of the file byte for byte (imported once).
    identical_duplicates: int = 0
    #: ``(display id, dataset id)`` for items whose id the dataset repeats with other content.
    renamed: list[tuple[str, str]] = field(default_factory=list)
    #: Items added without a usable media file, and the first few ``(item, ref)`` of them.
    items_missing_media: int = 0
    missing_examples: list[tuple[str, str]] = field(default_factory=list)
    #: The folder every missing media reference starts with (a hint for ``--media-root``).
    missing_prefix: str | None = None


@dataclass(frozen=True)
class ProjectInfo:
    """Counts that ``pairscope info`` prints."""

    items: int
    categories: dict[str, int]
    responses: int
    labels: int
    annotators: int
    judge_runs: int
    missing_media: int
    schema_version: int
