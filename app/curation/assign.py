"""Assigning items to a team with overlap, gold items mixed in, one pack per annotator.

:func:`plan_assignment` is pure: given the items (their categories and how many current
labels each has), who has labeled or still holds what, the annotators and the overlap ``K``,
it decides which new (item, annotator) pairs to issue, seeded. Every item ends with ``K``
annotators who have labeled it or hold it (fewer only when too few annotators are eligible),
and on a fresh assignment the new counts per annotator differ by at most one. An annotator
never gets an item twice; an item already labeled by ``K`` annotators gets nobody new
(top-up never reissues done work). Holders who are not among ``annotators`` any more do not
count: their unlabeled items go to the others.

Strategies differ in the order items are handed out (which matters with ``per_annotator``):
``balanced`` (item order), ``random`` (a seeded shuffle), ``stratified-by-category``
(categories interleaved, each annotator's share balanced within a category too) and
``least-labeled`` (items with the fewest current labels first).

Gold items (``store.assignments.gold_items``) are kept out of the overlap pool; each pack gets
``round(share × n / (1 − share))`` of them (``n``: its regular items), drawn per annotator,
and nothing in the pack tells them apart (the gold table is not packed; items keep store order).

:func:`assign_project` stores the plan (``store.assignments``, one round ``batch``) and writes
each annotator's pack of the items they hold and have not labeled (``teamwork.pack_project``).
"""

from __future__ import annotations

import random
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..project import open_project
from ..store import Store
from ..store.assignments import (
    Assignment,
    GoldItem,
    add_assignments,
    assignments,
    drop_collections_with,
    gold_items,
    item_categories,
    labeled_by,
    references,
)
from ..store.connection import utc_now
from .teamwork import TeamworkError, pack_project

STRATEGIES = ("balanced", "random", "stratified-by-category", "least-labeled")


@dataclass
class AssignResult:
    """What :func:`assign_project` did: the round id, new assignments per annotator (regular
    and gold), the packs written, and items left short of ``K`` (too few eligible annotators)."""

    batch: str
    new: dict[str, int] = field(default_factory=dict)
    gold: dict[str, int] = field(default_factory=dict)
    packs: dict[str, Path] = field(default_factory=dict)
    short: list[int] = field(default_factory=list)

    def lines(self) -> list[str]:
        """What ``pairscope assign`` prints."""
        out = [f"round {self.batch}:"]
        for name in self.new:
            where = f" -> {self.packs[name]}" if name in self.packs else " (nothing new to label)"
            out.append(f"  {name}: {self.new[name]} new items + {self.gold.get(name, 0)} gold{where}")
        if self.short:
            out.append(f"  {len(self.short)} items have fewer annotators than asked (too few eligible)")
        return out


