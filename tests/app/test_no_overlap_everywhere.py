"""No text overlaps or is cut anywhere a user looks: every dock's content (each
tabbed dock brought to the top in turn, each tab inside it shown), the dialogs (F1 shortcuts,
export, recovery) and presentation mode, on the real window at 1280x720, 1366x768 and 1920x1080
after a real run of a failing Function (its memory study drawn too).

One window serves the whole module (a window, its worker and a run cost seconds; each case only
resizes it and looks). A known failure is marked xfail(strict) with its reason in ``KNOWN``, so
the case flips to an error the moment it is fixed and the mark must go.
"""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import QRect, QSettings, Qt
from PySide6.QtWidgets import QDialog, QMessageBox, QWidget
from pytestqt.qtbot import QtBot

from gradviz.app.export_dialog import ExportDialog
from gradviz.app.recovery import Recovered
from gradviz.app.recovery_dialog import RecoveryDialog
from gradviz.app.shortcuts_dialog import shortcut_rows
from tests.app.layout_check import (
    dialog_problems,
    dock_problems,
    each_dock_raised,
    each_inner_tab,
    layout_problems,
)
from tests.app.test_main_window import RUN_TIMEOUT
from tests.paths import ARTIFACTS

SIZES = ((1280, 720), (1366, 768), (1920, 1080))
SIZE_IDS = [f"{w}x{h}" for w, h in SIZES]
FAILING = "buggy_linear_transpose"

# (what, size) -> why that case is a known failure (size "*": at every size); empty: none is
KNOWN: dict[tuple[str, str], str] = {}


def cases(what: list[str]) -> list:
    params = []
    for name in what:
        for size, size_id in zip(SIZES, SIZE_IDS):
            reason = KNOWN.get((name, size_id)) or KNOWN.get((name, "*"))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(name, size, id=f"{name}-{size_id}", marks=marks))
    return params


@pytest.fixture(scope="module")
def window(qapp, request, tmp_path_factory):
    """The real main window with its worker, after a failing Function's run and the memory study."""
    from gradviz.app.main_window import MainWindow
    from gradviz.app.recovery import RECOVERY_ENV
    from tests.app.test_main_window import run_and_wait

    folder = tmp_path_factory.mktemp("overlap")
    store = QSettings(str(folder / "gradviz.ini"), QSettings.Format.IniFormat)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(RECOVERY_ENV, str(folder / "gradviz.ini.recovery"))
        patch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
        win = MainWindow(store, auto_run=False)
        bot = QtBot(request)
        win.show()
        with bot.waitActive(win):
            win.activateWindow()
        bot.waitUntil(lambda: win.worker.is_ready, timeout=60_000)
        win.load_builtin(FAILING)
        with bot.waitSignal(win.memory_shown, timeout=RUN_TIMEOUT):
            run_and_wait(bot, win)
        assert win.banner.state == "failed"
        win.bot = bot
        yield win
        pid = win.worker.pid
        win.close()
        win.deleteLater()
        if pid:
            with pytest.raises(ProcessLookupError):
                for _ in range(50):
                    os.kill(pid, 0)
                    bot.wait(20)
                raise AssertionError(f"worker {pid} still alive after the window closed")


def settle(window, size: tuple[int, int]) -> None:
    window.resize(*size)
    window.bot.waitUntil(lambda: (window.width(), window.height()) == size)
    window.bot.wait(150)  # deferred relayouts (text fitting, label thinning) run on 0 ms timers


def dock_titles() -> list[str]:
    from gradviz.app import audit_link, why_link, window_layout

    return [*window_layout.PANELS, why_link.TITLE, audit_link.TITLE]


