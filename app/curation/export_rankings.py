"""Rankings in the curated export: TRL pairs induced from a ranking, and the ranking releases' rows.

A *full ranking* (:func:`full_ranking`) is the exported preference's ``ranks``
(:class:`~.export_formats.Preference`): one dense rank per response, 1 = best, ties shared — a
ranking label's ``Label.ranks``, or for the reference source the dataset's ``Reference.ranks``.
Without ranks, a ``prefer`` whose ``ranking`` orders every response (or all but the last) is a
full ranking without ties (readers keep a dataset's ties in ``ranks``), and a two-response tie
is ``(1, 1)``. A best-of label naming only the best is not one.

The rules (docs/EXPORT.md, "Rankings"):

- ``trl`` / ``trl-plain``: a two-response item is one row, as always. An item with more
  responses and a full ranking gives **one row per strictly ordered induced pair**
  (:func:`app.rankings.induced_pairs`; tied pairs are left out), ``id`` =
  ``<item id>:<better>><worse>`` (response indices, 0-based as in ``ranking``), in the
  induced pairs' order.
- ``mr2bench``: ``id, prompt, responses, rankings`` (1 = best, ties), ``image``, ``video``
  (path lists), ``category``; rows for items with a full ranking.
- ``rewardbench2``: ``id, prompt, chosen[], rejected[], num_correct, num_rejected,
  total_completions, models, subset``: chosen = rank 1, rejected = the rest, so only a ranking
  of two rank levels fits (or a best-of label naming one best: its other responses are the
  rejected ones); anything else is left out with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..rankings import dense_ranks, induced_pairs, ranks_from_groups

if TYPE_CHECKING:
    from ..records import Label
    from .export_formats import ExportItem

#: Keys the ranking layouts and the readers' format detection read (MM-RLHF's ``*_reason``,
#: Multimodal RewardBench's ``Output1``…): never copied from an item's unknown fields into a
#: ranking layout's row, where they would make it look like another layout.
_LAYOUT_KEYS = frozenset(
    {"responses", "rankings", "chosen", "rejected", "num_correct", "num_rejected", "total_completions", "models"}
    | {"chosen_reason", "rejected_reason", "Output1", "Output2", "Better"}
)


def full_ranking(x: ExportItem) -> tuple[int, ...]:
    """The exported preference as a full ranking with ties (dense ranks per response), or ``()``."""
    pref, n = x.preference, len(x.item.responses)
    if n < 2:
        return ()
    if len(pref.ranks) == n:
        return dense_ranks(pref.ranks)
    if n == 2 and pref.outcome == "tie":
        return (1, 1)
    if pref.outcome == "prefer" and pref.ranking and len(pref.ranking) >= n - 1:  # an order, no ties
        return ranks_from_groups([(i,) for i in pref.ranking], n)
    return ()


def _deciding_labels(x: ExportItem) -> list[Label]:
    """The labels the exported preference was taken from (none for the reference)."""
    if x.preference.source == "adjudication":
        return [x.adjudication] if x.adjudication is not None else []
    return [x.labels[name] for name in x.preference.annotators if name in x.labels]


def no_ranking_reason(x: ExportItem) -> str | None:
    """Why the item has no full ranking to export (``None``: it has one)."""
    pref, n = x.preference, len(x.item.responses)
    if full_ranking(x):
        return None
    if pref.source == "none":
        return pref.missing or "no preference"
    if pref.outcome in ("both_bad", "discard"):
        what = "both responses bad" if pref.outcome == "both_bad" else "discarded"
        return f"{what} — the format needs a ranking"
    if len({label.ranks for label in _deciding_labels(x) if label.ranks}) > 1:
        return "annotators rank the responses differently — the format needs one agreed full ranking"
    named = "only the best named" if pref.preferred is not None else "a tie without ranks"
    return f"no full ranking of the {n} responses ({named}) — the format needs one"


# -- TRL: pairs induced from a ranking -------------------------------------------------------------


def ranked_pairs(ranks: tuple[int, ...]) -> list[tuple[int, int]]:
    """The strictly ordered induced pairs ``(better, worse)`` of a ranking; ties left out."""
    return [(a, b) for a, b, tied in induced_pairs(ranks) if not tied]


def trl_rank_rejects(x: ExportItem, pair_rejects: Callable[[ExportItem], str | None]) -> str | None:
    """Why a TRL format cannot write the item: ``pair_rejects`` for an item of two responses
    (or fewer); for more, why it has no full ranking (annotators disagree, only the best named…),
    a video, or a ranking that orders nothing."""
    n = len(x.item.responses)
    if n <= 2:
        return pair_rejects(x)
    if not full_ranking(x):
        return no_ranking_reason(x)
    if any(m.kind == "video" for m in x.item.media):
        return "TRL rows hold images only; the item has a video"
    if not ranked_pairs(full_ranking(x)):
        return f"every one of the {n} responses is tied — no ordered pair"
    return None


def induced_pair_items(x: ExportItem) -> list[ExportItem]:
    """The rows' items of a TRL export: the item itself (two responses), or one per strictly
    ordered induced pair of its full ranking, each a ``prefer`` of ``(better, worse)`` with the
    row id ``<item id>:<better>><worse>``."""
    if len(x.item.responses) == 2:
        return [x]
    pref = x.preference
    return [
        replace(
            x,
            preference=replace(pref, outcome="prefer", ranking=(better, worse)),
            row_id=f"{x.item.dataset_id}:{better}>{worse}",
        )
        for better, worse in ranked_pairs(full_ranking(x))
    ]


# -- the ranking releases' own rows ------------------------------------------------------------------


def _extra(x: ExportItem, row: dict[str, Any]) -> dict[str, Any]:
    for key, value in x.item.extra.items():
        if key not in _LAYOUT_KEYS:
            row.setdefault(key, value)
    return row


def _own(x: ExportItem, fmt: str, field: str | None) -> str:
    """The item's group as the release names it: its own ``field`` verbatim when it came from
    that release, else PairScope's category."""
    item = x.item
    return field if item.source_format == fmt and field else item.category


