"""Benchmark vocabularies: VL-RewardBench categories and the error-type taxonomy."""

from __future__ import annotations

import re
from functools import lru_cache

from .records import VIDEOREWARDBENCH_DIMENSIONS, ErrorTag

# Ordered: the first matching prefix wins.
_CATEGORY_PREFIXES: tuple[tuple[str, str, str], ...] = (
    # (id prefix, category, subset)
    ("RLAIF-", "hallucination", "rlaif-v"),
    ("RLHF-", "hallucination", "rlhf-v"),
    ("hallucination_pair-", "hallucination", "hallucination_pair"),
    ("mathverse", "reasoning", "mathverse"),
    ("mmmu", "reasoning", "mmmu-pro"),
    ("wildvision", "general", "wildvision"),
)

_PREFIX_RE = re.compile("(" + "|".join(re.escape(p) for p, _, _ in _CATEGORY_PREFIXES) + ")", re.I)
_PREFIX_TO_CATEGORY = {p.lower(): (c, s) for p, c, s in _CATEGORY_PREFIXES}
_SUBSET_RE = re.compile(r"^(.*?)[-_]?\d+$")


#: The official scoring script's groups, keyed by the folder in ``image_path``
#: (``images/<subset>/<file>``): ``cal.py`` reads ``image_path.split("/")[1]``.
OFFICIAL_SUBSETS = {
    "vlfeedback": "general",
    "wildvision-battle": "general",
    "povid": "hallucination",
    "rlhf-v": "hallucination",
    "rlaif-v": "hallucination",
    "reasoning_tasks": "reasoning",
}


def vlrewardbench_category(item_id: str, image_path: str | None = None) -> tuple[str, str]:
    """Map a VL-RewardBench item to ``(category, subset)``.

    As the official scoring does, by the subset folder of ``image_path``
    (``images/povid/…`` → hallucination) when it names one of its six subsets; otherwise
    by the id's prefix: ``RLAIF-*``, ``RLHF-*``, ``hallucination_pair-*`` are
    hallucination; ``mathverse_*`` and ``mmmu*`` are reasoning; ``wildvision*`` and
    everything else are general (the subset of an unknown id is its prefix before the
    trailing number). A reasoning item's subset comes from its id (mathverse, mmmu-pro).
    """
    parts = image_path.replace("\\", "/").split("/") if image_path else []
    official = OFFICIAL_SUBSETS.get(parts[1].lower()) if len(parts) > 2 else None
    by_id = _by_prefix(item_id)
    if official is None:
        return by_id
    return official, (by_id[1] if by_id[0] == official else parts[1].lower())


def _by_prefix(item_id: str) -> tuple[str, str]:
    match = _PREFIX_RE.match(item_id)
    if match:
        return _PREFIX_TO_CATEGORY[match.group(1).lower()]
    match = _SUBSET_RE.match(item_id)
    subset = (match.group(1) if match and match.group(1) else item_id) or "unknown"
    return "general", subset.lower()


def strip_image_token(query: str) -> str:
    """Drop the leading ``<image>`` placeholder line that VL-RewardBench queries carry."""
    text = query.lstrip()
    if text.startswith("<image>"):
        return text[len("<image>") :].lstrip("\n").lstrip()
    return query


_KIND_ALIASES = {
    "hallucination": "existence",
    "existence": "existence",
    "object hallucination": "existence",
    "recognition": "recognition",
    "attribute": "attribute",
    "attributes": "attribute",
    "counting": "counting",
    "count": "counting",
    "reasoning": "reasoning",
    "other": "other",
    "others": "other",
}
_TAG_RE = re.compile(r"^\s*([A-Za-z _-]+?)\s*(?:\(([^)]*)\))?\s*(?:[,:;]\s*(.*))?$", re.S)


@lru_cache(maxsize=4096)
def parse_error_tag(raw: str) -> ErrorTag:
    """Map a dataset error tag onto the taxonomy, keeping the raw text.

    ``hallucination`` → existence, ``recognition(text)`` → recognition/text,
    ``others, wrong colour`` → other with note ``wrong colour``. Anything unknown
    becomes ``other`` with the raw text as its note, so nothing is dropped.
    """
    text = str(raw).strip()
    match = _TAG_RE.match(text)
    if match:
        head = match.group(1).strip().lower().replace("_", " ")
        kind = _KIND_ALIASES.get(head)
        if kind is not None:
            subkind = (match.group(2) or "").strip() or None
            note = (match.group(3) or "").strip() or None
            return ErrorTag(kind=kind, subkind=subkind, note=note, raw=text)
    return ErrorTag(kind="other", note=text or None, raw=text)


def parse_error_tags(value) -> tuple[ErrorTag, ...]:
    """Parse a tag field that may be a string, a list of strings, or empty."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return (parse_error_tag(value),)
    if isinstance(value, (list, tuple)):
        # str(): a dict or list inside a tag list is kept as text, never crashes the cache.
        return tuple(parse_error_tag(v if isinstance(v, str) else str(v)) for v in value if v not in (None, ""))
    return (parse_error_tag(str(value)),)


_DIMENSION_ALIASES = {d.replace("-", " ").replace(" ", ""): d for d in VIDEOREWARDBENCH_DIMENSIONS}
_DIMENSION_ALIASES.update({"long": "long-form perception", "short": "short-form perception"})


def video_dimension(value: str | None) -> str:
    """Normalise a VideoRewardBench dimension name (``Long-Form Perception``, ``long_form``…)."""
    if not value:
        return "general"
    key = re.sub(r"[\s_\-]+", "", str(value).lower())
    if key in _DIMENSION_ALIASES:
        return _DIMENSION_ALIASES[key]
    for short, full in _DIMENSION_ALIASES.items():
        if key.startswith(short):
            return full
    return str(value).strip().lower()
