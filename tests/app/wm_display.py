"""A private X server with a real window manager, for tests about what a window manager does:
Xvfb at a chosen screen size with openbox on it, so windows get title bars, frames, a work area
and can be maximized, as on a user's desktop (the suite's own Xvfb has no window manager).

``wm_displays`` (module-scoped) starts one per size on first use and stops them all at the end
of the module; tests skip, saying why, where Xvfb, openbox or the X tools are not installed
(``scripts/install-system-deps.sh --with-xvfb`` installs them). Windows are found and measured
with the same tools a user's desktop answers to: ``wmctrl``, ``xprop``, ``xwininfo``, ``xdotool``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

TOOLS = ("Xvfb", "openbox", "wmctrl", "xdotool", "xprop", "xwininfo")
START_TIMEOUT_S = 30


def poll(condition: Callable[[], object], timeout: float, what: str):
    """``condition()``'s first truthy value, asked until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)  # between questions to the X server, not a wait for an outcome


@dataclass(frozen=True)
class Rect:
    x: int
    y: int
    width: int
    height: int

    def contains(self, other: Rect) -> bool:
        return (
            other.x >= self.x
            and other.y >= self.y
            and other.x + other.width <= self.x + self.width
            and other.y + other.height <= self.y + self.height
        )


class WmDisplay:
    """Xvfb at ``size`` with openbox managing its windows."""

    def __init__(self, size: tuple[int, int]) -> None:
        self.size = size
        read, write = os.pipe()
        self.xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", f"{size[0]}x{size[1]}x24", "-nolisten", "tcp"],
            pass_fds=(write,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write)
        with os.fdopen(read) as pipe:
            number = pipe.readline().strip()  # Xvfb writes its display number once it accepts clients
        if not number:
            self.xvfb.kill()
            raise RuntimeError(f"Xvfb did not start at {size}")
        self.name = f":{number}"
        self.openbox = self._start_openbox()
        poll(self._managed, START_TIMEOUT_S, "openbox to manage windows")

    def _start_openbox(self) -> subprocess.Popen:
        return subprocess.Popen(
            ["openbox", "--sm-disable"], env=self.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def _managed(self) -> bool:
        """Whether openbox manages the display; an openbox that left before it did is started again
        (seen once in CI: it never came up on a fresh display, and the test timed out)."""
        if self.x("wmctrl", "-m", check=False) is not None:
            return True
        if self.openbox.poll() is not None:
            self.openbox = self._start_openbox()
        return False

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "DISPLAY": self.name, **extra}

    def x(self, *args: str, check: bool = True) -> str | None:
        """Run an X tool on this display: its output (None when it failed and ``check`` is off)."""
        done = subprocess.run(args, env=self.env(), capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            if check:
                raise AssertionError(f"{' '.join(args)}: {done.stderr.strip()}")
            return None
        return done.stdout

    def close(self) -> None:
        for process in (self.openbox, self.xvfb):
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    # --- windows -----------------------------------------------------------------------------
    def window_of(self, pid: int, title: str = "gradviz", timeout: float = 60) -> str:
        """The id of the managed window of process ``pid`` whose title ends with ``title``."""

        def found() -> str | None:
            for line in (self.x("wmctrl", "-lp", check=False) or "").splitlines():
                wid, _desktop, owner, *rest = line.split(maxsplit=4)
                if owner == str(pid) and rest and rest[-1].endswith(title):
                    return wid
            return None

        return poll(found, timeout, f"a window titled …{title} of process {pid}")

    def cardinals(self, wid: str | None, name: str) -> list[int]:
        args = ["xprop", "-root", name] if wid is None else ["xprop", "-id", wid, name]
        return [int(v) for v in re.findall(r"\d+", self.x(*args).partition("=")[2])]

    def client(self, wid: str) -> Rect:
        """The window's client area (what Qt calls its geometry), in screen coordinates."""
        info = self.x("xwininfo", "-id", wid)
        value = {key: int(re.search(rf"{key}:\s+(-?\d+)", info).group(1)) for key in (
            "Absolute upper-left X", "Absolute upper-left Y", "Width", "Height")}  # fmt: skip
        return Rect(
            value["Absolute upper-left X"], value["Absolute upper-left Y"], value["Width"], value["Height"]
        )

    def frame(self, wid: str) -> Rect:
        """The window with the window manager's frame (title bar, borders) around it."""
        client = self.client(wid)
        left, right, top, bottom = self.cardinals(wid, "_NET_FRAME_EXTENTS") or (0, 0, 0, 0)
        return Rect(
            client.x - left, client.y - top, client.width + left + right, client.height + top + bottom
        )

    def work_area(self) -> Rect:
        """The screen less panels: what a window may cover (Qt's ``availableGeometry``)."""
        return Rect(*self.cardinals(None, "_NET_WORKAREA")[:4])

    def states(self, wid: str) -> str:
        return self.x("xprop", "-id", wid, "_NET_WM_STATE")

    def is_maximized(self, wid: str) -> bool:
        states = self.states(wid)
        return "MAXIMIZED_VERT" in states and "MAXIMIZED_HORZ" in states

    def maximize(self, wid: str) -> None:
        """Maximize as the title bar's button does: the window manager's doing, not the app's."""
        self.x("wmctrl", "-i", "-r", wid, "-b", "add,maximized_vert,maximized_horz")
        poll(lambda: self.is_maximized(wid), 10, "the window to be maximized")

    def unmaximize(self, wid: str) -> None:
        """Un-maximize as the title bar's button does: the window goes back to its normal place."""
        self.x("wmctrl", "-i", "-r", wid, "-b", "remove,maximized_vert,maximized_horz")
        poll(lambda: not self.is_maximized(wid), 10, "the window to be un-maximized")

    def key(self, wid: str, keys: str) -> None:
        """Press ``keys`` (xdotool's names: ctrl+q) in the window, made active first."""
        self.x("xdotool", "windowactivate", "--sync", wid)
        self.x("xdotool", "key", "--clearmodifiers", keys)  # through XTEST, as a keyboard would


@pytest.fixture(scope="module")
def wm_displays():
    """``wm_displays(size)``: the module's Xvfb + openbox at that size, started on first use."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        pytest.skip(
            f"a window manager display needs {', '.join(missing)} (install-system-deps.sh --with-xvfb)"
        )
    started: dict[tuple[int, int], WmDisplay] = {}

    def get(size: tuple[int, int]) -> WmDisplay:
        if size not in started:
            started[size] = WmDisplay(size)
        return started[size]

    yield get
    for display in started.values():
        display.close()
