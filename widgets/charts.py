"""A matplotlib figure in a Qt widget, with export to PNG, SVG and PDF."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

EXPORT_FORMATS = ("png", "svg", "pdf")


class ChartView(QWidget):
    """Shows one ``matplotlib.figure.Figure``; the buttons save it as PNG, SVG or PDF."""

    def __init__(self, figure, name: str, parent=None):
        super().__init__(parent)
        from matplotlib.backends.backend_qtagg import (
            FigureCanvasQTAgg,  # ~0.4 s: only when a chart is shown
        )

        self.figure = figure
        self.name = name
        self.canvas = FigureCanvasQTAgg(figure)
        self.canvas.setMinimumSize(240, 180)  # the figure scales to the room it gets
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        for fmt in EXPORT_FORMATS:
            button = QPushButton(f"Save {fmt.upper()}…")
            button.clicked.connect(lambda _checked=False, f=fmt: self._ask_and_save(f))
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.canvas, 1)
        layout.addLayout(buttons)

    def save(self, path: str) -> None:
        """Write the figure; the format follows the file's suffix."""
        self.figure.savefig(path, dpi=150)

    def _ask_and_save(self, fmt: str) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, f"Save {self.name}", f"{self.name}.{fmt}", f"{fmt.upper()} (*.{fmt})"
        )
        if path:
            self.save(path)
