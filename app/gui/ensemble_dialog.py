"""The "Ensemble…" dialog (Ctrl+Shift+M): pick several judge runs, see each one's accuracy, the
kappa between them and how many judges get items wrong, save the hard set (items at least M of
the N judges fail) as a collection, and make the ensemble drive the review panel and the queue.

The figures are :mod:`pairscope.app.judge.ensemble`'s; this module only lays them out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from pairscope.widgets.plain_text import plain_label
from pairscope.widgets.stat_tables import StatSection

from ..judge.ensemble import Ensemble, build_hard_set, default_min_fail, load_ensemble, save_hard_set
from ..judge.modes import get_mode
from .tasks import BackgroundOp, Task, error_message, own_store

if TYPE_CHECKING:
    from .controller import AnnotationController


def _pct(x: float | None) -> tuple[str, float | None]:
    return ("n/a", None) if x is None else (f"{100 * x:.1f}%", x)


def _kappa(x: float) -> tuple[str, float | None]:
    return ("n/a", None) if np.isnan(x) else (f"{x:.3f}", x)


def _read(project: Path, readonly: bool, run_ids: list[int], task: Task) -> tuple[Ensemble, dict]:
    """The ensemble of these runs and its kappa matrix (off the GUI thread, through a
    connection of its own: a few thousand items per run take a second or more)."""
    with own_store(project, readonly) as store:
        ensemble = load_ensemble(store, run_ids)
    task.check()
    return ensemble, ensemble.kappa()


class EnsembleDialog(QDialog):
    """Runs with checkboxes, the ensemble's tables, the hard-set builder. ``applied`` (the run
    ids) asks the window to show the review panel, which now reads them."""

    applied = Signal(list)

    def __init__(self, controller: AnnotationController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        self.setWindowTitle("Ensemble — judge runs read together")
        self.ensemble: Ensemble | None = None
        self._op: BackgroundOp | None = None
        self.runs = QListWidget()
        self.runs.setToolTip("The judges of the ensemble (runs that cast preference votes)")
        chosen = set(self.controller.ensemble)
        for choice in self.controller.runs():
            item = QListWidgetItem(choice.label())
            item.setData(Qt.ItemDataRole.UserRole, choice.id)
            votes = get_mode(choice.mode).votes_on_preference
            flags = item.flags() | Qt.ItemFlag.ItemIsUserCheckable
            item.setFlags(flags if votes else flags & ~Qt.ItemFlag.ItemIsEnabled)
            checked = choice.id in chosen if chosen else votes
            item.setCheckState(Qt.CheckState.Checked if checked and votes else Qt.CheckState.Unchecked)
            self.runs.addItem(item)
        self.runs.setMaximumHeight(120)
        self.min_fail = QSpinBox(minimum=1, maximum=1)
        self.min_fail.setToolTip("Keep items that at least this many of the chosen judges fail")
        self.undecided = QCheckBox("count a judge without a majority as failing")
        self.name = QLineEdit(placeholderText="collection name, e.g. hard-3-judges")
        self.save = QPushButton("Save hard set")
        self.hard_count = plain_label("")
        self.message = plain_label("")
        self.progress = QProgressBar()
        self.progress.hide()
        self.tables = QVBoxLayout()
        tables = QWidget()
        tables.setLayout(self.tables)

        form = QFormLayout()
        fail_row = QHBoxLayout()
        fail_row.addWidget(self.min_fail)
        self.of_n = QLabel("of 0 judges fail it")
        fail_row.addWidget(self.of_n)
        fail_row.addWidget(self.undecided)
        fail_row.addStretch(1)
        form.addRow("Hard set: items that at least", fail_row)
        save_row = QHBoxLayout()
        save_row.addWidget(self.name, 1)
        save_row.addWidget(self.save)
        form.addRow("Save as collection", save_row)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.apply = buttons.addButton("Show in review", QDialogButtonBox.ButtonRole.ApplyRole)
        self.apply.setToolTip("The review panel shows these judges side by side; the queue reads them")
        buttons.rejected.connect(self.reject)
        self.apply.clicked.connect(self.apply_to_window)

        layout = QVBoxLayout(self)
        layout.addWidget(plain_label("Judges (one run each; its samples are its trials):"))
        layout.addWidget(self.runs)
        layout.addWidget(tables, 1)
        layout.addLayout(form)
        layout.addWidget(self.hard_count)
        layout.addWidget(self.progress)
        layout.addWidget(self.message)
        layout.addWidget(buttons)

        self.runs.itemChanged.connect(lambda _item: self.refresh())
        self.min_fail.valueChanged.connect(lambda _v: self._count_hard())
        self.undecided.toggled.connect(lambda _on: self._count_hard())
        self.save.clicked.connect(self.save_hard_set)
        self.refresh()

    def chosen(self) -> list[int]:
        return [
            self.runs.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.runs.count())
            if self.runs.item(i).checkState() == Qt.CheckState.Checked
        ]

    def refresh(self) -> None:
        """Read the chosen runs again, off the GUI thread; their tables replace the old ones
        when read (a result for runs no longer chosen is dropped)."""
        ids = self.chosen()
        n = len(ids)
        self.min_fail.blockSignals(True)
        self.min_fail.setMaximum(max(n, 1))
        self.min_fail.setValue(default_min_fail(n) if n else 1)
        self.min_fail.blockSignals(False)
        self.of_n.setText(f"of {n} judge{'s' if n != 1 else ''} fail it")
        self.apply.setEnabled(n > 0)
        self.ensemble = None
        self.save.setEnabled(False)
        if self._op is not None and self._op.running:
            self._op.cancel()
        if not ids:
            self._op = None
            self._show(None, {})
            return
        self.hard_count.setText(f"Reading {n} judge run{'s' if n != 1 else ''}…")
        project, readonly = self.controller.store.path, self.controller.store.readonly
        self._op = (
            BackgroundOp(self, lambda task: _read(project, readonly, ids, task), title="Ensemble")
            .with_progress("Reading the judge runs…", bar=self.progress)
            .success(lambda result: self._show(*result) if ids == self.chosen() else None)
            .failure(lambda exc: self.hard_count.setText(f"Could not read the runs: {error_message(exc)}"))
            .run()
        )

    @property
    def reading(self) -> bool:
        """Whether the chosen runs are still being read."""
        return self._op is not None and self._op.running

    def _show(self, ens: Ensemble | None, kappa) -> None:
        """Lay out the tables of ``ens`` (``None``: no run chosen)."""
        while self.tables.count():
            taken = self.tables.takeAt(0)
            widget = taken.widget() if taken is not None else None
            if widget is not None:
                widget.deleteLater()
        self.ensemble = ens
        self.save.setEnabled(ens is not None)
        empty = "Tick two or more judge runs (run `pairscope judge` or Ctrl+Shift+J first)."
        acc_rows = []
        kappa_rows = []
        wrong_rows = []
        if ens is not None:
            acc_rows = [
                [a.label, (str(a.judged), a.judged), (str(a.decided), a.decided), (str(a.correct), a.correct),
                 (str(a.undecided), a.undecided), _pct(a.accuracy), (str(a.trials), a.trials)]
                for a in ens.accuracy
            ]  # fmt: skip
            kappa_rows = [[f"run {a}", *(_kappa(kappa[a, b]) for b in ens.run_ids)] for a in ens.run_ids]
            total = max(len(ens.items), 1)
            n = len(ens.runs)
            wrong_rows = [[f"{k} of {n}", (str(v), v), _pct(v / total)] for k, v in ens.wrong_distribution().items()]
        self.tables.addWidget(
            StatSection(
                "Accuracy per judge (official vote)",
                [("Judge", False, ""), ("judged", True, "items with a verdict and a reference"),
                 ("decided", True, "a majority of the K trials"), ("correct", True, ""),
                 ("undecided", True, "no majority: left out of the accuracy"),
                 ("accuracy", True, "correct / decided"), ("trials", True, "vote samples per item")],
                acc_rows,
                empty,
            )
        )  # fmt: skip
        if ens is not None and len(ens.runs) >= 2:
            self.tables.addWidget(
                StatSection(
                    "Cohen's kappa between judges",
                    [("", False, ""), *((f"run {r}", True, ens.run_labels[r]) for r in ens.run_ids)],
                    kappa_rows,
                    note="unweighted, on the items both judges decided (n/a: undefined)",
                )
            )
        self.tables.addWidget(
            StatSection(
                "Items by judges wrong",
                [("judges wrong", False, ""), ("items", True, ""), ("share", True, "of the items with a reference")],
                wrong_rows,
                empty,
            )
        )
        self._count_hard()

    def _count_hard(self) -> None:
        if self.ensemble is None:
            if not self.reading:
                self.hard_count.setText("")
            return
        ids = self.ensemble.hard_set(self.min_fail.value(), self.undecided.isChecked())
        self.hard_count.setText(
            f"Hard set: {len(ids)} of {len(self.ensemble.items)} items with a reference"
            f" (at least {self.min_fail.value()} of {len(self.ensemble.runs)} judges fail)."
        )

    def save_hard_set(self) -> int | None:
        """Write the hard set as a collection; the message says its size (or what is wrong)."""
        if self.ensemble is None:
            return None
        hard = build_hard_set(self.ensemble, self.name.text(), self.min_fail.value(), self.undecided.isChecked())
        try:
            size = save_hard_set(self.controller.store, hard)
        except ValueError as exc:
            self.message.setText(str(exc))
            return None
        self.message.setText(f"Saved collection {hard.name!r}: {size} items. Export it with Ctrl+Shift+E.")
        return size

    def apply_to_window(self) -> None:
        """The review panel shows the chosen judges side by side (and the queue reads them)."""
        self.controller.set_ensemble(self.chosen())
        self.applied.emit(self.chosen())
