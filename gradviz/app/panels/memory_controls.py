"""The memory panel's controls: the stack to measure (layers, input shape, output channels,
kernel, dtype, device) and Measure, bound to a ``MemorySettings`` state.

Split from ``memory_panel`` so the panel file draws results only. The controls show the state
(the defaults are ``schema.settings.MemoryOptions``'), write every edit back, and a control that
cannot show a value (out of its range, a device not offered) shows the nearest it can and writes
that back: what is measured is what the panel shows.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QSignalBlocker, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.panels.field_binding import bind_fields, show_value
from gradviz.app.state import MemorySettings
from gradviz.app.theme import ViewSettings
from gradviz.schema.settings import DTYPES


def _spin(low: int, high: int, tip: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setToolTip(tip)
    return box


class MemoryControls(QWidget):
    """Spin boxes and combos for one memory measurement, in a grid three rows high (the panel
    fits a narrow dock beside the Jacobians), and the Measure button."""

    def __init__(self, state: MemorySettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._build()
        self._connect_state()

    def _build(self) -> None:
        self.layers_spin = _spin(1, 8, "Conv2d + BatchNorm2d pairs in the stack")
        self.batch_spin = _spin(1, 1024, "N: batch size")
        self.channels_spin = _spin(1, 256, "C: input channels")
        self.height_spin = _spin(1, 1024, "H: input height")
        self.width_spin = _spin(1, 1024, "W: input width")
        self.shape_spins = (self.batch_spin, self.channels_spin, self.height_spin, self.width_spin)
        for box, prefix in zip(self.shape_spins, "NCHW"):
            box.setPrefix(f"{prefix} ")
        self.out_channels_spin = _spin(1, 1024, "Output channels of every conv")
        self.kernel_spin = _spin(1, 15, "Kernel size (k x k, stride 1, no padding)")
        self.count_spins = {
            "layers": self.layers_spin,
            "out_channels": self.out_channels_spin,
            "kernel": self.kernel_spin,
        }
        self.dtype_combo = QComboBox()
        for dtype in sorted(DTYPES):  # float32 first: the study's default
            self.dtype_combo.addItem(dtype, dtype)
        self.device_combo = QComboBox()
        self.device_combo.setToolTip("Where to measure; peak memory is measured on CUDA")
        self.device_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.measure_button = QPushButton("Measure")
        self.measure_button.setToolTip("Run both variants in the worker and measure what they save")

        shape = QHBoxLayout()
        shape.setSpacing(2)
        for box in self.shape_spins:
            shape.addWidget(box)
        grid = QGridLayout()
        grid.setHorizontalSpacing(6)
        grid.setVerticalSpacing(3)
        grid.addWidget(QLabel("layers"), 0, 0)
        grid.addWidget(self.layers_spin, 0, 1)
        grid.addWidget(QLabel("out ch."), 0, 2)
        grid.addWidget(self.out_channels_spin, 0, 3)
        grid.addWidget(QLabel("kernel"), 0, 4)
        grid.addWidget(self.kernel_spin, 0, 5)
        grid.addWidget(QLabel("input"), 1, 0)
        grid.addLayout(shape, 1, 1, 1, 5)
        grid.addWidget(QLabel("dtype"), 2, 0)
        grid.addWidget(self.dtype_combo, 2, 1)
        grid.addWidget(QLabel("device"), 2, 2)
        grid.addWidget(self.device_combo, 2, 3)
        grid.addWidget(self.measure_button, 2, 4, 1, 2)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addLayout(grid)
        row.addStretch(1)

    def set_devices(self, names: list[str]) -> None:
        """Offer these devices, keeping the current one if it is still there."""
        with QSignalBlocker(self.device_combo):
            self.device_combo.clear()
            for name in names:
                self.device_combo.addItem(name, name)
        show_value(self.device_combo, self.state, "device")

    def _connect_state(self) -> None:
        """Each option both ways; the shape (four boxes for one tuple) has its own pair."""
        self.fields = {**self.count_spins, "dtype": self.dtype_combo, "device": self.device_combo}
        bind_fields(self.state, self.fields)
        self.state.shape_changed.connect(self._on_shape_changed)
        for box in self.shape_spins:
            box.valueChanged.connect(self._on_shape_edited)
        self._on_shape_changed()

    def _on_shape_changed(self, *_args) -> None:
        for box, value in zip(self.shape_spins, self.state.shape):
            with QSignalBlocker(box):
                box.setValue(min(max(value, box.minimum()), box.maximum()))
        if self._shown_shape() != self.state.shape:
            self.state.shape = self._shown_shape()

    def _on_shape_edited(self, _value: int) -> None:
        self.state.shape = self._shown_shape()

    def _shown_shape(self) -> tuple[int, int, int, int]:
        return tuple(box.value() for box in self.shape_spins)


class MeasureProgress(QWidget):
    """While a measurement runs: a bar (busy until the worker's first progress report, then
    stacks done of all) and a line with the seconds so far; hidden otherwise."""

    def __init__(self, view: ViewSettings | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setFormat("")
        self.status = QLabel("")
        self.status.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        self.progress.hide()
        self.status.hide()
        self._since = 0.0
        self._text = ""
        self._clock = QTimer(self, interval=100)
        self._clock.timeout.connect(self._show_elapsed)
        self.view = view if view is not None else ViewSettings(self)
        self.view.subscribe(self._on_theme_changed)
        self._on_theme_changed()

    def set_measuring(self, measuring: bool, text: str = "") -> None:
        self.progress.setVisible(measuring)
        self.status.setVisible(bool(measuring or text))
        if measuring:
            if not self._clock.isActive():
                self._since = time.monotonic()
                self.progress.setRange(0, 0)  # busy until the first progress report
                self._clock.start()
            self._text = text or "Measuring both variants"
            self._show_elapsed()
        else:
            self._clock.stop()
            self.status.setText(text)

    def set_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"{done} / {total} stacks")

    def is_measuring(self) -> bool:
        return self._clock.isActive()

    def _show_elapsed(self) -> None:
        self.status.setText(f"{self._text}… {time.monotonic() - self._since:.1f} s")

    def _on_theme_changed(self) -> None:
        self.status.setFont(self.view.theme.font(11))