def mr2bench_rejects(x: ExportItem) -> str | None:
    return no_ranking_reason(x)


def mr2bench_row(x: ExportItem) -> dict[str, Any]:
    """An MR²Bench-style row: ``id, prompt, responses, rankings`` (1 = best, ties shared),
    ``image`` and ``video`` (lists of paths relative to the export folder), ``category``, plus
    the item's unknown fields verbatim."""
    item = x.item
    row: dict[str, Any] = {
        "id": item.dataset_id,
        "prompt": item.prompt,
        "responses": [r.text for r in item.responses],
        "rankings": list(full_ranking(x)),
        "image": x.media_paths("image"),
        "video": x.media_paths("video"),
        "category": _own(x, "mr2bench", item.subset),
    }
    return _extra(x, row)


def _rb2_split(x: ExportItem) -> tuple[list[int], list[int]] | str:
    """``(chosen, rejected)`` response indices, or why the ranking does not fit."""
    n, ranks = len(x.item.responses), full_ranking(x)
    best = x.preference.preferred
    if not ranks and best is not None and len(x.preference.ranking) == 1:
        if not any(label.ranks for label in _deciding_labels(x)):  # best-of: the best, the rest rejected
            return [best], [i for i in range(n) if i != best]
    if not ranks:
        return no_ranking_reason(x) or "no ranking"
    levels = len(set(ranks))
    if levels != 2:
        what = "every response tied" if levels == 1 else f"{levels} rank levels"
        return f"RewardBench 2 rows hold two rank levels (chosen = rank 1, rejected = the rest); the ranking has {what}"
    return [i for i in range(n) if ranks[i] == 1], [i for i in range(n) if ranks[i] != 1]


def rewardbench2_rejects(x: ExportItem) -> str | None:
    split = _rb2_split(x)
    return split if isinstance(split, str) else None


def rewardbench2_row(x: ExportItem) -> dict[str, Any]:
    """A RewardBench 2 row: ``id, prompt, chosen, rejected`` (response texts: rank 1, the rest),
    ``num_correct, num_rejected, total_completions, models`` (chosen's then rejected's),
    ``subset``; ``image``/``video`` path lists only when the item has media (RewardBench 2 is
    text-only; its reader keeps them as fields), then the item's unknown fields verbatim."""
    split = _rb2_split(x)
    assert not isinstance(split, str), "the format's check turns away items whose ranking does not fit"
    chosen, rejected = split
    item = x.item
    row: dict[str, Any] = {
        "id": item.dataset_id,
        "prompt": item.prompt,
        "chosen": [item.responses[i].text for i in chosen],
        "rejected": [item.responses[i].text for i in rejected],
        "num_correct": len(chosen),
        "num_rejected": len(rejected),
        "total_completions": len(chosen) + len(rejected),
        "models": [item.responses[i].model for i in (*chosen, *rejected)],
        "subset": _own(x, "rewardbench2", item.subset),
    }
    for kind in ("image", "video"):
        if paths := x.media_paths(kind):
            row[kind] = paths
    return _extra(x, row)
