"""The window comes back where it was quit, to the pixel, under a real window manager (openbox
on a private Xvfb) on a projector's 1280x720 and a laptop's 1366x768: relaunched again and
again, its frame stays where the first launch put it, fully on screen; quit maximized, it comes
back maximized and un-maximizes to the place it had before; presentation mode (full screen)
hands it back where it was; a position saved a few pixels too low (by a version that drifted)
is pulled back onto the screen.

Each launch is a real ``gradviz`` process, measured from outside with the X tools."""

from __future__ import annotations

import struct

import pytest
from PySide6.QtCore import QByteArray, QSettings

from tests.app.app_process import settings_file
from tests.app.test_window_manager import FIT_TIMEOUT_S, App, assert_frame_fits, assert_maximized_fits
from tests.app.wm_display import Rect, WmDisplay, poll, wm_displays  # noqa: F401 (the fixture)

SIZES = ((1280, 720), (1366, 768))
IDS = [f"{w}x{h}" for w, h in SIZES]
RELAUNCHES = 3
GEOMETRY_RECTS = (8, 24, 50)  # offsets of the frame, normal and client QRects in a saveGeometry blob


def launch(display: WmDisplay, tmp_path) -> tuple[App, str]:
    """An app whose window is idle (its settings restored, its first layout done)."""
    app = App(display, tmp_path, ["hold"])
    app.until("HOLDING")
    return app, app.window()


def assert_frame_is(display: WmDisplay, wid: str, expected: Rect, when: str) -> None:
    try:
        poll(lambda: display.frame(wid) == expected, FIT_TIMEOUT_S, "the frame")
    except AssertionError:
        raise AssertionError(f"{when}: frame {display.frame(wid)}, not {expected} as quit") from None


def first_frame(display: WmDisplay, tmp_path) -> Rect:
    """Launch with fresh settings, quit: the frame the window had (on the work area)."""
    app, wid = launch(display, tmp_path)
    assert_frame_fits(display, wid, "first launch")
    frame = display.frame(wid)
    assert app.quit_with_ctrl_q(wid) == 0, app.out
    return frame


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_relaunched_the_frame_stays_where_it_was(wm_displays, tmp_path, size):  # noqa: F811
    display = wm_displays(size)
    frame = first_frame(display, tmp_path)
    for launch_number in range(2, 2 + RELAUNCHES):
        app, wid = launch(display, tmp_path)
        assert_frame_is(display, wid, frame, f"launch {launch_number}")
        assert display.work_area().contains(display.frame(wid)), f"launch {launch_number}"
        assert app.quit_with_ctrl_q(wid) == 0, app.out


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_quit_maximized_it_comes_back_maximized_and_unmaximizes_there(wm_displays, tmp_path, size):  # noqa: F811
    display = wm_displays(size)
    frame = first_frame(display, tmp_path)
    app, wid = launch(display, tmp_path)
    display.maximize(wid)
    assert_maximized_fits(display, wid, "maximized")
    assert app.quit_with_ctrl_q(wid) == 0, app.out
    app, wid = launch(display, tmp_path)
    assert_maximized_fits(display, wid, "relaunched")
    display.unmaximize(wid)
    assert_frame_is(display, wid, frame, "un-maximized after the relaunch")
    assert app.quit_with_ctrl_q(wid) == 0, app.out


def shift_saved_geometry(tmp_path, dy: int) -> None:
    """Move every rectangle of the saved geometry ``dy`` pixels down, as a drifting save did."""
    store = QSettings(str(settings_file(tmp_path)), QSettings.Format.IniFormat)
    blob = bytearray(bytes(store.value("window/geometry")))
    for offset in GEOMETRY_RECTS:
        left, top, right, bottom = struct.unpack_from(">iiii", blob, offset)
        struct.pack_into(">iiii", blob, offset, left, top + dy, right, bottom + dy)
    store.setValue("window/geometry", QByteArray(bytes(blob)))
    store.sync()


@pytest.mark.slow
def test_a_frame_saved_off_the_bottom_comes_back_on_screen(wm_displays, tmp_path):  # noqa: F811
    display = wm_displays(SIZES[0])
    frame = first_frame(display, tmp_path)
    shift_saved_geometry(tmp_path, 5)  # the frame's bottom edge 5 px below the screen's
    app, wid = launch(display, tmp_path)
    assert_frame_fits(display, wid, "a geometry saved 5 px too low")
    assert display.frame(wid) == frame
    assert app.quit_with_ctrl_q(wid) == 0, app.out


@pytest.mark.slow
def test_leaving_presentation_mode_puts_the_frame_back(wm_displays, tmp_path):  # noqa: F811
    display = wm_displays(SIZES[0])
    app, wid = launch(display, tmp_path)
    assert_frame_fits(display, wid, "launch")
    frame = display.frame(wid)
    display.key(wid, "F11")
    poll(lambda: "FULLSCREEN" in display.states(wid), 10, "presentation mode to go full screen")
    display.key(wid, "F11")
    poll(lambda: "FULLSCREEN" not in display.states(wid), 10, "presentation mode to end")
    assert_frame_is(display, wid, frame, "after presentation mode")
    assert app.quit_with_ctrl_q(wid) == 0, app.out
