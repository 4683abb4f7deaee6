"""Can a window open here? Asked by connecting to the display server, before anything starts.

``DISPLAY`` being set says little: over SSH, in a remote Jupyter kernel or after an Xvfb has
gone, it names a server nobody serves, and Qt then aborts in a child process the caller never
hears from. So the X server is connected to (its Unix socket, or TCP port 6000 + n for
``host:n``), as is the Wayland compositor's socket; a refused or missing socket means no display.
macOS and Windows always have one; Qt's offscreen, minimal and vnc platforms need none.

The standard library only (no Qt, no torch): ``gradviz.show`` and the app's launcher both ask
here, so the library never imports the window's modules to find out.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping

CONNECT_TIMEOUT_S = 2.0  # a forwarded display over a slow link still answers in this
HEADLESS_PLATFORMS = ("offscreen", "minimal", "vnc")  # Qt platforms that need no display server
X_TCP_PORT = 6000


def display_problem(env: Mapping[str, str] | None = None, platform: str | None = None) -> str | None:
    """None when a window can open; otherwise why not, as a phrase (``DISPLAY=:99 is set, but no
    X server answers at /tmp/.X11-unix/X99 (connection refused)``)."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    qpa = env.get("QT_QPA_PLATFORM", "").split(":")[0].split(";")[0]
    if qpa in HEADLESS_PLATFORMS or platform in ("darwin", "win32"):
        return None
    x, wayland = env.get("DISPLAY", ""), env.get("WAYLAND_DISPLAY", "")
    if not x and not wayland:
        return "neither DISPLAY nor WAYLAND_DISPLAY is set"
    problems = []
    if wayland and qpa != "xcb":
        problem = wayland_problem(wayland, env.get("XDG_RUNTIME_DIR", ""))
        if problem is None:
            return None
        problems.append(problem)
    if x and qpa != "wayland":
        problem = x_problem(x, platform)
        if problem is None:
            return None
        problems.append(problem)
    return "; ".join(problems) or f"QT_QPA_PLATFORM={qpa} names a display that is not set"


def has_display(env: Mapping[str, str] | None = None) -> bool:
    return display_problem(env) is None


def x_problem(display: str, platform: str = sys.platform) -> str | None:
    """None when the X server of ``display`` (``[host]:n[.screen]``) accepts a connection."""
    host, _, rest = display.rpartition(":")
    number = rest.split(".")[0]
    if not number.isdigit():
        return f"DISPLAY={display} is not a display name (like :0 or localhost:10.0)"
    if host in ("", "unix") or host.startswith("/"):  # a local server: its Unix socket
        path = f"/tmp/.X11-unix/X{number}"
        # Linux servers listen on an abstract socket too: the one a container without /tmp sees
        addresses = (["\0" + path] if platform.startswith("linux") else []) + [path]
        reason = _first_connect(socket.AF_UNIX, addresses)
        where = path
    else:
        port = X_TCP_PORT + int(number)
        reason = _tcp_connect(host.strip("[]"), port)
        where = f"{host} port {port}"
    return None if reason is None else f"DISPLAY={display} is set, but no X server answers at {where} ({reason})"


def wayland_problem(name: str, runtime_dir: str) -> str | None:
    """None when the Wayland compositor's socket (``$XDG_RUNTIME_DIR/$WAYLAND_DISPLAY``) accepts."""
    path = name if os.path.isabs(name) else os.path.join(runtime_dir, name)
    if not os.path.isabs(path):
        return f"WAYLAND_DISPLAY={name} is set, but XDG_RUNTIME_DIR is not"
    reason = _first_connect(socket.AF_UNIX, [path])
    return None if reason is None else f"WAYLAND_DISPLAY={name} is set, but no compositor answers at {path} ({reason})"


def _first_connect(family: int, addresses: list) -> str | None:
    """None as soon as one address accepts a connection; else why the last one did not."""
    reason = "nothing to connect to"
    for address in addresses:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as sock:
                sock.settimeout(CONNECT_TIMEOUT_S)
                sock.connect(address)
            return None
        except OSError as exc:  # refused, no such socket, unknown host, timed out
            reason = (exc.strerror or str(exc) or type(exc).__name__).lower()
    return reason


def _tcp_connect(host: str, port: int) -> str | None:
    """None when ``host:port`` accepts (every address of the name is tried, IPv4 and IPv6)."""
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        return (exc.strerror or str(exc) or type(exc).__name__).lower()
    return None
