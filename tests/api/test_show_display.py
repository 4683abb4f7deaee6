"""``report.show()``, ``gradviz.show()`` and ``gradviz`` (the app) ask the display server itself
whether a window can open, before anything starts: a ``DISPLAY`` that names a server nobody serves
(SSH, a remote kernel, an Xvfb long gone) gets one line saying so and what to do instead, never a
child that aborts in Qt unheard. ``gradviz.protocol.display`` connects for real: to a listening
socket made here, to a closed one, and to the X server of the test session when there is one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import gradviz
from gradviz.protocol.display import display_problem, x_problem
from tests.api import functions as f
from tests.paths import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 display names are Linux's")


def unserved_display() -> str:
    """``:n`` for a display number no X server on this machine serves (no socket file for it)."""
    for number in range(917, 1017):
        if not Path(f"/tmp/.X11-unix/X{number}").exists() and x_problem(f":{number}") is not None:
            return f":{number}"
    pytest.skip("every display number from 917 on is served")


@pytest.fixture
def stale_display(monkeypatch, tmp_path):
    """DISPLAY names a display nobody serves; nothing else could stand in for one."""
    display = unserved_display()
    monkeypatch.setenv("DISPLAY", display)
    for name in ("WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where show() would write its files
    return display


def test_report_show_with_a_stale_display_starts_nothing_and_says_what_to_do(stale_display, tmp_path, capsys):
    report = gradviz.check(f.Product, f.inputs())
    started = [report.show(), gradviz.show(f.Product, f.inputs())]
    for process in started:  # a regression would start the window's process here: end it
        if process is not None:
            process.kill()
            process.wait()
    assert started == [None, None]
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]
    number = stale_display.lstrip(":")
    assert "no display" in lines[0] and f"DISPLAY={stale_display}" in lines[0] and f"X{number}" in lines[0]
    assert "report.save(" in lines[0] and "notebook" in lines[0] and "gradviz check" in lines[0]
    assert not list(tmp_path.glob("gradviz-show-*")), "nothing is written before the display answers"


def test_the_app_with_a_stale_display_exits_2_with_one_line_before_qt_starts(tmp_path):
    display = unserved_display()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DISPLAY": display, "HOME": str(tmp_path)}
    for name in ("WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-m", "gradviz", "--example", "linear"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("gradviz: no display found (") and f"DISPLAY={display}" in done.stderr
    assert "qt.qpa" not in done.stderr and "xcb" not in done.stderr  # Qt never started


def test_a_tcp_display_is_there_while_its_port_listens_and_gone_once_closed():
    """``host:n`` is X on TCP port 6000 + n (what ``ssh -X`` sets): a socket listening there is a
    display; the same number once the socket is closed is not."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    for port in range(6000 + 917, 6000 + 1017):
        try:
            server.bind(("127.0.0.1", port))
            break
        except OSError:
            continue
    else:
        pytest.skip("no free port from 6917 on")
    display = f"127.0.0.1:{port - 6000}.0"
    server.listen(1)
    with server:
        assert display_problem({"DISPLAY": display}, "linux") is None
    problem = display_problem({"DISPLAY": display}, "linux")
    assert problem is not None and f"port {port}" in problem and "refused" in problem


def test_wayland_is_asked_at_its_socket_and_x_is_the_fallback(tmp_path):
    path = tmp_path / "wayland-7"
    missing = display_problem({"WAYLAND_DISPLAY": "wayland-7", "XDG_RUNTIME_DIR": str(tmp_path)}, "linux")
    assert missing is not None and str(path) in missing
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as compositor:
        compositor.bind(str(path))
        compositor.listen(1)
        assert display_problem({"WAYLAND_DISPLAY": "wayland-7", "XDG_RUNTIME_DIR": str(tmp_path)}, "linux") is None
        stale_x = {"WAYLAND_DISPLAY": str(path), "DISPLAY": unserved_display()}
        assert display_problem(stale_x, "linux") is None  # Qt takes Wayland
        assert display_problem({**stale_x, "QT_QPA_PLATFORM": "xcb"}, "linux") is not None  # ... unless told X


def test_no_display_names_and_platforms_that_need_none():
    assert "neither DISPLAY nor WAYLAND_DISPLAY" in display_problem({}, "linux")
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    assert display_problem({}, "darwin") is None and display_problem({}, "win32") is None
    assert "not a display name" in display_problem({"DISPLAY": "nonsense"}, "linux")


@pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="runs under Xvfb (the GUI tests' xvfb-run)")
def test_the_x_server_of_this_session_is_a_display():
    assert display_problem({"DISPLAY": os.environ["DISPLAY"]}, sys.platform) is None
