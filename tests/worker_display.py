"""One X display per pytest-xdist worker, each with its own window manager.

Under ``pytest -n 2`` two processes show windows at once. On one shared display they would take
the keyboard focus from each other (a window manager gives focus to the newest window), so a test
typing Ctrl+Enter could type into the other process's window. Each worker therefore starts a
private Xvfb (``-displayfd`` picks a free number, so workers and other sessions never collide)
with the same screen size as the display it was started on, and openbox on it when installed.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time

SCREEN = os.environ.get("GRADVIZ_TEST_SCREEN", "1920x1200x24")
HELPER_PIDS: set[int] = set()  # this display's Xvfb and openbox: children no test started


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the xdist worker dies, however it ends (xdist may
    end a worker without running pytest_unconfigure), so no Xvfb or openbox outlives the run."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _wait_for_window_manager(display: str, deadline_s: float = 90.0) -> None:
    """Until openbox manages the screen (``wmctrl -m`` names it); without wmctrl, until the
    root window has the _NET_SUPPORTING_WM_CHECK property openbox sets when it is ready.

    The deadline is generous: on a machine set up seconds ago, openbox's first start (caches
    built while the other worker starts too) took over 20 s."""
    env = {**os.environ, "DISPLAY": display}
    probe = ["wmctrl", "-m"] if shutil.which("wmctrl") else ["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"]
    if not shutil.which(probe[0]):
        return
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        done = subprocess.run(probe, env=env, capture_output=True, text=True)
        if done.returncode == 0 and "not found" not in done.stdout:
            return
        time.sleep(0.05)
    raise RuntimeError(f"openbox did not start managing {display} within {deadline_s:.0f} s")


class WorkerDisplay:
    """Xvfb (and openbox) for this process, stopped by ``close``."""

    def __init__(self) -> None:
        read_end, write_end = os.pipe()
        self.xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write_end), "-screen", "0", SCREEN, "-nolisten", "tcp"],
            pass_fds=(write_end,),
            preexec_fn=_die_with_parent,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write_end)
        HELPER_PIDS.add(self.xvfb.pid)
        with os.fdopen(read_end) as chosen:
            number = chosen.readline().strip()
        if not number:
            self.xvfb.kill()
            raise RuntimeError("Xvfb did not report a display number")
        self.display = f":{number}"
        self.window_manager = None
        if shutil.which("openbox"):
            self.window_manager = subprocess.Popen(
                ["openbox", "--sm-disable"],
                env={**os.environ, "DISPLAY": self.display},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
            HELPER_PIDS.add(self.window_manager.pid)
            _wait_for_window_manager(self.display)

    def close(self) -> None:
        for process in (self.window_manager, self.xvfb):
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def start_if_xdist_worker() -> WorkerDisplay | None:
    """A private display when this is an xdist worker on an X display and Xvfb exists."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or not os.environ.get("DISPLAY") or not shutil.which("Xvfb"):
        return None
    display = WorkerDisplay()
    os.environ["DISPLAY"] = display.display
    return display
