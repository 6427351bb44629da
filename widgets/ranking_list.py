"""The ranking an annotator builds for an item with more than two responses, shown as a list.

Keys build ``LabelDraft.rank_groups`` (tied groups of screen positions, best first; the
labeling session maps them to response indices through the display order):

- a response key puts that response next; the first press puts it first (as "best of" did);
- ``=`` ties the next response pressed with the previous one (3, 1, =, 4, 2 → R3 > R1 = R4 > R2);
- pressing a response already ranked starts a new ranking from it;
- Backspace takes back the last response ranked.

Responses not ranked yet share the last place. A stored ranking names them as its last group
(``label_to_draft``); :func:`settled` reads that group as "not ranked yet", the same ranking.
The list numbers places as a ranked list does: "1. R3  2. R1 = R4  4. R2".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from PySide6.QtWidgets import QVBoxLayout, QWidget

from pairscope.app.records import LabelDraft, Outcome

from .plain_text import plain_label

Groups = tuple[tuple[int, ...], ...]


def settled(groups: Groups, n: int) -> Groups:
    """``groups`` without a last group that names exactly the responses the others leave out
    (a stored ranking names them; one being built leaves them out): the same ranking."""
    groups = tuple(g for g in groups if g)
    if len(groups) > 1:
        earlier = {p for g in groups[:-1] for p in g}
        if set(groups[-1]) == set(range(1, n + 1)) - earlier:
            return groups[:-1]
    return groups


def pressed(groups: Groups, position: int, n: int, tie: bool = False) -> Groups:
    """The ranking after pressing the response at screen ``position``: next after the ranked
    ones (``tie``: in the last group), or a new ranking from it when it is already ranked."""
    groups = settled(groups, n)
    if not groups or any(position in g for g in groups):
        return ((position,),)
    if tie:
        return (*groups[:-1], (*groups[-1], position))
    return (*groups, (position,))


def taken_back(groups: Groups) -> Groups:
    """The ranking without the response ranked last. (A stored ranking's "not ranked yet"
    group never gets here: ``screen_groups`` leaves it out.)"""
    raw = tuple(g for g in groups if g)
    if not raw:
        return ()
    last = raw[-1][:-1]
    return (*raw[:-1], last) if last else raw[:-1]


def current_groups(draft: LabelDraft) -> Groups:
    """The ranking a draft holds; a "best of" preference (an older label) is a ranking of one."""
    if draft.rank_groups:
        return draft.rank_groups
    if draft.outcome == "prefer" and draft.preferred_position:
        return ((draft.preferred_position,),)
    return ()


def best_positions(draft: LabelDraft) -> tuple[int, ...]:
    """The screen positions a draft holds best: its ranking's first group, else the preferred one."""
    groups = current_groups(draft)
    return groups[0] if groups else ()


def ranked_draft(base: LabelDraft, groups: Groups) -> LabelDraft:
    """``base`` holding the ranking ``groups``: its best is the preferred response (a tie when
    the best is shared); strength stays while one response is best; discard reasons go."""
    top = groups[0] if groups else ()
    if len(top) == 1:
        strength = base.strength if base.outcome == "prefer" else None
        return replace(
            base, rank_groups=groups, outcome="prefer", preferred_position=top[0], strength=strength, discard_reasons=()
        )
    outcome: Outcome | None = "tie" if top else None
    return replace(
        base, rank_groups=groups, outcome=outcome, preferred_position=None, strength=None, discard_reasons=()
    )


def places(groups: Groups, n: int) -> list[tuple[int, str, bool]]:
    """``(place, "R1 = R4", not ranked yet)`` per line of the list: tied responses share a
    place, the next place skips theirs; two or more responses not ranked yet share the last."""
    out: list[tuple[int, str, bool]] = []
    place, ranked = 1, set[int]()
    for group in settled(groups, n):
        out.append((place, " = ".join(f"R{p}" for p in sorted(group)), False))
        place += len(group)
        ranked.update(group)
    rest = [p for p in range(1, n + 1) if p not in ranked]
    if out and rest:
        out.append((place, " = ".join(f"R{p}" for p in rest), len(rest) > 1))
    return out


