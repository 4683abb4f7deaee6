"""Help → Keyboard shortcuts (F1) under a real window manager (openbox on a private Xvfb): the
dialog's frame, title bar included, lies within the work area of the screen its window is on.

- The real app on a projector's 1280x720, a laptop's 1366x768 and a desktop's 1920x1080 screen,
  F1 typed into its window; measured from outside with the X tools (``wm_display``).
- On a 1280x720 screen, the dialog fitted to a room larger than that screen (as
  ``test_no_overlap_everywhere`` fits it to 1366x768 and 1920x1080): a ``fit`` that believed the
  room would come out taller than the screen, and openbox would push its title bar above the top.
- In the suite's own display, the size and place ``fit`` asks for (before openbox corrects
  anything) for a room larger than the screen or off it: those of the screen itself.

The screenshots (``shortcuts-WxH.png`` in the artifacts) show the whole screen, title bars included.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest
from PySide6.QtCore import QRect
from PySide6.QtWidgets import QWidget

from gradviz.app.shortcuts_dialog import ShortcutsDialog
from tests.app.test_window_manager import App, assert_frame_fits
from tests.app.wm_display import WmDisplay, wm_displays  # noqa: F401 (the fixture)
from tests.paths import ARTIFACTS, ROOT

SIZES = ((1280, 720), (1366, 768), (1920, 1080))
PROJECTOR = (1280, 720)
TITLE = "Keyboard shortcuts"

# a window with the app's menus and actions whose F1 opens the dialog as the app's does, then
# fits it to the room given on the command line
CHILD = textwrap.dedent(
    """
    import sys
    from PySide6.QtCore import QRect
    from PySide6.QtWidgets import QApplication, QMainWindow
    from gradviz.app.actions import ACTIONS, KEYS_HELP, build_actions
    from gradviz.app.shortcuts_dialog import show_shortcuts

    app = QApplication(sys.argv[:1])
    window = QMainWindow()
    window.setWindowTitle("gradviz")
    room = QRect(0, 0, int(sys.argv[1]), int(sys.argv[2]))
    slots = {spec.name: (lambda: None) for spec in ACTIONS}
    slots["shortcuts"] = lambda: show_shortcuts(window, actions.values(), KEYS_HELP).fit(room)
    _menus, actions = build_actions(window, slots)
    window.showMaximized()
    sys.exit(app.exec())
    """
)


def screenshot(display: WmDisplay, name: str) -> None:
    """The whole screen, frames and title bars included, for a person to look at."""
    if shutil.which("import"):
        ARTIFACTS.mkdir(exist_ok=True)
        display.x("import", "-window", "root", str(ARTIFACTS / name), check=False)


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_f1_in_the_real_app_fits_the_work_area(wm_displays, tmp_path, size):  # noqa: F811
    display = wm_displays(size)
    app = App(display, tmp_path, ["hold"])
    app.until("HOLDING")
    wid = app.window()
    display.key(wid, "F1")
    dialog = display.window_of(app.child.pid, TITLE)
    assert_frame_fits(display, dialog, f"F1 at {size[0]}x{size[1]}")
    screenshot(display, f"shortcuts-{size[0]}x{size[1]}.png")
    assert app.quit_with_ctrl_q(wid) == 0, app.out


@pytest.mark.parametrize("room", SIZES, ids=[f"room-{w}x{h}" for w, h in SIZES])
def test_a_room_larger_than_the_screen_keeps_the_frame_on_it(wm_displays, room):  # noqa: F811
    display = wm_displays(PROJECTOR)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, *map(str, room)], cwd=ROOT,
        env=display.env(PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="xcb"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wid = display.window_of(child.pid)
        display.key(wid, "F1")
        dialog = display.window_of(child.pid, TITLE)
        assert_frame_fits(display, dialog, f"fitted to {room[0]}x{room[1]} on a 1280x720 screen")
    finally:
        child.kill()
        out, _ = child.communicate()
    assert child.returncode == -9, out  # alive until killed: nothing failed in the child


def fitted(qtbot, parent: QWidget, available: QRect | None) -> ShortcutsDialog:
    dialog = ShortcutsDialog([(f"Ctrl+{k}", "a key that does something") for k in range(80)], parent,
                             available=available)  # fmt: skip
    qtbot.addWidget(dialog)
    return dialog


@pytest.mark.parametrize(
    "available",
    [QRect(0, 0, 20_000, 20_000), QRect(50_000, 50_000, 800, 600)],
    ids=["more than the screen", "off the screen"],
)
def test_a_room_the_screen_cannot_give_is_the_screen(qtbot, available):
    """In the suite's display, before any window manager has a say: a room larger than the
    parent's screen, or one that misses it, gives the dialog the size and place it has on that
    screen, frame estimate included (80 rows: taller than any screen, so the table scrolls)."""
    parent = QWidget()
    qtbot.addWidget(parent)
    parent.show()
    qtbot.waitExposed(parent)
    on_screen, asked = fitted(qtbot, parent, None), fitted(qtbot, parent, available)
    assert (asked.size(), asked.pos()) == (on_screen.size(), on_screen.pos())
    assert parent.screen().availableGeometry().contains(QRect(asked.pos(), asked.size()))
