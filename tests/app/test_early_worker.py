"""The launcher starts the worker before it imports the window, and the window takes it over."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.paths import ROOT

ORDER = """
import sys
from PySide6.QtCore import QSettings
from gradviz.app import worker_client

seen = []
start = worker_client.WorkerClient.start
def recording_start(self):
    seen.append("gradviz.app.main_window" in sys.modules)
    start(self)
worker_client.WorkerClient.start = recording_start

from gradviz.app.launch import make_window, release_window
app, window = make_window(QSettings(sys.argv[1], QSettings.Format.IniFormat))
print("window imported when the worker started:", seen)
window.close()
release_window(window)
"""


def test_the_worker_starts_before_the_window_module_is_imported(tmp_path):
    """torch imports in the worker (about a second) while Qt and pyqtgraph import here."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRADVIZ_RECOVERY_DIR": str(tmp_path / "recovery")}
    env.setdefault("QT_QPA_PLATFORM", "" if env.get("DISPLAY") else "offscreen")
    out = subprocess.run(
        [sys.executable, "-c", ORDER, str(tmp_path / "s.ini")], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "window imported when the worker started: [False]" in out.stdout


def test_a_worker_ready_before_the_window_exists_still_fills_the_device_list(qtbot, settings_store, monkeypatch, tmp_path):
    from gradviz.app.main_window import MainWindow
    from gradviz.app.recovery import RECOVERY_ENV
    from gradviz.app.worker_client import WorkerClient

    monkeypatch.setenv(RECOVERY_ENV, str(tmp_path / "recovery"))
    worker = WorkerClient()
    with qtbot.waitSignal(worker.ready, timeout=60_000):
        worker.start()
    window = MainWindow(settings_store, auto_run=False, worker=worker)
    qtbot.addWidget(window)
    assert window.worker is worker and worker.parent() is window
    devices = [window.run_bar.device.itemData(k) for k in range(window.run_bar.device.count())]
    assert devices == [d["name"] for d in worker.info["devices"]]
    pid = worker.pid
    window.close()
    assert pid and not _alive(pid, qtbot)


def _alive(pid: int, qtbot) -> bool:
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        qtbot.wait(20)
    return True
