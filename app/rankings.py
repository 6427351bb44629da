"""Rankings of N responses with ties: the one implementation every layer uses.

A ranking is held as **ranks**: one rank per response index, 1 = best, tied responses share a
rank, and ranks are dense (``(2, 1, 2, 3)``: response 1 is best, responses 0 and 2 tie second,
response 3 is last). Three other shapes appear at the edges and are converted here only:

* **groups**: tuples of response indices best first, each tuple one tied group
  (``((1,), (0, 2), (3,))`` for the ranks above) — what an annotator builds with keys;
* **order**: response indices best first, ties broken by index (``(1, 0, 2, 3)``) — the
  ``ranking`` column every older reader knows; ``order[0]`` is the preferred response;
* **text**: ``"R2 > R1 = R3 > R4"`` (1-based, in whatever numbering the caller passes).

The induced pairs of a ranking are every pair of responses: ``(better, worse)`` where the ranks
differ, a tie where they are equal. They are what pairwise accuracy and the TRL export of a
ranking read (:func:`induced_pairs`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .records import Outcome

__all__ = [
    "RankingError",
    "dense_ranks",
    "groups_from_ranks",
    "induced_pairs",
    "order_from_ranks",
    "parse_rank_order",
    "ranking_text",
    "ranked_fields",
    "ranks_from_groups",
    "top_is_tied",
]


class RankingError(ValueError):
    """A ranking that cannot be read: repeated or unknown responses, ranks that are not
    whole numbers ≥ 1."""


def dense_ranks(ranks: Sequence[int]) -> tuple[int, ...]:
    """``ranks`` with gaps closed (``(1, 1, 3, 4)`` → ``(1, 1, 2, 3)``); the order and the ties
    stay. ``RankingError`` for anything but whole numbers ≥ 1."""
    if any(isinstance(r, bool) or not isinstance(r, int) or r < 1 for r in ranks):
        raise RankingError(f"ranks must be whole numbers >= 1 (1 = best), not {list(ranks)}")
    distinct = {r: i for i, r in enumerate(sorted(set(ranks)), start=1)}
    return tuple(distinct[r] for r in ranks)


def ranks_from_groups(groups: Iterable[Iterable[int]], n: int) -> tuple[int, ...]:
    """Ranks of ``n`` responses from tied groups best first. Responses no group names share the
    rank after the last group (a partial ranking leaves them unordered among themselves)."""
    ranks: list[int | None] = [None] * n
    rank = 0
    for group in groups:
        members = tuple(group)
        if not members:
            continue
        rank += 1
        for i in members:
            if not (isinstance(i, int) and 0 <= i < n):
                raise RankingError(f"response {i!r} is not one of the {n} responses")
            if ranks[i] is not None:
                raise RankingError(f"response {i + 1} is ranked twice")
            ranks[i] = rank
    if rank == 0:
        return ()
    return tuple(r if r is not None else rank + 1 for r in ranks)


def groups_from_ranks(ranks: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """Tied groups of response indices, best first (indices ascending within a group)."""
    dense = dense_ranks(ranks)
    return tuple(tuple(i for i, r in enumerate(dense) if r == rank) for rank in range(1, max(dense, default=0) + 1))


def order_from_ranks(ranks: Sequence[int]) -> tuple[int, ...]:
    """Response indices best first, ties broken by index."""
    return tuple(i for group in groups_from_ranks(ranks) for i in group)


def top_is_tied(ranks: Sequence[int]) -> bool:
    """Whether more than one response shares the best rank."""
    return sum(1 for r in ranks if r == min(ranks)) > 1 if ranks else False


def induced_pairs(ranks: Sequence[int]) -> list[tuple[int, int, bool]]:
    """Every pair of responses a ranking decides, as ``(a, b, tied)``: ``a`` ranked above ``b``
    when not tied; when tied, ``a < b``. Pairs are listed by ``(a, b)`` index order of the
    pair, so the list is the same for equal rankings."""
    out: list[tuple[int, int, bool]] = []
    for a in range(len(ranks)):
        for b in range(a + 1, len(ranks)):
            if ranks[a] == ranks[b]:
                out.append((a, b, True))
            elif ranks[a] < ranks[b]:
                out.append((a, b, False))
            else:
                out.append((b, a, False))
    return out


def ranking_text(groups: Sequence[Sequence[int]], *, base: int = 1, prefix: str = "R") -> str:
    """``"R2 > R1 = R3 > R4"`` for tied groups (``base``: the number shown for index 0)."""
    return " > ".join(" = ".join(f"{prefix}{i + base}" for i in group) for group in groups if group)


def parse_rank_order(text: str, names: Sequence[str]) -> tuple[int, ...]:
    """Ranks from a written order such as Potato's ``rank_order: "B,D=A,C"``: names best first,
    ``,`` (or ``>``) between ranks, ``=`` between tied names. ``names`` are the responses' names
    by index; a name is matched exactly, then case-insensitively."""
    lookup = {name: i for i, name in enumerate(names)}
    folded = {name.casefold(): i for i, name in enumerate(names)}
    groups: list[list[int]] = []
    for part in text.replace(">", ",").split(","):
        if not part.strip():
            continue
        group = []
        for name in part.split("="):
            name = name.strip()
            index = lookup.get(name, folded.get(name.casefold()))
            if index is None:
                raise RankingError(f"{name!r} in {text!r} is not one of {list(names)}")
            group.append(index)
        groups.append(group)
    return ranks_from_groups(groups, len(names))


def ranked_fields(ranks: Sequence[int]) -> tuple[Outcome, tuple[int, ...], tuple[int, ...]]:
    """``(outcome, ranking, ranks)`` of a label that ranks its responses: ``prefer`` when one
    response is best, ``tie`` when the best is shared; ``ranking`` is the order of the dense
    ranks. A label stores exactly these (``Store.add_label`` refuses any other combination)."""
    dense = dense_ranks(ranks)
    if len(dense) < 2:
        raise RankingError(f"a ranking orders two or more responses, not {list(ranks)}")
    outcome: Outcome = "tie" if top_is_tied(dense) else "prefer"
    return outcome, order_from_ranks(dense), dense
