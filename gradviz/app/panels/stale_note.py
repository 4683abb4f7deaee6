"""The note a panel shows above what it draws when that no longer matches the editor (the code,
the file or the settings changed since the run): one look and one wording rule for every panel."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget

from gradviz.app.theme import Theme

STALE_STYLE = "QLabel { background: #fff4c2; color: #4d3b00; border: 1px solid #e0c14a; padding: 4px; }"
STALE_POINTS = 12


class StaleNote(QLabel):
    """A yellow, word-wrapped note, hidden while there is nothing to say."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setStyleSheet(STALE_STYLE)
        self.hide()

    def set_reason(self, text: str | None) -> None:
        """Show ``text`` (why what is drawn is stale); None or '': hide the note."""
        self.setText(text or "")
        self.setVisible(bool(text))

    def set_theme(self, theme: Theme) -> None:
        self.setFont(theme.font(STALE_POINTS, bold=True))