class RankingList(QWidget):
    """The ranking being built, as a ranked list, and the rules the keys follow. ``draft`` reads
    the panel's draft, ``commit`` stores a new one (the panel's; it emits ``changed``). Shown
    only for items with more than two responses (:meth:`show_draft`)."""

    def __init__(
        self, draft: Callable[[], LabelDraft], commit: Callable[[LabelDraft], bool], parent: QWidget | None = None
    ):
        super().__init__(parent)
        self._draft, self._commit = draft, commit
        self._n = 0
        self._groups: Groups = ()
        self._tie = False  # "=" pressed: the next response ties with the last ranked
        self.heading = plain_label("Ranking")
        self.heading.setProperty("role", "heading")
        self.list = plain_label()
        self.rest = plain_label(word_wrap=True)
        self.keys = plain_label(word_wrap=True)
        for label in (self.rest, self.keys):
            label.setProperty("role", "hint")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        for label in (self.heading, self.list, self.rest, self.keys):
            layout.addWidget(label)
        self.set_keys("=", "Backspace")
        self.hide()

    def set_keys(self, tie: str, back: str) -> None:
        """The keys the hint names (the window's keymap)."""
        self.keys.setText(f"Press the responses best first · {tie} ties the next with the previous · {back} takes back")

    @property
    def tie_pending(self) -> bool:
        """Whether ``=`` was pressed: the next response pressed ties with the last ranked."""
        return self._tie

    def press(self, position: int) -> bool:
        """Rank the response at screen ``position`` (see the module doc); True if it changed."""
        base = self._draft()
        groups = pressed(current_groups(base), position, self._n, self._tie)
        self._tie = False
        return self._store(ranked_draft(base, groups))

    def tie_next(self) -> bool:
        """``=``: tie the next response pressed with the last ranked (nothing is stored yet)."""
        if self._n < 3 or not settled(current_groups(self._draft()), self._n):
            return False
        self._tie = True
        self._render()
        return True

    def take_back(self) -> bool:
        """Backspace: take back the response ranked last; True if the draft changed."""
        if self._n < 3:
            return False
        base = self._draft()
        self._tie = False
        return self._store(ranked_draft(base, taken_back(current_groups(base))))

    def _store(self, draft: LabelDraft) -> bool:
        changed = self._commit(draft)
        if not changed:  # the panel renders a change; a pending tie may still have gone
            self._render()
        return changed

    def show_draft(self, draft: LabelDraft, n: int) -> None:
        """Show ``draft``'s ranking for ``n`` responses (hidden for two or fewer). A ranking
        other than the one ``=`` was pressed on drops the pending tie."""
        groups = current_groups(draft)
        if groups != self._groups or n != self._n:
            self._tie = False
        self._groups, self._n = groups, n
        self.setVisible(n > 2)
        self._render()

    def _render(self) -> None:
        lines = places(self._groups, self._n)
        ranked = [f"{place}.  {names}" for place, names, unranked in lines if not unranked]
        if ranked and self._tie:
            ranked[-1] += " = …"
        self.list.setText("\n".join(ranked) if ranked else "Nothing ranked yet")
        rest = [f"{place}.  {names}  (not ranked yet, tied last)" for place, names, unranked in lines if unranked]
        self.rest.setText("\n".join(rest))
        self.rest.setVisible(bool(rest))

    def text(self) -> str:
        """The list on one line, e.g. ``1. R3  2. R1 = R4  4. R2``."""
        return "  ".join(f"{place}. {names}" for place, names, _ in places(self._groups, self._n))


__all__ = [
    "RankingList",
    "best_positions",
    "current_groups",
    "places",
    "pressed",
    "ranked_draft",
    "settled",
    "taken_back",
]
