"""Help → About gradviz and Help → User guide.

The project has no public home yet, so the guide is the description that ships inside every
install (the distribution's metadata, written from PYPI.md): it is there offline, on every
platform, and always matches the installed version. Versions are read from the installed
distributions' metadata, never by importing them (the window never imports torch).
"""

from __future__ import annotations

import platform
from html import escape
from importlib import metadata

from PySide6.QtCore import QRect
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from gradviz._version import DISTRIBUTION, __version__
from gradviz.app.shortcuts_dialog import SCREEN_SHARE, FittedTextDialog, screen_room

GUIDE_MISSING = (
    "The user guide is the package's description, and this install has none ({why}). "
    "`gradviz --help` lists every command and option."
)
TAGLINE = "A gradient debugger for PyTorch: gradcheck's verdict, and which cells are wrong and why."
ABOUT_PACKAGES = ("torch", "PySide6-Essentials", "pyqtgraph", "numpy")


def installed_version(distribution: str) -> str:
    """The installed version of ``distribution`` from its metadata, or 'not installed'."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def about_html() -> str:
    """What Help → About says: the name and version, what it is, the versions it runs on, the
    licence and where the documentation is."""
    rows = [("Python", platform.python_version()), *((name, installed_version(name)) for name in ABOUT_PACKAGES)]
    table = "".join(f"<tr><td>{escape(name)}</td><td>{escape(version)}</td></tr>" for name, version in rows)
    return (
        f"<h3>gradviz {escape(__version__)}</h3>"
        f"<p>{escape(TAGLINE)}</p>"
        f"<p>Installed as <b>{escape(DISTRIBUTION)}</b>. MIT licence.</p>"
        f"<table cellspacing=4>{table}</table>"
        "<p>Documentation: <i>Help → User guide</i> (the guide this install ships), "
        "<i>Help → Keyboard shortcuts</i> (F1) and <code>gradviz --help</code>.</p>"
    )


def guide_markdown() -> str:
    """The user guide: the installed distribution's description (Markdown), or a line saying why
    there is none."""
    try:
        text = metadata.metadata(DISTRIBUTION).get_payload() or ""
    except metadata.PackageNotFoundError:
        return GUIDE_MISSING.format(why=f"{DISTRIBUTION} is not installed, only imported from a folder")
    return text if isinstance(text, str) and text.strip() else GUIDE_MISSING.format(why="its description is empty")


class GuideDialog(QDialog):
    """The guide as formatted Markdown, scrolled, most of the parent's screen in size."""

    def __init__(self, parent: QWidget | None = None, *, available: QRect | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("gradviz user guide")
        self.browser = QTextBrowser()
        self.browser.setOpenExternalLinks(True)
        self.browser.setMarkdown(guide_markdown())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser, 1)
        layout.addWidget(buttons)
        room = screen_room(self, available)
        self.resize(min(900, int(room.width() * SCREEN_SHARE)), int(room.height() * SCREEN_SHARE))


def show_about(parent: QWidget) -> FittedTextDialog:
    """Build, fit and show Help → About (not modal)."""
    dialog = FittedTextDialog("About gradviz", about_html(), parent)
    dialog.show()
    return dialog


def show_guide(parent: QWidget) -> GuideDialog:
    """Build and show Help → User guide (not modal)."""
    dialog = GuideDialog(parent)
    dialog.show()
    return dialog