def parse_annotators(text: str) -> list[str]:
    """``a,b,c`` -> names; ``ValueError`` for an empty or repeated name."""
    names = [n.strip() for n in text.split(",")]
    if not names or any(not n for n in names):
        raise ValueError(f"--annotators: names separated by commas, got {text!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"--annotators: a name is given twice in {text!r}")
    return names


def _item_order(
    items: Sequence[int], strategy: str, rng: random.Random, categories: Mapping[int, str], counts: Mapping[int, int]
) -> list[int]:
    ordered = sorted(items)
    if strategy == "random":
        rng.shuffle(ordered)
    elif strategy == "least-labeled":
        rng.shuffle(ordered)
        ordered.sort(key=lambda i: counts.get(i, 0))
    elif strategy == "stratified-by-category":
        by_cat: dict[str, list[int]] = {}
        for i in ordered:
            by_cat.setdefault(categories.get(i, ""), []).append(i)
        for members in by_cat.values():
            rng.shuffle(members)
        ordered = []
        queues = [by_cat[c] for c in sorted(by_cat)]
        while any(queues):
            for q in queues:
                if q:
                    ordered.append(q.pop(0))
    elif strategy != "balanced":
        raise ValueError(f"strategy: choose from {', '.join(STRATEGIES)}, got {strategy!r}")
    return ordered


def plan_assignment(
    items: Sequence[int],
    annotators: Sequence[str],
    overlap: int,
    *,
    strategy: str = "balanced",
    seed: int = 0,
    labeled: Mapping[int, set[str]] | None = None,
    held: Mapping[int, set[str]] | None = None,
    categories: Mapping[int, str] | None = None,
    per_annotator: int | None = None,
) -> tuple[dict[str, list[int]], list[int]]:
    """New items per annotator, and the items left short of ``overlap`` (see the module)."""
    if overlap < 1:
        raise ValueError(f"--overlap: must be 1 or more, got {overlap}")
    if overlap > len(annotators):
        raise ValueError(f"--overlap {overlap} needs at least {overlap} annotators, got {len(annotators)}")
    labeled = labeled or {}
    held = held or {}
    categories = categories or {}
    team = set(annotators)
    rng = random.Random(f"pairscope-assign:{seed}")
    counts = {i: len(labeled.get(i, set())) for i in items}
    order = _item_order(items, strategy, rng, categories, counts)
    load = dict.fromkeys(annotators, 0)
    cat_load: dict[tuple[str, str], int] = {}
    new: dict[str, list[int]] = {a: [] for a in annotators}
    short: list[int] = []
    stratified = strategy == "stratified-by-category"
    for item in order:
        done = labeled.get(item, set())
        holding = (held.get(item, set()) - done) & team
        need = overlap - len(done) - len(holding)
        if need <= 0:
            continue
        cat = categories.get(item, "")
        eligible = [
            a
            for a in annotators
            if a not in done and a not in held.get(item, set()) and (per_annotator is None or load[a] < per_annotator)
        ]
        rng.shuffle(eligible)
        eligible.sort(key=lambda a: ((cat_load.get((a, cat), 0),) if stratified else ()) + (load[a],))
        chosen = eligible[:need]
        if len(chosen) < need:
            short.append(item)
        for a in chosen:
            new[a].append(item)
            load[a] += 1
            cat_load[(a, cat)] = cat_load.get((a, cat), 0) + 1
    return {a: sorted(v) for a, v in new.items()}, sorted(short)


def pack_id_of(pack: Store, store: Store, item_id: int) -> int:
    """The id in ``pack`` of ``store``'s item (matched by dataset id, as a pack keeps it)."""
    found = pack.item_id(store.get_item(item_id).ext_id)
    if found is None:
        raise TeamworkError(f"item {item_id} is missing from {pack.path}")
    return found


def gold_count(regular: int, share: float) -> int:
    """Gold items for a pack of ``regular`` items so that they are ``share`` of it."""
    if not 0 <= share < 1:
        raise ValueError(f"--gold-share: a fraction from 0 to below 1, got {share}")
    return round(share * regular / (1 - share)) if regular else 0


def assign_project(
    store: Store,
    annotators: Sequence[str],
    overlap: int,
    out_dir: str | Path | None,
    *,
    strategy: str = "balanced",
    seed: int = 0,
    collection: str | None = None,
    gold_share: float = 0.0,
    per_annotator: int | None = None,
    force: bool = False,
) -> AssignResult:
    """Plan, store (one round) and pack (``out_dir/<annotator>.pairscope``; ``None``: no packs).

    Checked before anything is written: the strategy, the overlap, the gold share, the collection."""
    if strategy not in STRATEGIES:
        raise ValueError(f"--strategy: choose from {', '.join(STRATEGIES)}, got {strategy!r}")
    gold_count(1, gold_share)  # checks the share
    if collection is not None:
        if collection not in store.collections():
            raise TeamworkError(f"no collection named {collection!r} in {store.path}")
        pool = store.collection_item_ids(collection)
    else:
        pool = sorted(store.item_ids())
    gold = gold_items(store)
    if gold_share and not gold:
        raise ValueError("--gold-share needs gold items: mark some with pairscope gold first")
    regular = [i for i in pool if i not in gold]
    if not regular:
        raise TeamworkError(f"nothing to assign: the selection in {store.path} holds no items that are not gold")
    done = labeled_by(store)
    held: dict[int, set[str]] = {}
    for a in assignments(store):
        held.setdefault(a.item_id, set()).add(a.annotator)
    new, short = plan_assignment(
        regular,
        annotators,
        overlap,
        strategy=strategy,
        seed=seed,
        labeled=done,
        held=held,
        categories=item_categories(store),
        per_annotator=per_annotator,
    )
    rng = random.Random(f"pairscope-gold:{seed}")
    batch = str(uuidlib.uuid4())
    now = utc_now()
    rows: list[Assignment] = []
    result = AssignResult(batch, short=short)
    for name in annotators:
        rows += [Assignment(i, name, batch, now, strategy, seed) for i in new[name]]
        free = sorted(i for i in gold if name not in held.get(i, set()) and name not in done.get(i, set()))
        picked = rng.sample(free, min(len(free), gold_count(len(new[name]), gold_share)))
        rows += [Assignment(i, name, batch, now, strategy, seed, gold=True) for i in sorted(picked)]
        result.new[name], result.gold[name] = len(new[name]), len(picked)
    if out_dir is not None:
        out = Path(out_dir)
        targets = {name: out / f"{name}.pairscope" for name in annotators}
        if not force and (existing := [str(p) for p in targets.values() if p.exists()]):
            raise TeamworkError(f"{', '.join(existing)} already exist; choose another --out or replace them (--force)")
        # The packs first, the round stored after: a failed pack stores nothing and removes the
        # packs this call made.
        pending: dict[str, set[int]] = {name: set() for name in annotators}
        for a in [*assignments(store), *rows]:
            if a.annotator in pending and a.annotator not in done.get(a.item_id, set()):
                pending[a.annotator].add(a.item_id)
        made: list[Path] = []
        try:
            out.mkdir(parents=True, exist_ok=True)
            for name in annotators:
                if todo := sorted(pending[name]):
                    fresh = not targets[name].exists()
                    pack_project(store, targets[name], name, item_ids=todo, force=force)
                    if fresh:
                        made.append(targets[name])
                    if hidden := [i for i in todo if i in gold]:
                        with open_project(targets[name]) as pack:  # no collection in the pack marks its gold items
                            drop_collections_with(pack, {pack_id_of(pack, store, i) for i in hidden})
                    result.packs[name] = targets[name]
        except BaseException:
            for path in made:
                path.unlink(missing_ok=True)
            raise
    add_assignments(store, rows)
    return result


def parse_gold(item_id: int, expect: str) -> GoldItem:
    """A gold item from ``--expect``: a response index, ``tie`` or ``both_bad``."""
    text = expect.strip().lower().replace(" ", "_")
    if text in ("tie", "both_bad"):
        return GoldItem(item_id, text)
    if text.isdigit():
        return GoldItem(item_id, "prefer", int(text))
    raise ValueError(f"--expect: a response index (0, 1, …), tie or both_bad, got {expect!r}")


def gold_from_reference(store: Store, collection: str) -> tuple[list[GoldItem], int]:
    """A collection's items with a dataset reference as gold (expecting the reference's chosen
    response), and how many items had none."""
    if collection not in store.collections():
        raise TeamworkError(f"no collection named {collection!r} in {store.path}")
    ids = store.collection_item_ids(collection)
    refs = references(store, ids)
    gold = [GoldItem(i, "prefer", refs[i], source=f"reference:{collection}") for i in ids if refs.get(i) is not None]
    return gold, len(ids) - len(gold)


__all__ = [
    "STRATEGIES",
    "AssignResult",
    "assign_project",
    "gold_count",
    "gold_from_reference",
    "parse_annotators",
    "parse_gold",
    "plan_assignment",
]
