"""Time a fresh gradviz window process from launch to its first verdict, as a user starts it.

Shared by ``bench/ui_latency.py`` and ``bench/window_load.py``: one driver, so both benches agree
on what "launch" and "verdict shown" mean. The child runs ``gradviz.cli.main([])``, exactly what
``python main.py`` and ``make run`` run, for a fresh user (its own empty config and recovery
folders, so the default example opens and runs by itself). The only thing the driver adds is a
wrapper around ``launch.make_window`` that connects to the window's own signals, the ones the tests
wait on: ``result_shown`` (the verdict and heatmaps drawn), ``memory_shown``, ``run_failed``.

Times are on ``time.monotonic()``, one clock for every process on Linux and macOS, counted from a
moment the parent passes in (just before it starts the child): interpreter start-up counts.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# marks, each printed as "MARK <name> <seconds since launch>": splash (the starting frame painted),
# window (shown, first event loop turn), ready (the worker has imported torch), verdict (drawn),
# memory (the memory study drawn)
DRIVER = r"""
import sys, time
LAUNCHED = float(sys.argv[1])
WAIT_MEMORY = sys.argv[2] == "1"

def mark(name):
    print(f"MARK {name} {time.monotonic() - LAUNCHED:.4f}", flush=True)

from gradviz.app import launch, splash
_make_window = launch.make_window
_show_splash = splash.show_splash

def timed_show_splash(app):
    shown = _show_splash(app)
    mark("splash")
    return shown

splash.show_splash = timed_show_splash

def timed_make_window(*args, **kwargs):
    app, window = _make_window(*args, **kwargs)
    from PySide6.QtCore import QTimer

    def done(name):
        mark(name)
        if name == ("memory" if WAIT_MEMORY else "verdict") or name == "failed":
            window.close()
            app.quit()

    QTimer.singleShot(0, lambda: mark("window"))  # the first turn of the event loop, after show()
    if window.worker.is_ready:
        mark("ready")
    else:
        window.worker.ready.connect(lambda info: mark("ready"))
    window.result_shown.connect(lambda: done("verdict"))
    window.memory_shown.connect(lambda: done("memory"))
    window.run_failed.connect(lambda message: (print("FAILED", message, flush=True), done("failed")))
    QTimer.singleShot(300_000, app.quit)
    return app, window

launch.make_window = timed_make_window
from gradviz.cli.main import main
sys.exit(main([]))
"""


def fresh_user_env(folder: Path) -> dict[str, str]:
    """The environment of a first launch: settings and recovery in ``folder``, gradviz from here, an
    offscreen platform when there is no display."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CONFIG_HOME": str(folder / "config"),
        "GRADVIZ_RECOVERY_DIR": str(folder / "recovery"),
    }
    if not env.get("DISPLAY"):
        env["QT_QPA_PLATFORM"] = "offscreen"
    return env


def read_marks(output: str) -> dict[str, float]:
    return {
        name: float(value)
        for line in output.splitlines()
        if line.startswith("MARK ")
        for name, value in [line.split()[1:3]]
    }


def launch_to_verdict(*, memory: bool = False, timeout: float = 300) -> dict[str, float]:
    """One fresh launch of the real window on the default example: its marks in seconds since
    launch (``splash``, ``window``, ``ready``, ``verdict``, and ``memory`` when ``memory``). Raises when the
    run failed or nothing was drawn."""
    with tempfile.TemporaryDirectory(prefix="gradviz-launch-") as tmp:
        env = fresh_user_env(Path(tmp))
        launched = time.monotonic()
        out = subprocess.run(
            [sys.executable, "-c", DRIVER, repr(launched), "1" if memory else "0"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
    marks = read_marks(out.stdout)
    if out.returncode != 0 or "verdict" not in marks or (memory and "memory" not in marks):
        raise RuntimeError(f"the window did not draw a verdict (exit {out.returncode}):\n{out.stdout}\n{out.stderr}")
    return marks
