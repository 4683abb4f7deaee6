"""gradcheck's own options in the window: fast mode, the batched tests, forward and backward mode.

The options are run settings (``RunSettings``, the schema's ``CheckSettings`` fields under
gradcheck's names), so they travel with each request, persist and mark a result stale like eps
or the dtype. The run bar has a button that names the options that are on and opens a small
dialog of check boxes (Run → gradcheck options…, Ctrl+Shift+G, reaches it from the keyboard
even when the run bar's last groups are in its overflow menu). A combination gradcheck refuses
is refused as it is asked for, with ``CheckSettings.validate``'s own sentence under the boxes; the
box goes back to what the settings hold.

``masked`` has no box: it changes only sparse inputs, and gradviz refuses a sparse input that
needs a gradient, so in the window it could never change a verdict (the CLI and the API take it).
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.state import RunSettings
from gradviz.schema.errors import SettingsError

# (field, check box text, tooltip, what the run bar's button calls it when it differs from gradcheck's
# default: a word or two, the full names are in the button's tooltip)
OPTIONS = (
    (
        "fast_mode",
        "&Fast mode: random projections vᵀ J u (fast_mode)",
        "gradcheck(fast_mode=True) gives the verdict at its cost; the cells of the block on screen are computed next",
        "fast",
    ),
    (
        "check_batched_grad",
        "&Batched gradients under vmap (check_batched_grad)",
        "gradcheck's batched-gradient test: backward under PyTorch's prototype vmap equals plain calls",
        "batched",
    ),
    (
        "check_forward_ad",
        "Forward mode, the &jvp (check_forward_ad)",
        "Compare the forward-mode Jacobian (jvp / forward AD) with the numerical one too",
        "fwd",
    ),
    (
        "check_batched_forward_grad",
        "Batched forward gradients (check_batched_for&ward_grad)",
        "gradcheck's batched test of forward mode; needs forward mode",
        "batched fwd",
    ),
    (
        "check_backward_ad",
        "Backward mode, the vj&p (check_backward_ad)",
        "Compare the backward (analytic) Jacobian with the numerical one; off needs forward mode on",
        "no bwd",
    ),
)
MASKED_NOTE = (
    "masked has no box: it changes only sparse inputs, and gradviz checks dense inputs "
    "(gradviz check --masked and gradviz.check(masked=...) take it)."
)
DEFAULT_TEXT = "Checks…"
SHORTCUT = "Ctrl+Shift+G"


def options_summary(settings: RunSettings) -> str:
    """The options that differ from gradcheck's defaults, in a few words ('' when none)."""
    defaults = RunSettings.schema()
    return ", ".join(short for name, _, _, short in OPTIONS if settings.get(name) != getattr(defaults, name))


class CheckOptions(QWidget):
    """One check box per gradcheck option, bound to a RunSettings both ways."""

    def __init__(self, settings: RunSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.boxes: dict[str, QCheckBox] = {}
        layout = QVBoxLayout(self)
        for name, text, tip, _short in OPTIONS:
            box = QCheckBox(text)
            box.setToolTip(tip)
            box.setAccessibleName(name)
            self.boxes[name] = box
            layout.addWidget(box)
            box.toggled.connect(lambda checked, name=name: self._on_box_toggled(name, checked))
            getattr(settings, f"{name}_changed").connect(lambda _value, name=name: self._on_option_changed(name))
            self._on_option_changed(name)
        self.message = QLabel()  # why the last change was refused
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setStyleSheet("QLabel { color: #9b1c1c; font-weight: bold; }")
        self.message.hide()
        layout.addWidget(self.message)
        note = QLabel(MASKED_NOTE)
        note.setWordWrap(True)
        layout.addWidget(note)
        self.note = note

    def _on_option_changed(self, name: str) -> None:
        with QSignalBlocker(self.boxes[name]):
            self.boxes[name].setChecked(bool(self.settings.get(name)))

    def _on_box_toggled(self, name: str, checked: bool) -> None:
        try:
            self.settings.set(name, checked)
        except SettingsError as exc:  # a combination gradcheck refuses: its sentence, and the box as it was
            self.message.setText(exc.message)
            self.message.show()
            self._on_option_changed(name)
            return
        self.message.hide()


class CheckOptionsDialog(QDialog):
    """The check boxes in a small window of their own (not modal: the run bar stays usable)."""

    def __init__(self, settings: RunSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("gradcheck options")
        self.options = CheckOptions(settings, self)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.options)
        layout.addWidget(buttons)
        self.setMinimumWidth(self.options.sizeHint().width())


class CheckOptionsButton(QToolButton):
    """The run bar's button: says which options are on and opens the dialog."""

    def __init__(self, settings: RunSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.dialog: CheckOptionsDialog | None = None
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.clicked.connect(self.open_dialog)
        for name, *_ in OPTIONS:
            getattr(settings, f"{name}_changed").connect(self._on_options_changed)
        self._on_options_changed()

    def open_dialog(self) -> CheckOptionsDialog:
        """Show the options (made on first use), raised and focused."""
        if self.dialog is None:
            self.dialog = CheckOptionsDialog(self.settings, self.window())
        self.dialog.show()
        self.dialog.raise_()
        self.dialog.activateWindow()
        return self.dialog

    def _on_options_changed(self, *_args) -> None:
        summary = options_summary(self.settings)
        self.setText(f"Checks: {summary}" if summary else DEFAULT_TEXT)
        defaults = RunSettings.schema()
        on = [f"{name}={self.settings.get(name)}" for name, *_ in OPTIONS if self.settings.get(name) != getattr(defaults, name)]
        self.setToolTip(
            f"gradcheck's options ({SHORTCUT}): "
            + (", ".join(on) if on else "its defaults (no fast mode, no batched tests, backward mode only)")
        )