def shot(widget, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    widget.grab().save(str(ARTIFACTS / f"overlap-{name}.png"))


@pytest.mark.parametrize(("title", "size"), cases(dock_titles()))
def test_every_dock_and_every_tab_in_it(window, title, size):
    settle(window, size)
    dock = next(d for d in each_dock_raised(window) if d.windowTitle() == title)
    dock.raise_()
    window.bot.wait(50)
    found = []
    for tab in each_inner_tab(dock.widget()):
        window.bot.wait(30)
        found += [f"[{tab}] {p}" for p in dock_problems(window, dock)]
    shot(window, f"{title}-{size[0]}x{size[1]}")
    assert not found, "\n".join(found)


def test_each_dock_is_visited(window):
    """The docks the layout makes are the ones the cases above cover (a new dock gets checked)."""
    titles = {dock.windowTitle() for dock in each_dock_raised(window)}
    assert titles == set(dock_titles()), titles


def screen(size: tuple[int, int], on: QWidget | None = None) -> QRect:
    """The screen of that size, as far as the available geometry of the real screen ``on`` is
    (its window's screen) holds it: on the suite's 1920x1200 screen every size fits whole; run
    on a 1280x720 screen, the larger sizes are that screen, as a dialog can be on no more."""
    simulated = QRect(0, 0, *size)
    return simulated if on is None else simulated.intersected(on.screen().availableGeometry())


def open_shortcuts(window, size):
    window.bot.keyClick(window, Qt.Key.Key_F1)
    window.bot.waitUntil(lambda: getattr(window, "shortcuts_dialog", None) is not None)
    dialog = window.shortcuts_dialog
    dialog.fit(screen(size))  # as on a screen of this size (or less: the real one)
    window.bot.waitUntil(dialog.isVisible)
    return dialog


@pytest.mark.parametrize(("what", "size"), cases(["shortcuts"]))
def test_the_shortcuts_dialog_fits_the_screen_and_cuts_nothing(window, what, size):
    settle(window, size)
    window.shortcuts_dialog = None
    dialog = open_shortcuts(window, size)
    try:
        window.bot.wait(50)
        shot(dialog, f"{what}-{size[0]}x{size[1]}")
        problems = dialog_problems(dialog, screen(size, dialog))
        assert not problems, "\n".join(problems)
        text = dialog.label.text()
        for keys, _what in shortcut_rows(window.actions.values()):
            assert keys in text  # every shortcut listed (F1 included)
        assert dialog.area.verticalScrollBar().maximum() >= 0
    finally:
        dialog.close()


def test_the_old_fixed_size_shortcuts_dialog_is_caught(window):
    """The checker sees what the user saw at 720 lines: the 640 px dialog cut on the right."""
    from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout

    from gradviz.app.shortcuts_dialog import table_html

    old = QDialog(window)
    label = QLabel(table_html(shortcut_rows(window.actions.values())))
    area = QScrollArea()
    area.setWidget(label)
    area.setWidgetResizable(True)
    QVBoxLayout(old).addWidget(area)
    old.resize(640, 720)
    old.move(0, 0)
    old.show()
    window.bot.waitExposed(old)
    try:
        problems = dialog_problems(old, screen((1280, 720)))
        assert any("cut on the right" in p for p in problems), problems
    finally:
        old.close()


@pytest.mark.parametrize(("what", "size"), cases(["export"]))
def test_the_export_dialog(window, what, size, monkeypatch):
    settle(window, size)
    found = []

    def exec_(dialog: ExportDialog) -> int:
        dialog.show()
        window.bot.waitExposed(dialog)
        shot(dialog, f"{what}-{size[0]}x{size[1]}")
        found.extend(dialog_problems(dialog, screen(size, dialog)))
        dialog.reject()
        return QDialog.DialogCode.Rejected

    monkeypatch.setattr(ExportDialog, "exec", exec_)
    window.actions["export"].trigger()
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("what", "size"), cases(["recovery"]))
def test_the_recovery_dialog(window, what, size, tmp_path):
    settle(window, size)
    entries = [
        Recovered(f"buggy_{k}.py", str(tmp_path / f"buggy_{k}.py"), 1_700_000_000 + k, tmp_path / f"r{k}", size=40, offset=0,
                  text=f"def f(x):\n    return {k} * x  # a text left behind\n")
        for k in range(3)
    ]  # fmt: skip
    dialog = RecoveryDialog(
        entries, restore=lambda e: False, save_copy=lambda e: False, discard=lambda e: False,
        restorable=lambda e: None, parent=window,
    )  # fmt: skip
    dialog.show()
    window.bot.waitExposed(dialog)
    try:
        shot(dialog, f"{what}-{size[0]}x{size[1]}")
        problems = dialog_problems(dialog, screen(size, dialog))
        assert not problems, "\n".join(problems)
    finally:
        dialog.close()
        dialog.deleteLater()


@pytest.mark.parametrize(("what", "size"), cases(["presentation"]))
def test_presentation_mode_every_visible_text(window, what, size):
    """Whatever presentation mode shows (it is being redesigned): no overlap, nothing cut."""
    window.actions["presentation"].trigger()
    try:
        assert window.in_presentation()
        settle(window, size)
        shot(window, f"{what}-{size[0]}x{size[1]}")
        problems = layout_problems(window)
        assert not problems, "\n".join(problems)
    finally:
        window.actions["presentation"].trigger()
        window.bot.waitUntil(lambda: not window.in_presentation())
