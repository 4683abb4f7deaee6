"""File → Open Recent, Help → About gradviz and Help → User guide in the real window.

Recent files are real files opened through the window; versions come from the installed packages
(torch's from torch itself); the guide is the description this install ships."""

from __future__ import annotations

import platform
from importlib import metadata

import torch

from gradviz._version import DISTRIBUTION, __version__
from gradviz.app import help_dialogs
from gradviz.app.preferences import Preferences
from gradviz.app.recent_menu import CLEAR, NONE_YET
from tests.paths import ARTIFACTS
from tests.sources import SQUARE


def open_and_wait(qtbot, window, path) -> None:
    with qtbot.waitSignal(window.source.loaded, timeout=10_000):
        window.source.open_file(path)


def entries(menu) -> list[str]:
    menu.refill()  # what aboutToShow does each time the menu opens
    return [action.text() for action in menu.actions() if not action.isSeparator()]


def test_open_recent_lists_opened_files_newest_first_and_opens_one(qtbot, main_window, tmp_path, settings_store):
    window = main_window
    first, second = tmp_path / "first.py", tmp_path / "R&D" / "second.py"
    second.parent.mkdir()
    for path in (first, second):
        path.write_text(SQUARE, encoding="utf-8")
        open_and_wait(qtbot, window, path)
    menu = window.recent_menu
    assert menu.menuAction() in window.menuBar().actions()[0].menu().actions()  # in the File menu
    assert entries(menu) == ["&1  second.py — " + str(second.parent).replace("&", "&&"), f"&2  first.py — {tmp_path}", CLEAR]
    chosen = next(a for a in menu.actions() if a.text().startswith("&2"))
    with qtbot.waitSignal(window.source.loaded, timeout=10_000):
        chosen.trigger()
    assert window.document.path == first and window.editor.text() == SQUARE
    assert entries(menu)[0].startswith("&1  first.py")  # reopened: first again
    second.unlink()  # gone since: not offered
    assert [text for text in entries(menu) if "second.py" in text] == []
    next(a for a in menu.actions() if a.text() == CLEAR).trigger()
    assert entries(menu) == [NONE_YET] and not menu.actions()[0].isEnabled()
    assert Preferences(settings_store).recent() == []  # forgotten for the next launch too


def test_about_names_this_version_and_what_it_runs_on(qtbot, main_window):
    window = main_window
    window.actions["about"].trigger()
    dialog = window.about_dialog
    qtbot.waitExposed(dialog)
    text = dialog.label.text()
    for expected in (__version__, DISTRIBUTION, torch.__version__, platform.python_version(), "MIT"):
        assert expected in text
    assert window.screen().availableGeometry().contains(dialog.frameGeometry())
    ARTIFACTS.mkdir(exist_ok=True)
    assert dialog.grab().save(str(ARTIFACTS / "about.png"))


def test_the_user_guide_is_the_description_this_install_ships(qtbot, main_window):
    window = main_window
    window.actions["guide"].trigger()
    dialog = window.guide_dialog
    qtbot.waitExposed(dialog)
    shown = dialog.browser.toPlainText()
    assert shown.startswith("gradviz-debugger")  # the heading formatted, not '# gradviz-debugger'
    assert "pip install gradviz-debugger" in shown
    assert window.screen().availableGeometry().contains(dialog.frameGeometry())
    ARTIFACTS.mkdir(exist_ok=True)
    assert dialog.grab().save(str(ARTIFACTS / "user-guide.png"))


def test_an_install_without_a_description_says_so_in_the_guide(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(help_dialogs.metadata, "metadata", missing)
    assert help_dialogs.guide_markdown().startswith("The user guide is the package's description")
    assert "gradviz --help" in help_dialogs.guide_markdown()
