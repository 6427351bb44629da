"""Which judge run a reader means: the run catalog the window's run picker and
``pairscope info`` list, and the default run when none was chosen.

The default is the run that judged the most items (the newest among equals): a one-item
run made while trying a template must not hide the 44-item batch run before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from ..store import RunRecord, Store


@dataclass(frozen=True)
class RunChoice:
    """One judge run as a person picks it: model, mode, K, date and size."""

    id: int
    model: str
    backend: str
    mode: str
    k: int
    both_orders: bool
    created_at: str
    items: int
    status: str
    parser: str

    @property
    def date(self) -> str:
        """``2026-11-30 14:02`` (the stored time is ISO 8601, UTC)."""
        return self.created_at[:16].replace("T", " ")

    def label(self) -> str:
        """``Run 3 · qwen2-vl-2b · pairwise · K=5 · both orders · 2026-11-30 14:02 · 44 items``"""
        parts = [f"Run {self.id}", self.model, self.mode, f"K={self.k}"]
        if self.both_orders:
            parts.append("both orders")
        parts += [self.date, f"{self.items} item{'s' if self.items != 1 else ''}"]
        if self.status not in ("done", "running"):
            parts.append(self.status)
        return " · ".join(parts)

    def as_dict(self) -> dict:
        """The fields ``pairscope info --json`` prints."""
        return {
            "id": self.id,
            "model": self.model,
            "backend": self.backend,
            "mode": self.mode,
            "k": self.k,
            "both_orders": self.both_orders,
            "created_at": self.created_at,
            "items": self.items,
            "status": self.status,
            "parser": self.parser,
        }


def model_name(run: RunRecord) -> str:
    """The short name of a run's model: a folder's last part, else the served or given name."""
    path = run.model_path.rstrip("/\\")
    return PurePath(path).name or path if ("/" in path or "\\" in path) else path


def run_choices(store: Store) -> list[RunChoice]:
    """Every judge run of the project, oldest first, with the number of items it judged."""
    counts = store.run_item_counts()
    return [
        RunChoice(
            run.id,
            model_name(run),
            run.backend,
            run.mode,
            run.k,
            run.both_orders,
            run.created_at,
            counts.get(run.id, 0),
            run.status,
            run.parser,
        )
        for run in store.runs()
    ]


def default_run(choices: list[RunChoice]) -> RunChoice | None:
    """The run that judged the most items (the newest among equals); None without runs."""
    return max(choices, key=lambda c: (c.items, c.id), default=None)


def pick_run(choices: list[RunChoice], wanted: int | None) -> RunChoice | None:
    """``wanted`` when it is still a run of the project, else :func:`default_run`."""
    return next((c for c in choices if c.id == wanted), None) or default_run(choices)


__all__ = ["RunChoice", "run_choices", "default_run", "pick_run", "model_name"]
