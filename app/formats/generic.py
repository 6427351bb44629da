"""Generic JSONL: any file whose fields the user names with ``--map field=key``.

Every canonical field's default key is its own name (``prompt``, ``responses``, ``chosen``…),
so a file already using those names needs no mapping.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..rankings import RankingError, dense_ranks, order_from_ranks
from ..records import Item, Reference, Response
from ..taxonomy import parse_error_tags
from .base import (
    ImportContext,
    ParsedRow,
    RowProblem,
    RowReader,
    expect_str,
    optional_str,
    parse_rows,
    read_jsonl,
    register,
    type_name,
)
from .fields import (
    derived_id,
    ext_id_or,
    media_refs,
    no_keys,
    require,
    resolve_media,
    strength_of,
    what,
)
from .messages import shown

FIELDS = (
    "id",
    "prompt",
    "responses",
    "chosen",
    "rejected",
    "ranking",
    "ranks",
    "chosen_index",
    "image",
    "video",
    "category",
    "subset",
    "strength",
    "error_tags",
    "ground_truth",
)
ALIASES = {name: (name,) for name in FIELDS}


def _index_list(value: Any, label: str, n: int) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise RowProblem(f"{label}: expected a non-empty list of response indices, got {type_name(value)}")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int):
            raise RowProblem(f"{label}: expected integer response indices, got {shown(v, quote=True)}")
        if not 0 <= v < n:
            raise RowProblem(f"{label}: index {v} is out of range for {n} responses (0..{n - 1})")
    if len(set(value)) != len(value):
        raise RowProblem(f"{label}: repeats a response index ({shown(value)})")
    return tuple(value)


def _ranking(reader: RowReader, row: dict, n: int) -> tuple[int, ...] | None:
    r_key, r_value = reader.find(row, "ranking")
    c_key, c_value = reader.find(row, "chosen_index")
    ranking = None
    if r_key is not None and r_value is not None:
        ranking = _index_list(r_value, what("ranking", r_key), n)
    if c_key is not None and c_value is not None:
        (chosen,) = _index_list([c_value], what("chosen_index", c_key), n)
        if ranking is not None and ranking[0] != chosen:
            raise RowProblem(f"chosen_index {chosen} disagrees with ranking {shown(list(ranking))}")
        if ranking is None:
            ranking = (chosen, 1 - chosen) if n == 2 else (chosen,)
    return ranking


def _ranks(reader: RowReader, row: dict, n: int, ranking: tuple[int, ...] | None) -> tuple[int, ...]:
    """``ranks``: a rank per response, 1 = best, ties shared (a ``jsonl`` export's ``reference.ranks``);
    ``ranking``, when given too, must be their order (or its start)."""
    key, value = reader.find(row, "ranks")
    if key is None or value is None:
        return ()
    if not (isinstance(value, list) and len(value) == n):
        raise RowProblem(f"{what('ranks', key)}: expected a rank per response ({n}), got {shown(value, quote=True)}")
    try:
        ranks = dense_ranks(value)
    except RankingError as exc:
        raise RowProblem(f"{what('ranks', key)}: {exc}") from None
    if ranking is not None and ranking != order_from_ranks(ranks)[: len(ranking)]:
        raise RowProblem(f"ranking {shown(list(ranking))} is not the order of ranks {shown(value)}")
    return ranks


def _texts(value: Any, label: str) -> list[str]:
    if not isinstance(value, list):
        raise RowProblem(f"{label}: expected a list of response texts, got {type_name(value)}")
    for i, text in enumerate(value):
        if not isinstance(text, str):
            raise RowProblem(f"{label}[{i}]: expected a string, got {type_name(text)}")
    if len(value) < 2:
        raise RowProblem(f"{label}: expected at least 2 responses, got {len(value)}")
    return value


def _responses(reader: RowReader, row: dict) -> tuple[list[str], tuple[int, ...] | None]:
    resp_key, resp_value = reader.find(row, "responses")
    ch_key, ch_value = reader.find(row, "chosen")
    rj_key, rj_value = reader.find(row, "rejected")
    if resp_key is not None:
        if ch_key is not None or rj_key is not None:
            raise RowProblem("responses and chosen/rejected are both present; a row must use one of them")
        texts = _texts(resp_value, what("responses", resp_key))
        return texts, _ranking(reader, row, len(texts))
    if ch_key is None and rj_key is None:
        raise RowProblem(
            f"responses: {no_keys(reader, 'responses')} (nor chosen + rejected) in this row "
            "(use --map responses=KEY, or --map chosen=KEY --map rejected=KEY)"
        )
    if ch_key is None or rj_key is None:
        name = "chosen" if ch_key is None else "rejected"
        raise RowProblem(f"{name}: {no_keys(reader, name)} in this row (use --map {name}=KEY)")
    if reader.find(row, "ranking")[0] or reader.find(row, "chosen_index")[0]:
        raise RowProblem("ranking/chosen_index only apply to a responses list, not to chosen + rejected")
    chosen = expect_str(ch_value, what("chosen", ch_key), allow_empty=True)
    rejected = expect_str(rj_value, what("rejected", rj_key), allow_empty=True)
    return [chosen, rejected], (0, 1)


def _error_tags(reader: RowReader, row: dict):
    key, value = reader.find(row, "error_tags")
    if key is None or value is None:
        return ()
    values = value if isinstance(value, list) else [value]
    if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values):
        raise RowProblem(
            f"{what('error_tags', key)}: expected a tag or a list of tags (strings), got {shown(value, quote=True)}"
        )
    return parse_error_tags([str(v) for v in values])


def build_item(ctx: ImportContext, reader: RowReader, line: int, row: dict) -> Item:
    """Build an :class:`Item` from one generic row."""
    p_key, p_value = require(reader, row, "prompt")
    prompt = expect_str(p_value, what("prompt", p_key))
    texts, ranking = _responses(reader, row)
    refs = {}
    for kind in ("image", "video"):
        key, value = reader.find(row, kind)
        refs[kind] = media_refs(None if key is None else value, what(kind, key or kind))
    ext_id = ext_id_or(reader, row, line, derived_id("jsonl", prompt, texts, refs["image"], refs["video"]))
    media = resolve_media(ctx, line, ext_id, refs["image"], "image") + resolve_media(
        ctx, line, ext_id, refs["video"], "video"
    )

    def opt(name: str) -> str | None:
        key, value = reader.find(row, name)
        return None if key is None else optional_str(value, what(name, key))

    s_key, s_value = reader.find(row, "strength")
    ranks = _ranks(reader, row, len(texts), ranking)
    reference = Reference(
        ranking=ranking,
        ranks=ranks,
        strength=strength_of(s_value, what("strength", s_key or "strength")),
        error_tags=_error_tags(reader, row),
        ground_truth=opt("ground_truth"),
    )
    return Item(
        ext_id=ext_id,
        prompt=prompt,
        responses=tuple(Response(i, t) for i, t in enumerate(texts)),
        media=media,
        category=opt("category") or "general",
        subset=opt("subset"),
        source_format="jsonl",
        reference=reference,
        extra=reader.extra(row),
    )


@register("jsonl", "Any JSONL; name the fields with --map field=key (e.g. --map prompt=question)")
def parse(ctx: ImportContext) -> Iterator[ParsedRow]:
    reader = RowReader(ctx, ALIASES)
    return parse_rows(ctx, read_jsonl(ctx.path), lambda line, row: build_item(ctx, reader, line, row))
