"""The "Compare two judges…" dialog: pick runs A and B; the **Flips** tab lists the items they
split on — "A right, B wrong", then "B right, A wrong", then the other disagreements — and shows
both judges' rationales side by side (the deciding sentence highlighted) with the human labels;
``N`` steps to the next flip, ``Shift+N`` back. The **Dashboard** tab has the 2×2 table, the
accuracy difference with its paired bootstrap CI and McNemar's exact p, the per-slice table with
Holm and Šidák adjusted p-values and the forest plot (Save PNG / SVG / PDF).

The figures and the plot are :mod:`pairscope.app.stats.compare`'s; this module lays them out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from pairscope.widgets.charts import ChartView
from pairscope.widgets.compare_panes import ComparePanes
from pairscope.widgets.plain_text import plain_label
from pairscope.widgets.stat_tables import StatSection

from ..judge.modes import get_mode
from ..judge.review import review_data
from ..records import CONVENTIONS
from ..stats.compare import FLIP_KINDS, Comparison, ItemPair, compare_runs
from ..stats.compare_report import ci_text, forest_figure, p_text, pct, pp
from .tasks import BackgroundOp, Task, error_message

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .controller import AnnotationController

#: How each kind of flip reads in the list (A and B named).
KIND_MARKS = {FLIP_KINDS[0]: "A ✓ B ✗", FLIP_KINDS[1]: "B ✓ A ✗", FLIP_KINDS[2]: "differ"}


def _read(store, a: int, b: int, convention: str, task: Task) -> tuple[Comparison, Figure]:
    """The comparison and its forest plot (off the GUI thread: Agg draws without a screen)."""
    comparison = compare_runs(store, a, b, convention)
    task.check()
    return comparison, forest_figure(comparison)


def _screen(index: int | None) -> str:
    return "no majority" if index is None else f"R{index + 1}"


class CompareDialog(QDialog):
    """Runs A and B, the flips with both rationales, and the dashboard of the comparison."""

    def __init__(self, controller: AnnotationController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        self.setWindowTitle("Compare two judges")
        self.comparison: Comparison | None = None
        self.chart: ChartView | None = None
        # the dashboard's sections, once shown
        self.table: StatSection | None = None
        self.summary: StatSection | None = None
        self.slices: StatSection | None = None
        self._op: BackgroundOp | None = None
        self._labels: dict[int, str] = {}
        voting = [c for c in controller.runs() if get_mode(c.mode).votes_on_preference]
        self.run_a, self.run_b = QComboBox(), QComboBox()
        for combo in (self.run_a, self.run_b):
            for choice in voting:
                combo.addItem(choice.label(), choice.id)
                self._labels[choice.id] = choice.label()
            combo.setMinimumContentsLength(28)
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        if len(voting) >= 2:
            self.run_b.setCurrentIndex(1)
        self.convention = QComboBox()
        self.convention.addItems(list(CONVENTIONS))
        self.convention.setToolTip("The vote convention of each run's item verdict (docs/STATISTICS.md)")
        self.status = plain_label("")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(200)
        self.progress.hide()

        self.flips = QListWidget()
        self.flips.setToolTip("Items the judges split on: A right B wrong, B right A wrong, other disagreements")
        self.panes = ComparePanes()
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.flips)
        split.addWidget(self.panes)
        split.setStretchFactor(1, 3)
        split.setSizes([260, 800])
        self.dashboard = QScrollArea()
        self.dashboard.setWidgetResizable(True)
        self.dashboard.setFrameShape(QFrame.Shape.NoFrame)
        self.tabs = QTabWidget()
        self.tabs.addTab(split, "Flips")
        self.tabs.addTab(self.dashboard, "Dashboard")

        pick = QHBoxLayout()
        pick.addWidget(plain_label("A:"))
        pick.addWidget(self.run_a, 1)
        pick.addWidget(plain_label("B:"))
        pick.addWidget(self.run_b, 1)
        pick.addWidget(plain_label("vote:"))
        pick.addWidget(self.convention)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        bottom = QHBoxLayout()
        bottom.addWidget(self.status, 1)
        bottom.addWidget(self.progress)
        bottom.addWidget(buttons)
        layout = QVBoxLayout(self)
        layout.addLayout(pick)
        layout.addWidget(self.tabs, 1)
        layout.addLayout(bottom)

        self.next_flip = QShortcut(QKeySequence("N"), self)
        self.next_flip.activated.connect(lambda: self.step(1))
        self.previous_flip = QShortcut(QKeySequence("Shift+N"), self)
        self.previous_flip.activated.connect(lambda: self.step(-1))
        self.flips.currentRowChanged.connect(self._show_flip)
        for combo in (self.run_a, self.run_b, self.convention):
            combo.currentIndexChanged.connect(lambda _i: self.refresh())
        self.refresh()

    # -- reading ---------------------------------------------------------------------------------

    def chosen(self) -> tuple[int | None, int | None]:
        return self.run_a.currentData(), self.run_b.currentData()

    @property
    def reading(self) -> bool:
        """Whether the chosen runs are still being read."""
        return self._op is not None and self._op.running

    def refresh(self) -> None:
        """Compare the chosen runs again, off the GUI thread (a result for runs no longer chosen
        is dropped)."""
        a, b = self.chosen()
        convention = self.convention.currentText()
        self.comparison = None
        if self._op is not None and self._op.running:
            self._op.cancel()
        self._op = None
        if a is None or b is None or a == b:
            message = (
                "Needs two judge runs that vote on preferences (run `pairscope judge` or `pairscope import-verdicts`)."
                if self.run_a.count() < 2
                else "Pick two different runs."
            )
            self._show(None, None, message)
            return
        self.status.setText(f"Comparing run {b} with run {a}…")
        store = self.controller.store
        wanted = (a, b, convention)
        self._op = (
            BackgroundOp(self, lambda task: _read(store, a, b, convention, task), title="Compare")
            .with_progress("Reading the judge runs…", bar=self.progress)
            .success(
                lambda result: (
                    self._show(*result) if wanted == (*self.chosen(), self.convention.currentText()) else None
                )
            )
            .failure(lambda exc: self.status.setText(f"Could not compare the runs: {error_message(exc)}"))
            .run()
        )

    # -- showing ---------------------------------------------------------------------------------

    def flip_items(self) -> list[ItemPair]:
        """The flips in the order listed."""
        return [] if self.comparison is None else self.comparison.flips()

    def _show(self, c: Comparison | None, figure: Figure | None, message: str = "") -> None:
        self.comparison = c
        self.flips.blockSignals(True)
        self.flips.clear()
        for pair in self.flip_items():
            text = f"{KIND_MARKS[pair.kind]}  {pair.ext_id}"
            row = QListWidgetItem(text)
            row.setToolTip(f"{pair.kind}: A {_screen(pair.a)}, B {_screen(pair.b)}, dataset {_screen(pair.reference)}")
            self.flips.addItem(row)
        self.flips.blockSignals(False)
        self.panes.clear(message or ("No flips: the two runs agree on every item both judged." if c else ""))
        self._fill_dashboard(c, figure, message)
        if c is None:
            self.status.setText(message)
            return
        o = c.overall
        self.status.setText(
            f"{o.n} paired items: A {pct(o.accuracy_a)}, B {pct(o.accuracy_b)}, B − A {pp(o.difference)}"
            f" {ci_text(o.ci)}, McNemar p {p_text(o.p)} · {len(c.flips())} flips (N: next)"
        )
        if self.flips.count():
            self.flips.setCurrentRow(0)

    def _fill_dashboard(self, c: Comparison | None, figure: Figure | None, message: str) -> None:
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(12, 8, 12, 8)
        self.chart = None
        if c is None:
            layout.addWidget(plain_label(message or "Computing…"))
            layout.addStretch(1)
            self.dashboard.setWidget(body)
            return
        o = c.overall
        basis = "undecided counted wrong" if c.undecided_wrong else "items both runs decided"
        self.table = table = StatSection(
            f"A: {c.a.label}   ·   B: {c.b.label}",
            [("", False, ""), ("B right", True, ""), ("B wrong", True, ""), ("total", True, "")],
            [
                ["A right", o.both_right, o.a_only, o.both_right + o.a_only],
                ["A wrong", o.b_only, o.both_wrong, o.b_only + o.both_wrong],
                ["total", o.both_right + o.b_only, o.a_only + o.both_wrong, o.n],
            ],
            note=f"{c.convention} vote; {o.n} paired items ({basis})",
        )
        summary: list[list[Any]] = [
            ["accuracy A", (pct(o.accuracy_a), o.accuracy_a)],
            ["accuracy B", (pct(o.accuracy_b), o.accuracy_b)],
            ["B − A", (pp(o.difference), o.difference)],
            [f"{100 * c.level:g}% CI (paired bootstrap)", (ci_text(o.ci), None)],
            ["McNemar exact p", (p_text(o.p), o.p)],
        ]
        if c.consistency is not None:
            for run, (k, n) in c.consistency.consistent.items():
                share = k / n if n else None
                summary.append([f"consistent across orders, run {run}", (f"{pct(share)} ({k}/{n})", share)])
        summary.append(["only A judged / only B judged", f"{len(c.only_a)} / {len(c.only_b)}"])
        self.summary = difference = StatSection(
            "Difference",
            [("figure", False, ""), ("value", True, "")],
            summary,
            note=f"{c.resamples} resamples, seed {c.seed}",
        )
        top = QGridLayout()
        top.addWidget(table, 0, 0)
        top.addWidget(difference, 1, 0)
        top.setRowStretch(2, 1)
        if figure is not None:  # the forest plot beside the two tables, the slices below
            self.chart = ChartView(figure, f"compare-run{c.a.id}-run{c.b.id}")
            self.chart.setMinimumHeight(max(420, min(900, int(figure.get_figheight() * 70))))
            top.addWidget(self.chart, 0, 1, 3, 1)
            top.setColumnStretch(1, 1)
        layout.addLayout(top)
        self.slices = slices = StatSection(
            "Per slice",
            [("kind", False, ""), ("slice", False, ""), ("n", True, "paired items"),
             ("A", True, "accuracy A"), ("B", True, "accuracy B"), ("B − A", True, ""),
             ("CI", True, "paired bootstrap"), ("p", True, "McNemar exact"),
             ("Holm p", True, "adjusted within the kind"), ("Šidák p", True, "adjusted within the kind")],
            [
                [s.kind, s.value, s.paired.n, (pct(s.paired.accuracy_a), s.paired.accuracy_a),
                 (pct(s.paired.accuracy_b), s.paired.accuracy_b), (pp(s.paired.difference), s.paired.difference),
                 (ci_text(s.paired.ci), None), (p_text(s.paired.p), s.paired.p),
                 (p_text(s.p_holm), s.p_holm), (p_text(s.p_sidak), s.p_sidak)]
                for s in c.slices
            ],
            "No slices: the paired items carry no category, source, error type or dataset.",
            note="Holm and Šidák adjust the McNemar p-values over the slices of each kind",
        )  # fmt: skip
        layout.addWidget(slices)
        layout.addStretch(1)
        self.dashboard.setWidget(body)

    def step(self, by: int) -> None:
        """Show the next (``by`` = 1) or previous flip; stays at either end."""
        if not self.flips.count():
            return
        row = min(max(self.flips.currentRow() + by, 0), self.flips.count() - 1)
        self.tabs.setCurrentIndex(0)
        self.flips.setCurrentRow(row)

    def _show_flip(self, row: int) -> None:
        flips = self.flip_items()
        if self.comparison is None or not 0 <= row < len(flips):
            return
        c, pair = self.comparison, flips[row]
        store = self.controller.store
        item = store.get_item(pair.item_id)
        order = tuple(range(len(item.responses)))  # reviewing is not blind: R1 is the dataset's first
        review = review_data(store, item, order, [c.a.id, c.b.id])
        labels = [
            f"{line.annotator}{' (adjudication)' if line.kind == 'adjudication' else ''}: {line.summary or '—'}"
            for line in review.labels
        ]
        header = f"{pair.kind} · item {pair.ext_id} · dataset reference: {_screen(pair.reference)}"
        if pair.reference is None:
            header = f"{pair.kind} · item {pair.ext_id} · the dataset prefers neither"
        sides = []
        for name, run, choice, outcome in (("A", c.a, pair.a, pair.outcome_a), ("B", c.b, pair.b, pair.outcome_b)):
            title = f"{name}: {run.label} — {_screen(choice)} ({outcome})"
            sides.append((title, [v for v in review.verdicts if v.run_id == run.id]))
        context = [f"Prompt: {item.prompt}", *(f"R{r.index + 1}: {r.text}" for r in item.responses)]
        self.panes.show_pair(header, labels, sides[0], sides[1], context)
