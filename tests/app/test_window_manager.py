"""The real app under a real window manager (openbox on a private Xvfb), as a user runs it at a
projector's 1280x720, a laptop's 1366x768 and a desktop's 1920x1080: the frame, title bar
included, fits the screen's work area at first launch, after a run that shows the "from the
previous run" banner, and maximized; maximize, Ctrl+Q and relaunch (three times at 1280x720)
never crashes and comes back maximized;
a layout saved on a big screen comes back on a small one, fitted to it.

Each launch is a real ``gradviz`` process (``app_process``), measured from outside with the X
tools (``wm_display``), and quit with Ctrl+Q typed into its window."""

from __future__ import annotations

import os
import select
import time

import pytest

from tests.app.app_process import settings_file, start_app
from tests.app.wm_display import WmDisplay, poll, wm_displays  # noqa: F401 (the fixture)

SIZES = ((1280, 720), (1366, 768), (1920, 1080))
SETTLE_MS = "300"  # the driver's pause once the window is idle: nothing here waits for a timer
FAILING = "buggy_linear_transpose"
FIT_TIMEOUT_S = 10  # the window manager frames, Qt hears of the frame, the window is fitted
# relaunched three times on the projector's screen, once on the others: every relaunch checks the
# frame equals the work area exactly, so a geometry that drifts shows at the first one at any size;
# the repeats (a crash after saving and restoring again) need no second and third size
RELAUNCHES = {(1280, 720): 3}


class App:
    """One app process on ``display``, its output read as it comes."""

    def __init__(self, display: WmDisplay, tmp_path, steps: list[str], *args: str) -> None:
        self.display = display
        self.child = start_app(
            tmp_path,
            *args,
            steps=steps,
            DISPLAY=display.name,
            QT_QPA_PLATFORM="xcb",
            CHILD_SETTLE_MS=SETTLE_MS,
        )
        self.out = ""

    def until(self, marker: str, timeout: float = 180) -> None:
        """Read the output until a line starts with ``marker``."""
        fd = self.child.stdout.fileno()
        deadline = time.monotonic() + timeout
        while not any(line.startswith(marker) for line in self.out.splitlines()):
            left = deadline - time.monotonic()
            chunk = os.read(fd, 65536) if left > 0 and select.select([fd], [], [], left)[0] else b""
            if not chunk:
                self.child.kill()
                raise AssertionError(f"no {marker!r} (exit {self.child.wait()}); the app said:\n{self.out}")
            self.out += chunk.decode("utf-8", "replace")

    def window(self) -> str:
        return self.display.window_of(self.child.pid)

    def quit_with_ctrl_q(self, wid: str) -> int:
        self.display.key(wid, "ctrl+q")
        try:
            rest, _ = self.child.communicate(timeout=60)
        finally:
            if self.child.poll() is None:
                self.child.kill()
        self.out += rest
        return self.child.returncode


def assert_frame_fits(display: WmDisplay, wid: str, when: str) -> None:
    """The whole frame on the work area (waiting for the window manager and Qt to settle)."""
    area = display.work_area()

    def fits():
        return area.contains(display.frame(wid))

    try:
        poll(fits, FIT_TIMEOUT_S, "the frame to fit")
    except AssertionError:
        raise AssertionError(
            f"{when}: frame {display.frame(wid)} is not within the work area {area}"
        ) from None


def assert_maximized_fits(display: WmDisplay, wid: str, when: str) -> None:
    """Maximized: the frame fills the work area exactly, no taller."""
    assert display.is_maximized(wid), when
    area = display.work_area()
    poll(
        lambda: display.frame(wid) == area,
        FIT_TIMEOUT_S,
        f"{when}: frame {display.frame(wid)} == work area {area}",
    )


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_maximize_quit_relaunch_three_times(wm_displays, tmp_path, size):  # noqa: F811
    display = wm_displays(size)
    # first launch, fresh settings: a failing run (verdict, checks, hint), then an edit that shows
    # the "from the previous run" banner: the most the centre ever shows above the heatmaps
    app = App(display, tmp_path, ["run", "type:# edited\\n", "hold"], "--example", FAILING)
    wid = app.window()
    assert_frame_fits(display, wid, "first launch")
    app.until("HOLDING")
    assert_frame_fits(display, wid, "after a run, with the banner")
    display.maximize(wid)
    assert_maximized_fits(display, wid, "maximized, with the banner")
    assert app.quit_with_ctrl_q(wid) == 0, app.out
    last = 1 + RELAUNCHES.get(size, 1)
    for launch in range(2, last + 1):  # the window comes back maximized; maximize (again) and quit
        app = App(display, tmp_path, ["hold"])
        app.until("HOLDING")
        wid = app.window()
        assert_maximized_fits(display, wid, f"launch {launch}, restored maximized")
        if launch < last:
            display.maximize(wid)
        assert app.quit_with_ctrl_q(wid) == 0, f"launch {launch}:\n{app.out}"


def test_a_layout_from_a_big_screen_on_a_small_one(wm_displays, tmp_path):  # noqa: F811
    big, small = wm_displays((1920, 1080)), wm_displays((1280, 720))
    app = App(big, tmp_path, ["hold"])
    app.until("HOLDING")
    wid = app.window()
    big.maximize(wid)
    assert app.quit_with_ctrl_q(wid) == 0, app.out
    assert settings_file(tmp_path).is_file()
    app = App(small, tmp_path, ["hold"])  # the same settings, on the projector
    app.until("HOLDING")
    wid = app.window()
    # seen with Qt 6.11 and openbox: on a screen of another size the window comes back in its
    # normal geometry (1680x1020 here), not maximized; either way its frame must fit
    assert_frame_fits(small, wid, "restored from a maximized 1920x1080 window on 1280x720")
    assert app.quit_with_ctrl_q(wid) == 0, app.out
