"""The run bar: Run / Cancel, progress with time left, device, dtype, tolerances, seed, timeout,
and gradcheck's options (``check_options``).

A toolbar of small groups, Run, the progress and the window's mode buttons (Present) first: in
a narrow window the last groups go into the toolbar's overflow menu (») instead of pushing the
window wider than the screen, and what is needed at every size is never among them. Run and
Cancel are as wide as their text, the seed and the timeout as the values they show (not as the
longest their ranges allow), so that at 1280 px every group fits; a long CUDA device name or
larger text sends the last settings to the overflow menu, never Present.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QSignalBlocker, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QFont
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QToolBar,
    QWidget,
)

from gradviz.app.panels.check_options import CheckOptionsButton
from gradviz.app.panels.field_binding import bind_fields, show_value
from gradviz.app.state import RunSettings
from gradviz.app.theme import ViewSettings
from gradviz.schema.settings import DTYPES
from gradviz.schema.time_left import CHECK_UNIT, RunClock, count_text, finishing_text, time_left_text

TYPICAL_LEFT = "~88 s left"  # room kept for the time left; a longer one widens the label
PROGRESS_WIDTH = 210  # px at scale 1: "123,456 / 234,567 rows + cols" fits
TYPICAL_SEED = "000"  # the seed box keeps room for this (0, 42, 123); a longer seed widens it
TYPICAL_TIMEOUT = "600 s"
TOLERANCES = {"eps": (1e-12, 1.0), "atol": (0.0, 1e3), "rtol": (0.0, 1e3)}


def number_text(value: float) -> str:
    """The shortest text that reads back as exactly ``value``: 0.00316, 1e-7, 3, 2.5e-12."""
    text = repr(float(value))
    if "e" in text:
        mantissa, exponent = text.split("e")
        mantissa = mantissa[:-2] if mantissa.endswith(".0") else mantissa
        return f"{mantissa}e{int(exponent)}"
    return text[:-2] if text.endswith(".0") else text


class ScientificSpinBox(QDoubleSpinBox):
    """A spin box that shows and accepts 1e-7-style numbers exactly as it holds them, as wide as
    its text needs; arrows step by decades."""

    def __init__(self, minimum: float, maximum: float) -> None:
        super().__init__()
        self.setDecimals(323)  # Qt rounds a value to this many decimals: keep every digit a double has
        self.setRange(minimum, maximum)
        self.setKeyboardTracking(False)
        self.valueChanged.connect(self.fit_text)  # the run bar calls it too when it sets a value with signals blocked

    def textFromValue(self, value: float) -> str:
        return number_text(value)

    def fit_text(self, *_args) -> None:
        """At least as wide as the text shown needs: Qt sizes a spin box for its range's ends
        ("1e-12", "1"), which cut "0.00316" to "0.0031"."""
        metrics = self.fontMetrics()
        needed = metrics.horizontalAdvance(self.textFromValue(self.value()))
        chrome = self.sizeHint().width() - max(
            metrics.horizontalAdvance(self.textFromValue(v)) for v in (self.minimum(), self.maximum())
        )  # the arrows, the frame and the line edit's margins, as Qt counts them
        self.setMinimumWidth(needed + chrome + 4)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # presentation mode, Larger text
            self.fit_text()

    def valueFromText(self, text: str) -> float:
        try:
            return float(text)
        except ValueError:
            return self.value()

    def validate(self, text: str, pos: int):
        from PySide6.QtGui import QValidator

        try:
            float(text)
            return QValidator.State.Acceptable, text, pos
        except ValueError:
            return QValidator.State.Intermediate, text, pos

    def stepBy(self, steps: int) -> None:
        value = self.value() or 1e-6
        self.setValue(min(self.maximum(), max(self.minimum(), value * 10.0**steps)))


class FittedSpinBox(QSpinBox):
    """A spin box as wide as the value it shows (at least ``typical``), not as its range's widest
    value: a seed box sized for 2147483647 takes room the bar needs at 1280 px."""

    def __init__(self, minimum: int, maximum: int, *, typical: str) -> None:
        super().__init__()
        self.typical = typical
        self.setRange(minimum, maximum)
        self.valueChanged.connect(self.fit_text)  # show_value calls it for a value set with signals blocked

    def fit_text(self, *_args) -> None:
        self.updateGeometry()  # the size hint follows the text shown

    def shown_text(self) -> str:
        if self.specialValueText() and self.value() == self.minimum():
            return self.specialValueText()
        return self.prefix() + self.textFromValue(self.value()) + self.suffix()

    def sizeHint(self) -> QSize:
        """Qt's hint, less the room for the range's widest text, plus the room for the one shown."""
        hint = super().sizeHint()
        metrics = self.fontMetrics()
        fixed = self.prefix() + self.suffix() + " "  # what Qt adds to each end's text
        ends = (self.textFromValue(v)[:18] + fixed for v in (self.minimum(), self.maximum()))
        sized_for = max(metrics.horizontalAdvance(text) for text in (*ends, self.specialValueText()))
        needed = max(metrics.horizontalAdvance(text) for text in (self.shown_text() + " ", self.typical + " "))
        return QSize(hint.width() - sized_for + needed, hint.height())

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()


class CompactButton(QPushButton):
    """A push button as wide as its text and padding: Fusion makes every button with text at
    least 80 px wide, which Run and Cancel do not need, and the bar needs the room."""

    PADDING = 24  # the frame and a margin either side of the text, together

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(min(hint.width(), self.fontMetrics().horizontalAdvance(self.text()) + self.PADDING), hint.height())

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()


def _group(*widgets: QWidget) -> QWidget:
    """Widgets that stay together on the toolbar (a label and its box)."""
    group = QWidget()
    group.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)  # never stretched by the toolbar
    layout = QHBoxLayout(group)
    layout.setContentsMargins(4, 0, 4, 0)
    layout.setSpacing(4)
    for widget in widgets:
        layout.addWidget(widget)
    return group


class RunBar(QToolBar):
    run_requested = Signal()
    cancel_requested = Signal()

    def __init__(
        self, settings: RunSettings, parent: QWidget | None = None, *, view: ViewSettings | None = None
    ) -> None:
        super().__init__("Run", parent)
        self.setObjectName("run_toolbar")  # saveState's key
        self.setMovable(False)
        self.settings = settings
        self.view = view if view is not None else ViewSettings(self)
        self._started = 0.0
        self._clock = RunClock()
        self._unit = CHECK_UNIT  # what the worker's progress messages count
        self._finishing = QTimer(self)  # after the last unit: "finishing… 7 s", a second at a time
        self._finishing.setInterval(1000)
        self._finishing.timeout.connect(self._show_finishing)

        self.device = QComboBox()
        self.device.setToolTip("Where forward and backward run")
        self.device.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.dtype = QComboBox()
        for dtype in DTYPES:
            self.dtype.addItem(dtype, dtype)
        self.dtype.setToolTip("float64 is what gradcheck advises: finite differences need the digits")
        self.tolerance = {name: ScientificSpinBox(*bounds) for name, bounds in TOLERANCES.items()}
        follows = "; the dtype's default unless you type a value (a typed value stays when the dtype changes)"
        self.tolerance["eps"].setToolTip("finite-difference step" + follows)
        self.tolerance["atol"].setToolTip("a cell fails when |a - n| > atol + rtol·|n|" + follows)
        self.tolerance["rtol"].setToolTip("a cell fails when |a - n| > atol + rtol·|n|" + follows)
        self.seed = FittedSpinBox(0, 2**31 - 1, typical=TYPICAL_SEED)
        self.seed.setToolTip("seed for example_inputs")
        self.timeout = FittedSpinBox(0, 24 * 3600, typical=TYPICAL_TIMEOUT)
        self.timeout.setSuffix(" s")
        self.timeout.setSpecialValueText("none")
        self.timeout.setToolTip("Stop a run that takes longer than this (an endless loop?); 0: never")
        self.options_button = CheckOptionsButton(settings)  # gradcheck's options, in a dialog
        self.run_button = CompactButton("▶ Run")
        self.run_button.setToolTip("Run forward, backward and finite differences (Ctrl+Enter)")
        self.cancel_button = CompactButton("Cancel")
        self.cancel_button.setToolTip("Stop the run: the worker is restarted (Esc)")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setFixedWidth(PROGRESS_WIDTH)
        self.progress.setFormat("idle")
        self.progress.setValue(0)
        self.time_left = QLabel("")
        self.time_left.setToolTip("Estimated from the rate of the Jacobian rows and columns computed so far")

        run_group = _group(self.run_button, self.cancel_button, self.progress, self.time_left)
        self.addWidget(run_group)
        self.mode_actions: list[QAction] = []
        self._modes = self.addSeparator()  # the window's mode buttons go before it (add_mode)
        for label, widget in (
            ("Device", self.device),
            ("dtype", self.dtype),
            ("eps", self.tolerance["eps"]),
            ("atol", self.tolerance["atol"]),
            ("rtol", self.tolerance["rtol"]),
            ("seed", self.seed),
            ("timeout", self.timeout),
        ):
            self.addWidget(_group(QLabel(label), widget))
            if label == "rtol":  # gradcheck's options beside its tolerances, before seed and timeout (in
                # a narrow window the last groups go into the overflow menu)
                self.addWidget(_group(self.options_button))

        # each setting the bar shows and the widget it shows it in; bound both ways below (gradcheck's
        # options are the options dialog's)
        self.fields: dict[str, QWidget] = {
            "device": self.device, "dtype": self.dtype, **self.tolerance, "seed": self.seed, "timeout": self.timeout,
        }  # fmt: skip
        self.set_devices([{"name": "cpu", "label": "CPU", "available": True, "reason": ""}])
        bind_fields(settings, self.fields, settings.type_value)  # an edit is the user's: a typed tolerance stays
        self.run_button.clicked.connect(self.run_requested)
        self.cancel_button.clicked.connect(self.cancel_requested)
        self.view.subscribe(self._on_theme_changed)
        self._on_theme_changed()

    def add_mode(self, action: QAction) -> None:
        """A button for one of the window's modes (Present) beside Run, so that it is on the bar
        at every width instead of in the overflow menu with the last settings."""
        if not self.mode_actions:  # the run group, a separator, the modes, a separator, the settings
            self.insertSeparator(self._modes)
        self.mode_actions.append(action)
        self.insertAction(self._modes, action)

    def _on_theme_changed(self) -> None:
        theme = self.view.theme
        font = QFont()
        font.setPointSize(theme.pt(QFont().pointSize()))
        self.setFont(font)
        self.progress.setFixedWidth(round(PROGRESS_WIDTH * theme.scale))
        self.time_left.setMinimumWidth(self.time_left.fontMetrics().horizontalAdvance(TYPICAL_LEFT) + 4)

    def set_devices(self, devices: list[dict]) -> None:
        """CPU and every CUDA device the worker found; CUDA greyed out with the reason when absent."""
        with QSignalBlocker(self.device):
            self.device.clear()
            for k, d in enumerate(devices):
                same = d["label"].lower() == d["name"].lower()  # "cuda (CUDA)" says one thing twice
                label = d["label"] if d["name"] == "cpu" or same else f"{d['name']} ({d['label']})"
                self.device.addItem(label, d["name"])
                if not d["available"]:
                    item = self.device.model().item(k)
                    item.setEnabled(False)
                    item.setToolTip(d["reason"])
                    self.device.setItemData(k, f"{d['label']}: {d['reason']}", Qt.ItemDataRole.ToolTipRole)
        show_value(self.device, self.settings, "device")

    # --- run state -----------------------------------------------------------------------
    def set_running(self, running: bool, message: str = "") -> None:
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self._finishing.stop()
        if running:
            self._started = time.monotonic()
            self._clock = RunClock()
            self._unit = CHECK_UNIT
            self.progress.setRange(0, 0)  # busy until the first progress report
            self.progress.setFormat("starting…")
            self.time_left.setText("")
        else:
            self.progress.setRange(0, 100)
            self.progress.setValue(100 if message == "done" else 0)
            self.progress.setFormat(message or "idle")
            self.time_left.setText("")

    def set_progress_text(self, text: str) -> None:
        self._finishing.stop()
        self.progress.setFormat(text)

    def set_unit(self, unit: str) -> None:
        """What the next counts are of, as the worker's progress message names it ('' leaves it)."""
        self._unit = unit or self._unit

    def set_progress(self, done: int, total: int, elapsed: float | None = None) -> None:
        """Units done / total, what they are, and the time left at the rate so far
        (``gradviz.schema.time_left``); once all are done, "finishing… 7 s" until the result
        comes (comparing, hints, writing: no unit counts them). ``elapsed``: seconds since the
        run started (default: measured here)."""
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setToolTip(f"{done:,} of {total:,} {self._unit} computed")
        elapsed = time.monotonic() - self._started if elapsed is None else elapsed
        self.time_left.setText(time_left_text(self._clock.report(done, total, elapsed)))
        if 0 < total <= done:
            self._show_finishing(elapsed)
            self._finishing.start()
        else:
            self._finishing.stop()
            self.progress.setFormat(count_text(done, total, self._unit))

    def _show_finishing(self, elapsed: float | None = None) -> None:
        elapsed = time.monotonic() - self._started if elapsed is None else elapsed
        self.progress.setFormat(finishing_text(elapsed))
