"""The model view: a model audit's modules as nested boxes, each custom node call a button painted
by its verdict, so the wrong node of a model is found at a glance and opened with a click."""

from __future__ import annotations

import time

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from gradviz.schema.time_left import RunClock, time_left_text

COLOURS = {"passed": "#2e7d32", "failed": "#c62828", "error": "#c62828", "not checked": "#757575"}


def node_label(node: dict, report: dict | None) -> str:
    """``BadRMSNormFn, call 2 of 2`` and, for a failure, how many cells fail."""
    text = f"{node['function']}, call {node['call']} of {node['calls']}"
    if node["status"] in ("failed", "error"):
        failing = sum(b.get("failing", 0) for b in (report or {}).get("blocks", [])) if report else None
        text += (
            f"\n{node['status']}: {failing} failing cell(s)" if failing is not None else f"\n{node['status']}"
        )
    else:
        text += f"\n{node['status']}"
    return text


class ModelView(QWidget):
    """One audit on screen; ``node_chosen`` carries the clicked node's document (with ``files``
    naming its check result when the node was checked)."""

    node_chosen = Signal(dict)
    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel("File → Audit a model… shows a model's custom nodes here.")
        self.title.setWordWrap(True)
        self.progress = QProgressBar()
        self.progress.hide()
        self.cancel = QPushButton("Cancel")
        self.cancel.hide()
        self.cancel.clicked.connect(self.cancel_requested)
        top = QHBoxLayout()
        top.addWidget(self.progress, 1)
        top.addWidget(self.cancel)
        # everything scrolls, the title too: a short dock (a tab at 1280x720) never clips its text
        body = QWidget()
        self._nodes = QVBoxLayout()
        self._nodes.setContentsMargins(0, 0, 0, 0)
        column = QVBoxLayout(body)
        column.addWidget(self.title)
        column.addLayout(top)
        column.addLayout(self._nodes, 1)
        self._scroll = QScrollArea()
        self._scroll.setWidgetResizable(True)
        self._scroll.setWidget(body)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._scroll, 1)
        self._clock, self._started = RunClock(), time.monotonic()
        self.buttons: dict[str, QPushButton] = {}  # by node title: module → Function, call k of n

    def set_running(self, model: str) -> None:
        self.title.setText(f"Auditing {model}…")
        self.progress.setRange(0, 0)
        self.progress.setFormat("starting…")
        self._clock, self._started = RunClock(), time.monotonic()
        self.progress.show()
        self.cancel.show()

    def set_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        left = time_left_text(self._clock.report(done, total, time.monotonic() - self._started))
        self.progress.setFormat(f"node checks {done} of {total}" + (f", {left}" if left else ""))

    def set_error(self, message: str) -> None:
        self._stop()
        self.title.setText(message)

    def _stop(self) -> None:
        self.progress.hide()
        self.cancel.hide()

    def set_audit(self, payload: dict) -> None:
        """Draw the worker's audit: one box per module path, nested by its dots."""
        self._stop()
        audit = payload.get("audit", {})
        verdict = "PASSED" if audit.get("passed") else "FAILED"
        self.title.setText(
            f"{verdict}: {audit.get('model')}: {len(audit.get('failing', []))} failing of "
            f"{audit.get('checked')} checked node call(s), {audit.get('nodes')} in all. Click a node to open its maps."
        )
        root = QWidget()
        root_layout = QVBoxLayout(root)
        boxes: dict[str, QVBoxLayout] = {"": root_layout}
        self.buttons = {}
        for document in payload.get("nodes", []):
            node = document["node"]
            button = QPushButton(node_label(node, document.get("report")))
            colour = COLOURS.get(node["status"], "#757575")
            button.setProperty("colour", colour)
            self._paint(button, chosen=False)
            button.setEnabled(bool(document.get("files")))
            button.clicked.connect(lambda _=False, d=document, b=button: self._choose(b, d))
            self._box(boxes, node["module"]).addWidget(button)
            self.buttons[
                f"{node['module'] or '(model)'} → {node['function']}, call {node['call']} of {node['calls']}"
            ] = button
        root_layout.addStretch(1)
        while self._nodes.count():
            old = self._nodes.takeAt(0).widget()
            if old is not None:
                old.deleteLater()
        self._nodes.addWidget(root)

    def _paint(self, button: QPushButton, *, chosen: bool) -> None:
        border = "border: 3px solid black;" if chosen else ""
        colour = button.property("colour")
        button.setStyleSheet(f"QPushButton {{ background: {colour}; color: white; padding: 6px; {border} }}")

    def _choose(self, button: QPushButton, document: dict) -> None:
        """Mark the node whose maps are on screen, and ask for them."""
        for other in self.buttons.values():
            self._paint(other, chosen=other is button)
        self.node_chosen.emit(document)

    def _box(self, boxes: dict[str, QVBoxLayout], module: str) -> QVBoxLayout:
        """The layout of the box for ``module``, made (inside its parent's) when first needed."""
        if module in boxes:
            return boxes[module]
        parent = self._box(boxes, module.rpartition(".")[0])
        box = QGroupBox(module.rpartition(".")[2])
        box.setToolTip(module)
        layout = QVBoxLayout(box)
        parent.addWidget(box)
        boxes[module] = layout
        return layout
