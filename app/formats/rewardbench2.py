"""RewardBench 2 (allenai/reward-bench-2): rows ``id, prompt, chosen[], rejected[],
num_correct, num_rejected, total_completions, models, subset``.

Responses are the chosen ones then the rejected ones (``num_correct`` chosen, normally one of
four). The reference is a ranking with ties (``Reference.ranks``, ``items.ref_ranks``): every
chosen response ranks 1, every rejected one 2 (``(1, 2, 2, 2)``; the Ties subset's several
chosen tie at the top, ``(1, 1, 1, 2)``). The reference ranking (``chosen``) holds the chosen
response when there is one; with several chosen no single best is recorded. ``chosen`` and
``rejected`` stay in the fields verbatim. The category is ``subset``.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..records import Item, Reference, Response
from .base import (
    ImportContext,
    ParsedRow,
    RowProblem,
    RowReader,
    expect_str,
    expect_str_list,
    item_id_of,
    optional_str,
    parse_rows,
    read_jsonl,
    register,
)

ALIASES = {
    "id": ("id",),
    "prompt": ("prompt",),
    "subset": ("subset",),
}


def build_item(ctx: ImportContext, reader: RowReader, line: int, row: dict) -> Item:
    """Build an :class:`Item` from one RewardBench 2 row."""
    ext_id = item_id_of(reader.get(row, "id"), line)
    prompt = expect_str(reader.get(row, "prompt"), "prompt")
    chosen = expect_str_list(row.get("chosen"), "chosen", min_len=1)
    rejected = expect_str_list(row.get("rejected"), "rejected", min_len=1)
    num_correct = row.get("num_correct")
    if num_correct is not None and num_correct != len(chosen):
        raise RowProblem(f"num_correct is {num_correct} but chosen has {len(chosen)} responses")
    total = row.get("total_completions")
    if total is not None and total != len(chosen) + len(rejected):
        raise RowProblem(f"total_completions is {total} but chosen + rejected hold {len(chosen) + len(rejected)}")
    texts = chosen + rejected
    models = row.get("models")
    if not (isinstance(models, list) and len(models) == len(texts) and all(type(m) is str for m in models)):
        models = [None] * len(texts)
    subset = optional_str(reader.get(row, "subset"), "subset")
    extra = reader.extra(row)
    if len(chosen) > 1:
        ranking = None
        ctx.warn(line, f"{len(chosen)} chosen responses: no single reference best recorded", ext_id)
    else:
        ranking = (0,)
    ranks = (1,) * len(chosen) + (2,) * len(rejected)
    return Item(
        ext_id=ext_id,
        prompt=prompt,
        responses=tuple(Response(i, t, m) for i, (t, m) in enumerate(zip(texts, models))),
        category=(subset or "general").lower(),
        subset=subset,
        source_format="rewardbench2",
        reference=Reference(ranking=ranking, ranks=ranks),
        extra=extra,
    )


def _sniff(row: dict) -> bool:
    return isinstance(row.get("chosen"), list) and isinstance(row.get("rejected"), list) and "num_correct" in row


@register(
    "rewardbench2",
    "RewardBench 2 rows: prompt, chosen[] and rejected[] lists, num_correct, total_completions, subset",
    sniff=_sniff,
)
def parse(ctx: ImportContext) -> Iterator[ParsedRow]:
    reader = RowReader(ctx, ALIASES)
    return parse_rows(ctx, read_jsonl(ctx.path), lambda line, row: build_item(ctx, reader, line, row))
